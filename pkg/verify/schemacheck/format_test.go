package schemacheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// ECMA-262 patterns keep their meaning on RE2: each case says what the pattern matches and what
// it does not, where ECMA-262 and RE2's own syntax would differ.
func TestECMARegexMeaning(t *testing.T) {
	for _, c := range []struct {
		pattern      string
		match, other []string
	}{
		{`^\d+$`, []string{"0129"}, []string{"١٢", "１"}},                                                     // \d is ASCII
		{`^\w+$`, []string{"a_Z9"}, []string{"é", "ß"}},                                                      // \w is ASCII
		{`^\s$`, []string{" ", "\t", "\v", "\u00a0", "\ufeff", "\u2028", "\u3000"}, []string{"a", "\u200b"}}, // ECMA's set
		{`^\S$`, []string{"a", "\u200b"}, []string{"\u00a0", "\ufeff", "\u2029"}},
		{`^[\S]$`, []string{"a"}, []string{"\u00a0"}},
		{`^.$`, []string{"a", "😀"}, []string{"\n", "\r", "\u2028", "\u2029"}}, // "." is a code point, not a line terminator
		{`^\cJ$`, []string{"\n"}, []string{"J"}},
		{`^\u{1F600}$`, []string{"😀"}, []string{"\\u{1F600}"}},
		{`^\uD83D\uDE00$`, []string{"😀"}, nil}, // a surrogate pair is one code point
		{`^\x41\0$`, []string{"A\x00"}, nil},
		{`^[^]$`, []string{"\n", "a"}, []string{""}},
		{`[]`, nil, []string{"", "a", "[]"}},
		{`^\p{Lu}\p{Script=Greek}$`, []string{"AΩ"}, []string{"aΩ", "AA"}},
		{`^\p{Letter}+$`, []string{"Écôle"}, []string{"a1"}},
		{`^[\d-z]+$`, nil, nil}, // not reached: a class escape ending a range is a syntax error below
		{`^(?<year>\d{4})-\d{2}$`, []string{"2024-01"}, []string{"24-01"}},
		{`^a{2,3}?$`, []string{"aa", "aaa"}, []string{"a", "aaaa"}},
		{`\/`, []string{"/"}, nil},
	} {
		if c.match == nil && c.other == nil {
			continue
		}
		re, err := schemaRegexpEngine(c.pattern)
		if err != nil {
			t.Errorf("%s: %v", c.pattern, err)
			continue
		}
		for _, s := range c.match {
			if !re.MatchString(s) {
				t.Errorf("%s does not match %q", c.pattern, s)
			}
		}
		for _, s := range c.other {
			if re.MatchString(s) {
				t.Errorf("%s matches %q", c.pattern, s)
			}
		}
	}
}

