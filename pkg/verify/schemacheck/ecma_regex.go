package schemacheck

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON Schema's regular expressions are ECMA-262's (pattern, patternProperties, format "regex").
// The verifier reads them with ECMA-262's syntax and meaning, under the u flag (code points, the
// strict syntax of the Unicode mode), and runs them on Go's RE2 engine, which takes time linear in
// its input and never backtracks: ecmaTranslate writes each pattern as the RE2 pattern that
// matches the same strings (\d and \w are ASCII, \s is ECMA's set of white space and line
// terminators, "." excludes ECMA's four line terminators, \cX, \u{...}, and so on). What has no
// RE2 equivalent (lookaround, backreferences, repetition counts above RE2's 1000) is still valid
// ECMA-262, so a value of format "regex" using it is valid; as a pattern of the schema it is
// refused with a 422 naming the construct (schemaCheckRunnablePatterns), never handed to a
// backtracking engine.

// ecmaMaxNesting is the deepest nesting of groups the translator follows: RE2 refuses deeper
// ones (regexp/syntax's own limit is 1000), and the bound keeps the recursive parser's stack small.
const ecmaMaxNesting = 1000

// ecmaMaxRepeat is the largest repetition count RE2 runs.
const ecmaMaxRepeat = 1000

// ecmaSyntaxError is a pattern that is not ECMA-262: what is wrong, as a phrase after "it".
type ecmaSyntaxError struct{ what string }

func (e *ecmaSyntaxError) Error() string { return "the pattern " + e.what }

// ecmaTranslation is a valid ECMA-262 pattern as RE2 syntax, or, when RE2 cannot run it, the
// first construct that keeps it from doing so.
type ecmaTranslation struct {
	re2        string
	unrunnable string // a phrase after "it", e.g. "uses a lookbehind, which RE2 does not support"
}

type ecmaParser struct {
	src        string
	pos        int
	depth      int
	out        strings.Builder
	groups     int
	names      map[string]bool
	unrunnable string
}

// ecmaTranslate parses pattern as an ECMA-262 regular expression under the u flag, in one pass
// (and one more to count its groups, which backreferences may name before they are opened), and
// writes its RE2 equivalent.
func ecmaTranslate(pattern string) (ecmaTranslation, error) {
	if !utf8.ValidString(pattern) {
		return ecmaTranslation{}, &ecmaSyntaxError{"is not valid UTF-8"}
	}
	p := &ecmaParser{src: pattern}
	p.countGroups()
	if err := p.disjunction(); err != nil {
		return ecmaTranslation{}, err
	}
	if p.pos < len(p.src) {
		return ecmaTranslation{}, &ecmaSyntaxError{"has an unmatched ')'"}
	}
	return ecmaTranslation{re2: p.out.String(), unrunnable: p.unrunnable}, nil
}

// countGroups counts the capturing groups and collects the group names.
func (p *ecmaParser) countGroups() {
	inClass := false
	for i := 0; i < len(p.src); i++ {
		switch c := p.src[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '(':
			rest := p.src[i+1:]
			if !strings.HasPrefix(rest, "?") {
				p.groups++
			} else if strings.HasPrefix(rest, "?<") && !strings.HasPrefix(rest, "?<=") && !strings.HasPrefix(rest, "?<!") {
				p.groups++
				if end := ecmaGroupNameEnd(rest, 2); end > 2 {
					if p.names == nil {
						p.names = map[string]bool{}
					}
					p.names[rest[2:end]] = true
				}
			}
		}
	}
}

func (p *ecmaParser) cannotRun(what string) {
	if p.unrunnable == "" {
		p.unrunnable = what
	}
}

func (p *ecmaParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *ecmaParser) disjunction() error {
	for {
		if err := p.alternative(); err != nil {
			return err
		}
		if p.peek() != '|' {
			return nil
		}
		p.pos++
		p.out.WriteByte('|')
	}
}

func (p *ecmaParser) alternative() error {
	for p.pos < len(p.src) && p.src[p.pos] != '|' && p.src[p.pos] != ')' {
		if err := p.term(); err != nil {
			return err
		}
	}
	return nil
}

