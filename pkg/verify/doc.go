// Package verify is the verification engine: it decodes a request, checks the agent's output
// against the expected schema and the business rules, and writes the report and the receipt's
// hashes. It is pure apart from its compiled-schema cache: ids, time and the signing key are
// handed in.
package verify
