package verify

import (
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// hash computes the four receipt hashes of SPEC §5 from the decoded trees of the body's members
// (absent members are nil). Each caller-supplied subtree is canonicalized once, from its tree; the
// request's canonical form is assembled from those pieces in RFC 8785 key order instead of being
// canonicalized again (wire.AppendRequest, which also computes the published test vectors).
//
// The pieces only hashed (the output, and the bounds and rules as sent) are written into one pooled
// scratch buffer, in the order their errors take precedence, and copied from it into the request's
// canonical form, which is the one buffer the request keeps. The scratch buffer is safe to reuse
// once hash returns: digests are strings of their own, and the canonical form is a new buffer.
func (r *Request) hash(ms *requestMembers) error {
	scratchp := canonPool.Get().(*[]byte)
	s := (*scratchp)[:0]
	defer func() {
		*scratchp = s
		putPooled(scratchp)
	}()

	var err error
	if s, err = wire.AppendCanonicalTree(s, ms.trees[fieldOutput]); err != nil {
		return wire.NotCanonical("submitted_output")
	}
	outputEnd := len(s)
	var schema []byte
	if r.compiled != nil {
		schema = r.compiled.canonical
	} else {
		// The engine's cache keeps the schema's canonical form, so it gets a buffer of its own,
		// about as long as the member was sent.
		if schema, err = wire.AppendCanonicalTree(make([]byte, 0, len(ms.raw[fieldSchema])+8), ms.trees[fieldSchema]); err != nil {
			return wire.NotCanonical("expected_schema")
		}
	}
	// rules_hash covers {"bounds":<bounds as sent>,"rules":<rules as sent>}.
	s = append(s, `{"bounds":`...)
	boundsStart := len(s)
	if s, err = wire.AppendCanonicalTree(s, ms.trees[fieldBounds]); err != nil {
		return wire.NotCanonical("bounds")
	}
	s = append(s, `,"rules":`...)
	rulesStart := len(s)
	if s, err = wire.AppendCanonicalTree(s, ms.trees[fieldRules]); err != nil {
		return wire.NotCanonical("rules")
	}
	s = append(s, '}')
	output, rulesDoc := s[:outputEnd], s[outputEnd:]
	r.Hashes.Output = receipt.Digest(output)
	if r.compiled != nil {
		r.Hashes.Schema = r.compiled.hash
	} else {
		r.Hashes.Schema = receipt.Digest(schema)
	}
	r.Hashes.Rules = receipt.Digest(rulesDoc)

	// The bounds and rules are written twice, with their defaults filled in.
	boundsLen, rulesLen := rulesStart-len(`,"rules":`)-boundsStart, len(s)-1-rulesStart
	full := make([]byte, 0, len(output)+len(schema)+2*rulesLen+2*boundsLen+256)
	if full, err = wire.AppendRequest(full, &wire.RequestParts{
		TaskID: ms.trees[fieldTaskID], AgentID: ms.trees[fieldAgentID],
		Bounds: ms.trees[fieldBounds], Rules: ms.trees[fieldRules],
		Schema: schema, Output: output,
		EnforceRules: r.EnforceRules, StrictContentCheck: r.StrictContentCheck,
	}); err != nil {
		return err
	}
	r.Canonical = full
	r.schemaCanonical = schema
	r.Hashes.Request = receipt.Digest(full)
	return nil
}
