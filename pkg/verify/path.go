package verify

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Path addresses values inside submitted_output (SPEC §4.3): `a.b.c`, `a[].b` (every element),
// `a[2].b` (one element), `a[].b[].c` (flattened in document order) and `["key.with.dots"]` for keys
// that are not plain names. A leading `[]` or `[N]` addresses a root array.
type Path struct {
	Raw   string
	Steps []Step
}

// StepKind says what one step of a path selects.
type StepKind uint8

// The step kinds.
const (
	StepKey   StepKind = iota // an object member
	StepAll                   // every element of an array ("[]")
	StepIndex                 // one element of an array ("[N]")
)

// Step is one selection of a path.
type Step struct {
	Kind  StepKind
	Key   string
	Index int
}

// Display is the path as messages show it: "$." followed by what the caller wrote.
func (p Path) Display() string {
	if strings.HasPrefix(p.Raw, "[") {
		return "$" + p.Raw
	}
	return "$." + p.Raw
}

// ParsePath parses a rule or bound path. The error says what is wrong without echoing the path.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, errors.New("is empty")
	}
	if !utf8.ValidString(s) {
		return Path{}, errors.New("is not valid UTF-8")
	}
	// Every step starts at the beginning, after a '.' or at a '[', so this many are room for all.
	p := Path{Raw: s, Steps: make([]Step, 0, 1+strings.Count(s, ".")+strings.Count(s, "["))}
	i := 0
	needKey := true // at the start or after '.', a key (or a leading bracket) comes next
	for i < len(s) {
		switch c := s[i]; {
		case c == '.':
			if needKey {
				return Path{}, errors.New("has an empty segment")
			}
			needKey = true
			i++
		case c == '[':
			if i+1 < len(s) && s[i+1] == '"' {
				key, n, err := quotedKey(s[i+1:])
				if err != nil {
					return Path{}, err
				}
				if i+1+n >= len(s) || s[i+1+n] != ']' {
					return Path{}, errors.New("has an unterminated [\"...\"] key")
				}
				p.Steps = append(p.Steps, Step{Kind: StepKey, Key: key})
				i += n + 2
				needKey = false
				continue
			}
			if needKey && len(p.Steps) > 0 {
				return Path{}, errors.New("has '[' where a name should follow '.'")
			}
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return Path{}, errors.New("has an unclosed '['")
			}
			inner := s[i+1 : i+end]
			if inner == "" {
				p.Steps = append(p.Steps, Step{Kind: StepAll})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 || inner[0] == '+' || (len(inner) > 1 && inner[0] == '0') {
					return Path{}, errors.New("has an array index that is not a non-negative integer")
				}
				p.Steps = append(p.Steps, Step{Kind: StepIndex, Index: n})
			}
			i += end + 1
			needKey = false
		case c == ']':
			return Path{}, errors.New("has an unmatched ']'")
		default:
			if !needKey {
				return Path{}, errors.New("needs '.' between segments")
			}
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' && s[j] != ']' {
				j++
			}
			p.Steps = append(p.Steps, Step{Kind: StepKey, Key: s[i:j]})
			i = j
			needKey = false
		}
	}
	if needKey {
		return Path{}, errors.New("ends with '.'")
	}
	return p, nil
}

// quotedKey reads a JSON string at the start of s and returns its value and length in bytes.
func quotedKey(s string) (string, int, error) {
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			key, err := strconv.Unquote(s[:j+1])
			if err != nil {
				return "", 0, errors.New("has a malformed [\"...\"] key")
			}
			return key, j + 1, nil
		}
	}
	return "", 0, errors.New("has an unterminated [\"...\"] key")
}

// Resolve returns every value p selects in root, in document order. found is false when a key or
// index is missing on the way, or a step meets a value of the wrong kind; `[]` over an empty array
// selects nothing and is still found.
func (p Path) Resolve(root any) (values []any, found bool) {
	values, _, found = resolveSteps(p.Steps, root, false)
	return values, found
}

