package wire

import (
	"encoding/json"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// requestSchemaJSON is the JSON Schema of a POST /verify/schema body. It describes what the
// engine's DecodeRequest enforces; the documents that publish it (the 402 answer's bazaar
// extension, the OpenAPI document, the MCP tool) all take it from here, and a test in pkg/verify
// checks that the decoder and this schema agree on the request examples.
const requestSchemaJSON = `{
  "type": "object",
  "required": ["task_id", "expected_schema", "submitted_output"],
  "additionalProperties": false,
  "properties": {
    "task_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Your label for the job."},
    "agent_id": {"type": ["string", "null"], "minLength": 1, "maxLength": 200, "description": "The agent that produced the output (unauthenticated; the test- prefix is never recorded)."},
    "expected_schema": {"type": ["object", "boolean"], "description": "A JSON Schema (drafts 4, 6, 7, 2019-09, 2020-12; 2020-12 when $schema is absent) of at most 5000 subschemas (every object, boolean, $id and $dynamicAnchor in it counts, once more per 256 bytes of its JSON pointer). Remote references are never fetched."},
    "submitted_output": {"description": "The output under test: any JSON."},
    "strict_content_check": {"type": ["boolean", "null"], "default": false, "description": "Content checks block: empty strings, placeholders, undeclared properties, inexact numbers."},
    "bounds": {
      "type": ["object", "null"], "maxProperties": 200,
      "description": "Numeric ranges: path -> {min, max, if_present}. Each place the path selects is one check; a place with nothing there (a missing key or element) fails as not found, or is left out with if_present.",
      "additionalProperties": {
        "type": "object", "additionalProperties": false, "minProperties": 1,
        "properties": {"min": {"type": ["number", "null"]}, "max": {"type": ["number", "null"]}, "if_present": {"type": ["boolean", "null"]}}
      }
    },
    "rules": {
      "type": ["array", "null"], "maxItems": 200,
      "items": {
        "type": "object", "additionalProperties": false, "required": ["type", "field"],
        "properties": {
          "type": {"enum": ["sum_equals", "gte", "lte", "exists_in", "unique"]},
          "field": {"type": "string", "minLength": 1, "maxLength": 512, "description": "Path of the value(s) checked: a.b, items[].price (each element), items[0].id, ['key.with.dots'] (RFC 9535 quoting, as reports write paths) or [\"key.with.dots\"]. unique needs [], and so does an exists_in field or in_field that names an array (else 422)."},
          "equals_field": {"type": ["string", "null"], "maxLength": 512},
          "equals": {"type": ["number", "null"]},
          "other_field": {"type": ["string", "null"], "maxLength": 512},
          "value": {"type": ["number", "null"]},
          "in_field": {"type": ["string", "null"], "maxLength": 512},
          "values": {"type": ["array", "null"]},
          "tolerance": {"type": ["number", "null"], "minimum": 0, "default": 1e-9},
          "if_present": {"type": ["boolean", "null"], "default": false, "description": "Leave out the places with nothing there, and skip the rule when none holds a value; without it each such place is a failed check (field not found)."}
        }
      }
    },
    "enforce_rules": {"type": ["boolean", "null"], "default": false, "description": "Rule and bound failures block the result."},
    "detail": {"enum": ["full", "compact", null], "default": "full", "description": "Response shape only; not hashed."}
  }
}`

// exampleRequestJSON is a small request that passes, used in documents and discovery answers.
const exampleRequestJSON = `{
  "task_id": "invoice-7731",
  "agent_id": "seller-invoice-agent",
  "expected_schema": {"type": "object", "required": ["line_items", "total"],
    "properties": {"line_items": {"type": "array", "items": {"type": "object", "required": ["line_total"],
      "properties": {"line_total": {"type": "number", "minimum": 0}}}}, "total": {"type": "number"}}},
  "submitted_output": {"line_items": [{"line_total": 87.0}, {"line_total": 42.5}], "total": 129.5},
  "rules": [{"type": "sum_equals", "field": "line_items[].line_total", "equals_field": "total"}],
  "enforce_rules": true
}`

// RequestSchema returns a fresh copy of the request body's JSON Schema.
func RequestSchema() map[string]any { return mustDecode(requestSchemaJSON) }

// RequestSchemaJSON returns the request body's JSON Schema as written, for callers that hand it
// on as JSON: decoding it only to encode it again cost the MCP function's cold start most of a
// millisecond.
func RequestSchemaJSON() []byte { return []byte(requestSchemaJSON) }

// ExampleRequest returns a fresh copy of a passing example request.
func ExampleRequest() map[string]any { return mustDecode(exampleRequestJSON) }

// ExampleRequestJSON returns the passing example request as written, for documents that show it
// to people (field order and literals as above).
func ExampleRequestJSON() []byte { return []byte(exampleRequestJSON) }

func mustDecode(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic("wire: embedded JSON is invalid: " + err.Error())
	}
	return m
}

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
    "shortened": {
      "type": "object", "required": ["reason", "max_signed_bytes"],
      "description": "Present only when the lists were cut to fit the signing key's limit on a signed message (a KMS-held key signs at most 4096 bytes): each <list>_omitted then also counts the entries left out for it. Repair what the hints show and verify again.",
      "properties": {"reason": {"enum": ["signing_key_limit"]}, "max_signed_bytes": {"type": "integer"}}
    },
    "schema_compliance": {"type": "object", "required": ["ratio", "passed", "total"], "properties": {
      "ratio": {"type": "number", "minimum": 0, "maximum": 1}, "passed": {"type": "integer"}, "total": {"type": "integer"}}},
    "integrity_checks": {"type": "object", "required": ["ratio", "passed", "total"], "properties": {
      "ratio": {"type": "number", "minimum": 0, "maximum": 1}, "passed": {"type": "integer"}, "total": {"type": "integer"}}},
    "overall": {"type": "object", "required": ["ratio", "passed", "total"], "properties": {
      "ratio": {"type": "number", "minimum": 0, "maximum": 1}, "passed": {"type": "integer"}, "total": {"type": "integer"}}},
    "payment": ` + receipt.PaymentSchemaJSON + `,
    "verify": ` + receipt.VerifyInfoSchemaJSON + `,
    "attestation": ` + receipt.AttestationSchemaJSON + `
  }
}`

// ResponseSchema returns a fresh copy of the verification answer's JSON Schema.
func ResponseSchema() map[string]any { return mustDecode(responseSchemaJSON) }

// ResponseSchemaJSON returns the verification answer's JSON Schema as written, for callers that
// hand it on as JSON (see RequestSchemaJSON).
func ResponseSchemaJSON() []byte { return []byte(responseSchemaJSON) }
