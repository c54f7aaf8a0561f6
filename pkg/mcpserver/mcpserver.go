// Package mcpserver serves the verifier as an MCP server (SPEC §10): Streamable HTTP at /mcp with
// the official Go SDK, stateless and answering plain JSON, its tools calling the same operations
// of pkg/service as the REST routes.
package mcpserver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/telemetry"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// rpcOverhead is what a tools/call request may carry beyond the arguments' own limit (the
// verify body limit): the JSON-RPC envelope, the tool name and a payment in _meta, which is at
// most x402.MaxHeaderBytes.
const rpcOverhead = x402.MaxHeaderBytes + 16<<10

// Server is the MCP endpoint over one Service. Build it once per process; it is safe for
// concurrent use.
//
// It is stateless so that every request stands alone on Lambda. Its tools, verify_schema and
// get_verification_record, call the service's Verify and Score as the REST routes do: the same
// admission, checks and signed answers, the same free allowance per client IP, the same x402
// payments (over the MCP transport of §8.4) and the same history. The tools only translate a call
// to the service and render its outcome as a tool result; the package imports no other transport
// (the router and error envelope are pkg/edge's). It is the only package that imports the MCP
// SDK; the local server mounts it through httpapi.Handler's extra mounts and functions/mcp serves
// it alone, so the other Lambda binaries never link the SDK.
type Server struct {
	svc *service.Service
	// jsonHandler answers with application/json (every client that accepts it); sseHandler
	// answers with a one-event text/event-stream, for clients that accept nothing else. Both are
	// set before ready is closed.
	jsonHandler, sseHandler http.Handler
	ready                   chan struct{}
	// publicHost is the host of the configured public base URL, which a reverse proxy in front of
	// a loopback-bound local server legitimately sends as Host.
	publicHost string
	// publicOrigin is the public base URL's origin, the one browsers' pages may call from.
	publicOrigin string
	// maxMessage is the largest JSON-RPC message the endpoint reads: the verify body limit and
	// rpcOverhead.
	maxMessage int64
	// tools are the names of the tools addTools registers (toolNames).
	tools []string
}

// New builds the MCP server over svc. It reads no request and touches no store, so it can run at
// cold start. The SDK's part is built on a goroutine of its own, which the first request waits
// for: registering the tools decodes their JSON schemas only to check them, work of a Lambda
// function's cold start that can overlap the runtime's fetching of the first event instead of
// preceding it.
func New(svc *service.Service) *Server {
	s := &Server{svc: svc, ready: make(chan struct{})}
	if u, err := url.Parse(svc.BaseURL()); err == nil {
		s.publicHost = strings.ToLower(u.Hostname())
	}
	s.publicOrigin, _ = originOf(svc.BaseURL())
	s.maxMessage = svc.MaxBody() + rpcOverhead
	s.tools = toolNames(svc)
	go func() {
		defer close(s.ready)
		s.build()
	}()
	return s
}

// build makes the SDK server with the tools and its two transports.
func (s *Server) build() {
	srv := mcp.NewServer(&mcp.Implementation{
		Name:    "agent-output-verifier",
		Title:   "Agent Output Verifier",
		Version: wire.Version,
	}, &mcp.ServerOptions{
		Instructions: instructions(s.svc.FreeOnly()),
		// The SDK's log lines may quote protocol messages, and callers' data never goes to the
		// log; the router logs one line per request.
		Logger: slog.New(slog.DiscardHandler),
	})
	s.addTools(srv)
	for _, sse := range []bool{false, true} {
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			Stateless:    true,
			JSONResponse: !sse,
			// Checked in ServeHTTP instead, where the public base URL's host is known: the SDK's
			// own check refuses every non-loopback Host on a loopback connection, which is
			// exactly what a reverse proxy in front of the local server sends.
			DisableLocalhostProtection: true,
			MaxRequestBodyBytes:        s.maxMessage,
			Logger:                     slog.New(slog.DiscardHandler),
		})
		if sse {
			s.sseHandler = h
		} else {
			s.jsonHandler = h
		}
	}
}

