package receipt

// AttestationSchemaJSON is the JSON Schema of the attestation every signed answer carries (SPEC
// §6): the one description the answers' schemas (pkg/verify, pkg/httpapi) and the OpenAPI
// document share. Like them, it uses only keywords that draft-07 and 2020-12 validators read alike.
const AttestationSchemaJSON = `{
  "type": "object",
  "description": "Ed25519 over the RFC 8785 bytes of {context, algorithm, key_version, attested_at: timestamp, response: the answer without attestation}. The public key of key_version is in the agent card.",
  "required": ["algorithm", "key_version", "timestamp", "signature"],
  "properties": {
    "algorithm": {"type": "string", "const": "Ed25519"},
    "key_version": {"type": "string"},
    "timestamp": {"type": "string"},
    "signature": {"type": "string", "description": "Standard base64 of the 64-byte signature."}
  }
}`
