package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

var toolsList = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)

// sendMCP posts body to /mcp with the headers in pairs (a repeated name adds a value).
func sendMCP(t *testing.T, url string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Accept" {
			req.Header.Set(hdr[i], hdr[i+1])
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// The Origin check of the MCP transport (DNS rebinding): no Origin passes (clients outside a
// browser), the deployment's own origin passes, a loopback origin passes on a loopback listener,
// and every other Origin is a 403 in the envelope that does not quote it.
func TestOrigin(t *testing.T) {
	e := newEnv(t) // a loopback listener; the base URL is http://127.0.0.1:8080
	for origin, want := range map[string]int{
		"":                                  200,
		"http://127.0.0.1:8080":             200,
		"HTTP://127.0.0.1:8080":             200,
		"http://127.0.0.1:8080/":            200,
		"http://localhost:3000":             200,
		"http://[::1]:8080":                 200,
		"http://app.localhost":              200,
		"http://evil.example":               403,
		"https://evil.example:8080":         403,
		"http://127.0.0.1.evil.example":     403,
		"http://localhost.evil.example":     403,
		"null":                              403,
		"file://":                           403,
		"ftp://127.0.0.1:8080":              403,
		"http://127.0.0.1:8080/mcp":         403,
		"http://127.0.0.1:8080?x=1":         403,
		"http://user@127.0.0.1:8080":        403,
		"http://evil.example, http://[::1]": 403,
		"evil.example":                      403,
		"http://%zz":                        403,
	} {
		var hdr []string
		if origin != "" {
			hdr = []string{"Origin", origin}
		}
		resp, b := sendMCP(t, e.url+Path, toolsList, hdr...)
		if resp.StatusCode != want {
			t.Errorf("Origin %q: %d, want %d: %.200s", origin, resp.StatusCode, want, b)
			continue
		}
		if want == 403 {
			var env struct{ Code string }
			if json.Unmarshal(b, &env) != nil || env.Code != "forbidden" || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Origin %q: %s, want the forbidden envelope", origin, b)
			}
			if strings.Contains(string(b), "evil") {
				t.Errorf("Origin %q: the refusal quotes it: %s", origin, b)
			}
		}
	}
	// Two Origin headers are refused, even when each alone would pass.
	if resp, b := sendMCP(t, e.url+Path, toolsList, "Origin", "http://127.0.0.1:8080", "Origin", "http://127.0.0.1:8080"); resp.StatusCode != 403 {
		t.Errorf("two Origins: %d %s", resp.StatusCode, b)
	}

	// A public deployment (no listener address: API Gateway) takes its own origin only.
	pub := newEnv(t, func(d *service.Deps) { d.BaseURL = "https://verifier.example.com" })
	h := New(pub.svc)
	for origin, want := range map[string]int{
		"":                                 200,
		"https://verifier.example.com":     200,
		"https://Verifier.Example.com:443": 200,
		"http://verifier.example.com":      403,
		"https://verifier.example.com:444": 403,
		"http://localhost:3000":            403,
		"http://127.0.0.1:8080":            403,
		"https://evil.example":             403,
	} {
		req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(toolsList))
		req.Host = "verifier.example.com"
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("public, Origin %q: %d, want %d: %.200s", origin, rec.Code, want, rec.Body)
		}
	}
}

