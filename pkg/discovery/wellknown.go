package discovery

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// RouteInfo describes one route for the index and the documents generated from it (OpenAPI,
// llms.txt, the template's routes).
type RouteInfo struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Description string `json:"description"`
	Price       string `json:"price"`
}

// Routes lists every route of the service, in the order the index and the documents show them.
// The local server serves all of them; each Lambda function serves its group (template.yaml).
func Routes() []RouteInfo {
	return []RouteInfo{
		{"POST", "/verify/schema", "Verify an agent's JSON output against a JSON Schema and rules; signed receipt.", "free allowance, then paid"},
		{"POST", "/verify/deliverable", "The same check under another name, byte-identical behaviour.", "shares the allowance"},
		{"GET", "/score/{agent_id}", "Signed trust score of an agent from its verification record; a signed no_data answer for unknown and test- ids.", "paid when a score exists; no_data free"},
		{"GET", "/reputation/{agent_id}", "An agent's signed pass/fail history, newest first (?limit=50&cursor=...).", "free"},
		{"GET", "/verifications/{verification_id}", "The stored record of a verification (hashes, verdict, settlement) and its inclusion proof in the receipt log.", "free"},
		{"GET", "/verifications/{verification_id}/attestation", "The stored record as a DSSE-signed in-toto Statement v1 with the SLSA VSA v1 predicate.", "free"},
		{"GET", "/log/checkpoint", "The receipt log's latest signed checkpoint (C2SP tlog-checkpoint).", "free"},
		{"GET", "/log/tile/{height}/{level}/{n}", "A full tile of the receipt log (C2SP tlog-tiles, height 8; level data: the leaves).", "free"},
		{"GET", "/log/tile/{height}/{level}/{n}.p/{width}", "A partial tile of the receipt log: its first width entries.", "free"},
		{"POST", "/mcp", "MCP Streamable HTTP (stateless, JSON responses): tools verify_schema, get_verification_record and get_receipt.", "as their REST twins"},
		{"GET", "/health", "Liveness, version and key version.", "free"},
		{"GET", "/.well-known/agent-card.json", "A2A agent card: skills, the public keys that sign receipts, request-hash test vectors, x402 networks and prices.", "free"},
		{"GET", "/.well-known/agent.json", "The same agent card at the legacy path.", "free"},
		{"GET", "/.well-known/x402", "x402 discovery manifest: live prices, networks, assets and payees.", "free"},
		{"GET", "/.well-known/did.json", "did:web DID document: every public key that signs x402 offers and receipts (kid did:web:<host>#<key version>).", "free"},
		{"GET", "/.well-known/api-catalog", "RFC 9727 API catalog (linkset): where the OpenAPI document, the docs and the status are.", "free"},
		{"GET", "/openapi.json", "OpenAPI 3.1 description of every route.", "free"},
		{"GET", "/docs", "Interactive API documentation (no external assets).", "free"},
		{"GET", "/llms.txt", "Summary for language models: endpoints, free allowance, pricing, errors, receipts.", "free"},
		{"GET", "/llms-full.txt", "llms.txt with complete worked examples (request, response, verifying the receipt).", "free"},
		{"GET", "/", "This index: HTML, or JSON with Accept: application/json.", "free"},
	}
}

// MountWellKnown adds the index, /health, the agent card, the x402 manifest and the DID document to
// rt: what every server that signs needs for its keys to be found. Documents.Mount mounts them with
// the larger documents (OpenAPI, the docs viewer, llms.txt, the API catalog).
func MountWellKnown(rt *edge.Router, svc *service.Service) {
	s := wellKnown{svc}
	rt.Handle(http.MethodGet, "/", s.handleIndex)
	rt.Handle(http.MethodGet, "/health", s.handleHealth)
	rt.Handle(http.MethodGet, "/.well-known/agent-card.json", s.handleAgentCard)
	rt.Handle(http.MethodGet, "/.well-known/agent.json", s.handleAgentCard)
	rt.Handle(http.MethodGet, "/.well-known/x402", s.handleX402)
	rt.Handle(http.MethodGet, x402.DIDDocumentPath, s.handleDIDDocument)
}

