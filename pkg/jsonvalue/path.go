// Package jsonvalue holds what every check of the verifier does with the caller's JSON values:
// it addresses them by path, and renders every location it reports in one path syntax.
package jsonvalue

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Path addresses values inside submitted_output (SPEC §4.3): `a.b.c`, `a[].b` (every element),
// `a[2].b` (one element), `a[].b[].c` (flattened in document order) and `['key.with.dots']` (RFC
// 9535's quoting, which reports use) or `["key.with.dots"]` (a JSON string) for keys that are not
// plain names. A leading `[]` or `[N]` addresses a root array. Every form a report prints reads
// back as the place it names: `$` is the root and `$.a`, `$['a b']`, `$[0]` are `a`, `['a b']`,
// `[0]`. Any other spelling is refused (docs/rules.md has the grammar): a bare name with `$`, `*`,
// a quote, a control character or white space at an end would name a key nobody writes, and a
// check under if_present on it would be skipped instead of failing.
//
// One meaning serves bounds and every rule, on the checked field and on every operand path alike.
// A path selects places: one without `[]`, and one per element for each `[]`. A place holds a
// value, or nothing: a key that is missing, an index past the end, or a step that meets a value of
// the wrong kind (a key under a non-object, `[]` or `[N]` under a non-array); null is a value. An
// element whose inner array is missing (`a[].b[].c` where a[1] has no b) is one place with nothing
// there. A `[]` over an empty array selects no place: no values, and nothing missing.
//
// Every place that holds a value is checked, whatever the others lack. With if_present the places
// with nothing there are left out, and a rule or bound none of whose places holds a value is
// skipped (it counts nothing). Without if_present each place with nothing there fails as "field
// not found", naming that place (`o[1].p`): bounds, gte, lte and exists_in count one failed check
// per such place beside the checks of the values there; sum_equals and unique, one check per rule,
// fail, naming the first such place.
//
// Operands follow the same resolution. An operand path (equals_field, in_field, other_field
// compared as one number) with a place with nothing there is, without if_present, one failed check
// after which the rule stops, since what it would compare with is incomplete; with if_present those
// places are left out, and an operand with no value at all skips the rule. Element by element (gte
// and lte whose field and other_field share their `[]` prefix) each element has its own operand: a
// value whose operand is missing is one failed check naming the operand's place, or is left out
// with if_present.
//
// unique and exists_in compare whole values, so the request decoder refuses (refuseWholeValues) a
// unique field without `[]` (one value is always unique) and an exists_in field or in_field
// without `[]` that names an array in the output (it would compare the array as one value).
type Path struct {
	Raw   string
	Steps []Step
	// shown is the path in the report's syntax without "$" (String), rendered once when parsed:
	// Raw itself when the caller wrote it so.
	shown string
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
	if s[0] == '$' {
		// The report's root-anchored form: "$" alone is the root, and what follows is a step.
		if len(s) > 1 && s[1] != '.' && s[1] != '[' {
			return Path{}, errors.New("has '$' not followed by '.', '[' or the end")
		}
		if len(s) > 1 && s[1] == '.' && (len(s) == 2 || s[2] == '.') {
			return Path{}, errors.New("needs a name after the root's dot")
		}
		i = 1
		needKey = len(s) > 1 && s[1] == '.'
		if needKey {
			i = 2
		}
	}
	for i < len(s) {
		switch c := s[i]; {
		case c == '.':
			if needKey {
				return Path{}, errors.New("has an empty segment")
			}
			needKey = true
			i++
		case c == '[':
			if i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\'') {
				key, n, err := quotedKey(s[i+1:])
				if err != nil {
					return Path{}, err
				}
				if i+1+n >= len(s) || s[i+1+n] != ']' {
					return Path{}, errUnterminatedKey
				}
				p.Steps = append(p.Steps, Step{Kind: StepKey, Key: key})
				i += n + 2
				needKey = false
				continue
			}
			if needKey && i > 0 {
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
			if err := bareName(s[i:j]); err != nil {
				return Path{}, err
			}
			p.Steps = append(p.Steps, Step{Kind: StepKey, Key: s[i:j]})
			i = j
			needKey = false
		}
	}
	if needKey {
		return Path{}, errors.New("ends with '.'")
	}
	p.shown = p.render()
	return p, nil
}

