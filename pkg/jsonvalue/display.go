package jsonvalue

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// How a report shows the caller's values: every Found text, and every value quoted in a Detail,
// is written by these functions, shortened to ShownChars (SPEC §4.6).

// Shorten cuts a caller's value to at most ShownChars characters (SPEC §4.6), the last of them
// "…" when anything was cut. Every piece of caller data a message shows goes through it or Clip,
// so that a report never becomes a copy of the output it judges.
func Shorten(s string) string { return Clip(s, ShownChars) }

// Clip cuts s to at most max characters, the last of them "…" when anything was cut. Texts that
// hold a value beside other words clip it shorter than ShownChars.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n, cut := 0, 0
	for i := range s {
		switch n {
		case max - 1:
			cut = i
		case max:
			return s[:cut] + "…"
		}
		n++
	}
	return s
}

// QuoteShort shows a string as a JSON string literal, shortened.
func QuoteShort(s string) string {
	if len(s) > 4*ShownChars {
		s = s[:4*ShownChars] // only the start can be shown; quoting the rest would be wasted
	}
	return Shorten(string(appendJSONQuote(nil, s)))
}

// Describe says what a value is, for Found texts: `string "abc"`, `number 12`, `null`,
// `boolean true`, `array [1,2]`, `object {"a":1}`, the value part shortened.
func Describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "boolean true"
		}
		return "boolean false"
	case string:
		return "string " + QuoteShort(x)
	case json.Number:
		return "number " + Shorten(string(x))
	case []any:
		return "array " + Preview(x)
	case map[string]any:
		return "object " + Preview(x)
	}
	return "a value of an unexpected kind"
}

// Preview writes a value as compact JSON (object members sorted), shortened; it stops writing once
// nothing more could be shown.
func Preview(v any) string {
	p := previewWriter{limit: 4 * ShownChars}
	p.value(v)
	return Shorten(string(p.b))
}

type previewWriter struct {
	b     []byte
	limit int
}

func (p *previewWriter) value(v any) {
	if len(p.b) > p.limit {
		return
	}
	switch x := v.(type) {
	case nil:
		p.b = append(p.b, "null"...)
	case bool:
		p.b = strconv.AppendBool(p.b, x)
	case string:
		if len(x) > p.limit {
			x = x[:p.limit]
		}
		p.b = appendJSONQuote(p.b, x)
	case json.Number:
		p.b = append(p.b, x...)
	case []any:
		p.b = append(p.b, '[')
		for i, e := range x {
			if len(p.b) > p.limit {
				return
			}
			if i > 0 {
				p.b = append(p.b, ',')
			}
			p.value(e)
		}
		p.b = append(p.b, ']')
	case map[string]any:
		p.b = append(p.b, '{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if len(p.b) > p.limit {
				return
			}
			if i > 0 {
				p.b = append(p.b, ',')
			}
			if len(k) > p.limit {
				k = k[:p.limit]
			}
			p.b = appendJSONQuote(p.b, k)
			p.b = append(p.b, ':')
			p.value(x[k])
		}
		p.b = append(p.b, '}')
	}
}

// appendJSONQuote appends s as a JSON string literal (the form callers sent it in), escaping
// quotes, backslashes and control characters; invalid UTF-8 shows as U+FFFD.
func appendJSONQuote(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// Brief shows a value where a text lists several (an enum's values) or names it beside other
// words: null, booleans, numbers and strings as JSON, shortened; arrays and objects by size.
func Brief(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case string:
		return QuoteShort(v)
	case []any:
		return "an array of " + Plural(len(v), "item", "items")
	case map[string]any:
		return "an object with " + Plural(len(v), "property", "properties")
	}
	if lit, ok := NumberLiteral(v); ok {
		return Shorten(lit)
	}
	return "a non-JSON value"
}

// BriefList shows values as a JSON-like array of Brief texts, stopping once ShownChars are
// written (the caller shortens the whole).
func BriefList(vals []any) string {
	b := []byte{'['}
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, Brief(v)...)
		if len(b) > ShownChars {
			break
		}
	}
	return string(append(b, ']'))
}

// Plural writes a count with its noun: "1 item", "3 items".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// NumberLiteral returns a number's literal: a json.Number as sent (the decoders build no other),
// and the Go number kinds a caller of the schema evaluator may hold, formatted; ok is false for
// anything else, NaN and infinities included.
func NumberLiteral(v any) (string, bool) {
	switch n := v.(type) {
	case json.Number:
		return string(n), true
	case float64:
		return strconv.FormatFloat(n, 'g', -1, 64), !math.IsNaN(n) && !math.IsInf(n, 0)
	case float32:
		f := float64(n)
		return strconv.FormatFloat(f, 'g', -1, 32), !math.IsNaN(f) && !math.IsInf(f, 0)
	case int:
		return strconv.Itoa(n), true
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(n), true
	}
	return "", false
}