// rpcAnswer is a JSON-RPC response as it travels.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// A call of a method the server does not have is JSON-RPC's -32601 and a tools/call without
// params -32602 (JSON-RPC 2.0 §5.1), answered to the call's id with HTTP 200, as JSON or as one
// event, never an HTTP refusal, and never quoting the method.
func TestJSONRPCErrors(t *testing.T) {
	e := newEnv(t)
	const canary = "zz9canary"
	cases := []struct {
		body string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"` + canary + `"}`, -32601},
		{`{"jsonrpc":"2.0","id":"abc","method":"tools/` + canary + `","params":{}}`, -32601},
		{`{"method":"nope/` + canary + `","params":{"x":[1,{"y":2}]},"id":-7.5,"jsonrpc":"2.0"}`, -32601},
		{`{"jsonrpc":"2.0","id":2,"method":"TOOLS/LIST"}`, -32601},
		{`{"jsonrpc":"2.0","id":3,"method":""}`, -32601},
		{`{"jsonrpc":"2.0","id":4,"method":"notifications/initialized"}`, -32601},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call"}`, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":null}`, -32602},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}`, -32602},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"verify_schema"}`, -32602},
		{` { "params" : 1 , "jsonrpc" : "2.0" , "method" : "tools/call" , "id" : "p" } `, -32602},
		// A tool this server does not have: the SDK would quote its name.
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + canary + `","arguments":{}}}`, -32602},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"arguments":{"name":"verify_schema"},"name":"verify_schema_` + canary + `"}}`, -32602},
	}
	for _, c := range cases {
		for _, accept := range []string{"application/json", "text/event-stream"} {
			resp, b := sendMCP(t, e.url+Path, []byte(c.body), "Accept", accept)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != accept {
				t.Errorf("%s (Accept %s): HTTP %d %s %s", c.body, accept, resp.StatusCode, resp.Header.Get("Content-Type"), b)
				continue
			}
			if accept == "text/event-stream" {
				data, ok := bytes.CutPrefix(b, []byte("event: message\ndata: "))
				if !ok {
					t.Errorf("%s: event stream %q", c.body, b)
					continue
				}
				b = bytes.TrimSpace(data)
			}
			var a rpcAnswer
			var in struct{ ID json.RawMessage }
			json.Unmarshal([]byte(c.body), &in)
			if err := json.Unmarshal(b, &a); err != nil || a.JSONRPC != "2.0" || a.Error == nil || a.Error.Code != c.code || !bytes.Equal(a.ID, in.ID) || a.Result != nil {
				t.Errorf("%s: %s, want error %d with id %s", c.body, b, c.code, in.ID)
			}
			if bytes.Contains(b, []byte(canary)) {
				t.Errorf("%s: the error quotes the method: %s", c.body, b)
			}
		}
	}
	// What is not a call stays the transport's: a notification of an unknown method, a message
	// that is not JSON-RPC 2.0, a batch; a known method with params is served.
	for body, want := range map[string]int{
		`{"jsonrpc":"2.0","method":"` + canary + `"}`:         400,
		`{"jsonrpc":"1.0","id":1,"method":"` + canary + `"}`:  400,
		`{"jsonrpc":"2.0","id":{},"method":"` + canary + `"}`: 400,
		`garbage`: 400,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`:                                 400, // no MCP-Protocol-Version: see TestFramingRefused
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"verify_schema"}}`: 200,
	} {
		resp, b := sendMCP(t, e.url+Path, []byte(body))
		if resp.StatusCode != want || bytes.Contains(b, []byte(`"code":-32601`)) {
			t.Errorf("%s: %d %.200s, want %d", body, resp.StatusCode, b, want)
		}
	}
}

// Every method the gate lets through is one the SDK dispatches: each gets the SDK's own JSON-RPC
// answer, none is refused as an unreadable request (the SDK's answer to a method it does not know).
func TestKnownMethodsReachTheSDK(t *testing.T) {
	e := newEnv(t)
	client := &http.Client{Timeout: 5 * time.Second}
	for m := range sdkMethods {
		if m == "subscriptions/listen" {
			continue // opens a stream of a later protocol version
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{}}`, m)
		req, _ := http.NewRequest(http.MethodPost, e.url+Path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var a rpcAnswer
		if resp.StatusCode != 200 || json.Unmarshal(b, &a) != nil || a.JSONRPC != "2.0" || (a.Error != nil && strings.HasPrefix(a.Error.Message, "Method not found: this MCP server")) {
			t.Errorf("%s: %d %.200s; want the SDK's JSON-RPC answer", m, resp.StatusCode, b)
		}
	}
}

// A message over the limit is a 413 that names it, at once when its length is declared.
func TestMessageLimit(t *testing.T) {
	e := newEnv(t)
	limit := int64(wire.DefaultLimits.MaxBody) + rpcOverhead
	for _, n := range []int64{limit + 1, 4 * limit} {
		resp, b := sendMCP(t, e.url+Path, bytes.Repeat([]byte(" "), int(n)))
		var env struct {
			Code  string `json:"code"`
			Limit int64  `json:"limit"`
		}
		json.Unmarshal(b, &env)
		if resp.StatusCode != 413 || env.Code != "payload_too_large" || env.Limit != limit {
			t.Errorf("%d bytes: %d %s, want 413 with limit %d", n, resp.StatusCode, b, limit)
		}
	}
	// Declared and never sent: refused before the body is waited for.
	h := New(e.svc)
	req := httptest.NewRequest(http.MethodPost, Path, blockingReader{})
	req.ContentLength = limit + 1
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 413 || !strings.Contains(rec.Body.String(), fmt.Sprintf(`"limit":%d`, limit)) {
		t.Errorf("declared over the limit: %d %s", rec.Code, rec.Body)
	}
}

// blockingReader fails a test that reads it: a body that never arrives.
type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) {
	panic("the body of a request refused by its declared length was read")
}

// Both tools judge agent_id as the REST routes do: a control character, a bidi control, another
// format character or white space alone is the 422 on agent_id.
func TestAgentIDInTools(t *testing.T) {
	e := newEnv(t)
	for id, ok := range map[string]bool{"seller-1": true, "Émile 🙂": true, "a\x00b": false, "a\nb": false, "\x1b[0m": false, "x\u0085": false, "del\x7f": false,
		"\u202erelles": false, "a\u2066b": false, "a\u200fb": false, "sel\u200bler": false, "\ufeffa": false, " ": false, "\u3000": false, "selle\u0301r": true} {
		idJSON, _ := json.Marshal(id)
		for tool, args := range map[string]string{
			ToolVerify: fmt.Sprintf(`{"task_id":"t","agent_id":%s,"expected_schema":{},"submitted_output":1}`, idJSON),
			ToolRecord: fmt.Sprintf(`{"agent_id":%s}`, idJSON),
		} {
			r := e.call(t, tool, []byte(args), nil)
			got := r.sc(t)
			fields, _ := got["fields"].([]any)
			switch {
			case ok && r.IsError:
				t.Errorf("%s %q: %s", tool, id, r.StructuredContent)
			case !ok && (!r.IsError || got["code"] != "invalid_request" || got["status"] != float64(422) || len(fields) != 1 ||
				fields[0].(map[string]any)["field"] != "agent_id"):
				t.Errorf("%s %q: %s, want a 422 on agent_id", tool, id, r.StructuredContent)
			}
		}
	}
}