// bareName refuses a key written without brackets that the grammar does not define (docs/rules.md):
// one with '$' (the root comes only first), '*' (no wildcard but `[]`), a quote (a quoted key
// goes in brackets), a control character, or white space at either end, which a reader does
// not see. Each would otherwise name a key nobody has and so skip its check under if_present.
func bareName(k string) error {
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '$':
			return errors.New("has '$' other than at its start")
		case c == '*':
			return errors.New("has '*': every element is written '[]'")
		case c == '\'' || c == '"':
			return errors.New("has a quote in a bare name: write a quoted key in brackets, ['...']")
		case c < 0x20 || c == 0x7f:
			return errors.New("has a control character in a bare name")
		}
	}
	first, _ := utf8.DecodeRuneInString(k)
	last, _ := utf8.DecodeLastRuneInString(k)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return errors.New("has white space at the start or end of a name: write such a key as ['...']")
	}
	if k == "" {
		return errors.New("has an empty segment")
	}
	return nil
}

// Resolve returns the values p selects in root that are there, in document order, and how many
// of the places it selects have nothing there (see Path). A path through `[]` over an empty
// array selects no place at all: no values and nothing missing.
func (p Path) Resolve(root any) (values []any, missing int) {
	slots, _, missing := Places(p.Steps, root, false)
	if missing == 0 {
		return slots, 0
	}
	values = make([]any, 0, len(slots)-missing)
	for _, v := range slots {
		if !IsAbsent(v) {
			values = append(values, v)
		}
	}
	return values, missing
}

// absentValue marks, among the places a path selects, one where nothing is (see Path). It has
// no fields, so storing it in an interface allocates nothing.
type absentValue struct{}

// Absent is the one place holder Places puts where a path finds nothing.
var Absent any = absentValue{}

// IsAbsent tells whether v is the place holder of a place with nothing there.
func IsAbsent(v any) bool {
	_, ok := v.(absentValue)
	return ok
}

// Places is Resolve over bare steps, keeping every place in document order: a value that
// is there, or absent where nothing is, and missing counts the absent ones. A place that is
// absent before a `[]` step stays one absent place. When track is true it also returns, for each
// place, the index chosen by every `[]` step (len(values) × the number of `[]` steps, place by
// place; -1 for a `[]` step an absent place never reached), so that a failing check can name the
// exact element (`items[3].price`, or `items[1].tags[]` where items[1] has no tags) instead of
// the pattern. Key and index steps rewrite the working slice in place; only `[]` steps allocate.
func Places(steps []Step, root any, track bool) (values []any, at []int, missing int) {
	values = []any{root}
	width := 0
	for _, st := range steps {
		if st.Kind != StepAll {
			for i, v := range values {
				if IsAbsent(v) {
					continue
				}
				child, ok := step(v, st)
				if !ok {
					child = Absent
				}
				values[i] = child
			}
			continue
		}
		n := 0
		for _, v := range values {
			if arr, ok := v.([]any); ok {
				n += len(arr)
			} else {
				n++
			}
		}
		next := make([]any, 0, n)
		var nextAt []int
		if track {
			nextAt = make([]int, 0, n*(width+1))
		}
		for i, v := range values {
			arr, ok := v.([]any)
			if !ok {
				// Nothing there, or not an array: one place where the elements are missing.
				next = append(next, Absent)
				if track {
					nextAt = append(nextAt, at[i*width:(i+1)*width]...)
					nextAt = append(nextAt, -1)
				}
				continue
			}
			for j, e := range arr {
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
	for _, v := range values {
		if IsAbsent(v) {
			missing++
		}
	}
	return values, at, missing
}

// One follows steps that contain no `[]` and so select at most one value, without
// allocating: the element-wise comparison of gte and lte calls it once per element.
func One(steps []Step, v any) (any, bool) {
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

// ArrayWithoutAll tells whether p has no `[]` step and names an array in root: the path that
// exists_in refuses (see Path), because it would compare the array as one value where its
// elements were meant.
func ArrayWithoutAll(p Path, root any) bool {
	if CountAll(p.Steps) > 0 {
		return false
	}
	v, ok := One(p.Steps, root)
	_, isArray := v.([]any)
	return ok && isArray
}

// CountAll is how many `[]` steps steps has: the width of Places' index records.
func CountAll(steps []Step) int {
	n := 0
	for _, st := range steps {
		if st.Kind == StepAll {
			n++
		}
	}
	return n
}

// ElementwisePrefix says how many leading steps field and other share when they should be
// compared element by element (SPEC §4.3: `items[].end` gte `items[].start` compares each item's
// end with that item's start). That is the case when other's steps up to and including its last
// `[]` are identical to field's first steps; the answer is then that number of steps, else 0.
func ElementwisePrefix(field, other Path) int {
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