// term is an assertion, or an atom and its quantifier.
func (p *ecmaParser) term() error {
	c := p.src[p.pos]
	quantifiable := true
	switch {
	case c == '^' || c == '$':
		p.pos++
		p.out.WriteByte(c)
		quantifiable = false
	case c == '\\' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == 'b' || p.src[p.pos+1] == 'B'):
		p.out.WriteString(p.src[p.pos : p.pos+2]) // word boundaries: both on ASCII word characters
		p.pos += 2
		quantifiable = false
	case c == '(':
		q, err := p.group()
		if err != nil {
			return err
		}
		quantifiable = q
	case c == '.':
		p.pos++
		p.out.WriteString(`[^\n\r\x{2028}\x{2029}]`)
	case c == '[':
		if err := p.class(); err != nil {
			return err
		}
	case c == '\\':
		if err := p.atomEscape(); err != nil {
			return err
		}
	case c == '*' || c == '+' || c == '?' || c == '{':
		return &ecmaSyntaxError{"has a quantifier with nothing to repeat"}
	case c == ']' || c == '}':
		return &ecmaSyntaxError{"has an unmatched '" + string(c) + "'"}
	default:
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		p.writeRune(r)
	}
	return p.quantifier(quantifiable)
}

// group is "(" ... ")": a capture, a named capture, a non-capturing group or a lookaround (which
// is not quantifiable under the u flag). It answers whether a quantifier may follow.
func (p *ecmaParser) group() (bool, error) {
	if p.depth++; p.depth > ecmaMaxNesting {
		return false, &ecmaSyntaxError{"nests groups more than " + strconv.Itoa(ecmaMaxNesting) + " deep"}
	}
	defer func() { p.depth-- }()
	rest := p.src[p.pos:]
	quantifiable, open, read := true, "(", 1
	switch {
	case strings.HasPrefix(rest, "(?:"):
		open, read = "(?:", 3
	case strings.HasPrefix(rest, "(?="):
		open, read, quantifiable = "(?:", 3, false
		p.cannotRun("uses a lookahead, which RE2 does not support")
	case strings.HasPrefix(rest, "(?!"):
		open, read, quantifiable = "(?:", 3, false
		p.cannotRun("uses a negative lookahead, which RE2 does not support")
	case strings.HasPrefix(rest, "(?<="):
		open, read, quantifiable = "(?:", 4, false
		p.cannotRun("uses a lookbehind, which RE2 does not support")
	case strings.HasPrefix(rest, "(?<!"):
		open, read, quantifiable = "(?:", 4, false
		p.cannotRun("uses a negative lookbehind, which RE2 does not support")
	case strings.HasPrefix(rest, "(?<"):
		end := ecmaGroupNameEnd(rest, 3)
		if end < 0 || !ecmaIsGroupName(rest[3:end]) {
			return false, &ecmaSyntaxError{"has an invalid group name"}
		}
		p.pos += end + 1
		p.out.WriteString("(?P<" + rest[3:end] + ">")
		return p.groupBody(true)
	case strings.HasPrefix(rest, "(?"):
		return false, &ecmaSyntaxError{"uses a (?...) group syntax ECMA-262 does not define"}
	}
	p.pos += read
	p.out.WriteString(open)
	return p.groupBody(quantifiable)
}

func (p *ecmaParser) groupBody(quantifiable bool) (bool, error) {
	if err := p.disjunction(); err != nil {
		return false, err
	}
	if p.peek() != ')' {
		return false, &ecmaSyntaxError{"has an unclosed group"}
	}
	p.pos++
	p.out.WriteByte(')')
	return quantifiable, nil
}

// ecmaGroupNameEnd is the index of the '>' that closes a group name starting at from, or -1.
// It stops at the first character no name can hold, so that many unclosed "(?<" cannot make the
// parser read the rest of the pattern once for each.
func ecmaGroupNameEnd(s string, from int) int {
	for i := from; i < len(s); i++ {
		switch c := s[i]; {
		case c == '>':
			return i
		case c < utf8.RuneSelf && !formatIsAlpha(c) && !formatIsDigit(c) && c != '$' && c != '_':
			return -1
		}
	}
	return -1
}