// handleDIDDocument is the deployment's did:web DID document (SPEC §16): the key ring's public
// keys, current first and every earlier one kept, under the ids the offer-receipt JWS kid names,
// so that an x402 client resolves a kid to its key as did:web says, from the configured base URL.
func (s wellKnown) handleDIDDocument(w http.ResponseWriter, r *http.Request) {
	doc, err := x402.DIDDocument(s.svc.BaseURL(), s.svc.Keys().PublicKeys())
	if err != nil {
		edge.Fail(w, r, s.svc, err)
		return
	}
	body, err := json.Marshal(doc)
	if err != nil {
		edge.Fail(w, r, s.svc, err)
		return
	}
	edge.WriteDocument(w, r, "application/json", "max-age=300", body)
}

// wellKnown serves the documents every server that signs publishes, from one service.
type wellKnown struct{ svc *service.Service }

// manifester is the part of the payment side that builds /.well-known/x402.
type manifester interface {
	Manifest(ctx context.Context, items []x402.ManifestItem, freeAllowance map[string]any, instructions string) (map[string]any, error)
}

// PaidRoutes are the routes that take x402 payments, with their prices.
func PaidRoutes(svc *service.Service) []x402.ManifestItem {
	base, p := svc.BaseURL(), svc.Pricing()
	desc := "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt. Free allowance first."
	// Paid verifications are idempotent under an x402 payment identifier (SPEC §16).
	idem := map[string]any{x402.ExtPaymentIdentifier: x402.PaymentIdentifierExtension()}
	return []x402.ManifestItem{
		{Resource: base + "/verify/schema", Method: http.MethodPost, Description: desc, PriceUSD: p.PriceVerify, Extensions: idem},
		{Resource: base + "/verify/deliverable", Method: http.MethodPost, Description: desc, PriceUSD: p.PriceVerify, Extensions: idem},
		{Resource: base + "/score/{agent_id}", Method: http.MethodGet, Description: service.ScoreDescription + " Free signed no_data answer for unknown agents.", PriceUSD: p.PriceScore},
	}
}

// handleX402 is the x402 discovery manifest (SPEC §8.5), built from the same requirements as the
// 402 answers.
func (s wellKnown) handleX402(w http.ResponseWriter, r *http.Request) {
	free := map[string]any{
		"calls_per_client_per_day": s.svc.Pricing().FreeCallsPerDay,
		"max_free_body_bytes":      s.svc.Pricing().FreeMaxBody,
		"resets":                   "at 00:00 UTC",
		"shared_by":                []string{"POST /verify/schema", "POST /verify/deliverable", "MCP verify_schema"},
		"client":                   service.ClientRule,
	}
	doc := map[string]any{"version": 1, "x402Version": 2, "resources": []string{}, "items": []any{}, "free_allowance": free,
		"instructions": "This deployment takes no payments: past the free allowance, calls are refused with 429 until the next UTC midnight."}
	if m, ok := s.svc.Payer().(manifester); ok {
		var err error
		doc, err = m.Manifest(r.Context(), PaidRoutes(s.svc), free,
			"Send the request; past the free allowance the answer is 402 with a PAYMENT-REQUIRED header (x402 v2). "+
				"Sign one of its accepts and send it again with the PAYMENT-SIGNATURE header; the settlement comes back in PAYMENT-RESPONSE. "+
				"Every 402 answer carries signed offers (reused while valid for at least 60 s) and every paid settlement a signed receipt (x402 offer-receipt extension, JWS; keys at /.well-known/did.json).")
		if err != nil {
			edge.Fail(w, r, s.svc, err)
			return
		}
	}
	body, _ := json.Marshal(doc)
	w.Header().Set("Cache-Control", "max-age=60")
	edge.WriteJSON(w, http.StatusOK, body)
}

