package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// EnvelopeListener wraps a listener served by net/http so that the refusals the server writes by
// itself, before any handler sees a request, are answered in the §7 error envelope instead of
// text/plain: a header section over maxHeaderBytes (431), a request line or header it cannot
// parse (400), a transfer coding it does not know (501). The server's own limits and checks stay
// as they are; only the bytes of its answer change.
//
// net/http writes each such refusal in one write straight to the connection, as a status line
// followed by exactly serverRefusalHeaders and a text body: a response from a handler always
// carries a Date header, so no handler's answer looks like one.
func EnvelopeListener(ln net.Listener, maxHeaderBytes int) net.Listener {
	return &envelopeListener{Listener: ln, maxHeaderBytes: int64(maxHeaderBytes)}
}

// serverRefusalHeaders are the headers net/http writes with its own refusals (server.go's
// errorHeaders), from the end of the status line to the body.
const serverRefusalHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

type envelopeListener struct {
	net.Listener
	maxHeaderBytes int64
}

func (l *envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	limit := l.maxHeaderBytes
	if limit <= 0 {
		limit = http.DefaultMaxHeaderBytes
	}
	// net/http reads up to 4096 bytes past its limit before it refuses a head.
	return &envelopeConn{Conn: c, maxHeaderBytes: l.maxHeaderBytes, in: framingReader{limit: int(limit) + 4096}}, nil
}

type envelopeConn struct {
	net.Conn
	maxHeaderBytes int64
	in             framingReader // read by one goroutine at a time (net/http locks its reads)
	framing        atomic.Bool   // in refused a head: the server's 400 is that refusal
}

// Read hands net/http the connection's bytes once framingReader has checked them.
func (c *envelopeConn) Read(p []byte) (int, error) {
	n, err := c.in.read(c.Conn, p)
	if c.in.refused {
		c.framing.Store(true)
	}
	return n, err
}

// Write passes every write through but the server's own refusals, which it answers in the
// envelope instead.
func (c *envelopeConn) Write(p []byte) (int, error) {
	status, ok := serverRefusal(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(refusalResponse(status, c.maxHeaderBytes, c.framing.Load())); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets the server half-close the connection after a 431 (so that the client reads the
// answer before the connection ends), as it does on the bare TCP connection.
func (c *envelopeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// serverRefusal reports whether p is one of net/http's own refusals, and its status.
func serverRefusal(p []byte) (int, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(proto)) {
		return 0, false
	}
	end := bytes.Index(p, []byte(serverRefusalHeaders))
	if end < len(proto)+3 || bytes.Contains(p[:end], []byte("\r\n")) {
		return 0, false
	}
	status := 0
	for _, d := range p[len(proto) : len(proto)+3] {
		if d < '0' || d > '9' {
			return 0, false
		}
		status = status*10 + int(d-'0')
	}
	if status < 400 || status > 599 {
		return 0, false
	}
	return status, true
}

// refusalError is the envelope of one of the server's refusals, with fixed messages: the server's
// texts never reach the caller. Its kind gives the status net/http refused with: 431, 501, 505,
// and 400 for the rest.
func refusalError(status int, maxHeaderBytes int64, framing bool) *apperr.Error {
	switch {
	case framing && status == http.StatusBadRequest:
		return apperr.New(apperr.InvalidRequest, "The request's framing is ambiguous (RFC 9112): it has both Content-Length and Transfer-Encoding, a folded header line (one beginning with a space or tab), or a line not ended by CRLF. The connection is closed. Nothing was charged.").WithKind(apperr.Unread)
	case status == http.StatusRequestHeaderFieldsTooLarge:
		return apperr.HeadersTooLarge(maxHeaderBytes)
	case status == http.StatusNotImplemented:
		return apperr.New(apperr.InvalidRequest, "The request's Transfer-Encoding is not supported: send the body with Content-Length or chunked. Nothing was charged.").WithKind(apperr.UnknownCoding)
	}
	kind := apperr.Unread
	if status == http.StatusHTTPVersionNotSupported {
		kind = apperr.UnsupportedVersion
	}
	return apperr.New(apperr.InvalidRequest, "The request could not be read as HTTP/1.1 (its request line, a header or its Host is malformed). Nothing was charged.").WithKind(kind)
}

// refusalResponse is the whole HTTP response for a refusal: the envelope, and the connection
// closed, as the server closes it.
func refusalResponse(status int, maxHeaderBytes int64, framing bool) []byte {
	e := refusalError(status, maxHeaderBytes, framing)
	body, _ := json.Marshal(e)
	status = e.Status()
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}