// ecmaIsGroupName is a group name: an identifier of ASCII letters, digits, '$' and '_', or any
// letter (ECMA-262's RegExpIdentifierName, without escapes).
func ecmaIsGroupName(n string) bool {
	if n == "" {
		return false
	}
	for i, r := range n {
		if !(unicode.IsLetter(r) || r == '$' || r == '_' || i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r))) {
			return false
		}
	}
	return true
}

// quantifier reads an optional quantifier and its lazy mark.
func (p *ecmaParser) quantifier(allowed bool) error {
	c := p.peek()
	switch c {
	case '*', '+', '?':
		p.pos++
		p.out.WriteByte(c)
	case '{':
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return &ecmaSyntaxError{"has a lone '{'"}
		}
		body := p.src[p.pos+1 : p.pos+end]
		loText, hiText, comma := strings.Cut(body, ",")
		lo, err1 := ecmaCount(loText)
		hi, err2 := lo, error(nil)
		if comma {
			hi, err2 = -1, nil
			if hiText != "" {
				hi, err2 = ecmaCount(hiText)
			}
		}
		if err1 != nil || err2 != nil {
			return &ecmaSyntaxError{"has a lone '{'"}
		}
		if hi >= 0 && hi < lo {
			return &ecmaSyntaxError{"has a repetition whose maximum is below its minimum"}
		}
		if lo > ecmaMaxRepeat || hi > ecmaMaxRepeat {
			p.cannotRun("uses a repetition count above 1000, which RE2 does not support")
			lo, hi = min(lo, ecmaMaxRepeat), min(hi, ecmaMaxRepeat)
		}
		p.pos += end + 1
		switch {
		case hi < 0:
			fmt.Fprintf(&p.out, "{%d,}", lo)
		case comma:
			fmt.Fprintf(&p.out, "{%d,%d}", lo, hi)
		default:
			fmt.Fprintf(&p.out, "{%d}", lo)
		}
	default:
		return nil
	}
	if !allowed {
		return &ecmaSyntaxError{"has a quantifier on an assertion"}
	}
	if p.peek() == '?' {
		p.pos++
		p.out.WriteByte('?')
	}
	return nil
}

// ecmaCount is a repetition count: decimal digits, saturated far above ecmaMaxRepeat.
func ecmaCount(s string) (int, error) {
	if s == "" {
		return 0, strconv.ErrSyntax
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
		n = min(n*10+int(s[i]-'0'), 1<<30)
	}
	return n, nil
}