// instructions tell a model what the server is for and how it is paid; a free-only deployment
// (no payee) says that nothing can be paid.
func instructions(freeOnly bool) string {
	const what = "Agent Output Verifier: an independent, deterministic checker for JSON produced by AI agents. " +
		"Call verify_schema with the agent's output, a JSON Schema and optional business rules; the answer is pass or fail " +
		"with per-check ratios, repair hints and an Ed25519-signed receipt anyone can verify offline (public keys in " +
		"/.well-known/agent-card.json). get_verification_record returns an agent's signed trust score. "
	if freeOnly {
		return what + "Calls are free up to a daily allowance per client (shared with the REST API); this deployment takes no " +
			"payments, so past it a call returns isError with free_trial_exhausted (retryable after the next UTC midnight)."
	}
	return what + "Calls are free up to a daily allowance per client (shared with the REST API); past it a call returns isError with an x402 v2 PaymentRequired " +
		"as structuredContent: sign one of its accepts and call again with the PaymentPayload object in params._meta[\"x402/payment\"]; " +
		"the settlement comes back in result._meta[\"x402/payment-response\"]."
}

// Mount adds POST /mcp to rt. The router answers other methods with 405 and Allow (the stateless
// transport has no GET stream and no session to DELETE) and CORS preflights.
func (s *Server) Mount(rt *edge.Router) { rt.Handle(http.MethodPost, Path, s.ServeHTTP) }

// Handler serves /mcp alone, in the router that answers every other path and method in the error
// envelope: functions/mcp's handler.
func Handler(svc *service.Service) *edge.Router {
	rt := edge.NewRouter(svc)
	New(svc).Mount(rt)
	return rt
}

// callKey is the context key of what the tools need of their HTTP request and the SDK does not
// pass on: the caller's id (service.CallerID of edge.ClientIdentity), for the free allowance and history, and
// the request's telemetry event, for the tool call's real outcome.
type callKey struct{}

type call struct {
	caller string
	event  *telemetry.Event // nil outside the router
}

// caller is the caller id ServeHTTP put in ctx; UnknownClient's when there is none.
func (s *Server) caller(ctx context.Context) string {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c.caller
	}
	return s.svc.CallerID(service.UnknownClient)
}

// noteTool records a tool call's outcome as its request's: the route names the tool, and an
// isError result is logged as the error it is, not as the transport's 200.
func noteTool(ctx context.Context, tool string, o service.Outcome) {
	if c, ok := ctx.Value(callKey{}).(*call); ok && c.event != nil {
		c.event.Route = Path + " " + tool
		c.event.Note(o)
	}
}

// ServeHTTP is POST /mcp: it checks the Host and the Origin, reads the message within its limit,
// answers a call of an unknown method or a tools/call without params with JSON-RPC's error,
// records the client identity for the tools, settles the content type the answer will have and
// hands the request to the SDK, whose transport-level refusals it rewrites into the error
// envelope.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r) {
		edge.Fail(w, r, s.svc, apperr.New(apperr.Forbidden,
			"This MCP endpoint answers on a loopback connection only for a loopback Host or the configured public host (DNS rebinding protection)."))
		return
	}
	if !s.originAllowed(r) {
		edge.Fail(w, r, s.svc, apperr.New(apperr.Forbidden,
			"This MCP endpoint does not accept requests from this Origin (DNS rebinding protection): a browser page may call it only from this deployment's own origin; clients outside a browser send no Origin."))
		return
	}
	// The message is read here, within its limit, so that a message over it is the 413 that
	// names the limit and a call the SDK cannot dispatch gets JSON-RPC's error rather than an
	// HTTP refusal.
	body, err := edge.ReadBody(r, s.maxMessage)
	if err != nil {
		edge.Fail(w, r, s.svc, err)
		return
	}
	if err := framingError(body, r.Header); err != nil {
		edge.Fail(w, r, s.svc, err)
		return
	}
	jsonOK, sseOK := accepts(r.Header.Values("Accept"))
	sse := sseOK && !jsonOK
	if c, ok := readCall(body); ok {
		if code, message := callError(c, s.tools); code != 0 {
			writeRPCError(w, c, code, message, sse)
			return
		}
	}
	// The client is the request's, on Lambda too: the adapter puts API Gateway's sourceIp in
	// RemoteAddr, and the SDK runs the tool with a context derived from this request's.
	ev := edge.EventOf(w)
	if ev != nil {
		ev.Transport = telemetry.MCP
	}
	ctx := context.WithValue(r.Context(), callKey{}, &call{caller: s.svc.CallerID(edge.ClientIdentity(r, s.svc.TrustedProxyHops())), event: ev})
	r = r.Clone(ctx)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	<-s.ready
	h := s.jsonHandler
	if sse {
		h = s.sseHandler
	}
	// The SDK refuses any Accept that does not list both types, although the answer's type is
	// decided above; many clients send only one of them, or none.
	r.Header.Set("Accept", "application/json, text/event-stream")
	h.ServeHTTP(&envelopeWriter{ResponseWriter: w, svc: s.svc, r: r, limit: s.maxMessage}, r)
}

