package httpapi

import (
	"bufio"
	"encoding/json"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testMaxHeaderBytes is the header limit of the test server: small, so a test can exceed it.
const testMaxHeaderBytes = 4 << 10

// serveRaw runs the service's handler in a real net/http server on a loopback port, behind
// EnvelopeListener, with a read timeout long enough that a test waiting for it would fail on time.
func serveRaw(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ReadTimeout: 30 * time.Second, MaxHeaderBytes: testMaxHeaderBytes}
	go srv.Serve(EnvelopeListener(ln, testMaxHeaderBytes))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// rawExchange writes raw bytes on a new connection and reads one response; the body is not
// closed by the writer (a declared body may never come).
func rawExchange(t *testing.T, addr, raw string) (*http.Response, []byte, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no HTTP response to %.60q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b, time.Since(start)
}

// The refusals net/http writes by itself, and a body declared over the limit, are answered at
// once in the §7 envelope, never as text/plain and never quoting the request.
func TestServerRefusalsInEnvelope(t *testing.T) {
	svc, _ := newTestService(t, nil, nil)
	addr := serveRaw(t, Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) }))
	const canary = "CANARY7731"
	limit := svc.MaxBody()
	cases := []struct {
		name   string
		raw    string
		status int
		code   string
		limit  int64
	}{
		{"header section over the limit", "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 2*testMaxHeaderBytes+4096) + canary + "\r\n\r\n", 431, "payload_too_large", testMaxHeaderBytes},
		{"many headers over the limit", "GET /health HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-"+canary+": 1\r\n", testMaxHeaderBytes/8) + "\r\n", 431, "payload_too_large", testMaxHeaderBytes},
		{"malformed request line", "GARBAGE " + canary + "\r\n\r\n", 400, "invalid_request", 0},
		{"method with a space", "PO ST /verify/schema HTTP/1.1\r\nHost: x\r\n\r\n", 400, "invalid_request", 0},
		{"no protocol", "GET /" + canary + "\r\nHost: x\r\n\r\n", 400, "invalid_request", 0},
		{"malformed header line", "GET / HTTP/1.1\r\nHost: x\r\n" + canary + "\r\n\r\n", 400, "invalid_request", 0},
		{"malformed Host", "GET / HTTP/1.1\r\nHost: a b" + canary + "\r\n\r\n", 400, "invalid_request", 0},
		{"missing Host", "GET / HTTP/1.1\r\nX: " + canary + "\r\n\r\n", 400, "invalid_request", 0},
		{"two Content-Lengths", "POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}", 400, "invalid_request", 0},
		{"unknown transfer coding", "POST /verify/schema HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + canary + "\r\n\r\n", 501, "invalid_request", 0},
		{"HTTP version not spoken", "GET /" + canary + " HTTP/2.0\r\nHost: x\r\n\r\n", 505, "invalid_request", 0},
		{"body declared over the limit, never sent", "POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n{\"task_id\":", 413, "payload_too_large", limit},
		{"body declared one byte over the limit", "POST /verify/deliverable HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(limit+1) + "\r\n\r\n", 413, "payload_too_large", limit},
		{"body declared over the limit with Expect", "POST /verify/schema HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 99999999\r\n\r\n", 413, "payload_too_large", limit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, b, took := rawExchange(t, addr, c.raw)
			var env struct {
				Code   string `json:"code"`
				Status int    `json:"status"`
				Limit  int64  `json:"limit"`
			}
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatalf("body is not the envelope: %v: %s", err, b)
			}
			if resp.StatusCode != c.status || env.Status != c.status || env.Code != c.code || env.Limit != c.limit {
				t.Errorf("%d %s, want %d %s limit %d", resp.StatusCode, b, c.status, c.code, c.limit)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if strings.Contains(string(b), canary) {
				t.Errorf("the answer quotes the request: %s", b)
			}
			// Refused before the body's bytes arrive: far inside the 30 s read timeout.
			if took > 5*time.Second {
				t.Errorf("answered after %v, want at once", took)
			}
		})
	}
	// Answers of the handlers pass untouched, a refusal of a handler included.
	resp, b, _ := rawExchange(t, addr, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 200 || !strings.Contains(string(b), "key_version") {
		t.Errorf("health: %d %s", resp.StatusCode, b)
	}
	resp, b, _ = rawExchange(t, addr, "POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot json!")
	if resp.StatusCode != 422 || !strings.Contains(string(b), `"invalid_request"`) {
		t.Errorf("invalid body: %d %s", resp.StatusCode, b)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// serverRefusal recognizes net/http's refusals and nothing a handler writes.
func TestServerRefusalShape(t *testing.T) {
	for in, want := range map[string]int{
		"HTTP/1.1 431 Request Header Fields Too Large" + serverRefusalHeaders + "431 Request Header Fields Too Large": 431,
		"HTTP/1.1 400 Bad Request" + serverRefusalHeaders + "400 Bad Request":                                         400,
		"HTTP/1.1 400 Bad Request: missing required Host header" + serverRefusalHeaders + "x":                         400,
		"HTTP/1.1 501 Not Implemented" + serverRefusalHeaders + "Unsupported transfer encoding":                       501,
		"HTTP/1.1 400 Bad Request\r\nDate: x" + serverRefusalHeaders:                                                  0,
		"HTTP/1.1 200 OK" + serverRefusalHeaders:                                                                      0,
		"HTTP/1.1 4x0 Bad" + serverRefusalHeaders:                                                                     0,
		`{"code":"invalid_request"}`:                                                                                  0,
		"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n\r\n{}":                                        0,
	} {
		got, ok := serverRefusal([]byte(in))
		if (want != 0) != ok || got != want {
			t.Errorf("serverRefusal(%.50q) = %d %v, want %d", in, got, ok, want)
		}
	}
}