// resolveSteps is Resolve over bare steps. When track is true it also returns, for each value, the
// index chosen by every `[]` step (len(values) × the number of `[]` steps, value by value), so that
// a failing check can name the exact element (`items[3].price`) instead of the pattern. Key and
// index steps rewrite the working slice in place; only `[]` steps allocate.
func resolveSteps(steps []Step, root any, track bool) (values []any, at []int, found bool) {
	values = []any{root}
	width := 0
	for _, st := range steps {
		if st.Kind != StepAll {
			for i, v := range values {
				child, ok := step(v, st)
				if !ok {
					return nil, nil, false
				}
				values[i] = child
			}
			continue
		}
		n := 0
		for _, v := range values {
			arr, ok := v.([]any)
			if !ok {
				return nil, nil, false
			}
			n += len(arr)
		}
		next := make([]any, 0, n)
		var nextAt []int
		if track {
			nextAt = make([]int, 0, n*(width+1))
		}
		for i, v := range values {
			for j, e := range v.([]any) {
				next = append(next, e)
				if track {
					nextAt = append(nextAt, at[i*width:(i+1)*width]...)
					nextAt = append(nextAt, j)
				}
			}
		}
		values, at = next, nextAt
		width++
	}
	return values, at, true
}

// resolveOne follows steps that contain no `[]` and so select at most one value, without
// allocating: the element-wise comparison of gte and lte calls it once per element.
func resolveOne(steps []Step, v any) (any, bool) {
	for _, st := range steps {
		var ok bool
		if v, ok = step(v, st); !ok {
			return nil, false
		}
	}
	return v, true
}

// step applies one key or index step to v.
func step(v any, st Step) (any, bool) {
	switch st.Kind {
	case StepKey:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		child, ok := obj[st.Key]
		return child, ok
	case StepIndex:
		arr, ok := v.([]any)
		if !ok || st.Index >= len(arr) {
			return nil, false
		}
		return arr[st.Index], true
	}
	return nil, false
}

// countAll is how many `[]` steps steps has: the width of resolveSteps' index records.
func countAll(steps []Step) int {
	n := 0
	for _, st := range steps {
		if st.Kind == StepAll {
			n++
		}
	}
	return n
}

// elementwisePrefix says how many leading steps field and other share when they should be
// compared element by element (SPEC §4.3: `items[].end` gte `items[].start` compares each item's
// end with that item's start). That is the case when other's steps up to and including its last
// `[]` are identical to field's first steps; the answer is then that number of steps, else 0.
func elementwisePrefix(field, other Path) int {
	last := -1
	for i, st := range other.Steps {
		if st.Kind == StepAll {
			last = i
		}
	}
	if last < 0 || last >= len(field.Steps) {
		return 0
	}
	for i := 0; i <= last; i++ {
		if field.Steps[i] != other.Steps[i] {
			return 0
		}
	}
	return last + 1
}

// formatSteps writes steps back as a path that ParsePath reads to the same steps, with each `[]`
// replaced by the index at[k] of the k-th `[]` when at is given (a concrete location such as
// `line_items[1].line_total`). Keys that are not plain names are written as ["..."].
func formatSteps(steps []Step, at []int) string {
	var b []byte
	k := 0
	for _, st := range steps {
		switch st.Kind {
		case StepKey:
			if plainKey(st.Key) {
				if len(b) > 0 {
					b = append(b, '.')
				}
				b = append(b, st.Key...)
			} else {
				b = append(b, '[')
				b = strconv.AppendQuote(b, st.Key)
				b = append(b, ']')
			}
		case StepAll:
			if k < len(at) {
				b = append(b, '[')
				b = strconv.AppendInt(b, int64(at[k]), 10)
				b = append(b, ']')
			} else {
				b = append(b, "[]"...)
			}
			k++
		case StepIndex:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(st.Index), 10)
			b = append(b, ']')
		}
	}
	return string(b)
}

// plainKey tells whether a key can be written bare in a path: not empty, no '.', '[' or ']', no
// control or non-printable characters, and valid UTF-8.
func plainKey(k string) bool {
	if k == "" || !utf8.ValidString(k) {
		return false
	}
	for _, r := range k {
		if r == '.' || r == '[' || r == ']' || !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// displayRaw shows a raw path as messages do (see Path.Display); the empty path is the root, "$".
func displayRaw(raw string) string {
	if raw == "" {
		return "$"
	}
	return Path{Raw: raw}.Display()
}
