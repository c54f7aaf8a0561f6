package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// EventHandler is the function's handler of raw invocations: it reads each payload as an API
// Gateway HTTP API event (payload format 2.0) itself and serves it with LambdaHandler. The
// runtime's own decoding (encoding/json) would make a function error of a payload of the wrong
// shape (API Gateway's bare 500) and would take the last of a repeated member or a member named
// in another case; here a payload that is not one JSON object, repeats a member name, or has a
// known member of the wrong type (a numeric body, a string isBase64Encoded, headers that are not
// an object of strings, a requestContext or any field of it of another type) is the 400 envelope.
func EventHandler(svc *service.Service, h http.Handler) lambda.Handler {
	return eventHandler{svc: svc, serve: LambdaHandler(svc, h)}
}

type eventHandler struct {
	svc   *service.Service
	serve func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
}

func (e eventHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, problem := decodeEvent(payload)
	var resp events.APIGatewayV2HTTPResponse
	var err error
	if problem != "" {
		e.svc.Log().Warn("API Gateway event could not be decoded", "problem", problem)
		resp, err = errorResponse(e.svc, ev, undecodable(problem))
	} else {
		resp, err = e.serve(ctx, ev)
	}
	if err != nil {
		return nil, err
	}
	// As the runtime encodes a handler's result: without HTML escaping.
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// decodeEvent reads payload as an HTTP API event: one JSON object, member names unique and
// matched exactly, every known member of its type; unknown members are ignored (API Gateway adds
// them). problem names what was wrong without quoting it.
func decodeEvent(payload []byte) (events.APIGatewayV2HTTPRequest, string) {
	var ev events.APIGatewayV2HTTPRequest
	if t := bytes.TrimLeft(payload, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return ev, "event is not a JSON object"
	}
	if err := jsonv2.Unmarshal(payload, &ev, jsontext.AllowInvalidUTF8(true)); err != nil {
		ev = events.APIGatewayV2HTTPRequest{}
		if errors.Is(err, jsontext.ErrDuplicateName) {
			return ev, "event repeats a member name"
		}
		return ev, "event is not an API Gateway HTTP API event (a member is malformed or of the wrong type)"
	}
	return ev, ""
}

// undecodable is the 400 envelope of an event that makes no HTTP request.
func undecodable(problem string) error {
	return apperr.New(apperr.InvalidRequest, "The request could not be read: its "+problem+". Nothing was charged.")
}

// decodeBody is the one base64 rule of every function for a body the event marks
// isBase64Encoded: standard base64 with padding (RFC 4648 §4), which is what API Gateway sends,
// strictly (no line breaks, no URL-safe alphabet, no missing padding, no stray bits).
func decodeBody(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("line break in base64")
	}
	return base64.StdEncoding.Strict().DecodeString(s)
}

// LambdaHandler serves h to API Gateway HTTP API events (payload format 2.0). An event that does
// not make an HTTP request (a body that is not the base64 it claims to be, a path that is not a
// valid path, a method that is not an HTTP token) is answered with a 400 in the error envelope,
// as the local server answers a request it cannot parse: never a function error (API Gateway's
// bare 500), and without the event's path or body in the log.
func LambdaHandler(svc *service.Service, h http.Handler) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		req, problem := eventRequest(ctx, ev)
		if problem != "" {
			svc.Log().Warn("API Gateway event could not be decoded", "problem", problem)
			return errorResponse(svc, ev, undecodable(problem))
		}
		w := core.NewProxyResponseWriterV2()
		h.ServeHTTP(w, req)
		resp, err := w.GetProxyResponse()
		if err != nil {
			return errorResponse(svc, ev, err)
		}
		return resp, nil
	}
}

// errorResponse is err in the envelope as an API Gateway response; an invalid_request answers as
// apperr.Unread (400 rather than 422), since no request was read.
func errorResponse(svc *service.Service, ev events.APIGatewayV2HTTPRequest, err error) (events.APIGatewayV2HTTPResponse, error) {
	if e, ok := apperr.As(err); ok && e.Code == apperr.InvalidRequest {
		err = e.WithKind(apperr.Unread)
	}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	w := core.NewProxyResponseWriterV2()
	edge.Fail(w, req, svc, err)
	return w.GetProxyResponse()
}

// eventRequest is the HTTP request an event describes, as net/http would hand it to a handler:
// method, path and query, headers (as API Gateway joined them), cookies, body, the API's domain
// as Host, and the client's sourceIp as RemoteAddr. problem names what made the event unusable
// in words that quote none of it.
func eventRequest(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (*http.Request, string) {
	method := strings.ToUpper(ev.RequestContext.HTTP.Method)
	if !isToken(method) {
		return nil, "method is not an HTTP method"
	}
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	target := path
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	} else if len(ev.QueryStringParameters) > 0 {
		q := url.Values{}
		for k, v := range ev.QueryStringParameters {
			q.Add(k, v)
		}
		target += "?" + q.Encode()
	}
	// A request line holds no spaces or control bytes, so an HTTP server refuses a target with
	// them; so does this.
	if strings.IndexFunc(target, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return nil, "path or query is not a valid URL path"
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return nil, "path or query is not a valid URL path"
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		if body, err = decodeBody(ev.Body); err != nil {
			return nil, "body is not the base64 the event says it is"
		}
	}
	header := make(http.Header, len(ev.Headers)+1)
	for k, v := range ev.Headers {
		if k == "" || !isToken(k) || strings.ContainsAny(v, "\r\n\x00") {
			return nil, "headers are not valid HTTP headers"
		}
		header.Add(k, v)
	}
	if len(ev.Cookies) > 0 {
		header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	host := ev.RequestContext.DomainName
	if h := header.Get("Host"); h != "" {
		host = h
	}
	req := (&http.Request{
		Method: method, URL: u, RequestURI: u.RequestURI(), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, Body: http.NoBody, ContentLength: int64(len(body)), Host: host,
		RemoteAddr: ev.RequestContext.HTTP.SourceIP,
	}).WithContext(edge.WithRequestID(ctx, ev.RequestContext.RequestID))
	if len(body) > 0 {
		req.Body = readCloser{bytes.NewReader(body)}
	}
	return req, ""
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2), as methods and header names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x7f || c <= ' ' || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
