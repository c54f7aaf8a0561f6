package verify

import (
	"bytes"
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

// hash computes the four receipt hashes of SPEC §5 from the raw members of the body. Each
// caller-supplied subtree is canonicalized once; the request's canonical form is assembled from
// those pieces in RFC 8785 key order instead of being canonicalized again.
func (r *Request) hash(raw map[string]jsontext.Value) error {
	canon := func(v jsontext.Value) ([]byte, error) {
		if v == nil {
			return litNull, nil
		}
		return receipt.Canonicalize(v)
	}
	output, err := canon(raw["submitted_output"])
	if err != nil {
		return canonError("submitted_output")
	}
	var schema []byte
	if r.compiled != nil {
		schema = r.compiled.canonical
	} else if schema, err = canon(raw["expected_schema"]); err != nil {
		return canonError("expected_schema")
	}
	bounds, err := canon(raw["bounds"])
	if err != nil {
		return canonError("bounds")
	}
	rules, err := canon(raw["rules"])
	if err != nil {
		return canonError("rules")
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
	if full, err = appendOrNull(full, raw["agent_id"]); err != nil {
		return canonError("agent_id")
	}
	full = append(full, `,"bounds":`...)
	if full, err = r.appendBounds(full, raw["bounds"]); err != nil {
		return canonError("bounds")
	}
	full = append(full, `,"enforce_rules":`...)
	full = appendBool(full, r.EnforceRules)
	full = append(full, `,"expected_schema":`...)
	full = append(full, schema...)
	full = append(full, `,"rules":`...)
	if full, err = r.appendRules(full, raw["rules"]); err != nil {
		return canonError("rules")
	}
	full = append(full, `,"strict_content_check":`...)
	full = appendBool(full, r.StrictContentCheck)
	full = append(full, `,"submitted_output":`...)
	full = append(full, output...)
	full = append(full, `,"task_id":`...)
	if full, err = receipt.AppendCanonical(full, raw["task_id"]); err != nil {
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

// appendOrNull appends the canonical form of v, or null when v is absent or null.
func appendOrNull(dst []byte, v jsontext.Value) ([]byte, error) {
	if v == nil || bytes.Equal(v, litNull) {
		return append(dst, litNull...), nil
	}
	return receipt.AppendCanonical(dst, v)
}

// ruleKeys are a rule's members in canonical order, each with its default when absent.
var ruleKeys = []struct{ name, def string }{
	{"equals", "null"}, {"equals_field", "null"}, {"field", "null"}, {"if_present", "false"},
	{"in_field", "null"}, {"other_field", "null"}, {"tolerance", DefaultTolerance}, {"type", "null"},
	{"value", "null"}, {"values", "null"},
}

// appendRules appends the rules with every default filled in, or null when there are none.
func (r *Request) appendRules(dst []byte, raw jsontext.Value) ([]byte, error) {
	elems := arrayElements(raw)
	if len(elems) == 0 {
		return append(dst, litNull...), nil
	}
	dst = append(dst, '[')
	for i, e := range elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendFilled(dst, objectMembers(e), ruleKeys); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// boundKeys are a bound's members in canonical order, each with its default when absent.
var boundKeys = []struct{ name, def string }{{"if_present", "false"}, {"max", "null"}, {"min", "null"}}

// appendFilled appends an object with exactly keys (already in canonical order): each member's
// canonical value as sent, or its default when absent or null.
func appendFilled(dst []byte, m map[string]jsontext.Value, keys []struct{ name, def string }) ([]byte, error) {
	dst = append(dst, '{')
	for j, k := range keys {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, k.name...)
		dst = append(dst, `":`...)
		v, ok := m[k.name]
		if !ok || bytes.Equal(v, litNull) {
			dst = append(dst, k.def...)
			continue
		}
		var err error
		if dst, err = receipt.AppendCanonical(dst, v); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendBounds appends the bounds keyed by path in RFC 8785 order, each with min, max and
// if_present filled in, or null when there are none.
func (r *Request) appendBounds(dst []byte, raw jsontext.Value) ([]byte, error) {
	members := objectMembers(raw)
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
		q, err := jsontext.AppendQuote(nil, p)
		if err != nil {
			return nil, err
		}
		if dst, err = receipt.AppendCanonical(dst, q); err != nil {
			return nil, err
		}
		dst = append(dst, ':')
		if dst, err = appendFilled(dst, objectMembers(members[p]), boundKeys); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// arrayElements returns the raw elements of a JSON array (nil for anything else), as subslices
// of raw.
func arrayElements(raw jsontext.Value) []jsontext.Value {
	if raw.Kind() != '[' {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.ReadToken(); err != nil {
		return nil
	}
	var out []jsontext.Value
	for dec.PeekKind() != ']' {
		v, err := readRaw(dec, raw)
		if err != nil {
			return out
		}
		out = append(out, v)
	}
	return out
}

// objectMembers returns the raw members of a JSON object (nil for anything else), as subslices
// of raw.
func objectMembers(raw jsontext.Value) map[string]jsontext.Value {
	if raw.Kind() != '{' {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.ReadToken(); err != nil {
		return nil
	}
	out := map[string]jsontext.Value{}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return out
		}
		key := name.String() // the token is void once the decoder moves on
		v, err := readRaw(dec, raw)
		if err != nil {
			return out
		}
		out[key] = v
	}
	return out
}

// readRaw reads the next value and returns it as a subslice of src (the decoder's input), which
// stays valid after the decoder moves on, unlike the slice ReadValue returns.
func readRaw(dec *jsontext.Decoder, src []byte) (jsontext.Value, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	end := dec.InputOffset()
	return jsontext.Value(src[end-int64(len(v)) : end]), nil
}
