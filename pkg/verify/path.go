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
	p := Path{Raw: s}
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
	values = []any{root}
	for _, st := range p.Steps {
		next := values[:0:0]
		for _, v := range values {
			switch st.Kind {
			case StepKey:
				obj, ok := v.(map[string]any)
				if !ok {
					return nil, false
				}
				child, ok := obj[st.Key]
				if !ok {
					return nil, false
				}
				next = append(next, child)
			case StepAll:
				arr, ok := v.([]any)
				if !ok {
					return nil, false
				}
				next = append(next, arr...)
			case StepIndex:
				arr, ok := v.([]any)
				if !ok || st.Index >= len(arr) {
					return nil, false
				}
				next = append(next, arr[st.Index])
			}
		}
		values = next
	}
	return values, true
}
