package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// eventJSON is an HTTP API event as API Gateway sends it, with edit applied to its members
// (decoded as maps) before it is encoded; edit may return raw bytes to send instead.
func eventJSON(t *testing.T, method, path, body string, b64 bool, edit func(m map[string]any)) []byte {
	t.Helper()
	ev := gatewayEvent(method, path, body, b64)
	ev.RouteKey, ev.RequestContext.Stage, ev.RequestContext.RequestID = "$default", "$default", "req-1"
	b, _ := json.Marshal(ev)
	if edit == nil {
		return b
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	edit(m)
	b, _ = json.Marshal(m)
	return b
}

func set(path string, v any) func(map[string]any) {
	return func(m map[string]any) {
		parts := strings.Split(path, ".")
		for _, p := range parts[:len(parts)-1] {
			m = m[p].(map[string]any)
		}
		m[parts[len(parts)-1]] = v
	}
}

// Every function answers every malformed event (not a JSON object, a repeated member, a known
// member of the wrong type, a body that is not strict padded standard base64) with the 400
// envelope, never a function error, quoting none of it; and serves a well-formed one.
func TestMalformedEventsInEveryFunction(t *testing.T) {
	var logs bytes.Buffer
	svc := testsvc.New(t, service.Deps{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	verifyBody := `{"task_id":"` + canary + `","expected_schema":{},"submitted_output":1}`
	mcpBody := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	functions := map[string]struct {
		h                  http.Handler
		method, path, body string
		ok                 int // the status of a well-formed event
	}{
		"verify":    {httpapi.VerifyHandler(svc), "POST", "/verify/schema", verifyBody, 200},
		"score":     {httpapi.ScoreHandler(svc), "GET", "/score/seller-1", "", 200},
		"wellknown": {discovery.Handler(svc), "GET", "/.well-known/agent-card.json", "", 200},
		"mcp":       {mcpserver.Handler(svc), "POST", "/mcp", mcpBody, 200},
	}
	b64 := base64.StdEncoding.EncodeToString
	for fn, f := range functions {
		handler := EventHandler(svc, f.h)
		good := func(edit func(map[string]any)) []byte { return eventJSON(t, f.method, f.path, f.body, false, edit) }
		// A body that base64 variants can tell apart: "?>" encodes to "Pz4=" (+ and / would be
		// - and _ in the URL-safe alphabet for other bytes), and ">>?" to "Pj4/".
		bodyB64 := func(s string) func(map[string]any) {
			return func(m map[string]any) { m["body"], m["isBase64Encoded"] = s, true }
		}
		malformed := map[string][]byte{
			"array":                       []byte(`[` + string(good(nil)) + `]`),
			"string":                      []byte(`"` + canary + `"`),
			"number":                      []byte(`42`),
			"null":                        []byte(`null`),
			"true":                        []byte(`true`),
			"empty":                       []byte(``),
			"truncated":                   good(nil)[:40],
			"two objects":                 append(good(nil), good(nil)...),
			"numeric body":                good(set("body", 42)),
			"object body":                 good(set("body", map[string]any{"task_id": canary})),
			"array body":                  good(set("body", []any{canary})),
			"boolean body":                good(set("body", true)),
			"string isBase64Encoded":      good(set("isBase64Encoded", "false")),
			"numeric isBase64Encoded":     good(set("isBase64Encoded", 0)),
			"headers an array":            good(set("headers", []any{"content-type"})),
			"headers a string":            good(set("headers", canary)),
			"header value a number":       good(set("headers.content-type", 1)),
			"header value an array":       good(set("headers.content-type", []any{"application/json"})),
			"header value an object":      good(set("headers.content-type", map[string]any{})),
			"requestContext a string":     good(set("requestContext", canary)),
			"requestContext.http a list":  good(set("requestContext.http", []any{})),
			"method a number":             good(set("requestContext.http.method", 5)),
			"sourceIp a number":           good(set("requestContext.http.sourceIp", 198)),
			"timeEpoch a string":          good(set("requestContext.timeEpoch", "1700000000")),
			"requestId an object":         good(set("requestContext.requestId", map[string]any{})),
			"domainName a bool":           good(set("requestContext.domainName", false)),
			"rawPath a number":            good(set("rawPath", 1)),
			"rawQueryString an object":    good(set("rawQueryString", map[string]any{})),
			"cookies a string":            good(set("cookies", canary)),
			"cookie a number":             good(set("cookies", []any{1})),
			"queryStringParameters array": good(set("queryStringParameters", []any{})),
			"repeated body":               bytes.Replace(good(nil), []byte(`"version":`), []byte(`"body":"`+canary+`","body":"{}","version":`), 1),
			"repeated header":             bytes.Replace(good(nil), []byte(`"content-type":`), []byte(`"content-type":"text/plain","content-type":`), 1),
			"repeated method":             bytes.Replace(good(nil), []byte(`"method":`), []byte(`"method":"DELETE","method":`), 1),
			"repeated by escape":          bytes.Replace(good(nil), []byte(`"rawPath":`), []byte(`"r\u0061wPath":"/`+canary+`","rawPath":`), 1),
			"URL-safe base64":             good(bodyB64(strings.NewReplacer("+", "-", "/", "_").Replace(b64([]byte(f.body + ">>?"))))),
			"unpadded base64":             good(bodyB64(strings.TrimRight(b64([]byte(f.body+"?>")), "="))),
			"base64 with a line break":    good(bodyB64(b64([]byte(f.body + "      "))[:8] + "\r\n" + b64([]byte(f.body + "      "))[8:])),
			"base64 with stray bits":      good(bodyB64(b64([]byte(f.body + "?>"))[:len(b64([]byte(f.body+"?>")))-2] + "5=")),
			"base64 with a space":         good(bodyB64(" " + b64([]byte(f.body)))),
			"not base64":                  good(bodyB64("%%" + canary + "%%")),
		}
		for name, payload := range malformed {
			t.Run(fn+"/"+name, func(t *testing.T) {
				logs.Reset()
				out, err := handler.Invoke(context.Background(), payload)
				if err != nil {
					t.Fatalf("function error: %v", err)
				}
				var resp events.APIGatewayV2HTTPResponse
				var env struct {
					Code   string `json:"code"`
					Status int    `json:"status"`
				}
				if json.Unmarshal(out, &resp) != nil || json.Unmarshal([]byte(resp.Body), &env) != nil ||
					resp.StatusCode != 400 || env.Status != 400 || env.Code != "invalid_request" || resp.Headers["Content-Type"] != "application/json" {
					t.Errorf("%s, want the 400 envelope", out)
				}
				if strings.Contains(string(out), canary) || strings.Contains(logs.String(), canary) {
					t.Errorf("the event is quoted:\nanswer %s\nlog %s", out, logs.String())
				}
			})
		}
		// Well-formed: plain, standard padded base64 (whose URL-safe spelling was refused above),
		// and with members API Gateway may add or leave out.
		for name, payload := range map[string][]byte{
			"plain":          good(nil),
			"padded base64":  good(bodyB64(b64([]byte(f.body + " ")))),
			"unknown member": good(set("requestContext.newThing", map[string]any{"x": 1})),
			"null cookies":   good(set("cookies", nil)),
		} {
			out, err := handler.Invoke(context.Background(), payload)
			var resp events.APIGatewayV2HTTPResponse
			if err != nil || json.Unmarshal(out, &resp) != nil || resp.StatusCode == 400 || resp.StatusCode >= 500 || resp.StatusCode != f.ok {
				t.Errorf("%s/%s: %v %.300s", fn, name, err, out)
			}
		}
	}
}