// What is not ECMA-262 is a syntax error; what is ECMA-262 but has no RE2 equivalent is valid
// and marked unrunnable with the construct named.
func TestECMARegexSyntax(t *testing.T) {
	for _, c := range []struct {
		pattern, unrunnable string
		invalid             bool
	}{
		{`\a`, "", true}, {`(?i)a`, "", true}, {`(?P<n>a)`, "", true}, {`(?#c)a`, "", true}, {`a{`, "", true},
		{`a{2,1}`, "", true}, {`(a)\2`, "", true}, {`\k<n>`, "", true}, {`[z-a]`, "", true}, {`[\d-z]`, "", true},
		{`a**`, "", true}, {`(?=a)*`, "", true}, {`\c1`, "", true}, {`\u{110000}`, "", true}, {`\p{Nope}`, "", true},
		{`\01`, "", true}, {`(a`, "", true}, {`a)`, "", true}, {`]`, "", true}, {`\`, "", true},
		{`(?=a)b`, "lookahead", false}, {`(?!a)b`, "negative lookahead", false}, {`(?<=a+)b`, "lookbehind", false},
		{`(?<!a)b`, "negative lookbehind", false}, {`(a)\1`, "backreference", false}, {`(?<n>a)\k<n>`, "named backreference", false},
		{`a{1001}`, "repetition count above 1000", false}, {`\uD800`, "lone surrogate", false},
		{`^[a-z]+\.(?:com|org)$`, "", false}, {`[]`, "", false}, {`\cA`, "", false}, {`(?<name>x)`, "", false},
	} {
		tr, err := ecmaTranslate(c.pattern)
		if got := err != nil; got != c.invalid {
			t.Errorf("%s: error %v, want invalid=%v", c.pattern, err, c.invalid)
			continue
		}
		if c.invalid {
			continue
		}
		if c.unrunnable == "" && tr.unrunnable != "" || !strings.Contains(tr.unrunnable, c.unrunnable) {
			t.Errorf("%s: unrunnable %q, want %q", c.pattern, tr.unrunnable, c.unrunnable)
		}
	}
}

// A pattern RE2 cannot run is a 422 naming its place and construct (never the pattern), while
// the same text as a value of format "regex" is a valid ECMA-262 regular expression; a value that
// is not ECMA-262 fails the format, by the library and the walker alike.
func TestSchemaPatternsAreECMA(t *testing.T) {
	_, err := Compile(schDecode(t, []byte(`{"properties":{"a":{"pattern":"(?<=secret)b"}},"patternProperties":{"(secret)\\1":{}}}`)), false)
	e, ok := apperr.As(err)
	if !ok || e.Status() != 422 || len(e.Fields) != 2 {
		t.Fatalf("got %v, want a 422 naming both patterns", err)
	}
	for i, want := range [][]string{{"expected_schema.patternProperties", "backreference"}, {"expected_schema.properties.a.pattern", "lookbehind"}} {
		f := e.Fields[i]
		for _, w := range want {
			if f.Field != "expected_schema" || !strings.Contains(f.Problem, w) || strings.Contains(f.Problem, "secret") || f.Fix != schemaFixRegex {
				t.Errorf("field %d %+v: want expected_schema, %q, the regex fix and no pattern text", i, f, w)
			}
		}
	}
	sch, err := Compile(schDecode(t, []byte(`{"type":"array","items":{"format":"regex"}}`)), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		value string
		valid bool
	}{{`(?<=a)b`, true}, {`(a)\1`, true}, {`\p{Lu}`, true}, {`(?i)a`, false}, {`\a`, false}, {`(?P<n>x)`, false}} {
		r := sch.crossCheck([]any{c.value})
		if r.walkerValid != c.valid || r.libValid != c.valid {
			t.Errorf("format regex %q: walker %v, library %v, want %v", c.value, r.walkerValid, r.libValid, c.valid)
		}
	}
}

// Format checkers beyond the suite's cases: the places the RFCs are easy to get wrong.
func TestFormatCheckers(t *testing.T) {
	for _, c := range []struct {
		format string
		check  func(string) bool
		valid  []string
		bad    []string
	}{
		{"hostname", formatHostname, []string{"a.b", "xn--bcher-kva.example", "a--b.c", strings.Repeat("a", 63)},
			[]string{"ab--cd.example", "xn--bcher-kva.", "a_b", strings.Repeat("a", 64), strings.Repeat("a.", 127) + "a", "xn--a"}},
		{"hostname (draft 4, 6)", formatHostname1123, []string{"ab--cd.example"}, []string{"a.", "-a"}},
		{"idn-hostname", formatIDNHostname, []string{"bücher.example", "例え.テスト"}, []string{"bu\u0308cher", "a\u00a1b"}},
		{"email", func(s string) bool { return formatEmail(s, false) }, []string{"a@b.c", `"a b"@c`, "a@[IPv6:::1]"},
			[]string{"@b", "a@", "a@[1.2.3]", "a@[x:y]", "ä@b.c", strings.Repeat("a", 65) + "@b"}},
		{"idn-email", func(s string) bool { return formatEmail(s, true) }, []string{"ä@bücher.example"}, []string{"a@b..c"}},
		{"ipv4", formatIPv4, []string{"1.2.3.4"}, []string{"01.2.3.4", "1.2.3", "::1"}},
		{"duration", formatDuration, []string{"P1Y2M3DT4H5M6S", "P3W", "PT0S"}, []string{"P1Y2D", "PT1H2S", "P1W1D", "P", "PT"}},
		{"uri", func(s string) bool { return formatURI(s, false, false) }, []string{"a:", "a://[v1.x]/", "a://u@h:80/p?q#f", "urn:x:y"},
			[]string{"a://h:x", "a://[::1%25eth0]", "a:b c", "a:%zz", "a://h/é", "//h"}},
		{"uri-reference", func(s string) bool { return formatURI(s, false, true) }, []string{"", "#f", "//h/p", "a/b:c"}, []string{"a:b:c d", "a b"}},
		{"iri", func(s string) bool { return formatURI(s, true, false) }, []string{"a://é/é?\U000F0000"}, []string{"a://h/\U000F0000", "a://h/\ufffe"}},
		{"uri-template", formatURITemplate, []string{"{+a,b:3}", "x{/y*}", "{=a}"}, []string{"{a", "{a:}", "{a b}", "}", "{}"}},
	} {
		for _, s := range c.valid {
			if !c.check(s) {
				t.Errorf("%s: %q refused", c.format, s)
			}
		}
		for _, s := range c.bad {
			if c.check(s) {
				t.Errorf("%s: %q accepted", c.format, s)
			}
		}
	}
}

// BenchmarkFormatsHostile runs every checker on 16 KiB and 64 KiB hostile strings: the time per
// byte stays flat (linear), and names with a length limit are refused before any work.
func BenchmarkFormatsHostile(b *testing.B) {
	inputs := map[string]func(n int) string{
		"labels":   func(n int) string { return strings.Repeat("xn--a.", n/6) },
		"percent":  func(n int) string { return "a://h/" + strings.Repeat("%4", n/2) },
		"template": func(n int) string { return strings.Repeat("{a,", n/3) },
		"regex":    func(n int) string { return strings.Repeat("(a|[b-c]*)+{1,2}", n/16) },
		"mail":     func(n int) string { return strings.Repeat("a.", n/2) + "@" },
	}
	for _, f := range schemaFormatCheckers {
		for name, gen := range inputs {
			for _, n := range []int{16 << 10, 64 << 10} {
				s := gen(n)
				b.Run(fmt.Sprintf("%s/%s/%dKiB", f.Name, name, n>>10), func(b *testing.B) {
					b.SetBytes(int64(len(s)))
					for range b.N {
						_ = f.Validate(s)
					}
				})
			}
		}
	}
	for name, unit := range map[string]string{"groups": "(a|[b-c]*)+", "unclosed-names": "(?<a", "braces": `\u{1`} {
		for _, n := range []int{16 << 10, 64 << 10} {
			s := strings.Repeat(unit, n/len(unit))
			b.Run(fmt.Sprintf("ecma-translate/%s/%dKiB", name, n>>10), func(b *testing.B) {
				b.SetBytes(int64(len(s)))
				for range b.N {
					_, _ = ecmaTranslate(s)
				}
			})
		}
	}
}
