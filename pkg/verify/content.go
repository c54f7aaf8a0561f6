package verify

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// The content check names of SPEC §4.5 that this file decides.
const (
	checkEmptyString   = "content:empty_string"
	checkPlaceholder   = "content:placeholder"
	checkInexactNumber = "content:inexact_number"
)

// CheckContent runs the content checks of SPEC §4.5 that need no schema over submitted_output.
// Every string is one check, failing as "content:empty_string" when empty or whitespace-only,
// else as "content:placeholder" when it is placeholder text (see placeholders); one check per
// string, named by what failed. Numbers whose literal does not survive IEEE-754 double precision
// (see inexactNumber) are "content:inexact_number": when strict, every number is one counted
// check; when not, numbers are not counted and each inexact one is a failure in info, because
// RFC 8785 hashes it rounded and the caller should know the output_hash cannot tell it apart.
// Failures come in document order with object members sorted by name.
func CheckContent(output any, strict bool) (t Tally, info Tally) {
	// Nearly every output is clean: count it without building paths or sorting keys, and walk
	// again in order only when something is to be reported.
	checks := 0
	if !scanContent(output, strict, &checks) {
		return Tally{Total: checks, Passed: checks}, Tally{}
	}
	w := contentWalker{strict: strict}
	w.walk(output)
	return w.t, w.info
}

// scanContent counts the checks under v and reports whether any would fail or any number is
// inexact. It stops counting at the first problem.
func scanContent(v any, strict bool, checks *int) (problem bool) {
	switch x := v.(type) {
	case string:
		*checks++
		check, _ := stringProblem(x)
		return check != ""
	case json.Number:
		if strict {
			*checks++
		}
		inexact, _ := jsonvalue.InexactNumber(string(x))
		return inexact
	case []any:
		for _, e := range x {
			if scanContent(e, strict, checks) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if scanContent(e, strict, checks) {
				return true
			}
		}
	}
	return false
}

// contentWalker visits the output in order, keeping the path to the current value as steps.
type contentWalker struct {
	strict bool
	at     []jsonvalue.Step
	t      Tally
	info   Tally // not counted: only its failures
}

func (w *contentWalker) walk(v any) {
	switch x := v.(type) {
	case string:
		check, detail := stringProblem(x)
		if check == "" {
			w.t.Pass()
			return
		}
		if !w.t.failCounted(check) {
			w.t.Fail(w.failure(check, badString{placeholder: check == checkPlaceholder, value: x, why: detail}))
		}
	case json.Number:
		inexact, becomes := jsonvalue.InexactNumber(string(x))
		switch {
		case inexact && w.strict:
			if !w.t.failCounted(checkInexactNumber) {
				w.t.Fail(w.failure(checkInexactNumber, inexactNumber{value: x, becomes: becomes}))
			}
		case inexact && w.info.full():
			w.info.keep(Failure{Check: checkInexactNumber}) // counted only, as failCounted does
		case inexact:
			w.info.keep(w.failure(checkInexactNumber, inexactNumber{value: x, becomes: becomes}))
		case w.strict:
			w.t.Pass()
		}
	case []any:
		for i, e := range x {
			w.at = append(w.at, jsonvalue.Step{Kind: jsonvalue.StepIndex, Index: i})
			w.walk(e)
			w.at = w.at[:len(w.at)-1]
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			w.at = append(w.at, jsonvalue.Step{Kind: jsonvalue.StepKey, Key: k})
			w.walk(x[k])
			w.at = w.at[:len(w.at)-1]
		}
	}
}

// failure is a failure of check at the current location ("$.line_items[0].sku"), filed under it.
func (w *contentWalker) failure(check string, k Kind) Failure {
	return Failure{Check: check, At: slices.Clone(w.at), Kind: k}
}

// badString is a string a content check refuses: empty (or only whitespace and invisible
// characters), or placeholder text; why says which (stringProblem).
type badString struct {
	placeholder bool
	value, why  string
}

func (k badString) Texts() (string, string, string) {
	expected := "a non-empty string"
	if k.placeholder {
		expected = "real content, not placeholder text"
	}
	return expected, jsonvalue.Describe(k.value), k.why
}

// inexactNumber is a number that IEEE-754 double precision does not hold: it reads as becomes.
type inexactNumber struct {
	value   json.Number
	becomes string
}

func (k inexactNumber) Texts() (string, string, string) {
	return "a number that IEEE-754 double precision holds exactly", jsonvalue.Describe(k.value),
		jsonvalue.Describe(k.value) + " does not survive IEEE-754 double precision: it reads as " + k.becomes +
			", so its output_hash cannot tell it from that number"
}