// The class escapes as RE2 class items, in ECMA-262's meaning: \d and \w are ASCII, \s is
// WhiteSpace and LineTerminator; the complements are written out, since RE2's \S is the
// complement of its own, smaller \s.
var (
	ecmaSpaceRanges = []rune{'\t', '\r', ' ', ' ', 0xA0, 0xA0, 0x1680, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029,
		0x202F, 0x202F, 0x205F, 0x205F, 0x3000, 0x3000, 0xFEFF, 0xFEFF}
	ecmaDigitRanges = []rune{'0', '9'}
	ecmaWordRanges  = []rune{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
	ecmaClassItems  = map[byte]string{
		'd': ecmaRangesText(ecmaDigitRanges), 'D': ecmaRangesText(ecmaComplement(ecmaDigitRanges)),
		'w': ecmaRangesText(ecmaWordRanges), 'W': ecmaRangesText(ecmaComplement(ecmaWordRanges)),
		's': ecmaRangesText(ecmaSpaceRanges), 'S': ecmaRangesText(ecmaComplement(ecmaSpaceRanges)),
	}
)

// ecmaComplement is the complement of sorted, disjoint ranges (pairs of bounds) in the code points.
func ecmaComplement(ranges []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i < len(ranges); i += 2 {
		if ranges[i] > next {
			out = append(out, next, ranges[i]-1)
		}
		next = ranges[i+1] + 1
	}
	return append(out, next, unicode.MaxRune)
}

func ecmaRangesText(ranges []rune) string {
	var b strings.Builder
	for i := 0; i < len(ranges); i += 2 {
		fmt.Fprintf(&b, `\x{%x}`, ranges[i])
		if ranges[i+1] != ranges[i] {
			fmt.Fprintf(&b, `-\x{%x}`, ranges[i+1])
		}
	}
	return b.String()
}

func (p *ecmaParser) writeRune(r rune) { fmt.Fprintf(&p.out, `\x{%x}`, r) }

// atomEscape is a backslash escape outside a class: a backreference, a class escape or a
// character escape.
func (p *ecmaParser) atomEscape() error {
	if p.pos+1 >= len(p.src) {
		return &ecmaSyntaxError{"ends with a lone backslash"}
	}
	c := p.src[p.pos+1]
	switch {
	case c >= '1' && c <= '9':
		end := p.pos + 1
		for end < len(p.src) && p.src[end] >= '0' && p.src[end] <= '9' {
			end++
		}
		if n, _ := ecmaCount(p.src[p.pos+1 : end]); n > p.groups {
			return &ecmaSyntaxError{"has a backreference to a group that does not exist"}
		}
		p.pos = end
		p.cannotRun("uses a backreference, which RE2 does not support")
		p.out.WriteString(`(?:)`)
		return nil
	case c == 'k':
		rest := p.src[p.pos+2:]
		end := ecmaGroupNameEnd(rest, 1)
		if !strings.HasPrefix(rest, "<") || end < 0 || !p.names[rest[1:end]] {
			return &ecmaSyntaxError{"has a named backreference to a group that does not exist"}
		}
		p.pos += 2 + end + 1
		p.cannotRun("uses a named backreference, which RE2 does not support")
		p.out.WriteString(`(?:)`)
		return nil
	}
	item, single, err := p.classEscape()
	if err != nil {
		return err
	}
	if single >= 0 {
		p.writeRune(single)
	} else {
		p.out.WriteString("[" + item + "]")
	}
	return nil
}

// classEscape reads a backslash escape valid both in and outside a class: a class escape (item
// set, single -1) or a character escape (single, the code point).
func (p *ecmaParser) classEscape() (item string, single rune, err error) {
	c := p.src[p.pos+1]
	p.pos += 2
	if s, ok := ecmaClassItems[c]; ok {
		return s, -1, nil
	}
	switch c {
	case 'p', 'P':
		return p.property(c == 'P')
	case 'f':
		return "", '\f', nil
	case 'n':
		return "", '\n', nil
	case 'r':
		return "", '\r', nil
	case 't':
		return "", '\t', nil
	case 'v':
		return "", '\v', nil
	case 'c':
		if p.pos < len(p.src) && formatIsAlpha(p.src[p.pos]) {
			p.pos++
			return "", rune(p.src[p.pos-1] % 32), nil
		}
		return "", 0, &ecmaSyntaxError{`has a \c not followed by a letter`}
	case '0':
		if p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			return "", 0, &ecmaSyntaxError{"uses an octal escape, which ECMA-262 does not allow under the u flag"}
		}
		return "", 0, nil
	case 'x':
		if p.pos+2 <= len(p.src) && formatIsHex(p.src[p.pos]) && formatIsHex(p.src[p.pos+1]) {
			n, _ := strconv.ParseUint(p.src[p.pos:p.pos+2], 16, 32)
			p.pos += 2
			return "", rune(n), nil
		}
		return "", 0, &ecmaSyntaxError{`has a \x not followed by two hexadecimal digits`}
	case 'u':
		r, err := p.unicodeEscape()
		return "", r, err
	}
	if strings.IndexByte(`^$\.*+?()[]{}|/`, c) >= 0 {
		return "", rune(c), nil
	}
	esc := "\\" + string(c)
	if c >= utf8.RuneSelf {
		esc = "a non-ASCII character"
	}
	return "", 0, &ecmaSyntaxError{"uses the escape " + strconv.Quote(esc) + ", which ECMA-262 does not define"}
}

