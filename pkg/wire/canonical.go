package wire

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// errNotTree means a value is not of the types a decoded tree holds.
var errNotTree = errors.New("canonical form: value outside a decoded JSON tree")

// AppendCanonicalTree appends the RFC 8785 form of a decoded tree (nil, bool, string,
// json.Number, []any, map[string]any): members sorted by UTF-16 code units, strings with minimal
// escaping, numbers as ECMAScript writes the double they denote. The engine canonicalizes the
// request's subtrees from the trees its decoder builds anyway, instead of parsing them once more;
// pkg/verify's FuzzCanonicalTree holds it equal to receipt.Canonicalize on the same bytes. A value
// of another type is an error.
func AppendCanonicalTree(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case string:
		return appendQuoted(dst, v)
	case json.Number:
		if SmallInteger(string(v)) {
			return append(dst, v...), nil
		}
		f, err := jsonvalue.ParseFloat(string(v))
		if err != nil {
			return dst, err
		}
		return appendES6Number(dst, f), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendCanonicalTree(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		var small [16]string // most objects: their keys sorted without allocating
		keys := small[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, UTF16Less)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendQuoted(dst, k); err != nil {
				return dst, err
			}
			dst = append(dst, ':')
			if dst, err = AppendCanonicalTree(dst, v[k]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, errNotTree
}

// SmallInteger tells whether lit is an integer literal of at most 15 digits without a leading
// zero, or "0". Such a number is exactly a double (below 2^53) and ECMAScript writes it back digit
// for digit, so it is its own canonical form and within every limit of the decoder: most numbers
// sent are such, and they skip parsing.
func SmallInteger(lit string) bool {
	s := lit
	if len(s) > 0 && s[0] == '-' {
		s = s[1:] // "-0" is not one: its canonical form is 0
	}
	if len(s) == 0 || len(s) > 15 || s[0] == '0' && lit != "0" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendQuoted appends s as a JSON string with minimal escaping (RFC 8785's).
func appendQuoted(dst []byte, s string) ([]byte, error) {
	if PlainASCII(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"'), nil
	}
	return jsontext.AppendQuote(dst, s)
}

// appendES6Number writes f as ECMAScript's Number.prototype.toString does (RFC 8785 §3.2.2.3):
// the shortest digits that round-trip, in plain notation from 1e-6 up to 1e21 and in exponent
// notation (without a leading zero in the exponent) outside it; negative zero is 0.
func appendES6Number(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	if n := len(dst); dst[n-4] == 'e' && dst[n-2] == '0' { // e-07 → e-7
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}

// UTF16Less orders strings by their UTF-16 code units, as RFC 8785 sorts member names: a
// character beyond U+FFFF counts as its surrogate pair, so it sorts before U+E000..U+FFFF.
func UTF16Less(a, b string) int {
	for len(a) > 0 && len(b) > 0 {
		if a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf {
			if a[0] != b[0] {
				return cmp.Compare(a[0], b[0])
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ha, la := utf16Units(ra)
			hb, lb := utf16Units(rb)
			if ha != hb {
				return cmp.Compare(ha, hb)
			}
			return cmp.Compare(la, lb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// utf16Units is r's first UTF-16 code unit and its second (0 when there is none).
func utf16Units(r rune) (rune, rune) {
	if r < 0x10000 {
		return r, 0
	}
	r -= 0x10000
	return 0xD800 + r>>10, 0xDC00 + r&0x3FF
}

// PlainASCII tells whether s is written as is between quotes: printable ASCII without '"' or '\\',
// which no JSON writer escapes. It looks at eight bytes at a time (the last word may overlap the
// one before): a word has none of the characters to escape when no byte has its high bit set,
// none is below 0x20, and none equals '"' or '\\' (the classic tests for a zero or a small byte in
// a word, exact as a yes/no answer).
func PlainASCII(s string) bool {
	if len(s) < 8 {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	for i := 0; i+8 < len(s); i += 8 {
		if !plainWord(word(s[i:])) {
			return false
		}
	}
	return plainWord(word(s[len(s)-8:]))
}

// plainWord tells whether the eight bytes of w are all printable ASCII other than '"' and '\\'.
func plainWord(w uint64) bool { return (SpecialBytes(w)|w)&highBits == 0 }

// highBits is the high bit of each byte of a word.
const highBits = 0x8080808080808080

// SpecialBytes marks, with its high bit, each byte of w (little-endian) that ends a JSON string
// or needs a look: '"', a backslash or a control character. Bytes from 0x80 on are not marked.
// These are the classic tests for a zero or a small byte in a word; the lowest mark is exact (a
// borrow only marks bytes above a marked one), so the first byte to look at is the lowest mark's.
func SpecialBytes(w uint64) uint64 {
	const ones = 0x0101010101010101
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	return ((w-ones*0x20)&^w | (quote-ones)&^quote | (backslash-ones)&^backslash) & highBits
}

// word is the first eight bytes of s, little-endian: one load, once the length is known.
func word(s string) uint64 {
	s = s[:8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