// stringProblem returns the check a string fails and why, or "" when it passes. The string is
// judged as a reader sees it (see foldForContent): a string of only whitespace and invisible
// characters is empty, and a placeholder written in full-width or styled letters, or with
// invisible characters inside, is a placeholder.
func stringProblem(s string) (check, detail string) {
	t := strings.TrimSpace(s)
	switch {
	case s == "":
		return checkEmptyString, "the string is empty"
	case t == "":
		return checkEmptyString, "the string is only whitespace"
	}
	if !readsAsIs(t) {
		if t = strings.TrimSpace(foldForContent(t)); t == "" {
			return checkEmptyString, "the string is only whitespace and invisible characters (such as zero-width spaces)"
		}
	}
	if why := placeholderKind(t); why != "" {
		return checkPlaceholder, "the string is placeholder text (" + why + ")"
	}
	return "", ""
}

// readsAsIs reports whether s is printable ASCII and whitespace only, which foldForContent
// leaves as it is: nearly every string, which is then matched without being copied.
func readsAsIs(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c >= 0x7f {
			return false
		}
	}
	return true
}

// foldForContent is what the content checks match against: s in Unicode normalization form
// NFKC, which folds compatibility variants to their plain letters (full-width "ＴＯＤＯ",
// mathematical "𝐓𝐎𝐃𝐎" and circled letters read "TODO"; the ideographic space is a space),
// without the characters that show nothing (see invisible) and without the combining marks NFKC
// left uncombined, which only decorate the letter before them ("T̲O̲D̲O̲"; an accented letter
// that has a composed form, such as é, is one letter by then and stays). It is used only to
// match: reports never show it.
func foldForContent(s string) string {
	s = norm.NFKC.String(s)
	return strings.Map(func(r rune) rune {
		if invisible(r) || unicode.In(r, unicode.Mn, unicode.Me) {
			return -1
		}
		return r
	}, s)
}

// invisible reports whether r shows nothing where it stands: the default-ignorable code points
// of Unicode (format characters such as the zero-width space U+200B, the joiners U+200C and
// U+200D, the word joiner U+2060, the byte order mark U+FEFF and the soft hyphen U+00AD;
// variation selectors; the Hangul fillers), control characters other than whitespace, and the
// blank braille pattern U+2800, which renders as a blank.
func invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) || (unicode.IsControl(r) && !unicode.IsSpace(r)) || r == '\u2800'
}

// placeholders is the one list of what content checks call placeholder text (SPEC §4.5). It aims
// at text an agent left unfinished, never at real values, so every rule needs the whole string,
// or an unmistakable marking, to match. Matching ignores case and the whitespace around the string,
// and sees the string as a reader does (foldForContent): full-width, mathematical and other
// compatibility letters count as the plain ones ("ＴＯＤＯ"), and invisible characters are not there
// ("T\u200bODO"; a string of nothing else is empty):
//
//   - Whole: the string is one of these words, optionally wrapped in one pair of (), [] or <>
//     and followed by '.', '!', ':' or '…' ("TBD", "(TBD)", "FIXME!"). "N/A", "none" and "-" are
//     not placeholders: they are how forms say "not applicable".
//   - Marked: the string starts with one of these words followed by ':' ("TODO: write summary");
//     "To do list for Monday" and "Todo app" pass.
//   - Anywhere: the string contains one of these ("Lorem ipsum dolor sit amet").
//   - Angle brackets: the whole string is <...> around a name: it starts with a letter and holds
//     no '<', '>', '@', '/', '=', '"' or ':' ("<customer name>"; "<john@example.com>",
//     "<https://example.com>" and "a < b > c" pass).
//   - Template fields: the string contains {{name}} where name is 1–64 letters, digits, '_', '.',
//     '-' or spaces ("Dear {{ customer.name }}"): an unfilled template field.
//   - Bracketed prompts: the string contains [ followed by one of BracketLeads as a whole word,
//     closed by ] that does not open a Markdown link ("Dear [Your Name],", "[insert date]";
//     "[your account](https://…)" and "[1]" pass).
//   - "... here" prompts: the whole string ends with the word "here" and either starts with one of
//     HereLeads ("Insert text here", "Type here"), or ends with "goes here" ("Description goes
//     here"), or is "your" plus one or two words plus "here" ("Your name here"; "Your order ships
//     from here" passes).
var placeholders = struct {
	Whole, Marked, Anywhere, BracketLeads, HereLeads []string
}{
	Whole:        []string{"todo", "tbd", "tbc", "tba", "fixme", "xxx", "placeholder", "changeme", "change me"},
	Marked:       []string{"todo", "fixme", "tbd", "xxx"},
	Anywhere:     []string{"lorem ipsum"},
	BracketLeads: []string{"insert", "placeholder", "your", "enter", "fill in", "todo", "tbd"},
	HereLeads:    []string{"insert", "enter", "type", "put", "write", "paste"},
}