func (s wellKnown) handleHealth(w http.ResponseWriter, r *http.Request) {
	h := s.svc.Health(r.Context())
	state := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "unavailable"
	}
	status := "ok"
	if !h.OK() {
		status = "degraded"
	}
	body, _ := json.Marshal(map[string]string{
		"status": status, "version": wire.Version, "key_version": s.svc.Keys().Current.Version,
		"store": state(h.Store), "key": state(h.Key),
	})
	w.Header().Set("Cache-Control", "no-store")
	code := http.StatusOK
	if status != "ok" {
		code = http.StatusServiceUnavailable
	}
	edge.WriteJSON(w, code, body)
}

// The agent card's extension URIs. The attestation one starts with receipt.CardExtensionPrefix,
// which is how verifiers find the keys.
const (
	cardAttestationExtension = receipt.CardExtensionPrefix + "v1"
	cardX402Extension        = "urn:json-schema-verifier:extension:x402:v1"
	// a2aProtocolVersion is the A2A version whose AgentCard this card follows.
	a2aProtocolVersion = "1.0"
)

// Card is the A2A v1.0 AgentCard (a2a.proto's AgentCard, in its JSON form), in the field order
// of the proto. Every field v1.0 marks REQUIRED is set.
type Card struct {
	Name                string          `json:"name"`
	Description         string          `json:"description"`
	SupportedInterfaces []CardInterface `json:"supportedInterfaces"`
	Version             string          `json:"version"`
	DocumentationURL    string          `json:"documentationUrl"`
	Capabilities        CardCapability  `json:"capabilities"`
	DefaultInputModes   []string        `json:"defaultInputModes"`
	DefaultOutputModes  []string        `json:"defaultOutputModes"`
	Skills              []CardSkill     `json:"skills"`
}

// CardInterface is an A2A AgentInterface: where one binding is served. The service speaks a REST
// API described by OpenAPI and MCP, not A2A's own JSON-RPC, gRPC or HTTP+JSON task bindings, so
// it declares them as custom bindings (A2A §12.7) that an A2A client will not mistake for its own.
type CardInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// CardCapability is an A2A AgentCapabilities.
type CardCapability struct {
	Streaming         bool            `json:"streaming"`
	PushNotifications bool            `json:"pushNotifications"`
	ExtendedAgentCard bool            `json:"extendedAgentCard"`
	Extensions        []CardExtension `json:"extensions"`
}

// CardExtension is an A2A AgentExtension.
type CardExtension struct {
	URI         string         `json:"uri"`
	Description string         `json:"description"`
	Required    bool           `json:"required"`
	Params      map[string]any `json:"params"`
}

// CardSkill is an A2A AgentSkill.
type CardSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// paymentConfig is the part of the payment side that names its configuration without asking the
// facilitator (x402.Payments has it), for the card's x402 extension.
type paymentConfig interface{ Config() x402.Config }

