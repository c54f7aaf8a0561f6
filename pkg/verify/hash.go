package verify

import (
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

var (
	litNull  = []byte("null")
	litTrue  = []byte("true")
	litFalse = []byte("false")
)

// hash computes the four receipt hashes of SPEC §5 from the decoded trees of the body's members
// (absent members are missing from raw and trees). Each caller-supplied subtree is canonicalized once,
// from its tree; the request's canonical form is assembled from those pieces in RFC 8785 key order
// instead of being canonicalized again.
func (r *Request) hash(raw map[string]jsontext.Value, trees map[string]any) error {
	canon := func(name string) ([]byte, error) {
		// The canonical form is about as long as the member was sent.
		b, err := appendCanonicalTree(make([]byte, 0, len(raw[name])+8), trees[name])
		if err != nil {
			return nil, canonError(name)
		}
		return b, nil
	}
	output, err := canon("submitted_output")
	if err != nil {
		return err
	}
	var schema []byte
	if r.compiled != nil {
		schema = r.compiled.canonical
	} else if schema, err = canon("expected_schema"); err != nil {
		return err
	}
	bounds, err := canon("bounds")
	if err != nil {
		return err
	}
	rules, err := canon("rules")
	if err != nil {
		return err
	}

	buf := make([]byte, 0, len(bounds)+len(rules)+24)
	buf = append(buf, `{"bounds":`...)
	buf = append(buf, bounds...)
	buf = append(buf, `,"rules":`...)
	buf = append(buf, rules...)
	buf = append(buf, '}')
	r.Hashes.Output = receipt.Digest(output)
	if r.compiled != nil {
		r.Hashes.Schema = r.compiled.hash
	} else {
		r.Hashes.Schema = receipt.Digest(schema)
	}
	r.Hashes.Rules = receipt.Digest(buf)

	full := make([]byte, 0, len(output)+len(schema)+2*len(rules)+2*len(bounds)+256)
	full = append(full, `{"agent_id":`...)
	if full, err = appendCanonicalTree(full, trees["agent_id"]); err != nil {
		return canonError("agent_id")
	}
	full = append(full, `,"bounds":`...)
	if full, err = appendBounds(full, trees["bounds"]); err != nil {
		return canonError("bounds")
	}
	full = append(full, `,"enforce_rules":`...)
	full = appendBool(full, r.EnforceRules)
	full = append(full, `,"expected_schema":`...)
	full = append(full, schema...)
	full = append(full, `,"rules":`...)
	if full, err = appendRules(full, trees["rules"]); err != nil {
		return canonError("rules")
	}
	full = append(full, `,"strict_content_check":`...)
	full = appendBool(full, r.StrictContentCheck)
	full = append(full, `,"submitted_output":`...)
	full = append(full, output...)
	full = append(full, `,"task_id":`...)
	if full, err = appendCanonicalTree(full, trees["task_id"]); err != nil {
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