// placeholderKind applies the rules of placeholders to t (trimmed, not empty) and names the rule
// that matched, or returns "".
func placeholderKind(t string) string {
	ended := trimEnding(t)
	if u := ended; len(u) <= 24 {
		if len(u) >= 2 {
			switch a, z := u[0], u[len(u)-1]; {
			case a == '(' && z == ')', a == '[' && z == ']', a == '<' && z == '>':
				u = strings.TrimSpace(u[1 : len(u)-1])
			}
		}
		for _, w := range placeholders.Whole {
			if equalFoldWord(u, w) {
				return "a placeholder word"
			}
		}
	}
	for _, m := range placeholders.Marked {
		if len(t) > len(m) && equalFoldWord(t[:len(m)], m) && strings.HasPrefix(strings.TrimLeft(t[len(m):], " \t"), ":") {
			return "a " + strings.ToUpper(m) + " marker"
		}
	}
	for _, a := range placeholders.Anywhere {
		if containsFold(t, a) {
			return a + " filler"
		}
	}
	switch {
	case angleName(t):
		return "a <...> placeholder"
	case templateField(t):
		return "an unfilled {{...}} template field"
	case bracketPrompt(t):
		return "a [...] placeholder"
	case herePrompt(ended):
		return `a "... here" prompt`
	}
	return ""
}

// trimEnding is t without the punctuation and spaces a placeholder may end with: the cut set
// ".!:… " of strings.TrimRight, spelled out because TrimRight takes its slow path, a rune at a
// time, for any cut set holding a non-ASCII character such as '…', and nearly every string is
// matched here.
func trimEnding(t string) string {
	for len(t) > 0 {
		switch t[len(t)-1] {
		case '.', '!', ':', ' ':
			t = t[:len(t)-1]
		default:
			if !strings.HasSuffix(t, "…") {
				return t
			}
			t = t[:len(t)-len("…")]
		}
	}
	return t
}

// equalFoldWord is strings.EqualFold(s, word) for a word of lower-case ASCII letters (and
// spaces), which every placeholder word is. Nearly every string is told apart by its length or
// its first byte without the call: each rune of s must stand for one byte of word, so s is at
// least as long, and an ASCII first byte folds to word's first letter only as that letter in
// either case (a non-ASCII one may fold to it, as the Kelvin sign does to k, and goes to the call).
func equalFoldWord(s, word string) bool {
	if len(s) < len(word) || len(s) > 0 && s[0] < utf8.RuneSelf && s[0]|0x20 != word[0] {
		return false
	}
	return strings.EqualFold(s, word)
}

// containsFold reports whether s contains sub (ASCII, lower case) ignoring case.
func containsFold(s, sub string) bool {
	first := sub[0]
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i]|0x20 == first && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// hasPrefixWord reports whether s starts with word (ignoring case) followed by a non-letter or
// the end.
func hasPrefixWord(s, word string) bool {
	if len(s) < len(word) || !strings.EqualFold(s[:len(word)], word) {
		return false
	}
	if len(s) == len(word) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[len(word):])
	return !unicode.IsLetter(r)
}

func angleName(t string) bool {
	if len(t) < 3 || t[0] != '<' || t[len(t)-1] != '>' {
		return false
	}
	inner := strings.TrimSpace(t[1 : len(t)-1])
	r, _ := utf8.DecodeRuneInString(inner)
	return unicode.IsLetter(r) && !strings.ContainsAny(inner, `<>@/=":`)
}

func templateField(t string) bool {
	rest := t
	for {
		j := strings.Index(rest, "}}")
		if j < 0 {
			return false
		}
		if i := strings.LastIndex(rest[:j], "{{"); i >= 0 {
			if name := strings.TrimSpace(rest[i+2 : j]); name != "" && len(name) <= 64 && templateName(name) {
				return true
			}
		}
		rest = rest[j+2:]
	}
}

func templateName(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("_.- ", r) {
			return false
		}
	}
	return true
}

func bracketPrompt(t string) bool {
	closeAt := -1 // the first ']' at or after the current '[', found once per stretch
	for i := 0; i < len(t); i++ {
		if t[i] != '[' {
			continue
		}
		inner := strings.TrimLeft(t[i+1:], " ")
		lead := false
		for _, w := range placeholders.BracketLeads {
			if hasPrefixWord(inner, w) {
				lead = true
				break
			}
		}
		if !lead {
			continue
		}
		if closeAt < i {
			j := strings.IndexByte(t[i:], ']')
			if j < 0 {
				return false
			}
			closeAt = i + j
		}
		if closeAt+1 >= len(t) || t[closeAt+1] != '(' {
			return true
		}
	}
	return false
}

// herePrompt takes the string without its ending punctuation (trimEnding).
func herePrompt(u string) bool {
	if len(u) < 5 || !equalFoldWord(u[len(u)-4:], "here") {
		return false
	}
	words := strings.Fields(u)
	if len(words) < 2 || !equalFoldWord(words[len(words)-1], "here") {
		return false
	}
	for _, w := range placeholders.HereLeads {
		if equalFoldWord(words[0], w) {
			return true
		}
	}
	n := len(words)
	return (n >= 3 && equalFoldWord(words[n-2], "goes")) ||
		(equalFoldWord(words[0], "your") && n >= 3 && n <= 4)
}