// AgentCard is the A2A v1.0 agent card with the attestation and x402 extensions (SPEC §11). Its
// public keys are every key in the ring, so receipts signed before a rotation stay verifiable;
// its request-hash test vectors are computed by this build's decoder. It is built for each
// request (it is small), so it always shows the keys the service signs with now.
func AgentCard(svc *service.Service) (*Card, error) {
	s := wellKnown{svc}
	pubs := []map[string]string{}
	for _, k := range s.svc.Keys().PublicKeys() {
		pubs = append(pubs, map[string]string{
			"keyVersion": k.Version, "algorithm": receipt.Algorithm,
			"publicKey":         base64.StdEncoding.EncodeToString(k.Key),
			"publicKeyEncoding": "base64 of the raw 32-byte Ed25519 public key",
		})
	}
	vectors, err := wire.RequestHashVectors()
	if err != nil {
		return nil, fmt.Errorf("agent card: %w", err)
	}
	return &Card{
		Name:        "Agent Output Verifier",
		Description: "Independent, deterministic verification of AI agents' JSON output against a JSON Schema and business rules, with Ed25519-signed receipts that anyone can verify offline.",
		SupportedInterfaces: []CardInterface{
			{URL: s.svc.BaseURL(), ProtocolBinding: "OPENAPI", ProtocolVersion: a2aProtocolVersion},
			{URL: s.svc.BaseURL() + "/mcp", ProtocolBinding: "MCP", ProtocolVersion: a2aProtocolVersion},
		},
		Version:          wire.Version,
		DocumentationURL: s.svc.BaseURL() + "/docs",
		Capabilities: CardCapability{Extensions: []CardExtension{
			{
				URI: cardAttestationExtension,
				Description: "Every verification, trust score and reputation answer is signed with Ed25519 over the RFC 8785 (JCS) bytes of " +
					`{"context","algorithm","key_version","attested_at","response"}; verify it offline with these keys.`,
				Params: map[string]any{
					"publicKeys":       pubs,
					"algorithm":        receipt.Algorithm,
					"canonicalization": "RFC 8785 (JCS)",
					"hashAlgorithm":    "SHA-256",
					"contexts": map[string]string{
						"verify": receipt.ContextVerify, "score": receipt.ContextScore, "reputation": receipt.ContextReputation,
					},
					"requestHashTestVectors": vectors,
					"transparencyLog":        s.transparencyLog(),
				},
			},
			s.x402Extension(),
		}},
		DefaultInputModes:  []string{"application/json"},
		DefaultOutputModes: []string{"application/json"},
		Skills: []CardSkill{
			{
				ID: "verify_schema", Name: "Verify agent output",
				Description: "Check JSON output against a JSON Schema and cross-field rules (sums, ranges, uniqueness, references); " +
					"pass or fail with per-check ratios, repair hints and a signed receipt. POST /verify/schema or the MCP tool verify_schema.",
				Tags:     []string{"json-schema", "verification", "receipts", "invoices"},
				Examples: []string{"Check that this invoice matches its schema and that the line items sum to the total before paying."},
			},
			{
				ID: "get_verification_record", Name: "Agent trust score",
				Description: "An agent's signed trust score from its verification record. GET /score/{agent_id} or the MCP tool get_verification_record.",
				Tags:        []string{"reputation", "trust-score"},
			},
			{
				ID: "reputation", Name: "Agent verification history",
				Description: "An agent's signed pass/fail history, newest first. GET /reputation/{agent_id}, free.",
				Tags:        []string{"reputation", "history"},
			},
		},
	}, nil
}

// transparencyLog is the attestation extension's params.transparencyLog (SPEC §15): the log's
// origin, its key as note.NewVerifier reads it, and where its checkpoint is; nil where no log is
// kept.
func (s wellKnown) transparencyLog() map[string]string {
	if !s.svc.LogEnabled() {
		return nil
	}
	origin, vkey := s.svc.LogIdentity()
	return map[string]string{"origin": origin, "verifierKey": vkey, "checkpointUrl": s.svc.BaseURL() + "/log/checkpoint"}
}

