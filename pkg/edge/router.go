// Package edge is the HTTP edge every HTTP transport of the service is mounted on: the router that
// answers unknown paths and methods in the §7 error envelope, the envelope writer, the reading of
// a request body within its limit, discovery documents with their ETag, and the client identity
// read from a request. REST (pkg/httpapi), MCP (pkg/mcpserver) and the discovery documents
// (pkg/discovery) share it, so none of them imports another.
package edge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/telemetry"
)

// route is one path with a handler per method. A path ending in "/" matches by prefix (for
// /reputation/{agent_id} and /score/{agent_id}); its templates name it in logs and metrics.
type route struct {
	path      string
	templates []string
	methods   map[string]http.HandlerFunc
}

// Router maps paths and methods to handlers and answers everything else in the error envelope:
// 404 for unknown paths, 405 with Allow for known paths and other methods.
type Router struct {
	svc    *service.Service
	routes []route
	obs    *telemetry.Observer
}

// NewRouter starts an empty router that logs with svc's logger and makes its errors safe with
// svc.PublicError. It writes request lines and no metrics until SetObserver.
func NewRouter(svc *service.Service) *Router {
	return &Router{svc: svc, obs: telemetry.NewObserver(svc.Log(), nil, nil)}
}

// SetObserver makes o write the router's request telemetry (the log line, metrics, EMF).
func (rt *Router) SetObserver(o *telemetry.Observer) { rt.obs = o }

// Observer is what writes the router's request telemetry.
func (rt *Router) Observer() *telemetry.Observer { return rt.obs }

// Handle registers h for method on pattern: a path, or a template whose variable part runs from
// its first "{" ("/score/{agent_id}", "/verifications/{verification_id}/attestation"), which
// matches every path with the prefix before it. Templates of one prefix share its handlers; they
// name the route in logs and metrics, the caller's own path never.
func (rt *Router) Handle(method, pattern string, h http.HandlerFunc) {
	path, template := pattern, ""
	if i := strings.IndexByte(pattern, '{'); i > 0 && pattern[i-1] == '/' {
		path, template = pattern[:i], pattern
	}
	for i := range rt.routes {
		if r := &rt.routes[i]; r.path == path {
			r.methods[method] = h
			if template != "" && !slices.Contains(r.templates, template) {
				r.templates = append(r.templates, template)
			}
			return
		}
	}
	r := route{path: path, methods: map[string]http.HandlerFunc{method: h}}
	if template != "" {
		r.templates = []string{template}
	}
	rt.routes = append(rt.routes, r)
}

func (rt *Router) match(path string) *route {
	for i := range rt.routes {
		r := &rt.routes[i]
		if r.path == path || (r.path != "/" && strings.HasSuffix(r.path, "/") && strings.HasPrefix(path, r.path) && len(path) > len(r.path)) {
			return r
		}
	}
	return nil
}

// ServeHTTP dispatches, answers the request id in X-Request-Id, writes the request's telemetry
// once (SPEC §17: no payloads, IPs or keys) and recovers from panics into a 500 envelope.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: 200}
	sw.ev = telemetry.Event{RequestID: requestID(r.Context()), Method: methodLabel(r.Method), Route: rt.routeLabel(r.URL.Path)}
	w.Header().Set("X-Request-Id", sw.ev.RequestID)
	defer func() {
		if p := recover(); p != nil {
			rt.svc.Log().Error("panic", "request_id", sw.ev.RequestID, "route", sw.ev.Route, "panic", slog.AnyValue(p).String())
			Fail(sw, r, rt.svc, service.ErrPanic)
		}
		sw.ev.Status, sw.ev.Duration = sw.status, time.Since(start)
		rt.obs.Observe(&sw.ev)
	}()
	rt.serve(sw, r)
}

// requestIDKey is the context key of a request id the platform gave (API Gateway's).
type requestIDKey struct{}

// WithRequestID is ctx carrying the platform's id of its request (on Lambda, API Gateway's
// requestContext.requestId), which the router logs and answers instead of making one.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// Local request ids are a random per-process prefix and a counter: unique, cheap, and never
// taken from the caller (an X-Request-Id sent in would let anyone write into the logs).
var (
	requestIDPrefix = func() string {
		var b [6]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:]) + "-"
	}()
	requestSeq atomic.Uint64
)

