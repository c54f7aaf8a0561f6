package apperr

// SchemaJSON is the JSON Schema of the error envelope, an *Error's JSON (SPEC §7): the one
// description the OpenAPI document and the MCP tools' output schemas share. Its code enum lists
// Codes() (a test holds the two together).
const SchemaJSON = `{
  "type": "object",
  "description": "The error envelope of every error but the 402 payment answers. code is stable; message is safe to show and never echoes the request.",
  "required": ["code", "message", "status", "retryable", "charged", "next_actions"],
  "properties": {
    "code": {"type": "string", "description": "Stable machine code; see the description of this API for what each means.",
      "enum": ["invalid_request", "schema_too_complex", "rules_too_complex", "payload_too_large", "not_found", "method_not_allowed", "forbidden", "rate_limited",
        "internal_error", "service_unavailable", "deadline_exceeded", "payment_required", "free_trial_exhausted",
        "payment_invalid", "payment_requirements_mismatch", "payment_verification_failed", "payment_replayed",
        "payment_settlement_failed", "facilitator_unavailable", "payment_identifier_conflict"]},
    "message": {"type": "string"},
    "status": {"type": "integer", "description": "The HTTP status (over MCP: the status the REST twin answers with)."},
    "retryable": {"type": "boolean"},
    "charged": {"type": "boolean", "const": false, "description": "Errors are never charged."},
    "retry_after": {"type": "integer", "minimum": 1, "description": "Seconds to wait before retrying, when retryable (also the Retry-After header)."},
    "limit": {"type": "integer", "description": "payload_too_large: the size limit in bytes (of the body; with status 431, of the header section)."},
    "next_actions": {"type": "array", "items": {"type": "object", "required": ["action"], "properties": {
      "action": {"type": "string", "description": "fix_request_fields, fix_request, reduce_request_size, check_route, use_allowed_method, retry_later, pay_and_retry, use_new_payment_identifier or check_payment (a settlement that went unanswered: the payment may have been charged)."},
      "fields": {"type": "array", "items": {"type": "string"}}}}},
    "fields": {"type": "array", "description": "invalid_request, schema_too_complex and rules_too_complex: each offending field, what is wrong with it and how to fix it.",
      "items": {"type": "object", "required": ["field", "problem", "fix"], "properties": {
        "field": {"type": "string"}, "problem": {"type": "string"}, "fix": {"type": "string"}}}}
  }
}`
