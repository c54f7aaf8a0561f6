package mcpserver

import (
	"encoding/json"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

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
  "anyOf": [` + string(answer) + ", " + apperr.SchemaJSON + ", " + paymentRequiredSchemaJSON + "]}")
}

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

// recordInputSchemaJSON is get_verification_record's input.
const recordInputSchemaJSON = `{
  "type": "object",
  "required": ["agent_id"],
  "additionalProperties": false,
  "properties": {
    "agent_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The agent whose record to return, as named in its verifications' agent_id."}
  }
}`

// receiptInputSchemaJSON is get_receipt's input.
const receiptInputSchemaJSON = `{
  "type": "object",
  "required": ["verification_id"],
  "additionalProperties": false,
  "properties": {
    "verification_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The verification_id of a receipt this service issued."}
  }
}`
