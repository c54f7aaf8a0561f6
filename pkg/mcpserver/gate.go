package mcpserver

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// JSON-RPC 2.0 error codes the endpoint answers itself.
const (
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
)

// sdkMethods are the request methods the SDK's server answers (its serverMethodInfos, v1.8):
// a call of any other method is answered here with JSON-RPC's "Method not found", which the SDK
// would refuse as an unreadable HTTP request instead. TestKnownMethodsReachTheSDK holds the list
// to the SDK's.
var sdkMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/templates/list": true,
	"resources/read": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"logging/setLevel": true, "completion/complete": true, "server/discover": true, "subscriptions/listen": true,
}

// rpcCall is what the endpoint needs of one JSON-RPC request: its id (raw JSON), its method,
// whether it has params that are an object, and the tool a tools/call names (params.name).
type rpcCall struct {
	id           jsontext.Value
	method       string
	paramsObject bool
	tool         string
	toolNamed    bool // params.name was a string
}

// readCall reads body as a single JSON-RPC 2.0 call (a request with an id), skipping over the
// values it does not need; false for anything else (a notification, a batch, a malformed or
// duplicate-keyed message), which the SDK answers itself.
func readCall(body []byte) (rpcCall, bool) {
	var c rpcCall
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return c, false
	}
	var version string
	var hasMethod bool
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return c, false
		}
		// A token is valid until the next read: the name is copied out first.
		switch name := tok.String(); name {
		case "jsonrpc", "method":
			v, err := dec.ReadToken()
			if err != nil || v.Kind() != '"' {
				return c, false
			}
			if name == "jsonrpc" {
				version = v.String()
			} else {
				c.method, hasMethod = v.String(), true
			}
		case "id":
			v, err := dec.ReadValue()
			if err != nil || (v.Kind() != '"' && v.Kind() != '0') {
				return c, false
			}
			c.id = v.Clone()
		case "params":
			if c.paramsObject = dec.PeekKind() == '{'; !c.paramsObject {
				if err := dec.SkipValue(); err != nil {
					return c, false
				}
				break
			}
			if !readParams(dec, &c) {
				return c, false
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return c, false
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return c, false
	}
	if _, err := dec.ReadToken(); err == nil {
		return c, false // more than one value
	}
	return c, version == "2.0" && hasMethod && c.id != nil
}

// readParams reads a params object, keeping its name member when it is a string.
func readParams(dec *jsontext.Decoder, c *rpcCall) bool {
	if _, err := dec.ReadToken(); err != nil { // {
		return false
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return false
		}
		if tok.String() == "name" && dec.PeekKind() == '"' {
			v, err := dec.ReadToken()
			if err != nil {
				return false
			}
			c.tool, c.toolNamed = v.String(), true
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return false
		}
	}
	_, err := dec.ReadToken() // }
	return err == nil
}

// framingError refuses, before anything runs, a message the SDK would read differently from a
// strict reader: one that is not a single JSON value, or that repeats a member name in any object
// at any depth (the SDK's encoding/json keeps the last of a repeated name, so
// `"name":"verify_schema","name":"get_receipt"` would run get_receipt), and a batch without an
// MCP-Protocol-Version header (the SDK takes a missing header for 2025-03-26, the last version
// with batches, so leaving the header out would be all it takes to send one). Both are answered
// as a message the transport cannot read is: 400 invalid_request in the error envelope. Invalid
// UTF-8 and lone surrogates are left to the tools, whose answer names the argument, as REST's does.
func framingError(body []byte, h http.Header) error {
	var e *apperr.Error
	switch {
	case !jsontext.Value(body).IsValid(jsontext.AllowInvalidUTF8(true)):
		e = apperr.New(apperr.InvalidRequest, "The MCP message is not well-formed JSON: send one JSON-RPC 2.0 message with no member name repeated in any object, at any depth. Nothing was charged.")
	case bytes.TrimLeft(body, " \t\r\n")[0] == '[' && h.Get("MCP-Protocol-Version") == "":
		e = apperr.New(apperr.InvalidRequest, "A JSON-RPC batch needs an MCP-Protocol-Version header naming a version that has batches (2025-03-26 or earlier); send one message per request. Nothing was charged.")
	default:
		return nil
	}
	return e.WithKind(apperr.Unread)
}

// callError is the JSON-RPC error this endpoint answers a call with, before the SDK sees it:
// an unknown method, a tools/call without params, or one naming a tool this server does not have. The messages are fixed (never the caller's
// method name). Zero when the SDK should answer.
func callError(c rpcCall, tools []string) (code int, message string) {
	switch {
	case !sdkMethods[c.method]:
		return rpcMethodNotFound, "Method not found: this MCP server answers initialize, ping, tools/list and tools/call (and MCP's other standard methods)."
	case c.method == "tools/call" && !c.paramsObject:
		return rpcInvalidParams, `Invalid params: tools/call needs params, an object with the tool's name and its arguments: {"name": "verify_schema", "arguments": {...}}.`
	case c.method == "tools/call" && c.toolNamed && !slices.Contains(tools, c.tool):
		// The SDK's own answer would quote the caller's tool name; errors never echo input.
		return rpcInvalidParams, "Invalid params: unknown tool; this server has the tools " + strings.Join(tools, ", ") + " (tools/list describes them)."
	}
	return 0, ""
}

// writeRPCError answers a call with a JSON-RPC error response (HTTP 200: the transport carried the
// message; the error is JSON-RPC's), as JSON or as one event of a stream, as the client accepts.
func writeRPCError(w http.ResponseWriter, c rpcCall, code int, message string, sse bool) {
	msg, _ := jsontext.AppendQuote(nil, message)
	b := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, c.id, code, msg)
	w.Header().Set("Cache-Control", "no-store")
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// originOf is the serialized origin (RFC 6454) of an absolute http(s) URL: lower-case scheme and
// host, the port always written; false for anything else (Origin: null included).
func originOf(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme == "http" && port == "":
		port = "80"
	case scheme == "https" && port == "":
		port = "443"
	case scheme != "http" && scheme != "https":
		return "", false
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

// originAllowed is the Origin check the MCP transport requires of servers (against DNS
// rebinding): a request without Origin (every client outside a browser) passes; a browser's
// passes when it comes from the deployment's own origin (VERIFIER_BASE_URL's), or, on a
// loopback listener, from a loopback origin (a local page, which a rebinding page's origin
// never is). Anything else, a malformed or repeated Origin and Origin: null included, does not.
func (s *Server) originAllowed(r *http.Request) bool {
	values := r.Header.Values("Origin")
	if len(values) == 0 {
		return true
	}
	if len(values) > 1 {
		return false
	}
	u, err := url.Parse(values[0])
	origin, ok := originOf(values[0])
	if !ok || err != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	if s.publicOrigin != "" && origin == s.publicOrigin {
		return true
	}
	return onLoopbackListener(r) && isLoopback(u.Hostname())
}

// onLoopbackListener reports whether r came in on a loopback listener (the local server bound to
// 127.0.0.1 or ::1). Behind API Gateway there is no listener address.
func onLoopbackListener(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && isLoopback(local.String())
}
