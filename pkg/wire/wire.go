// Package wire is the verification API's contract as it travels, without the engine: the request
// body's JSON Schema and a passing example, the answer's JSON Schema, the request limits, the one
// check of an agent_id, the RFC 8785 form of decoded JSON trees, the request's canonical form
// behind request_hash, and the request-hash test vectors (SPEC §5) computed with that code.
// It imports no JSON Schema library, so the functions that describe or sign without verifying
// anything link it and not the engine.
package wire

// Version is the build's version, reported as verifier_version and by /health. Release builds set
// it with -ldflags "-X github.com/agent-output-verifier/verifier/pkg/wire.Version=<v>".
var Version = "0.1.0-dev"
