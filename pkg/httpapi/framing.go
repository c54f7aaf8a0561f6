package httpapi

import (
	"bytes"
	"io"
	"net"
	"strconv"
)

// framingReader reads a connection's requests as net/http will, and stops at any request whose
// framing two HTTP/1.1 readers could disagree on (RFC 9112): Content-Length together with
// Transfer-Encoding (§6.1), a header line beginning with SP or HTAB (obs-fold, §5.2), or a line of
// the request line or header section not ended by CRLF (a bare LF or a bare CR, §2.2). net/http
// accepts all of them (it drops the Content-Length, unfolds the line, takes LF for CRLF); a proxy
// in front of the server may read the same bytes differently, so the request is refused and its
// connection closed.
//
// It holds each request head back until the head is complete, checks it and only then hands it
// on; a refused head is never handed on: net/http reads a malformed request line in its place,
// answers it with its own 400, which envelopeConn rewrites into the envelope, and closes the
// connection. To find where the next head starts it follows the body's framing (Content-Length
// bytes, or chunked chunks and trailers); a trailer line framed either way ends the body there,
// cut short, and the connection with it. When it cannot follow (a head over the header limit, a
// transfer coding or length net/http refuses, a malformed chunk) net/http refuses the request and
// closes the connection itself, and the reader passes the rest through unchecked.
type framingReader struct {
	state    framingState
	limit    int    // the longest head held back
	head     []byte // the head being read, not yet handed on
	out      []byte // bytes checked and not yet handed on
	buf      []byte
	body     int64 // bytes of body or chunk data still to pass
	chunkHex int64 // the chunk size being read
	line     int   // where the current line of head starts
	refused  bool
}

type framingState int

const (
	readingHead framingState = iota
	readingBody
	readingChunkSize
	readingChunkExt
	readingChunkData
	readingChunkEnd // the CRLF after a chunk's data
	readingTrailers
	passing
)

// refusedHead is what net/http reads instead of a refused head: a request line it refuses.
const refusedHead = "REFUSED\r\n\r\n"

// read fills p from conn, checking what it reads.
func (f *framingReader) read(conn net.Conn, p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.refused {
			return 0, io.EOF
		}
		if f.buf == nil {
			f.buf = make([]byte, 4096)
		}
		n, err := conn.Read(f.buf)
		f.feed(f.buf[:n])
		// A held-back head stays held back on an error: net/http cuts its background read
		// short with a deadline and then reads on.
		if err != nil && len(f.out) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	if len(f.out) == 0 {
		f.out = nil
	}
	return n, nil
}

// feed checks b and moves it to out, holding back a head until it is complete.
func (f *framingReader) feed(b []byte) {
	for len(b) > 0 && !f.refused {
		switch f.state {
		case passing:
			f.out = append(f.out, b...)
			return
		case readingBody, readingChunkData:
			n := min(int64(len(b)), f.body)
			f.out = append(f.out, b[:n]...)
			b, f.body = b[n:], f.body-n
			if f.body == 0 {
				if f.state == readingBody {
					f.state = readingHead
				} else {
					f.state = readingChunkEnd
				}
			}
			continue
		}
		c := b[0]
		b = b[1:]
		switch f.state {
		case readingHead:
			f.headByte(c)
		case readingChunkSize:
			f.out = append(f.out, c)
			switch d := hexDigit(c); {
			case d >= 0 && f.chunkHex < 1<<40:
				f.chunkHex = f.chunkHex<<4 | int64(d)
			case c == ';' || c == ' ' || c == '\t' || c == '\r':
				f.state = readingChunkExt
			case c == '\n':
				f.endChunkSize()
			default:
				f.state = passing
			}
		case readingChunkExt:
			f.out = append(f.out, c)
			if c == '\n' {
				f.endChunkSize()
			}
		case readingChunkEnd:
			f.out = append(f.out, c)
			if c == '\n' {
				f.state, f.chunkHex = readingChunkSize, 0
			}
		case readingTrailers:
			f.headByte(c)
		}
	}
}

// endChunkSize starts a chunk's data, or the trailers after the last chunk.
func (f *framingReader) endChunkSize() {
	if f.chunkHex == 0 {
		f.state, f.head, f.line = readingTrailers, f.head[:0], 0
		return
	}
	f.state, f.body, f.chunkHex = readingChunkData, f.chunkHex, 0
}

// headByte adds one byte of a request head (or of a chunked body's trailers) and checks each line
// as it ends.
func (f *framingReader) headByte(c byte) {
	f.head = append(f.head, c)
	if len(f.head) > f.limit {
		// net/http refuses a head this long and closes the connection.
		f.out, f.head, f.state = append(f.out, f.head...), nil, passing
		return
	}
	n := len(f.head)
	bad := false
	switch {
	case n >= 2 && f.head[n-2] == '\r' && c != '\n':
		bad = true // a bare CR
	case c != '\n':
		return
	case n < 2 || f.head[n-2] != '\r':
		bad = true // a bare LF
	}
	var line []byte
	// A header line, or a trailer line: everything after the request line.
	header := f.line > 0 || f.state == readingTrailers
	if !bad {
		line = f.head[f.line : n-2]
		f.line = n
		bad = header && len(line) > 0 && (line[0] == ' ' || line[0] == '\t') // obs-fold
	}
	switch {
	case bad && f.state == readingTrailers:
		// The request's head has gone on already, and its handler may be reading the body: the
		// body ends here, cut short, so that its read fails and the request is refused, and the
		// connection ends with it: what follows is never read as a request.
		f.refused, f.head = true, nil
	case bad:
		f.refuse()
	case header && len(line) == 0 && f.state == readingTrailers:
		f.out, f.head, f.line, f.state = append(f.out, f.head...), f.head[:0], 0, readingHead
	case header && len(line) == 0:
		f.endHead()
	}
}

// endHead decides how the body of the complete head is framed, and hands the head on.
func (f *framingReader) endHead() {
	var length, coding [][]byte
	lines := bytes.Split(f.head[:len(f.head)-4], []byte("\r\n"))
	for _, l := range lines[1:] {
		name, value, _ := bytes.Cut(l, []byte(":"))
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			length = append(length, value)
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			coding = append(coding, value)
		}
	}
	if len(length) > 0 && len(coding) > 0 {
		f.refuse()
		return
	}
	f.out, f.head, f.line = append(f.out, f.head...), f.head[:0], 0
	switch {
	case len(coding) == 1 && bytes.EqualFold(coding[0], []byte("chunked")):
		f.state, f.chunkHex = readingChunkSize, 0
	case len(coding) > 0:
		f.state = passing // net/http refuses any other coding
	case len(length) > 0:
		n, err := strconv.ParseInt(string(length[0]), 10, 64)
		if err != nil || n < 0 {
			f.state = passing // net/http refuses it
			return
		}
		f.body, f.state = n, readingBody
		if n == 0 {
			f.state = readingHead
		}
	}
}

// refuse drops the held-back head and hands on, in its place, a request line net/http refuses.
func (f *framingReader) refuse() {
	f.refused, f.head = true, nil
	f.out = append(f.out, refusedHead...)
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
