package jsonvalue

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ShownChars is how much of a caller's value or key a report shows, so that a report never
// becomes a copy of the caller's output: a longer value is cut, and a location shows at most this
// many characters of the caller's keys.
const ShownChars = 80

// Every location a report names (errors, errors_detail, hints, flags, and the paths inside their
// texts) is written by AppendPath, in one syntax: RFC 9535's normalized paths, with the member
// name shorthand for plain names. The root is "$"; a plain name (an ASCII letter or '_', then
// letters, digits and '_') is ".name"; any other key is ['key'] with RFC 9535 §2.7's escapes
// (\' and \\, \b \f \n \r \t, \u00XX for the other control characters; every other character as
// itself, invalid UTF-8 as U+FFFD); an element is [N]. Two forms are this project's own, outside
// RFC 9535: a pattern's `[]` (every element, as rules write it) stays `[]` where no single element
// is meant, and a key cut to fit ShownChars ends in "…" inside its quotes.

var errUnterminatedKey = errors.New("has an unterminated quoted key")

// Display is the path in the report's syntax (see AppendPath): `$.items[]['unit price']`.
func (p Path) Display() string { return Display(p.String()) }

// String is the path in the report's syntax without its "$" (see Bare): `items[]['unit price']`.
// ParsePath reads it back to the same steps.
func (p Path) String() string {
	if p.shown != "" {
		return p.shown
	}
	return p.render()
}

// render is String without the copy ParsePath keeps; a path already written in the report's
// syntax, as most are, costs no new string.
func (p Path) render() string {
	var buf [128]byte
	b := AppendPath(buf[:0], p.Steps, nil)[1:] // without "$"
	if len(b) > 0 && b[0] == '.' {
		b = b[1:]
	}
	if string(b) == p.Raw {
		return p.Raw
	}
	return string(b)
}

// Field is Render without the "$" (see Bare).
func Field(steps []Step, at []int) string { return Bare(Render(steps, at)) }

// Display is the rendered path of a field as Bare gives it: "$" for the root, "$.a" for "a" and
// "$['a b']" for "['a b']".
func Display(field string) string {
	switch {
	case field == "":
		return "$"
	case field[0] == '[':
		return "$" + field
	}
	return "$." + field
}

// Render is AppendPath into a new string, written on the stack first so that a path of usual
// length costs the string alone.
func Render(steps []Step, at []int) string {
	var buf [128]byte
	return string(AppendPath(buf[:0], steps, at))
}

// AppendPath appends the location steps name in the report's path syntax, "$" first. at holds,
// for the k-th `[]` step, the element meant (a concrete location such as `$.items[3].price`), or
// a negative number (or nothing) where the step still means every element. At most ShownChars
// characters of keys are written; a key past that is cut with "…".
func AppendPath(b []byte, steps []Step, at []int) []byte {
	b = append(b, '$')
	budget := ShownChars
	k := 0
	for _, st := range steps {
		switch st.Kind {
		case StepKey:
			b, budget = appendKey(b, st.Key, budget)
		case StepAll:
			if k < len(at) && at[k] >= 0 {
				b = appendIndex(b, at[k])
			} else {
				b = append(b, "[]"...)
			}
			k++
		case StepIndex:
			b = appendIndex(b, st.Index)
		}
	}
	return b
}

// Bare is a rendered path without its "$": the form flags and messages name a field in
// (`items[0].qty`, `['unit price']`, "" for the root).
func Bare(path string) string {
	if len(path) > 1 && path[1] == '.' {
		return path[2:]
	}
	if path != "" {
		return path[1:]
	}
	return ""
}

func appendIndex(b []byte, i int) []byte {
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, ']')
}

// appendKey appends one key step and returns what is left of the budget of key characters.
func appendKey(b []byte, key string, budget int) ([]byte, int) {
	n := utf8.RuneCountInString(key)
	if n <= budget && Identifier(key) {
		b = append(b, '.')
		return append(b, key...), budget - n
	}
	b = append(b, '[', '\'')
	shown := n // characters written as they are; a cut key ends in "…" in place of the rest
	if n > budget {
		shown = max(budget-1, 0)
	}
	i := 0
	for _, r := range key {
		if i == shown {
			b = append(b, "…"...)
			break
		}
		b = appendEscaped(b, r)
		i++
	}
	return append(b, '\'', ']'), max(budget-n, 0)
}

// appendEscaped appends r as RFC 9535 §2.7 writes a character of a normalized path's name.
func appendEscaped(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch r {
	case '\'', '\\':
		return append(b, '\\', byte(r))
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	if r < 0x20 {
		return append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
	}
	return utf8.AppendRune(b, r) // invalid UTF-8 arrives as utf8.RuneError, written as U+FFFD
}

// Identifier tells whether a key is written with the member name shorthand (`.name`): an ASCII
// letter or '_', then ASCII letters, digits and '_'. RFC 9535 allows more in the shorthand
// (non-ASCII letters), but a normalized path brackets every name; the shorthand is kept for the
// names that read the same in every JSONPath dialect, which the seed's own paths are.
func Identifier(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// quotedKey reads a quoted key at the start of s, in double quotes (a JSON string) or in single
// quotes (RFC 9535's string literal: \' for a quote, " as itself), and returns its value and its
// length in bytes.
func quotedKey(s string) (string, int, error) {
	q := s[0]
	var key []byte
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == q:
			return string(key), j + 1, nil
		case c < 0x20:
			return "", 0, errMalformedKey
		case c != '\\':
			key = append(key, c)
			continue
		}
		j++
		if j >= len(s) {
			break
		}
		switch e := s[j]; e {
		case 'b':
			key = append(key, '\b')
		case 'f':
			key = append(key, '\f')
		case 'n':
			key = append(key, '\n')
		case 'r':
			key = append(key, '\r')
		case 't':
			key = append(key, '\t')
		case '/', '\\', q:
			key = append(key, e)
		case 'u':
			r, n, ok := unicodeEscape(s[j-1:])
			if !ok {
				return "", 0, errMalformedKey
			}
			key = utf8.AppendRune(key, r)
			j += n - 2
		default:
			return "", 0, errMalformedKey
		}
	}
	return "", 0, errUnterminatedKey
}

var errMalformedKey = errors.New("has a malformed quoted key")

// unicodeEscape reads `\uXXXX` at the start of s, or a surrogate pair of two, and returns the
// character and the bytes read; a lone surrogate is refused.
func unicodeEscape(s string) (rune, int, bool) {
	hex4 := func(s string) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(s[2:6], 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, true
	}
	lo, ok := hex4(s[6:])
	if r >= 0xdc00 || !ok {
		return 0, 0, false
	}
	if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
		return d, 12, true
	}
	return 0, 0, false
}