func requestID(ctx context.Context) string {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok && id != "" {
		return id
	}
	return requestIDPrefix + strconv.FormatUint(requestSeq.Add(1), 36)
}

// EventOf is the telemetry event of the request w answers, for a transport to note its outcome
// in; nil when w is not a router's.
func EventOf(w http.ResponseWriter) *telemetry.Event {
	for {
		switch x := w.(type) {
		case *statusWriter:
			return &x.ev
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// Note records the service outcome a transport rendered to w in the request's telemetry.
func Note(w http.ResponseWriter, o service.Outcome) {
	if ev := EventOf(w); ev != nil {
		ev.Note(o)
	}
}

// CORS: browsers may call every route; the payment and allowance headers must be readable and
// PAYMENT-SIGNATURE sendable (SPEC §8.3), and so must the discovery documents' ETag and the API
// catalog's Link (RFC 9727).
const (
	corsExpose = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, Free-Allowance-Remaining, Free-Allowance-Limit, Free-Allowance-Resets, Retry-After, ETag, Link"
	corsAllow  = "Content-Type, Accept, PAYMENT-SIGNATURE, Mcp-Session-Id, Mcp-Protocol-Version"
)

func (rt *Router) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", corsExpose)
	ro := rt.match(r.URL.Path)
	if ro == nil {
		Fail(w, r, rt.svc, apperr.New(apperr.NotFound, "No route matches this path. GET / lists every route."))
		return
	}
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		methods := make([]string, 0, len(ro.methods))
		for m := range ro.methods {
			methods = append(methods, m)
		}
		slices.Sort(methods)
		h.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
		h.Set("Access-Control-Allow-Headers", corsAllow)
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	handler, ok := ro.methods[r.Method]
	if !ok && r.Method == http.MethodHead {
		handler, ok = ro.methods[http.MethodGet]
	}
	if !ok {
		allow := make([]string, 0, len(ro.methods))
		for m := range ro.methods {
			allow = append(allow, m)
		}
		slices.Sort(allow)
		h.Set("Allow", strings.Join(allow, ", "))
		Fail(w, r, rt.svc, apperr.New(apperr.MethodNotAllowed, "This route does not accept "+safeMethod(r.Method)+"; see the Allow header."))
		return
	}
	handler(w, r)
}

// safeMethod keeps a method name printable and short, since it is caller input.
func safeMethod(m string) string {
	if len(m) > 16 || strings.IndexFunc(m, func(c rune) bool { return c < 'A' || c > 'Z' }) >= 0 {
		return "this method"
	}
	return m
}

// routeLabel names a request's route for logs: the registered path it matched or, for a prefix
// route, its template (the one whose fixed ending, after its last variable, is the longest the path has), and "(no route)" for
// a path that matches none. The caller's own path never reaches the log.
func (rt *Router) routeLabel(path string) string {
	ro := rt.match(path)
	if ro == nil {
		return "(no route)"
	}
	label, ending := ro.path, -1
	for _, t := range ro.templates {
		end := t[strings.LastIndexByte(t, '}')+1:]
		if strings.HasSuffix(path, end) && len(end) > ending {
			label, ending = t, len(end)
		}
	}
	return label
}

// methodLabel names a request's method for logs: one of HTTP's own, or "(other)", since the
// method is caller input too.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "(other)"
}

type statusWriter struct {
	http.ResponseWriter
	status int
	ev     telemetry.Event // held here, so a request's telemetry costs no allocation of its own
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer (to flush a streamed
// answer, such as an MCP event stream).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteJSON writes a JSON body with status.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// WriteError writes e in the §7 envelope, with Retry-After when it is retryable after a wait.
func WriteError(w http.ResponseWriter, e *apperr.Error) {
	if e.Retryable && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.Header().Set("Cache-Control", "no-store")
	if ev := EventOf(w); ev != nil {
		ev.NoteError(e)
	}
	b, _ := json.Marshal(e)
	WriteJSON(w, e.Status(), b)
}

// Fail writes err as WriteError does, made safe by svc.PublicError: an error that is not an
// *apperr.Error is answered as a generic 500 and its cause logged under the request's path.
func Fail(w http.ResponseWriter, r *http.Request, svc *service.Service, err error) {
	WriteError(w, svc.PublicError(r.URL.Path, err))
}
