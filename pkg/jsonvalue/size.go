package jsonvalue

// SizeBytesPerUnit is how many bytes of a string (or of an object's key) count as one more value
// in Size: reading a string costs about what visiting a value does per this many bytes.
const SizeBytesPerUnit = 16

// Size is the size of a value in work units: one per value, plus one per SizeBytesPerUnit bytes
// of each string and key. The schema evaluator's budget and the rules' work bound are sized by
// it, and so are the keywords and rules that read a whole value (const, enum, uniqueItems,
// unique, exists_in).
func Size(v any) int {
	switch v := v.(type) {
	case string:
		return 1 + len(v)/SizeBytesPerUnit
	case []any:
		n := 1
		for _, e := range v {
			n += Size(e)
		}
		return n
	case map[string]any:
		n := 1
		for k, e := range v {
			n += len(k)/SizeBytesPerUnit + Size(e)
		}
		return n
	}
	return 1
}
