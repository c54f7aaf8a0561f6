package verify

import "github.com/agent-output-verifier/verifier/pkg/receipt"

// responseSchemaJSON is the JSON Schema of a verification answer, full or compact detail (the
// shapes of testdata/seed/invoice-draft.response.json and invoice-final.response.json). The
// documents that publish the answer's shape (the MCP tool's output schema, the OpenAPI document)
// take it from here; a test validates the seed answers and live ones against it. It is written
// in the subset that draft-07 and 2020-12 validators read alike (no $defs, no $ref), because the
// MCP clients that check tool output use either. Unknown properties are allowed, so that adding
// a field to the answer never breaks a client that validates.
const responseSchemaJSON = `{
  "type": "object",
  "required": ["summary", "next_actions", "result", "verification_id", "task_id", "agent_id",
    "output_hash", "schema_hash", "rules_hash", "verified_at", "verifier_version", "enforce_rules",
    "strict_content_check", "verify", "attestation"],
  "properties": {
    "summary": {
      "type": "object", "required": ["result", "blocking_checks"],
      "properties": {
        "result": {"enum": ["pass", "fail"]},
        "blocking_checks": {"type": "array", "items": {"type": "string"}}
      }
    },
    "next_actions": {
      "type": "array",
      "items": {"type": "object", "required": ["action"], "properties": {
        "action": {"type": "string"}, "using": {"type": "string"}, "for": {"type": "string"}}}
    },
    "result": {"enum": ["pass", "fail"], "description": "pass when nothing blocks."},
    "verification_id": {"type": "string", "description": "UUID of this verification."},
    "task_id": {"type": "string"},
    "agent_id": {"type": ["string", "null"]},
    "output_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the JCS form of submitted_output."},
    "schema_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the JCS form of expected_schema."},
    "rules_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the JCS form of {bounds, rules}."},
    "request_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Full detail only: SHA-256 of the JCS form of the request with defaults filled in."},
    "verified_at": {"type": "string", "description": "RFC 3339 UTC with microseconds."},
    "verifier_version": {"type": "string"},
    "enforce_rules": {"type": "boolean"},
    "strict_content_check": {"type": "boolean"},
    "errors": {"type": "array", "items": {"type": "string"}},
    "errors_total": {"type": "integer"}, "errors_omitted": {"type": "integer"},
    "errors_detail": {
      "type": "array",
      "items": {"type": "object", "required": ["check", "path", "expected", "found", "message"], "properties": {
        "check": {"type": "string"}, "path": {"type": "string"}, "expected": {"type": "string"},
        "found": {"type": "string"}, "message": {"type": "string"}}}
    },
    "errors_detail_total": {"type": "integer"}, "errors_detail_omitted": {"type": "integer"},
    "flags": {
      "type": "array",
      "items": {"type": "object", "required": ["check", "field", "severity", "detail"], "properties": {
        "check": {"type": "string"}, "field": {"type": "string"},
        "severity": {"enum": ["error", "warning", "info"]}, "detail": {"type": "string"}}}
    },
    "flags_total": {"type": "integer"}, "flags_omitted": {"type": "integer"},
    "hints": {
      "type": "array",
      "items": {"type": "object", "required": ["source", "check", "path", "expected", "found"], "properties": {
        "source": {"enum": ["schema", "integrity", "content"]}, "check": {"type": "string"},
        "path": {"type": "string"}, "expected": {"type": "string"}, "found": {"type": "string"}}}
    },
    "hints_total": {"type": "integer"}, "hints_omitted": {"type": "integer"},
    "schema_compliance": {"type": "object", "required": ["ratio", "passed", "total"], "properties": {
      "ratio": {"type": "number", "minimum": 0, "maximum": 1}, "passed": {"type": "integer"}, "total": {"type": "integer"}}},
    "integrity_checks": {"type": "object", "required": ["ratio", "passed", "total"], "properties": {
      "ratio": {"type": "number", "minimum": 0, "maximum": 1}, "passed": {"type": "integer"}, "total": {"type": "integer"}}},
    "overall": {"type": "object", "required": ["ratio", "passed", "total"], "properties": {
      "ratio": {"type": "number", "minimum": 0, "maximum": 1}, "passed": {"type": "integer"}, "total": {"type": "integer"}}},
    "verify": ` + VerifyInfoSchemaJSON + `,
    "attestation": ` + receipt.AttestationSchemaJSON + `
  }
}`

// VerifyInfoSchemaJSON is the JSON Schema of the verify block of signed answers (VerifyInfo): the
// one description the answers' schemas and the OpenAPI document share, as they share
// receipt.AttestationSchemaJSON.
const VerifyInfoSchemaJSON = `{
  "type": "object",
  "description": "Where the public key is and how the receipt is made.",
  "required": ["public_key_url", "key_version", "canonicalization", "hash_algorithm", "service", "mcp"],
  "properties": {
    "public_key_url": {"type": "string"}, "key_version": {"type": "string"},
    "canonicalization": {"type": "string", "const": "RFC 8785 (JCS)"}, "hash_algorithm": {"type": "string", "const": "SHA-256"},
    "service": {"type": "string"}, "mcp": {"type": "string"}
  }
}`

// ResponseSchema returns a fresh copy of the verification answer's JSON Schema.
func ResponseSchema() map[string]any { return mustDecode(responseSchemaJSON) }

// ResponseSchemaJSON returns the verification answer's JSON Schema as written, for callers that
// hand it on as JSON (see RequestSchemaJSON).
func ResponseSchemaJSON() []byte { return []byte(responseSchemaJSON) }
