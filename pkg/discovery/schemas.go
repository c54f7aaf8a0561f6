package discovery

import (
	"encoding/json"
	"fmt"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/intoto"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// The schemas of the OpenAPI document's components. The request and the verification answer come
// from pkg/verify, the one source the decoder and the MCP tool use too; the error envelope from
// pkg/apperr, the attestation from pkg/receipt and the score document from pkg/httpapi, which
// the MCP tools' output schemas use too. The others describe this package's and pkg/httpapi's
// answers, and the conformance test (infra/openapi) validates real answers of every route
// against them.

// requirementsSchemaJSON is one x402 v2 PaymentRequirements.
const requirementsSchemaJSON = `{
  "type": "object",
  "description": "One way to pay (x402 v2 PaymentRequirements). amount is in the asset's atomic units (USDC: 6 decimals, so 20000 is $0.02).",
  "required": ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"],
  "properties": {
    "scheme": {"type": "string", "const": "exact"},
    "network": {"type": "string", "description": "CAIP-2 network id, such as eip155:8453 (Base) or solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp."},
    "amount": {"type": "string", "pattern": "^[0-9]+$"},
    "asset": {"type": "string", "description": "The USDC token contract (EVM) or mint (Solana)."},
    "payTo": {"type": "string"},
    "maxTimeoutSeconds": {"type": "integer"},
    "extra": {"type": "object", "description": "EVM: the token's EIP-712 domain {name, version}. Solana: {feePayer}."}
  }
}`

// freeTrialSchemaJSON is the caller's free allowance state in a 402 body (SPEC §8.2).
const freeTrialSchemaJSON = `{
  "type": "object",
  "description": "The caller's free allowance today, shared by the REST verify routes and the MCP tool verify_schema.",
  "required": ["available", "calls_per_client_per_day", "remaining_calls_today", "resets_at", "message"],
  "properties": {
    "available": {"type": "boolean"},
    "via": {"type": "string"},
    "transport": {"type": "string"},
    "url": {"type": "string", "description": "The MCP endpoint that shares the allowance."},
    "tool": {"type": "string"},
    "calls_per_client_per_day": {"type": "integer"},
    "remaining_calls_today": {"type": "integer"},
    "resets_at": {"type": "string", "format": "date-time"},
    "client": {"type": "string"},
    "rest_free": {"type": "boolean"},
    "message": {"type": "string"},
    "code": {"type": "string", "const": "free_trial_exhausted"}
  }
}`

// reputationSchemaJSON is GET /reputation/{agent_id} (httpapi.ReputationDocument with its
// attestation).
const reputationSchemaJSON = `{
  "type": "object",
  "description": "An agent's totals and one page of its history, newest first, signed with the reputation context.",
  "required": ["agent_id", "totals", "first_seen", "last_seen", "history", "next_cursor", "verify", "attestation"],
  "properties": {
    "agent_id": {"type": "string"},
    "reason": {"type": "string", "const": "no_data"},
    "totals": {"type": "object", "required": ["verifications", "passed", "failed", "paid"], "properties": {
      "verifications": {"type": "integer"}, "passed": {"type": "integer"}, "failed": {"type": "integer"}, "paid": {"type": "integer"}}},
    "first_seen": {"type": ["string", "null"]},
    "last_seen": {"type": ["string", "null"]},
    "history": {"type": "array", "items": {"type": "object",
      "required": ["verification_id", "task_id", "result", "overall_ratio", "verified_at", "paid"],
      "properties": {
        "verification_id": {"type": "string"}, "task_id": {"type": "string"}, "result": {"type": "string", "enum": ["pass", "fail"]},
        "overall_ratio": {"type": "number"}, "verified_at": {"type": "string"}, "paid": {"type": "boolean"}}}},
    "next_cursor": {"type": ["string", "null"], "description": "Send it back as ?cursor= for the next page; null on the last page."},
    "verify": {"$ref": "#/components/schemas/VerifyInfo"},
    "attestation": {"$ref": "#/components/schemas/Attestation"}
  }
}`

// healthSchemaJSON is GET /health.
const healthSchemaJSON = `{
  "type": "object",
  "required": ["status", "version", "key_version", "store", "key"],
  "properties": {
    "status": {"type": "string", "enum": ["ok", "degraded"], "description": "degraded (with status 503) when the store or the signing key did not answer; probed at most once every 5 seconds."},
    "version": {"type": "string"},
    "key_version": {"type": "string", "description": "The version of the key that signs now."},
    "store": {"type": "string", "enum": ["ok", "unavailable"], "description": "Whether the store answered a probe."},
    "key": {"type": "string", "enum": ["ok", "unavailable"], "description": "Whether the signing key signed a probe that its public key verifies."}
  }
}`

// agentCardSchemaJSON is the A2A v1.0 AgentCard as this service fills it in: every field v1.0
// marks REQUIRED, and the attestation extension.
const agentCardSchemaJSON = `{
  "type": "object",
  "description": "A2A v1.0 agent card. capabilities.extensions holds the attestation extension (public keys, contexts, request-hash test vectors) and the x402 extension (networks, prices).",
  "required": ["name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"],
  "properties": {
    "name": {"type": "string"},
    "description": {"type": "string"},
    "supportedInterfaces": {"type": "array", "minItems": 1, "items": {"type": "object",
      "required": ["url", "protocolBinding", "protocolVersion"], "properties": {
        "url": {"type": "string"}, "protocolBinding": {"type": "string"}, "protocolVersion": {"type": "string"}}}},
    "version": {"type": "string"},
    "documentationUrl": {"type": "string"},
    "capabilities": {"type": "object", "properties": {
      "streaming": {"type": "boolean"}, "pushNotifications": {"type": "boolean"}, "extendedAgentCard": {"type": "boolean"},
      "extensions": {"type": "array", "items": {"type": "object", "required": ["uri"], "properties": {
        "uri": {"type": "string"}, "description": {"type": "string"}, "required": {"type": "boolean"}, "params": {"type": "object"}}}}}},
    "defaultInputModes": {"type": "array", "items": {"type": "string"}},
    "defaultOutputModes": {"type": "array", "items": {"type": "string"}},
    "skills": {"type": "array", "items": {"type": "object", "required": ["id", "name", "description", "tags"], "properties": {
      "id": {"type": "string"}, "name": {"type": "string"}, "description": {"type": "string"},
      "tags": {"type": "array", "items": {"type": "string"}}, "examples": {"type": "array", "items": {"type": "string"}}}}}
  }
}`

// x402ManifestSchemaJSON is GET /.well-known/x402 (SPEC §8.5).
const x402ManifestSchemaJSON = `{
  "type": "object",
  "required": ["version", "x402Version", "resources", "items", "free_allowance", "instructions"],
  "properties": {
    "version": {"type": "integer"},
    "x402Version": {"type": "integer", "const": 2},
    "resources": {"type": "array", "items": {"type": "string"}},
    "items": {"type": "array", "items": {"type": "object", "required": ["resource", "method", "description", "accepts"], "properties": {
      "resource": {"type": "string"}, "method": {"type": "string"}, "description": {"type": "string"},
      "accepts": {"type": "array", "items": {"$ref": "#/components/schemas/PaymentRequirements"}}}}},
    "free_allowance": {"type": "object"},
    "instructions": {"type": "string"}
  }
}`

// linksetSchemaJSON is the RFC 9727 API catalog.
const linksetSchemaJSON = `{
  "type": "object",
  "required": ["linkset"],
  "properties": {
    "linkset": {"type": "array", "items": {"type": "object", "required": ["anchor", "service-desc", "service-doc", "status"],
      "properties": {"anchor": {"type": "string"}},
      "additionalProperties": {"type": "array", "items": {"type": "object", "required": ["href"], "properties": {
        "href": {"type": "string"}, "type": {"type": "string"}, "title": {"type": "string"}}}}}}
  }
}`

// indexSchemaJSON is GET / with Accept: application/json (httpapi.Index).
const indexSchemaJSON = `{
  "type": "object",
  "required": ["service", "version", "base_url", "routes", "documents"],
  "properties": {
    "service": {"type": "string"}, "version": {"type": "string"}, "base_url": {"type": "string"},
    "routes": {"type": "array", "items": {"type": "object", "required": ["method", "path", "description", "price"], "properties": {
      "method": {"type": "string"}, "path": {"type": "string"}, "description": {"type": "string"}, "price": {"type": "string"}}}},
    "documents": {"type": "object", "additionalProperties": {"type": "string"}}
  }
}`

// jsonRPCRequestSchemaJSON and jsonRPCResponseSchemaJSON are the MCP endpoint's messages.
const jsonRPCRequestSchemaJSON = `{
  "type": "object",
  "description": "One JSON-RPC 2.0 message of the Model Context Protocol (initialize, tools/list, tools/call, ...).",
  "required": ["jsonrpc", "method"],
  "properties": {
    "jsonrpc": {"type": "string", "const": "2.0"},
    "id": {"type": ["string", "integer"]},
    "method": {"type": "string"},
    "params": {"type": "object"}
  }
}`

const jsonRPCResponseSchemaJSON = `{
  "type": "object",
  "description": "The JSON-RPC 2.0 answer. A tool's answer is result.structuredContent (and the same JSON as text in result.content); a refused call is a result with isError.",
  "required": ["jsonrpc"],
  "properties": {
    "jsonrpc": {"type": "string", "const": "2.0"},
    "id": {"type": ["string", "integer", "null"]},
    "result": {"type": "object"},
    "error": {"type": "object", "required": ["code", "message"], "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}}
  }
}`

// componentSchemas are the OpenAPI document's components.schemas, in the order they are shown.
func componentSchemas() (object, error) {
	errSchema, err := decodeSchema("Error", apperr.SchemaJSON)
	if err != nil {
		return nil, err
	}
	paymentCodes := []string{}
	for _, c := range apperr.Codes() {
		if c.Payment() {
			paymentCodes = append(paymentCodes, string(c))
		}
	}

	out := object{}
	out.set("VerifyRequest", withDescription(wire.RequestSchema(), "A verification request (SPEC §4.1). The service enforces exactly this schema; unknown fields are refused with 422."))
	out.set("VerifyResponse", withDescription(wire.ResponseSchema(), "A verification answer, full or compact detail, signed with the verify context."))
	out.set("Error", errSchema)
	out.set("PaymentRequired", paymentRequiredSchema(paymentCodes))
	for _, s := range []struct{ name, doc string }{
		{"PaymentRequirements", requirementsSchemaJSON},
		{"FreeTrial", freeTrialSchemaJSON},
		{"Attestation", receipt.AttestationSchemaJSON},
		{"VerifyInfo", receipt.VerifyInfoSchemaJSON},
		{"ScoreDocument", service.ScoreSchemaJSON},
		{"VerificationRecord", service.RecordSchemaJSON},
		{"DSSEEnvelope", intoto.EnvelopeSchemaJSON},
		{"ReputationDocument", reputationSchemaJSON},
		{"Health", healthSchemaJSON},
		{"AgentCard", agentCardSchemaJSON},
		{"X402Manifest", x402ManifestSchemaJSON},
		{"ApiCatalog", linksetSchemaJSON},
		{"Index", indexSchemaJSON},
		{"JsonRpcRequest", jsonRPCRequestSchemaJSON},
		{"JsonRpcResponse", jsonRPCResponseSchemaJSON},
	} {
		m, err := decodeSchema(s.name, s.doc)
		if err != nil {
			return nil, err
		}
		out.set(s.name, m)
	}
	return out, nil
}

// paymentRequiredSchema is the body of a 402 answer: the x402 v2 PaymentRequired of the
// PAYMENT-REQUIRED header, repeated, with a machine code and, on the verify routes, the caller's
// free allowance.
func paymentRequiredSchema(paymentCodes []string) map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "The x402 v2 PaymentRequired of the PAYMENT-REQUIRED header, repeated in the body, with a machine code and (verify routes) the caller's free allowance.",
		"required":    []string{"x402Version", "error", "resource", "accepts", "code", "status", "charged"},
		"properties": map[string]any{
			"x402Version": map[string]any{"type": "integer", "const": 2},
			"error":       map[string]any{"type": "string", "description": "Why payment is required."},
			"resource": map[string]any{"type": "object", "required": []string{"url"}, "properties": map[string]any{
				"url": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}, "mimeType": map[string]any{"type": "string"}}},
			"accepts":    map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/PaymentRequirements"}, "description": "Empty when the deployment takes no payments (the discovery probe still answers)."},
			"extensions": map[string]any{"type": "object", "description": "bazaar: the route's input and output, for x402 catalogues. payment-identifier (verification routes and tool): send extensions[\"payment-identifier\"].info.id (16-128 characters of letters, digits, - and _) in the PaymentPayload; the same id with the same body is answered again from the store, never charged twice; with another body, 409 payment_identifier_conflict. offer-receipt: info.offers holds a signed offer (JWS, EdDSA, kid did:web:<host>#<key version>, keys at /.well-known/did.json) per accepts entry; the settlement of a paid answer carries the signed receipt."},
			"code":       map[string]any{"type": "string", "enum": paymentCodes},
			"status":     map[string]any{"type": "integer", "const": 402},
			"charged":    map[string]any{"type": "boolean", "const": false},
			"free_trial": map[string]any{"$ref": "#/components/schemas/FreeTrial"},
		},
	}
}

func decodeSchema(name, doc string) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	return m, nil
}

func withDescription(m map[string]any, d string) map[string]any {
	m["description"] = d
	return m
}
