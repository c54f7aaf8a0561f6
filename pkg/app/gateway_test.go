package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agent-output-verifier/verifier/pkg/httpapi"
)

// canary marks the caller's input in the events: it must reach neither the answer nor the log.
const canary = "CANARY4417"

func gatewayEvent(method, rawPath, body string, b64 bool) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: rawPath, Body: body, IsBase64Encoded: b64,
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "a1b2c3.execute-api.us-east-1.amazonaws.com",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: rawPath, SourceIP: "198.51.100.7"},
		},
	}
}

// An event that makes no HTTP request is a 400 envelope, never a function error, and neither the
// answer nor the log quotes it; a good event is served.
func TestLambdaHandlerUndecodableEvents(t *testing.T) {
	var logs bytes.Buffer
	svc := testsvc.New(t, service.Deps{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	handle := LambdaHandler(svc, httpapi.Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) }))
	body := `{"task_id":"` + canary + `","expected_schema":{},"submitted_output":1}`
	for name, ev := range map[string]events.APIGatewayV2HTTPRequest{
		"invalid base64 body":      gatewayEvent("POST", "/verify/schema", "!!"+canary+"!!", true),
		"truncated base64 body":    gatewayEvent("POST", "/verify/schema", base64.StdEncoding.EncodeToString([]byte(body))[:7], true),
		"path with %ZZ":            gatewayEvent("POST", "/verify/%ZZ"+canary, body, false),
		"path with a control byte": gatewayEvent("GET", "/reputation/\x7f"+canary, "", false),
		"path with a space":        gatewayEvent("GET", "/reputation/a b"+canary, "", false),
		"query with a space": func() events.APIGatewayV2HTTPRequest {
			ev := gatewayEvent("GET", "/health", "", false)
			ev.RawQueryString = "a=" + canary + " b"
			return ev
		}(),
		"method with a space":        gatewayEvent("PO ST", "/verify/schema", body, false),
		"method with a canary colon": gatewayEvent("GET:"+canary, "/health", "", false),
		"empty method":               gatewayEvent("", "/health", "", false),
		"header with a newline": func() events.APIGatewayV2HTTPRequest {
			ev := gatewayEvent("GET", "/health", "", false)
			ev.Headers["x-a"] = "1\r\nX-B: " + canary
			return ev
		}(),
		"header name with a space": func() events.APIGatewayV2HTTPRequest {
			ev := gatewayEvent("GET", "/health", "", false)
			ev.Headers["x "+canary] = "1"
			return ev
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			logs.Reset()
			resp, err := handle(context.Background(), ev)
			if err != nil {
				t.Fatalf("function error: %v", err)
			}
			var env struct {
				Code   string `json:"code"`
				Status int    `json:"status"`
			}
			if json.Unmarshal([]byte(resp.Body), &env) != nil || resp.StatusCode != 400 || env.Status != 400 || env.Code != "invalid_request" ||
				resp.Headers["Content-Type"] != "application/json" {
				t.Errorf("%d %v %s, want the 400 envelope", resp.StatusCode, resp.Headers, resp.Body)
			}
			if strings.Contains(resp.Body, canary) || strings.Contains(logs.String(), canary) {
				t.Errorf("the event is quoted:\nanswer %s\nlog %s", resp.Body, logs.String())
			}
			if !strings.Contains(logs.String(), "could not be decoded") {
				t.Errorf("no log line says why: %s", logs.String())
			}
		})
	}
	// Good events are served: plain and base64 bodies, a query, an event without sourceIp.
	for name, ev := range map[string]events.APIGatewayV2HTTPRequest{
		"plain body":  gatewayEvent("post", "/verify/schema", body, false),
		"base64 body": gatewayEvent("POST", "/verify/deliverable", base64.StdEncoding.EncodeToString([]byte(body)), true),
		"no sourceIp": func() events.APIGatewayV2HTTPRequest {
			ev := gatewayEvent("POST", "/verify/schema", body, false)
			ev.RequestContext.HTTP.SourceIP = ""
			return ev
		}(),
		"percent path": gatewayEvent("GET", "/health", "", false),
	} {
		resp, err := handle(context.Background(), ev)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: %d %v %.200s", name, resp.StatusCode, err, resp.Body)
		}
	}
	// A valid path of no route is a 404, and the log names no path.
	logs.Reset()
	if resp, err := handle(context.Background(), gatewayEvent("GET", "//"+canary+".example/x", "", false)); err != nil || resp.StatusCode != 404 ||
		strings.Contains(logs.String(), canary) || !strings.Contains(logs.String(), `"route":"(no route)"`) {
		t.Errorf("no route: %d %v %s; log %s", resp.StatusCode, err, resp.Body, logs.String())
	}
	ev := gatewayEvent("GET", "/reputation/seller%2F1", "", false)
	ev.RawQueryString = "limit=5"
	if resp, err := handle(context.Background(), ev); err != nil || resp.StatusCode != 200 || !strings.Contains(resp.Body, `"agent_id":"seller/1"`) {
		t.Errorf("escaped path: %d %v %.200s", resp.StatusCode, err, resp.Body)
	}
}