// x402Extension describes how the paid routes are paid: x402 v2 over HTTP headers and over MCP's
// _meta, on the configured networks at the configured prices. It names networks without asking
// the facilitator; /.well-known/x402 has the full requirements.
func (s wellKnown) x402Extension() CardExtension {
	networks := []map[string]string{}
	if pc, ok := s.svc.Payer().(paymentConfig); ok {
		cfg := pc.Config()
		for _, n := range cfg.Networks {
			asset, _ := x402.USDC(n)
			payTo := cfg.PayToEVM
			if strings.HasPrefix(n, "solana:") {
				payTo = cfg.PayToSolana
			}
			networks = append(networks, map[string]string{"network": n, "asset": asset, "assetName": "USDC", "payTo": payTo})
		}
	}
	prices := []map[string]string{}
	if !s.svc.FreeOnly() {
		for _, it := range PaidRoutes(s.svc) {
			prices = append(prices, map[string]string{"resource": it.Resource, "method": it.Method, "priceUSD": it.PriceUSD})
		}
	}
	desc := "Past the free allowance, verifications and trust scores are paid with x402 v2: a 402 answer carries PAYMENT-REQUIRED, the " +
		"client pays with PAYMENT-SIGNATURE (MCP: _meta[\"x402/payment\"]). This is x402 over HTTP and MCP, not A2A's task payment flow."
	if s.svc.FreeOnly() {
		desc = "This deployment takes no payments: past the free allowance, calls are refused with 429 until the next UTC midnight."
	}
	return CardExtension{
		URI: cardX402Extension, Description: desc,
		Params: map[string]any{
			"x402Version": 2,
			"networks":    networks,
			"prices":      prices,
			"freeAllowance": map[string]any{
				"callsPerClientPerDay": s.svc.Pricing().FreeCallsPerDay,
				"maxFreeBodyBytes":     s.svc.Pricing().FreeMaxBody,
				"sharedBy":             []string{"POST /verify/schema", "POST /verify/deliverable", "MCP verify_schema"},
			},
			"manifest": s.svc.BaseURL() + "/.well-known/x402",
		},
	}
}

func (s wellKnown) handleAgentCard(w http.ResponseWriter, r *http.Request) {
	card, err := AgentCard(s.svc)
	if err != nil {
		edge.Fail(w, r, s.svc, err)
		return
	}
	body, err := json.Marshal(card)
	if err != nil {
		edge.Fail(w, r, s.svc, err)
		return
	}
	edge.WriteDocument(w, r, "application/json", "max-age=300", body)
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
<body style="font-family: system-ui, sans-serif; max-width: 56rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5">
<h1>Agent Output Verifier</h1>
<p>Independent, deterministic checks of AI agents' JSON output against a JSON Schema and business rules.
Every answer is pass or fail with per-check ratios, repair hints and an Ed25519-signed receipt that anyone can verify offline.
Sellers check before delivering and attach the receipt; buyers check before paying.</p>
<p><a href="`)
	b.WriteString(e(base))
	b.WriteString(`/docs">Interactive API docs</a> · <a href="`)
	b.WriteString(e(base))
	b.WriteString(`/openapi.json">OpenAPI 3.1</a> · <a href="`)
	b.WriteString(e(base))
	b.WriteString(`/llms.txt">llms.txt</a> · <a href="`)
	b.WriteString(e(base))
	b.WriteString(`/.well-known/agent-card.json">Agent card (public keys)</a></p>
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
		path := "<code>" + e(r.Path) + "</code>"
		if r.Method == http.MethodGet && !strings.Contains(r.Path, "{") {
			path = `<a href="` + e(base+r.Path) + `">` + path + "</a>"
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", e(r.Method), path, e(r.Description), e(r.Price))
	}
	b.WriteString(`</table>
</body></html>
`)
	return b.String()
}

// Index is the JSON form of GET /: every route, and where the documents that describe them are.
type Index struct {
	Service   string            `json:"service"`
	Version   string            `json:"version"`
	BaseURL   string            `json:"base_url"`
	Routes    []RouteInfo       `json:"routes"`
	Documents map[string]string `json:"documents"`
}

func (s wellKnown) handleIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Vary", "Accept")
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		body, _ := json.Marshal(Index{
			Service: "Agent Output Verifier", Version: wire.Version, BaseURL: s.svc.BaseURL(), Routes: Routes(),
			Documents: map[string]string{
				"openapi": s.svc.BaseURL() + "/openapi.json", "docs": s.svc.BaseURL() + "/docs", "llms": s.svc.BaseURL() + "/llms.txt",
				"llms_full": s.svc.BaseURL() + "/llms-full.txt", "agent_card": s.svc.BaseURL() + "/.well-known/agent-card.json",
				"api_catalog": s.svc.BaseURL() + "/.well-known/api-catalog", "x402": s.svc.BaseURL() + "/.well-known/x402",
			},
		})
		edge.WriteJSON(w, http.StatusOK, body)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, indexPage(s.svc.BaseURL(), Routes()))
}