// accepts reports which of the transport's two answer types an Accept header allows. No Accept
// at all allows both.
func accepts(values []string) (jsonOK, sseOK bool) {
	if len(values) == 0 {
		return true, true
	}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

// hostAllowed is the MCP transport's DNS rebinding protection: a request that reached a loopback
// listener must name a loopback host or the public base URL's host. Behind API Gateway (Lambda)
// there is no listener address and API Gateway chose the host, so nothing is checked.
func (s *Server) hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	host := hostname(r.Host)
	return isLoopback(host) || (s.publicHost != "" && host == s.publicHost)
}

// hostname is a Host header's name without port or IPv6 brackets, lower-cased.
func hostname(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// isLoopback reports whether addr (host or host:port) is localhost or a loopback IP.
func isLoopback(addr string) bool {
	h := hostname(addr)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// envelopeWriter turns the SDK's plain-text refusals (a malformed JSON-RPC message, a wrong
// content type, an unsupported protocol version, a body over the limit) into the §7 error
// envelope, with fixed messages: the SDK's own texts may quote the request. JSON-RPC answers
// pass through untouched.
type envelopeWriter struct {
	http.ResponseWriter
	svc      *service.Service
	limit    int64 // the message limit a 413 names
	r        *http.Request
	replaced bool
}

func (w *envelopeWriter) WriteHeader(code int) {
	if code < 400 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.replaced = true
	if code >= 500 {
		w.svc.Log().Error("mcp transport failed", "route", Path, "status", code)
	}
	w.Header().Del("X-Content-Type-Options")
	edge.WriteError(w.ResponseWriter, transportError(code, w.limit))
}

func (w *envelopeWriter) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets the SDK flush an event stream through the wrapper.
func (w *envelopeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// transportError is the envelope for an HTTP status the SDK's transport answered with (v1.8.0:
// 400, 403, 404, 405, 413, 415 and 500); limit is the message limit a 413 names. The envelope's
// code and kind give that status back; a status of 500 or more is internal_error's 500, any other
// refusal invalid_request's apperr.Unread, 400.
func transportError(status int, limit int64) *apperr.Error {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return apperr.TooLarge(limit)
	case http.StatusUnsupportedMediaType:
		return apperr.New(apperr.InvalidRequest, "Send the JSON-RPC message with Content-Type: application/json. Nothing was charged.").WithKind(apperr.UnsupportedMedia)
	case http.StatusForbidden:
		return apperr.New(apperr.Forbidden, "The MCP transport refused this request. Nothing was charged.")
	case http.StatusNotFound:
		return apperr.New(apperr.NotFound, "No MCP session matches this request: the endpoint is stateless, send no Mcp-Session-Id.")
	case http.StatusMethodNotAllowed:
		return apperr.New(apperr.MethodNotAllowed, "The MCP endpoint accepts POST only; see the Allow header.")
	}
	if status >= 500 {
		e := apperr.New(apperr.Internal, "The MCP request could not be completed. Nothing was charged; try again.")
		e.RetryAfter = 1
		return e
	}
	return apperr.New(apperr.InvalidRequest, "The MCP request could not be read: POST one JSON-RPC 2.0 message with Content-Type: application/json and a supported MCP-Protocol-Version. Nothing was charged.").WithKind(apperr.Unread)
}