// unicodeEscape reads what follows \u: four hexadecimal digits (a surrogate pair of two escapes
// is one code point) or {hex digits} up to U+10FFFF. A lone surrogate matches nothing a UTF-8
// string can hold.
func (p *ecmaParser) unicodeEscape() (rune, error) {
	bad := &ecmaSyntaxError{`has a \u not followed by four hexadecimal digits or {a code point}`}
	if p.peek() == '{' {
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 2 {
			return 0, bad
		}
		digits := p.src[p.pos+1 : p.pos+end]
		for i := 0; i < len(digits); i++ {
			if !formatIsHex(digits[i]) {
				return 0, bad
			}
		}
		digits = strings.TrimLeft(digits, "0")
		n, err := strconv.ParseUint("0"+digits, 16, 32)
		if err != nil || len(digits) > 6 || n > unicode.MaxRune {
			return 0, &ecmaSyntaxError{`has a \u{...} beyond U+10FFFF`}
		}
		p.pos += end + 1
		return p.surrogate(rune(n)), nil
	}
	hex4 := func(at int) (rune, bool) {
		if at+4 > len(p.src) {
			return 0, false
		}
		for i := at; i < at+4; i++ {
			if !formatIsHex(p.src[i]) {
				return 0, false
			}
		}
		n, _ := strconv.ParseUint(p.src[at:at+4], 16, 32)
		return rune(n), true
	}
	hi, ok := hex4(p.pos)
	if !ok {
		return 0, bad
	}
	p.pos += 4
	if hi >= 0xD800 && hi <= 0xDBFF && strings.HasPrefix(p.src[p.pos:], `\u`) {
		if lo, ok := hex4(p.pos + 2); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			p.pos += 6
			return (hi-0xD800)<<10 + (lo - 0xDC00) + 0x10000, nil
		}
	}
	return p.surrogate(hi), nil
}

func (p *ecmaParser) surrogate(r rune) rune {
	if r >= 0xD800 && r <= 0xDFFF {
		p.cannotRun("matches a lone surrogate, which no UTF-8 text holds")
	}
	return r
}

// property reads {Name} or {Name=Value} after \p or \P: a general category, a script, or Any or
// ASCII. Other binary properties are valid ECMA-262 that RE2 has no class for.
func (p *ecmaParser) property(negated bool) (string, rune, error) {
	bad := &ecmaSyntaxError{`has a \p or \P without a Unicode property ECMA-262 knows`}
	end := strings.IndexByte(p.src[p.pos:], '}')
	if p.peek() != '{' || end < 0 {
		return "", 0, bad
	}
	body := p.src[p.pos+1 : p.pos+end]
	p.pos += end + 1
	name, value, hasValue := strings.Cut(body, "=")
	var class string
	switch {
	case hasValue && (name == "General_Category" || name == "gc"):
		class = ecmaCategory(value)
	case hasValue && (name == "Script" || name == "sc"):
		if _, ok := unicode.Scripts[value]; ok {
			class = value
		}
	case hasValue && (name == "Script_Extensions" || name == "scx"):
		if _, ok := unicode.Scripts[value]; ok {
			p.cannotRun("uses Script_Extensions, which RE2 does not support")
			class = value
		}
	case hasValue:
	case name == "Any":
		return ecmaRangesText(ecmaNegate(negated, []rune{0, unicode.MaxRune})), -1, nil
	case name == "ASCII":
		return ecmaRangesText(ecmaNegate(negated, []rune{0, 0x7F})), -1, nil
	default:
		class = ecmaCategory(name)
		if _, ok := unicode.Properties[name]; ok && class == "" {
			p.cannotRun("uses a Unicode binary property, which RE2 does not support")
			class = "L"
		}
	}
	if class == "" {
		return "", 0, bad
	}
	if negated {
		return `\P{` + class + `}`, -1, nil
	}
	return `\p{` + class + `}`, -1, nil
}

func ecmaNegate(negated bool, ranges []rune) []rune {
	if negated {
		return ecmaComplement(ranges)
	}
	return ranges
}

// ecmaCategoryNames are the long names of the general categories, by their short ones.
var ecmaCategoryNames = map[string]string{
	"Letter": "L", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm",
	"Other_Letter": "Lo", "Mark": "M", "Combining_Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me",
	"Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P",
	"punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe",
	"Initial_Punctuation": "Pi", "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm",
	"Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z", "Space_Separator": "Zs",
	"Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf",
	"Surrogate": "Cs", "Private_Use": "Co",
}

// ecmaCategory is the RE2 name of a general category given by its short or long name, or "".
func ecmaCategory(name string) string {
	if short, ok := ecmaCategoryNames[name]; ok {
		name = short
	}
	if _, ok := unicode.Categories[name]; ok {
		return name
	}
	return ""
}

