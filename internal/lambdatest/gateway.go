package lambdatest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// maxRequest bounds the body a Gateway forwards: API Gateway's HTTP API takes at most 10 MB.
const maxRequest = 10 << 20

// Gateway stands in for API Gateway's HTTP API in front of one emulated function, so that real
// HTTP clients (an MCP SDK's, say) can talk to a Lambda binary: each request becomes the payload
// format 2.0 event API Gateway sends (route ANY <path>, lower-cased headers joined with commas,
// the Host and the client address in requestContext), and the function's answer becomes the HTTP
// response. Requests are forwarded one at a time, as one execution environment serves them.
type Gateway struct {
	// Emulator runs the function.
	Emulator *Emulator
	// DomainName is the API's host name, which the function sees as the request's Host
	// (API Gateway's is <api-id>.execute-api.<region>.amazonaws.com).
	DomainName string
	// SourceIP is the client address the events carry, whatever the real peer is.
	SourceIP string

	mu  sync.Mutex
	seq atomic.Int64
}

// ServeHTTP forwards one request to the function and writes its answer.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err != nil || len(body) > maxRequest {
		http.Error(w, "request body unreadable or too large", http.StatusRequestEntityTooLarge)
		return
	}
	ev := g.event(r, body)
	raw, err := json.Marshal(ev)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	g.mu.Lock()
	// A client that hangs up must not abort an invocation midway: the emulator would be left
	// waiting for the function's answer. The function's own timeout bounds it.
	out, err := g.Emulator.Invoke(context.WithoutCancel(r.Context()), raw)
	g.mu.Unlock()
	if err != nil {
		http.Error(w, "function error: "+err.Error(), http.StatusBadGateway)
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode == 0 {
		// A function error (the emulator's {"errorMessage",...}): API Gateway answers 500.
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	b := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			http.Error(w, "function answered invalid base64", http.StatusBadGateway)
			return
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(b)
}

// event is the HTTP API payload format 2.0 event API Gateway makes of r.
func (g *Gateway) event(r *http.Request, body []byte) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	headers["host"] = g.DomainName
	now := time.Now().UTC()
	route := "ANY " + r.URL.Path
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       route,
		RawPath:        r.URL.Path,
		RawQueryString: r.URL.RawQuery,
		Headers:        headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   route,
			AccountID:  "123456789012",
			APIID:      strings.SplitN(g.DomainName, ".", 2)[0],
			DomainName: g.DomainName,
			RequestID:  fmt.Sprintf("lambdatest-%d", g.seq.Add(1)),
			Stage:      "$default",
			Time:       now.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  "HTTP/1.1",
				SourceIP:  g.SourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}
