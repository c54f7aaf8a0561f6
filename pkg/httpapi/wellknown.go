package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/verify"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// healthProbeTimeout bounds the store probe of /health.
const healthProbeTimeout = 2 * time.Second

// RouteInfo describes one route for the index and the documents generated from it.
type RouteInfo struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Description string `json:"description"`
	Price       string `json:"price"`
}

// Routes lists the routes this build serves, in the order the index shows them.
func Routes() []RouteInfo {
	return []RouteInfo{
		{"POST", "/verify/schema", "Verify an agent's JSON output against a JSON Schema and rules; signed receipt.", "free allowance, then paid"},
		{"POST", "/verify/deliverable", "The same check under another name, byte-identical behaviour.", "shares the allowance"},
		{"GET", "/score/{agent_id}", "Signed trust score of an agent from its verification record; a signed no_data answer for unknown and test- ids.", "paid when a score exists; no_data free"},
		{"GET", "/reputation/{agent_id}", "An agent's signed pass/fail history, newest first (?limit=50&cursor=...).", "free"},
		{"POST", "/mcp", "MCP Streamable HTTP (stateless, JSON responses): tools verify_schema and get_verification_record.", "as their REST twins"},
		{"GET", "/health", "Liveness, version and key version.", "free"},
		{"GET", "/.well-known/agent-card.json", "Agent card with the public keys that sign receipts.", "free"},
		{"GET", "/.well-known/agent.json", "The same agent card at the legacy path.", "free"},
		{"GET", "/.well-known/x402", "x402 discovery manifest: live prices, networks, assets and payees.", "free"},
		{"GET", "/", "This index: HTML, or JSON with Accept: application/json.", "free"},
	}
}

// MountWellKnown adds the discovery routes to rt.
func (s *Service) MountWellKnown(rt *Router) {
	rt.Handle(http.MethodGet, "/", s.handleIndex)
	rt.Handle(http.MethodGet, "/health", s.handleHealth)
	rt.Handle(http.MethodGet, "/.well-known/agent-card.json", s.handleAgentCard)
	rt.Handle(http.MethodGet, "/.well-known/agent.json", s.handleAgentCard)
	rt.Handle(http.MethodGet, "/.well-known/x402", s.handleX402)
}

// manifester is the part of the payment side that builds /.well-known/x402.
type manifester interface {
	Manifest(ctx context.Context, items []x402.ManifestItem, freeAllowance map[string]any, instructions string) (map[string]any, error)
}

// PaidRoutes are the routes that take x402 payments, with their prices.
func (s *Service) PaidRoutes() []x402.ManifestItem {
	desc := "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt. Free allowance first."
	return []x402.ManifestItem{
		{Resource: s.BaseURL + "/verify/schema", Method: http.MethodPost, Description: desc, PriceUSD: s.Pricing.PriceVerify},
		{Resource: s.BaseURL + "/verify/deliverable", Method: http.MethodPost, Description: desc, PriceUSD: s.Pricing.PriceVerify},
		{Resource: s.BaseURL + "/score/{agent_id}", Method: http.MethodGet, Description: scoreDescription + " Free signed no_data answer for unknown agents.", PriceUSD: s.Pricing.PriceScore},
	}
}

// handleX402 is the x402 discovery manifest (SPEC §8.5), built from the same requirements as the
// 402 answers.
func (s *Service) handleX402(w http.ResponseWriter, r *http.Request) {
	free := map[string]any{
		"calls_per_client_per_day": s.Pricing.FreeCallsPerDay,
		"max_free_body_bytes":      s.Pricing.FreeMaxBody,
		"resets":                   "at 00:00 UTC",
		"shared_by":                []string{"POST /verify/schema", "POST /verify/deliverable", "MCP verify_schema"},
		"client":                   "identified by request IP address",
	}
	doc := map[string]any{"version": 1, "x402Version": 2, "resources": []string{}, "items": []any{}, "free_allowance": free,
		"instructions": "This deployment takes no payments: past the free allowance, calls are refused with 429 until the next UTC midnight."}
	if m, ok := s.Payer.(manifester); ok {
		var err error
		doc, err = m.Manifest(r.Context(), s.PaidRoutes(), free,
			"Send the request; past the free allowance the answer is 402 with a PAYMENT-REQUIRED header (x402 v2). "+
				"Sign one of its accepts and send it again with the PAYMENT-SIGNATURE header; the settlement comes back in PAYMENT-RESPONSE.")
		if err != nil {
			s.WriteError(w, r, err)
			return
		}
	}
	body, _ := json.Marshal(doc)
	w.Header().Set("Cache-Control", "max-age=60")
	writeJSON(w, http.StatusOK, body)
}

func (s *Service) handleHealth(w http.ResponseWriter, r *http.Request) {
	status, storeState := "ok", "ok"
	if s.Store == nil {
		storeState = "none"
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), healthProbeTimeout)
		defer cancel()
		if err := s.Store.Ping(ctx); err != nil {
			// The cause goes to the log only: it may name tables or endpoints.
			s.log().Warn("health: store probe failed", "err", err.Error())
			status, storeState = "degraded", "unavailable"
		}
	}
	body, _ := json.Marshal(map[string]string{
		"status": status, "version": verify.Version, "key_version": s.Keys.Current.Version, "store": storeState,
	})
	w.Header().Set("Cache-Control", "no-store")
	code := http.StatusOK
	if status != "ok" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, body)
}