// class is "[" [^] ClassRanges "]". The empty class matches nothing, its negation any character.
func (p *ecmaParser) class() error {
	p.pos++
	negated := p.peek() == '^'
	if negated {
		p.pos++
	}
	var items strings.Builder
	for {
		if p.pos >= len(p.src) {
			return &ecmaSyntaxError{"has an unclosed character class"}
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, set, err := p.classAtom()
		if err != nil {
			return err
		}
		if p.peek() == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
			p.pos++
			hi, hiSet, err := p.classAtom()
			if err != nil {
				return err
			}
			if set != "" || hiSet != "" {
				return &ecmaSyntaxError{"has a class escape as the end of a range"}
			}
			if hi < lo {
				return &ecmaSyntaxError{"has a range out of order in a character class"}
			}
			fmt.Fprintf(&items, `\x{%x}-\x{%x}`, lo, hi)
			continue
		}
		if set != "" {
			items.WriteString(set)
		} else {
			fmt.Fprintf(&items, `\x{%x}`, lo)
		}
	}
	switch {
	case items.Len() == 0 && negated:
		p.out.WriteString(`[\x{0}-\x{10ffff}]`)
	case items.Len() == 0:
		p.out.WriteString(`[^\x{0}-\x{10ffff}]`)
	case negated:
		p.out.WriteString("[^" + items.String() + "]")
	default:
		p.out.WriteString("[" + items.String() + "]")
	}
	return nil
}

// classAtom is one character of a class, or a class escape (set).
func (p *ecmaParser) classAtom() (r rune, set string, err error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return r, "", nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, "", &ecmaSyntaxError{"ends with a lone backslash"}
	}
	switch p.src[p.pos+1] {
	case 'b':
		p.pos += 2
		return '\b', "", nil
	case '-':
		p.pos += 2
		return '-', "", nil
	}
	if c := p.src[p.pos+1]; c >= '1' && c <= '9' {
		return 0, "", &ecmaSyntaxError{"has a backreference inside a character class"}
	}
	item, single, err := p.classEscape()
	if err != nil {
		return 0, "", err
	}
	if single >= 0 {
		p.surrogate(single)
		return single, "", nil
	}
	return 0, item, nil
}

// ecmaRegexp is a compiled pattern: its ECMA-262 source (what the schema says, and what a report
// shows) and the RE2 program that runs it; re is nil for a pattern RE2 cannot run, which a schema
// never keeps (schemaCheckRunnablePatterns).
type ecmaRegexp struct {
	src        string
	re         *regexp.Regexp
	unrunnable string
}

func (r *ecmaRegexp) String() string { return r.src }

// MatchString reports whether s contains a match of the pattern.
func (r *ecmaRegexp) MatchString(s string) bool { return r.re != nil && r.re.MatchString(s) }

// schemaRegexpEngine is the compiler's regular-expression engine: ECMA-262 syntax, run on RE2. A
// pattern that is not ECMA-262 is an error (a schema error for a pattern, an invalid value for
// format "regex"); one that is but RE2 cannot run compiles to a pattern that records why.
func schemaRegexpEngine(pattern string) (jsonschema.Regexp, error) {
	t, err := ecmaTranslate(pattern)
	if err != nil {
		return nil, err
	}
	r := &ecmaRegexp{src: pattern, unrunnable: t.unrunnable}
	if r.unrunnable == "" {
		re, err := regexp.Compile(t.re2)
		if err != nil {
			r.unrunnable = schemaRE2Problem(t.re2)
		} else {
			r.re = re
		}
	}
	return r, nil
}

// schemaRegexProblem names what is wrong with a pattern the verifier cannot run, as a phrase
// after "it": not ECMA-262, or a construct RE2 does not have. Only the offending construct's own
// few characters are ever shown.
func schemaRegexProblem(pattern string) string {
	t, err := ecmaTranslate(pattern)
	if e, ok := err.(*ecmaSyntaxError); ok {
		return e.what + " (it is not an ECMA-262 regular expression)"
	}
	if t.unrunnable != "" {
		return t.unrunnable
	}
	return schemaRE2Problem(t.re2)
}
