package mcpserver

import "encoding/json"

// outputSchema is a tool's output schema: its answer, or, on a result with isError, the §7
// error envelope or the x402 PaymentRequired. Clients check structuredContent against the output
// schema on error results too (the TypeScript SDK's Client.callTool validates whenever
// structuredContent is present, isError or not), so the schema must admit every shape the tool
// returns. The root is an object, as MCP requires; the branches use only keywords that draft-07
// and 2020-12 validators read alike.
//
// The tools' schemas are JSON text rather than decoded maps: the SDK re-encodes a map on AddTool
// and again on every tools/list (milliseconds of the MCP function's cold start), while it copies
// JSON text as it is.
func outputSchema(answer json.RawMessage) json.RawMessage {
	return json.RawMessage(`{"type": "object",
  "description": "The answer; on a result with isError, the error envelope (code, message, status, ...) or the x402 v2 PaymentRequired (x402Version, accepts, ...).",
  "anyOf": [` + string(answer) + ", " + errorSchemaJSON + ", " + paymentRequiredSchemaJSON + "]}")
}

// errorSchemaJSON is the §7 error envelope (apperr.Error's JSON).
const errorSchemaJSON = `{
  "type": "object",
  "required": ["code", "message", "status", "retryable", "charged", "next_actions"],
  "properties": {
    "code": {"type": "string", "description": "Stable machine code (invalid_request, payload_too_large, free_trial_exhausted, ...)."},
    "message": {"type": "string"},
    "status": {"type": "integer", "description": "The HTTP status the REST twin answers with."},
    "retryable": {"type": "boolean"},
    "charged": {"type": "boolean"},
    "retry_after": {"type": "integer", "description": "Seconds to wait before retrying, when retryable."},
    "limit": {"type": "integer"},
    "next_actions": {"type": "array", "items": {"type": "object", "required": ["action"], "properties": {
      "action": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}}}}},
    "fields": {"type": "array", "items": {"type": "object", "required": ["field", "problem", "fix"], "properties": {
      "field": {"type": "string"}, "problem": {"type": "string"}, "fix": {"type": "string"}}}}
  }
}`

// paymentRequiredSchemaJSON is the x402 v2 PaymentRequired of a payment-required result.
const paymentRequiredSchemaJSON = `{
  "type": "object",
  "required": ["x402Version", "resource", "accepts"],
  "properties": {
    "x402Version": {"const": 2},
    "error": {"type": "string"},
    "resource": {"type": "object", "required": ["url"], "properties": {
      "url": {"type": "string"}, "description": {"type": "string"}, "mimeType": {"type": "string"}}},
    "accepts": {"type": "array", "items": {"type": "object",
      "required": ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds"],
      "properties": {
        "scheme": {"type": "string"}, "network": {"type": "string"}, "amount": {"type": "string"},
        "asset": {"type": "string"}, "payTo": {"type": "string"}, "maxTimeoutSeconds": {"type": "integer"},
        "extra": {"type": "object"}}}},
    "extensions": {"type": "object"},
    "x402/payment-response": {"type": "object", "description": "The failed settlement, when settling failed.", "required": ["success"]}
  }
}`

// scoreSchemaJSON is the /score document (SPEC §9, httpapi.ScoreDocumentBody), signed like every
// answer. score, the rates and the times are null, with reason no_data, for unknown and test-
// agents.
const scoreSchemaJSON = `{
  "type": "object",
  "required": ["agent_id", "score", "confidence", "verifications", "last_30_days", "method", "computed_at", "verify", "attestation"],
  "properties": {
    "agent_id": {"type": "string"},
    "score": {"type": ["number", "null"], "minimum": 0, "maximum": 100, "description": "100 x the lower bound of the 95% Wilson interval of the weighted pass rate; null with reason no_data."},
    "reason": {"type": "string", "description": "no_data when there is no score."},
    "confidence": {"type": "string", "description": "low, medium or high, by effective verifications."},
    "verifications": {"type": "object", "required": ["total", "passed", "failed", "paid"], "properties": {
      "total": {"type": "integer"}, "passed": {"type": "integer"}, "failed": {"type": "integer"}, "paid": {"type": "integer"}}},
    "last_30_days": {"type": "object", "required": ["total", "passed", "failed"], "properties": {
      "total": {"type": "integer"}, "passed": {"type": "integer"}, "failed": {"type": "integer"}}},
    "pass_rate": {"type": ["number", "null"]},
    "mean_overall_ratio": {"type": ["number", "null"]},
    "first_seen": {"type": ["string", "null"]},
    "last_seen": {"type": ["string", "null"]},
    "distinct_tasks": {"type": "integer"},
    "distinct_callers": {"type": "integer"},
    "method": {"type": "string", "description": "Versioned name of the score formula."},
    "computed_at": {"type": "string"},
    "verify": {"type": "object", "required": ["public_key_url", "key_version"]},
    "attestation": {"type": "object", "required": ["algorithm", "key_version", "timestamp", "signature"],
      "description": "Ed25519 with the trust-score context; the public key is in the agent card."}
  }
}`

// recordInputSchemaJSON is get_verification_record's input.
const recordInputSchemaJSON = `{
  "type": "object",
  "required": ["agent_id"],
  "additionalProperties": false,
  "properties": {
    "agent_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The agent whose record to return, as named in its verifications' agent_id."}
  }
}`
