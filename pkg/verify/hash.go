package verify

import (
	"slices"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

var (
	litNull  = []byte("null")
	litTrue  = []byte("true")
	litFalse = []byte("false")
)

// hash computes the four receipt hashes of SPEC §5 from the decoded trees of the body's members
// (absent members are nil). Each caller-supplied subtree is canonicalized once, from its tree; the
// request's canonical form is assembled from those pieces in RFC 8785 key order instead of being
// canonicalized again.
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
	if s, err = appendCanonicalTree(s, ms.trees[fieldOutput]); err != nil {
		return canonError("submitted_output")
	}
	outputEnd := len(s)
	var schema []byte
	if r.compiled != nil {
		schema = r.compiled.canonical
	} else {
		// The engine's cache keeps the schema's canonical form, so it gets a buffer of its own,
		// about as long as the member was sent.
		if schema, err = appendCanonicalTree(make([]byte, 0, len(ms.raw[fieldSchema])+8), ms.trees[fieldSchema]); err != nil {
			return canonError("expected_schema")
		}
	}
	// rules_hash covers {"bounds":<bounds as sent>,"rules":<rules as sent>}.
	s = append(s, `{"bounds":`...)
	boundsStart := len(s)
	if s, err = appendCanonicalTree(s, ms.trees[fieldBounds]); err != nil {
		return canonError("bounds")
	}
	s = append(s, `,"rules":`...)
	rulesStart := len(s)
	if s, err = appendCanonicalTree(s, ms.trees[fieldRules]); err != nil {
		return canonError("rules")
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
	full = append(full, `{"agent_id":`...)
	if full, err = appendCanonicalTree(full, ms.trees[fieldAgentID]); err != nil {
		return canonError("agent_id")
	}
	full = append(full, `,"bounds":`...)
	if full, err = appendBounds(full, ms.trees[fieldBounds]); err != nil {
		return canonError("bounds")
	}
	full = append(full, `,"enforce_rules":`...)
	full = appendBool(full, r.EnforceRules)
	full = append(full, `,"expected_schema":`...)
	full = append(full, schema...)
	full = append(full, `,"rules":`...)
	if full, err = appendRules(full, ms.trees[fieldRules]); err != nil {
		return canonError("rules")
	}
	full = append(full, `,"strict_content_check":`...)
	full = appendBool(full, r.StrictContentCheck)
	full = append(full, `,"submitted_output":`...)
	full = append(full, output...)
	full = append(full, `,"task_id":`...)
	if full, err = appendCanonicalTree(full, ms.trees[fieldTaskID]); err != nil {
		return canonError("task_id")
	}
	full = append(full, '}')
	r.Canonical = full
	r.schemaCanonical = schema
	r.Hashes.Request = receipt.Digest(full)
	return nil
}

func canonError(field string) error {
	return apperr.Field(field, "cannot be put in RFC 8785 canonical form", "Send plain JSON values: finite numbers, valid Unicode.")
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, litTrue...)
	}
	return append(dst, litFalse...)
}

// ruleKeys are a rule's members in canonical order, each with its default when absent.
var ruleKeys = []struct{ name, def string }{
	{"equals", "null"}, {"equals_field", "null"}, {"field", "null"}, {"if_present", "false"},
	{"in_field", "null"}, {"other_field", "null"}, {"tolerance", DefaultTolerance}, {"type", "null"},
	{"value", "null"}, {"values", "null"},
}

// appendRules appends the rules with every default filled in, or null when there are none.
// The decoder has checked that rules is an array of objects.
func appendRules(dst []byte, rules any) ([]byte, error) {
	list, _ := rules.([]any)
	if len(list) == 0 {
		return append(dst, litNull...), nil
	}
	dst = append(dst, '[')
	for i, e := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		m, _ := e.(map[string]any)
		var err error
		if dst, err = appendFilled(dst, m, ruleKeys); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// boundKeys are a bound's members in canonical order, each with its default when absent.
var boundKeys = []struct{ name, def string }{{"if_present", "false"}, {"max", "null"}, {"min", "null"}}

// appendFilled appends an object with exactly keys (already in canonical order): each member's
// canonical value as sent, or its default when absent or null.
func appendFilled(dst []byte, m map[string]any, keys []struct{ name, def string }) ([]byte, error) {
	dst = append(dst, '{')
	for j, k := range keys {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, k.name...)
		dst = append(dst, `":`...)
		v, ok := m[k.name]
		if !ok || v == nil {
			dst = append(dst, k.def...)
			continue
		}
		var err error
		if dst, err = appendCanonicalTree(dst, v); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendBounds appends the bounds keyed by path in RFC 8785 order, each with min, max and
// if_present filled in, or null when there are none. The decoder has checked that bounds is an
// object of objects.
func appendBounds(dst []byte, bounds any) ([]byte, error) {
	members, _ := bounds.(map[string]any)
	if len(members) == 0 {
		return append(dst, litNull...), nil
	}
	paths := make([]string, 0, len(members))
	for p := range members {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, utf16Less)
	dst = append(dst, '{')
	for i, p := range paths {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendCanonicalTree(dst, p); err != nil {
			return nil, err
		}
		dst = append(dst, ':')
		m, _ := members[p].(map[string]any)
		if dst, err = appendFilled(dst, m, boundKeys); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}
