package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
)

// conversation writes raw on one connection and reads the responses to it, n of them, then what
// follows them: io.EOF when the server closed the connection, a timeout when it kept it open.
func conversation(t *testing.T, addr, raw string, n int) ([]*http.Response, [][]byte, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var resps []*http.Response
	var bodies [][]byte
	for range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d of %d to %.80q: %v", len(resps)+1, n, raw, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resps, bodies = append(resps, resp), append(bodies, b)
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = br.ReadByte()
	return resps, bodies, err
}

// A request whose framing two readers could take differently (Content-Length with
// Transfer-Encoding, an obs-fold line, a line ended by a bare LF or CR) is a 400 in the envelope
// and its connection is closed, first on a connection or after requests that were served; a
// request framed one way is served and its connection kept open, whatever its body's framing.
func TestAmbiguousFramingRefused(t *testing.T) {
	svc, _ := newTestService(t, nil, nil)
	addr := serveRaw(t, Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) }))
	const canary = "CANARY5521"
	const health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	chunked := "POST /verify/schema HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nnot \r\n5\r\njson!\r\n0\r\nX-Trailer: " + canary + "\r\n\r\n"
	sized := "POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\nGET / HTTP/1.1\r\n"[:len("POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n")+13]
	refused := map[string]string{
		"Content-Length then chunked":    "POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"chunked then Content-Length":    "POST /verify/schema HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n",
		"lower-case names":               "POST /verify/schema HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
		"upper-case names, another code": "POST /verify/schema HTTP/1.1\r\nHost: x\r\nTRANSFER-ENCODING: gzip, chunked\r\nCONTENT-LENGTH: 3\r\n\r\n0\r\n\r\n",
		"on a GET":                       "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"obs-fold with a space":          "GET /health HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n " + canary + "\r\n\r\n",
		"obs-fold with a tab":            "GET /health HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n\t" + canary + "\r\n\r\n",
		"fold of the first header line":  "GET /health HTTP/1.1\r\n Host: x\r\n\r\n",
		"folded Content-Length":          "POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 2\r\n\r\n{}",
		"bare LF after the request line": "GET /health HTTP/1.1\nHost: x\r\n\r\n",
		"bare LF after a header":         "GET /health HTTP/1.1\r\nHost: x\nX-A: " + canary + "\r\n\r\n",
		"bare LF ending the head":        "GET /health HTTP/1.1\r\nHost: x\r\n\n",
		"bare LF throughout":             "GET /health HTTP/1.1\nHost: x\n\n",
		"bare CR inside a header":        "GET /health HTTP/1.1\r\nHost: x\rX-A: " + canary + "\r\n\r\n",
		"after a served request":         health + "GET /health HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n",
		"after a sized body":             sized + "GET /health HTTP/1.1\nHost: x\r\n\r\n",
		"after a chunked body":           chunked + "POST /verify/schema HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	}
	for name, raw := range refused {
		t.Run(name, func(t *testing.T) {
			served := strings.Count(raw, "HTTP/1.1") - 1
			resps, bodies, err := conversation(t, addr, raw, served+1)
			for i, resp := range resps[:served] {
				if resp.StatusCode == 400 {
					t.Errorf("request %d, framed one way, refused: %s", i+1, bodies[i])
				}
			}
			resp, b := resps[served], bodies[served]
			var env struct {
				Code    string `json:"code"`
				Status  int    `json:"status"`
				Message string `json:"message"`
			}
			json.Unmarshal(b, &env)
			if resp.StatusCode != 400 || env.Status != 400 || env.Code != "invalid_request" || !strings.Contains(env.Message, "framing") ||
				resp.Header.Get("Content-Type") != "application/json" || !resp.Close {
				t.Errorf("%d %v %s, want the 400 envelope for framing", resp.StatusCode, resp.Header, b)
			}
			if strings.Contains(string(b), canary) {
				t.Errorf("the answer quotes the request: %s", b)
			}
			if !errors.Is(err, io.EOF) {
				t.Errorf("after the refusal the connection gave %v, want EOF (closed)", err)
			}
		})
	}
	// A trailer line framed two ways ends the chunked body there: the request is refused as a body
	// that could not be read, the connection is closed, and what follows is never served.
	for name, trailer := range map[string]string{
		"obs-fold trailer": "X-T: 1\r\n " + canary + "\r\n",
		"bare LF trailer":  "X-T: " + canary + "\n",
		"bare CR trailer":  "X-T: 1\rX-U: " + canary + "\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			raw := "POST /verify/schema HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n" + trailer + "\r\n" + health
			resps, bodies, err := conversation(t, addr, raw, 1)
			if resps[0].StatusCode != 422 || !strings.Contains(string(bodies[0]), "body could not be read") || !resps[0].Close {
				t.Errorf("%d close=%v %s, want the request refused as an unreadable body", resps[0].StatusCode, resps[0].Close, bodies[0])
			}
			if strings.Contains(string(bodies[0]), canary) {
				t.Errorf("the answer quotes the request: %s", bodies[0])
			}
			if !errors.Is(err, io.EOF) {
				t.Errorf("after the refusal the connection gave %v, want EOF (closed, the GET never served)", err)
			}
		})
	}
	// Framed one way, whatever the body's framing: served, on a connection kept open.
	for name, c := range map[string]struct {
		raw  string
		want []string // what each answer contains
	}{
		"two GETs":               {health + health, []string{"key_version", "key_version"}},
		"sized body, then GET":   {sized + health, []string{`"status":422`, "key_version"}},
		"chunked body, then GET": {chunked + health, []string{`"status":422`, "key_version"}},
		"chunked, sized, GET":    {chunked + sized + health, []string{`"status":422`, `"status":422`, "key_version"}},
	} {
		t.Run(name, func(t *testing.T) {
			resps, bodies, err := conversation(t, addr, c.raw, len(c.want))
			for i, resp := range resps {
				if resp.StatusCode == 400 || !strings.Contains(string(bodies[i]), c.want[i]) {
					t.Errorf("response %d: %d %s, want %s", i+1, resp.StatusCode, bodies[i], c.want[i])
				}
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("after the answers the connection gave %v, want it kept open", err)
			}
		})
	}
}
