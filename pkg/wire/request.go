package wire

import (
	"slices"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

var (
	litNull  = []byte("null")
	litFalse = []byte("false")
	litTrue  = []byte("true")
)

// RequestParts are the pieces of a request's canonical form: the decoded trees of its members
// (nil when absent), the canonical forms of expected_schema and submitted_output, which the engine
// has written already for their own hashes, and the two switches as decided (absent or null is
// false).
type RequestParts struct {
	TaskID, AgentID    any
	Bounds, Rules      any
	Schema, Output     []byte
	EnforceRules       bool
	StrictContentCheck bool
}

// AppendRequest appends the canonical form behind request_hash (SPEC §5): the eight hashed members
// in RFC 8785 key order, with every default filled in (absent, null or empty bounds and rules are
// null; each rule and bound gets its absent members' defaults), so that spelling out a default
// does not change the hash. It is assembled from the pieces instead of being canonicalized again.
// Bounds must be an object of objects and rules an array of objects, as the decoder checks. The
// error names the member that has no canonical form (NotCanonical).
func AppendRequest(full []byte, p *RequestParts) ([]byte, error) {
	var err error
	full = append(full, `{"agent_id":`...)
	if full, err = AppendCanonicalTree(full, p.AgentID); err != nil {
		return nil, NotCanonical("agent_id")
	}
	full = append(full, `,"bounds":`...)
	if full, err = appendBounds(full, p.Bounds); err != nil {
		return nil, NotCanonical("bounds")
	}
	full = append(full, `,"enforce_rules":`...)
	full = appendBool(full, p.EnforceRules)
	full = append(full, `,"expected_schema":`...)
	full = append(full, p.Schema...)
	full = append(full, `,"rules":`...)
	if full, err = appendRules(full, p.Rules); err != nil {
		return nil, NotCanonical("rules")
	}
	full = append(full, `,"strict_content_check":`...)
	full = appendBool(full, p.StrictContentCheck)
	full = append(full, `,"submitted_output":`...)
	full = append(full, p.Output...)
	full = append(full, `,"task_id":`...)
	if full, err = AppendCanonicalTree(full, p.TaskID); err != nil {
		return nil, NotCanonical("task_id")
	}
	return append(full, '}'), nil
}

// NotCanonical is the 422 for a request member that has no RFC 8785 form (a number beyond double
// range, a lone surrogate), naming field.
func NotCanonical(field string) error {
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
		if dst, err = AppendCanonicalTree(dst, v); err != nil {
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
	slices.SortFunc(paths, UTF16Less)
	dst = append(dst, '{')
	for i, p := range paths {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = AppendCanonicalTree(dst, p); err != nil {
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
