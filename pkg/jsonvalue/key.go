package jsonvalue

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// AppendKey appends the canonical key of a JSON value, by which rules (unique, exists_in) and the
// schema evaluator (uniqueItems) compare values: two values have the same key exactly when
// they are equal as JSON (numbers by exact decimal value, so 1 equals 1.0; objects by content,
// whatever the member order; arrays element by element). The encoding is prefix-free, so keys of
// nested values cannot run into each other.
func AppendKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		if x {
			return append(b, 't')
		}
		return append(b, 'f')
	case string:
		return strconv.AppendQuote(b, x)
	case json.Number:
		return appendNumberKey(b, string(x))
	case []any:
		b = append(b, '[')
		for _, e := range x {
			b = AppendKey(b, e)
			b = append(b, ',')
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			b = AppendKey(b, x[k])
			b = append(b, ',')
		}
		return append(b, '}')
	}
	return append(b, '?')
}
