package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// hashVectorRequestsJSON are the requests of SPEC §5's request-hash test vectors
// (testdata/seed/request-hash-vectors.json). Only the requests are kept here: their canonical
// forms and hashes are computed by AppendRequest, the code the engine hashes every request with,
// so what the agent card publishes is what the running code produces; tests check that it equals
// the seed's and what the engine's decoder computes.
const hashVectorRequestsJSON = `[
  {"task_id": "tv-1", "expected_schema": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}, "submitted_output": {"ok": true}},
  {"task_id": "tv-2", "agent_id": "seller-7", "expected_schema": {"type": "object", "required": ["items", "total"], "properties": {"items": {"type": "array", "items": {"type": "object", "required": ["id", "price"], "properties": {"id": {"type": "string"}, "price": {"type": "number"}}}}, "total": {"type": "number"}}}, "submitted_output": {"total": 30.5, "items": [{"id": "a", "price": 10.0}, {"id": "b", "price": 20.5}]}, "bounds": {"items[].price": {"min": 0, "max": 100}}, "rules": [{"type": "sum_equals", "field": "items[].price", "equals_field": "total", "tolerance": 0.01}, {"type": "unique", "field": "items[].id"}], "enforce_rules": true},
  {"task_id": "tv-3", "expected_schema": {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "number"}}}, "submitted_output": {"n": 1.0, "name": "café ✓", "z": [1e+21, 1e-06]}, "strict_content_check": true, "rules": [{"type": "gte", "field": "n", "value": 0, "if_present": true}]}
]`

// HashVector is one request-hash test vector: a request, the canonical form of its eight hashed
// fields with every default filled in, and request_hash, the SHA-256 of that form (SPEC §5).
// Anyone reimplementing request_hash can check their code against it.
type HashVector struct {
	Request     json.RawMessage `json:"request"`
	Canonical   string          `json:"canonical"`
	RequestHash string          `json:"request_hash"`
}

// RequestHashVectors returns the test vectors of SPEC §5 as this build computes them. They are
// computed once per process; each caller gets a copy. The engine (pkg/verify) hashes requests with
// the same code, so the vectors the agent card publishes are what the engine computes.
func RequestHashVectors() ([]HashVector, error) {
	vs, err := hashVectors()
	if err != nil {
		return nil, err
	}
	out := make([]HashVector, len(vs))
	copy(out, vs)
	return out, nil
}

var hashVectors = sync.OnceValues(func() ([]HashVector, error) {
	var reqs []json.RawMessage
	if err := json.Unmarshal([]byte(hashVectorRequestsJSON), &reqs); err != nil {
		return nil, fmt.Errorf("request-hash vectors: %w", err)
	}
	out := make([]HashVector, 0, len(reqs))
	for i, raw := range reqs {
		canonical, err := vectorCanonical(raw)
		if err != nil {
			return nil, fmt.Errorf("request-hash vector %d: %w", i, err)
		}
		out = append(out, HashVector{Request: raw, Canonical: string(canonical), RequestHash: receipt.Digest(canonical)})
	}
	return out, nil
})

// vectorCanonical is the canonical form of one vector's request: its members decoded into a tree
// (numbers kept as their literals, as the engine's decoder keeps them) and put together by
// AppendRequest. The vectors are well-formed requests, so it checks no more than it must.
func vectorCanonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	schema, err := AppendCanonicalTree(nil, m["expected_schema"])
	if err != nil {
		return nil, NotCanonical("expected_schema")
	}
	output, err := AppendCanonicalTree(nil, m["submitted_output"])
	if err != nil {
		return nil, NotCanonical("submitted_output")
	}
	enforce, _ := m["enforce_rules"].(bool)
	strict, _ := m["strict_content_check"].(bool)
	return AppendRequest(nil, &RequestParts{
		TaskID: m["task_id"], AgentID: m["agent_id"], Bounds: m["bounds"], Rules: m["rules"],
		Schema: schema, Output: output, EnforceRules: enforce, StrictContentCheck: strict,
	})
}
