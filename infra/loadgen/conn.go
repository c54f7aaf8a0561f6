package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// pool holds keep-alive HTTP/1.1 connections to the server, written and read directly. The load
// generator shares the two cores with the server it measures, so it spends as little of them as it
// can: net/http's client spends a sizeable share of what the server spends answering a request, CPU
// the server would not get. The server is the project's own, so the client needs only what it
// sends: POST with a Content-Length, and answers framed by Content-Length or chunked.
type pool struct {
	addr string // host:port
	idle chan *conn
}

func newPool(addr string, size int) *pool {
	return &pool{addr: addr, idle: make(chan *conn, size)}
}

// conn is one keep-alive connection and its buffers.
type conn struct {
	nc  net.Conn
	r   *bufio.Reader
	req []byte
}

// do sends one POST on an idle connection (or a new one) and reads the answer, discarding its
// body. A connection that failed, or that the server closes, is not reused.
func (p *pool) do(path string, body []byte, hdr map[string]string) (int, error) {
	var c *conn
	select {
	case c = <-p.idle:
	default:
		nc, err := net.Dial("tcp", p.addr)
		if err != nil {
			return 0, err
		}
		c = &conn{nc: nc, r: bufio.NewReaderSize(nc, 16<<10)}
	}
	status, keep, err := c.roundTrip(p.addr, path, body, hdr)
	if err != nil || !keep {
		c.nc.Close()
		return status, err
	}
	select {
	case p.idle <- c:
	default:
		c.nc.Close()
	}
	return status, nil
}

func (p *pool) close() {
	for {
		select {
		case c := <-p.idle:
			c.nc.Close()
		default:
			return
		}
	}
}

func (c *conn) roundTrip(host, path string, body []byte, hdr map[string]string) (status int, keep bool, err error) {
	b := c.req[:0]
	b = append(b, "POST "...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n"...)
	for k, v := range hdr {
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, body...)
	c.req = b
	if _, err := c.nc.Write(b); err != nil {
		return 0, false, err
	}
	return readResponse(c.r)
}

var (
	errMalformed = errors.New("malformed HTTP response")
	hdrLength    = []byte("Content-Length")
	hdrEncoding  = []byte("Transfer-Encoding")
	hdrConn      = []byte("Connection")
)

// readResponse reads one HTTP/1.1 answer from r and discards its body. keep is false when the
// server asked to close the connection.
func readResponse(r *bufio.Reader) (status int, keep bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, false, errMalformed
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, false, errMalformed
	}
	keep, err = readRest(r)
	return status, keep, err
}

// readRest reads a message's header lines and discards its body, framed by Content-Length or
// chunked (a message with neither has no body). keep is false when the peer asked to close the
// connection.
func readRest(r *bufio.Reader) (keep bool, err error) {
	length, chunked, keep := 0, false, true
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return false, errMalformed
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, hdrLength):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return false, errMalformed
			}
		case bytes.EqualFold(name, hdrEncoding):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, hdrConn):
			keep = !bytes.EqualFold(value, []byte("close"))
		}
	}
	if chunked {
		err = discardChunked(r)
	} else {
		_, err = r.Discard(length)
	}
	return keep && err == nil, err
}

// discardChunked reads a chunked body and its (empty) trailer.
func discardChunked(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%w: chunk size", errMalformed)
		}
		if n == 0 {
			for { // trailer lines up to the blank one
				line, err := r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := r.Discard(int(n)); err != nil {
			return err
		}
		if _, err := r.Discard(2); err != nil { // the chunk's CRLF
			return err
		}
	}
}