// AgentCard is the A2A agent card with the attestation extension. Its public keys are every key
// in the ring, so receipts signed before a rotation stay verifiable.
func (s *Service) AgentCard() map[string]any {
	var pubs []map[string]string
	for _, k := range s.Keys.PublicKeys() {
		pubs = append(pubs, map[string]string{
			"keyVersion": k.Version, "algorithm": "Ed25519",
			"publicKey":         base64.StdEncoding.EncodeToString(k.Key),
			"publicKeyEncoding": "base64 of the raw 32-byte Ed25519 public key",
		})
	}
	return map[string]any{
		"name":        "Agent Output Verifier",
		"description": "Independent, deterministic verification of AI agents' JSON output against a JSON Schema and business rules, with Ed25519-signed receipts.",
		"version":     verify.Version,
		"url":         s.BaseURL,
		"supportedInterfaces": []map[string]string{
			{"url": s.BaseURL + "/verify/schema", "protocolBinding": "HTTP+JSON"},
		},
		"capabilities": map[string]any{
			"extensions": []map[string]any{{
				"uri":         "urn:json-schema-verifier:extension:attestation:v1",
				"description": "Every verification response is signed with Ed25519 over RFC 8785 canonical JSON.",
				"params": map[string]any{
					"publicKeys": pubs,
					"contexts": map[string]string{
						"verify": receipt.ContextVerify, "score": receipt.ContextScore, "reputation": receipt.ContextReputation,
					},
				},
			}},
		},
		"defaultInputModes":  []string{"application/json"},
		"defaultOutputModes": []string{"application/json"},
		"skills": []map[string]any{{
			"id": "verify_schema", "name": "Verify agent output",
			"description": "Check JSON output against a JSON Schema and cross-field rules; pass/fail with hints and a signed receipt.",
			"tags":        []string{"json-schema", "verification", "receipts"},
		}},
	}
}

func (s *Service) handleAgentCard(w http.ResponseWriter, r *http.Request) {
	body, _ := json.Marshal(s.AgentCard())
	w.Header().Set("Cache-Control", "max-age=300")
	writeJSON(w, http.StatusOK, body)
}

// indexPage renders the landing page. It is built with html.EscapeString rather than
// html/template: the template package's reflection keeps the linker from dropping unused methods,
// which costs the Lambda binary megabytes and cold-start time.
func indexPage(base string, routes []RouteInfo) string {
	e := html.EscapeString
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Agent Output Verifier</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; line-height: 1.5">
<h1>Agent Output Verifier</h1>
<p>Independent, deterministic checks of AI agents' JSON output against a JSON Schema and business rules.
Every answer is pass or fail with per-check ratios, repair hints and an Ed25519-signed receipt that anyone can verify offline.</p>
<h2>Try it</h2>
<pre>curl -s `)
	b.WriteString(e(base))
	b.WriteString(`/verify/schema -H 'Content-Type: application/json' -d '{
  "task_id": "demo-1",
  "expected_schema": {"type": "object", "required": ["total"], "properties": {"total": {"type": "number"}}},
  "submitted_output": {"total": 42}
}'</pre>
<h2>Routes</h2>
<table><tr><th>Method</th><th>Path</th><th>What</th><th>Price</th></tr>
`)
	for _, r := range routes {
		fmt.Fprintf(&b, "<tr><td>%s</td><td><code>%s</code></td><td>%s</td><td>%s</td></tr>\n", e(r.Method), e(r.Path), e(r.Description), e(r.Price))
	}
	b.WriteString(`</table>
<p>Public keys: <a href="`)
	b.WriteString(e(base))
	b.WriteString(`/.well-known/agent-card.json">agent card</a>.</p>
</body></html>
`)
	return b.String()
}

func (s *Service) handleIndex(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		body, _ := json.Marshal(map[string]any{
			"service": "Agent Output Verifier", "version": verify.Version, "base_url": s.BaseURL, "routes": Routes(),
		})
		writeJSON(w, http.StatusOK, body)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Vary", "Accept")
	io.WriteString(w, indexPage(s.BaseURL, Routes()))
}

// Handler serves every route on one handler: the local server's. extra mounts the routes of
// adapters this package does not import (the MCP server adds /mcp), so that the MCP SDK stays
// out of the binaries that do not serve it.
func (s *Service) Handler(extra ...func(*Router)) http.Handler {
	rt := NewRouter(s)
	s.MountVerify(rt)
	s.MountReputation(rt)
	s.MountScore(rt)
	s.MountWellKnown(rt)
	for _, mount := range extra {
		mount(rt)
	}
	return rt
}

// VerifyHandler serves the verify function's routes.
func (s *Service) VerifyHandler() http.Handler {
	rt := NewRouter(s)
	s.MountVerify(rt)
	s.MountReputation(rt)
	return rt
}

// WellKnownHandler serves the wellknown function's routes.
func (s *Service) WellKnownHandler() http.Handler {
	rt := NewRouter(s)
	s.MountWellKnown(rt)
	return rt
}
