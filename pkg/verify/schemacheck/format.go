package schemacheck

import (
	"net/netip"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"
)

// The format checkers the verifier registers with the schema library (SPEC §4.2: formats are
// asserted). A buyer relies on "hostname", "uri" or "email" meaning what the RFCs say, so each
// checker follows its RFC's grammar exactly; the library's own checkers are kept only where they
// already do (date, date-time, time, ipv6, json-pointer, relative-json-pointer, uuid, and "regex",
// which the regex engine answers). The compiler and the counting walker take the same *Format
// values from the compiled schema, so both assert the same thing.
//
// No checker makes a network call, and each runs in time linear in its input: the grammars are
// scanned once, left to right; the IDNA library maps and checks a label in one pass; and the
// names with a length limit are refused past it before anything else is done.
var schemaFormatCheckers = []*jsonschema.Format{
	{Name: "hostname", Validate: formatString(formatHostname)},
	{Name: "idn-hostname", Validate: formatString(formatIDNHostname)},
	{Name: "email", Validate: formatString(func(s string) bool { return formatEmail(s, false) })},
	{Name: "idn-email", Validate: formatString(func(s string) bool { return formatEmail(s, true) })},
	{Name: "ipv4", Validate: formatString(formatIPv4)},
	{Name: "duration", Validate: formatString(formatDuration)},
	{Name: "uri", Validate: formatString(func(s string) bool { return formatURI(s, false, false) })},
	{Name: "uri-reference", Validate: formatString(func(s string) bool { return formatURI(s, false, true) })},
	{Name: "iri", Validate: formatString(func(s string) bool { return formatURI(s, true, false) })},
	{Name: "iri-reference", Validate: formatString(func(s string) bool { return formatURI(s, true, true) })},
	{Name: "uri-template", Validate: formatString(formatURITemplate)},
}

// schemaDraftFormats are the format names each draft defines (the validation specification of
// the draft; the suite's required format.json of each draft names the same ones). A format the
// draft in use does not define is refused with a 422 (schemaCheckFormats): it would check
// nothing. The library's extensions "period" and "semver" belong to no draft and are not offered.
var schemaDraftFormats = map[int][]string{
	4: {"date-time", "email", "hostname", "ipv4", "ipv6", "uri"},
	6: {"date-time", "email", "hostname", "ipv4", "ipv6", "json-pointer", "uri", "uri-reference", "uri-template"},
	7: {"date", "date-time", "email", "hostname", "idn-email", "idn-hostname", "ipv4", "ipv6", "iri", "iri-reference",
		"json-pointer", "regex", "relative-json-pointer", "time", "uri", "uri-reference", "uri-template"},
	2019: schemaFormats2019,
	2020: schemaFormats2019,
}

// schemaFormats2019 are draft 7's formats and duration and uuid, which 2019-09 adds; 2020-12
// defines the same set.
var schemaFormats2019 = []string{"date", "date-time", "duration", "email", "hostname", "idn-email", "idn-hostname",
	"ipv4", "ipv6", "iri", "iri-reference", "json-pointer", "regex", "relative-json-pointer", "time", "uri",
	"uri-reference", "uri-template", "uuid"}

// formatError is what a checker answers for a string that is not of its format. The walker and
// the report name the format themselves; the value is never quoted.
type formatError struct{}

func (formatError) Error() string { return "not of the format" }

// formatString adapts a string predicate to the library's Validate: values that are not strings
// are not judged by any format.
func formatString(ok func(string) bool) func(any) error {
	return func(v any) error {
		s, isStr := v.(string)
		if !isStr || ok(s) {
			return nil
		}
		return formatError{}
	}
}

// ---- hostname, idn-hostname (RFC 1123, RFC 5890-5893) ----

// formatMaxHostname is the longest host name in octets, in its ASCII form, without a trailing
// dot (RFC 1034 §3.1: 255 octets on the wire are 253 characters of text).
const formatMaxHostname = 253

// formatMaxLabel is the longest label in octets (RFC 1034 §3.1).
const formatMaxLabel = 63

// schemaFormatHostname1123 is "hostname" as drafts 4 and 6 define it: RFC 1123 §2.1 alone, from
// before IDNA2008 reserved the labels with "--" in their third and fourth places.
var schemaFormatHostname1123 = &jsonschema.Format{Name: "hostname", Validate: formatString(formatHostname1123)}

// schemaFormatForDraft is the checker a schema of the given draft asserts for f: the registered
// one, except for a format whose meaning changed between drafts.
func schemaFormatForDraft(f *jsonschema.Format, draft int) *jsonschema.Format {
	if f != nil && f.Name == "hostname" && draft < 7 {
		return schemaFormatHostname1123
	}
	return f
}

// formatHostname1123 is RFC 1123 §2.1 host names: LDH labels of 1 to 63 octets, 253 in all.
func formatHostname1123(s string) bool {
	if len(s) == 0 || len(s) > formatMaxHostname {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !formatLDHLabel(label) {
			return false
		}
	}
	return true
}

// formatHostname is RFC 1123 §2.1 host names, as JSON Schema asks since draft 7 with A-labels
// (RFC 5890 §2.3.2.1) held to IDNA2008: a label with "--" in its third and fourth places must be
// an A-label, "xn--" and Punycode that decodes to a valid U-label and encodes back to itself.
// A trailing dot (the DNS root) is not part of a host name.
func formatHostname(s string) bool {
	if len(s) == 0 || len(s) > formatMaxHostname {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !formatLDHLabel(label) {
			return false
		}
		if len(label) >= 4 && label[2:4] == "--" && !formatALabel(label) {
			return false
		}
	}
	return true
}

// formatLDHLabel tells whether label is 1 to 63 letters, digits and hyphens, neither starting nor
// ending with a hyphen.
func formatLDHLabel(label string) bool {
	if len(label) == 0 || len(label) > formatMaxLabel || label[0] == '-' || label[len(label)-1] == '-' {
		return false
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// formatALabel tells whether an LDH label with "--" in its third and fourth places is a valid
// A-label (RFC 5890 §2.3.2.1, RFC 5891 §5.4): the ACE prefix, Punycode that decodes to a U-label
// with at least one non-ASCII code point valid under IDNA2008, and that U-label encoding back
// to the same label.
func formatALabel(label string) bool {
	if !strings.EqualFold(label[:4], "xn--") {
		return false
	}
	u, err := idna.Punycode.ToUnicode(label)
	if err != nil || u == label || !formatHasNonASCII(u) {
		return false
	}
	back, err := idna.Punycode.ToASCII(u)
	if err != nil || !strings.EqualFold(back, label) {
		return false
	}
	return formatULabels([]string{u})
}

func formatHasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// formatIDNHostname is RFC 5890 internationalized host names: labels separated by a full stop
// or one of the three other dots IDNA2008 names (RFC 3490 §3.1), each an ASCII LDH label, an
// A-label or a U-label valid under IDNA2008 (RFC 5891 §5.4, 5892, the contextual rules of RFC
// 5892 appendix A) with the Bidi rule of RFC 5893 over the whole name, and the name fitting the
// DNS in its ASCII form.
func formatIDNHostname(s string) bool {
	// Every label's ASCII form is at least as long as its code points, so a longer string cannot
	// fit: refuse it before any work.
	if len(s) == 0 || utf8.RuneCountInString(s) > formatMaxHostname || !utf8.ValidString(s) {
		return false
	}
	labels := strings.FieldsFunc(s, formatIsLabelSeparator)
	if len(labels) == 0 || formatIsLabelSeparator(formatFirstRune(s)) || formatIsLabelSeparator(formatLastRune(s)) ||
		len(labels) != formatCountSeparators(s)+1 {
		return false // an empty label: leading, trailing or doubled separators
	}
	for _, label := range labels {
		if !formatHasNonASCII(label) {
			if !formatLDHLabel(label) || len(label) >= 4 && label[2:4] == "--" && !formatALabel(label) {
				return false
			}
		}
	}
	return formatULabels(labels)
}

// formatULabels checks labels (ASCII LDH labels, A-labels or U-labels) as one domain name
// against IDNA2008 through the IDNA library's registration profile (no mapping: what is not
// already valid is refused; hyphens, joiners, the Bidi rule over the whole name, DNS lengths),
// then the IDNA2008 rules that profile, being UTS 46, does not apply: the code points RFC 5892
// §2.6 makes DISALLOWED, and the CONTEXTO rules.
func formatULabels(labels []string) bool {
	ascii, err := idna.Registration.ToASCII(strings.Join(labels, "."))
	if err != nil || len(ascii) > formatMaxHostname {
		return false
	}
	for _, label := range labels {
		if !norm.NFC.IsNormalString(label) || !formatIDNA2008Context(label) {
			return false
		}
	}
	return true
}

// formatIsLabelSeparator tells whether r separates labels in an internationalized name: the full
// stop, the ideographic full stop, the fullwidth full stop, the halfwidth ideographic full stop.
func formatIsLabelSeparator(r rune) bool {
	return r == '.' || r == '\u3002' || r == '\uFF0E' || r == '\uFF61'
}

func formatCountSeparators(s string) int {
	n := 0
	for _, r := range s {
		if formatIsLabelSeparator(r) {
			n++
		}
	}
	return n
}

func formatFirstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }
func formatLastRune(s string) rune  { r, _ := utf8.DecodeLastRuneInString(s); return r }

// formatIDNA2008Context applies to a U-label what RFC 5892 adds to UTS 46's table: only
// letters, marks and decimal digits are PVALID (§2.1: UTS 46 keeps symbols and punctuation such
// as U+00A1 valid, IDNA2008 does not), with the exceptions of §2.6, and the CONTEXTO rules of
// appendix A.3 to A.9 (the CONTEXTJ rules for the joiners, A.1 and A.2, are the IDNA library's
// CheckJoiners). Letters that case folding would change never get here: the registration profile
// refuses what it would map.
func formatIDNA2008Context(label string) bool {
	runes := []rune(label)
	var arabicIndic, extArabicIndic, hasKanaOrHan, hasKatakanaDot bool
	for i, r := range runes {
		switch {
		case r < utf8.RuneSelf:
			// LDH, which the registration profile has checked
		case r == 0x00DF, r == 0x03C2, r == 0x06FD, r == 0x06FE, r == 0x0F0B, r == 0x3007:
			// §2.6: PVALID exceptions
		case r == 0x200C, r == 0x200D, r == 0x00B7, r == 0x0375, r == 0x05F3, r == 0x05F4, r == 0x30FB:
			// CONTEXTJ and CONTEXTO, judged below and by the profile
		case !unicode.In(r, unicode.Ll, unicode.Lo, unicode.Lm, unicode.Mn, unicode.Mc, unicode.Nd):
			return false // §2.1 LetterDigits: what is not one is DISALLOWED
		}
		switch {
		case r == 0x0640, r == 0x07FA, r == 0x302E, r == 0x302F, r >= 0x3031 && r <= 0x3035, r == 0x303B:
			return false // RFC 5892 §2.6: DISALLOWED exceptions
		case r == 0x00B7: // A.3 MIDDLE DOT: between two 'l'
			if i == 0 || i == len(runes)-1 || runes[i-1] != 'l' || runes[i+1] != 'l' {
				return false
			}
		case r == 0x0375: // A.4 GREEK LOWER NUMERAL SIGN (KERAIA): followed by Greek
			if i == len(runes)-1 || !unicode.Is(unicode.Greek, runes[i+1]) {
				return false
			}
		case r == 0x05F3, r == 0x05F4: // A.5, A.6 HEBREW GERESH, GERSHAYIM: preceded by Hebrew
			if i == 0 || !unicode.Is(unicode.Hebrew, runes[i-1]) {
				return false
			}
		case r == 0x30FB: // A.7 KATAKANA MIDDLE DOT: the label has Hiragana, Katakana or Han
			hasKatakanaDot = true
		case r >= 0x0660 && r <= 0x0669: // A.8 ARABIC-INDIC DIGITS
			arabicIndic = true
		case r >= 0x06F0 && r <= 0x06F9: // A.9 EXTENDED ARABIC-INDIC DIGITS
			extArabicIndic = true
		}
		if r != 0x30FB && (unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Han, r)) {
			hasKanaOrHan = true
		}
	}
	return !(arabicIndic && extArabicIndic) && (!hasKatakanaDot || hasKanaOrHan)
}

// ---- email, idn-email (RFC 5321 §4.1.2, RFC 6531 §3.3) ----

// formatMaxLocalPart is the longest local part in octets (RFC 5321 §4.5.3.1.1).
const formatMaxLocalPart = 64

// formatMaxMailbox is the longest address in octets: RFC 5321 §4.5.3.1.3 limits a path to 256
// octets, two of which are its angle brackets.
const formatMaxMailbox = 254

// formatEmail is RFC 5321's Mailbox (Local-part "@" (Domain / address-literal)); with idn set,
// RFC 6531's, where atext and qtext also take any non-ASCII UTF-8 and the domain is an
// internationalized host name. A General-address-literal is refused: no standardized tag other
// than IPv6 is registered.
func formatEmail(s string, idn bool) bool {
	if len(s) > formatMaxMailbox || !utf8.ValidString(s) {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at > formatMaxLocalPart || at == len(s)-1 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	if !formatLocalPart(local, idn) {
		return false
	}
	if domain[0] == '[' {
		if domain[len(domain)-1] != ']' {
			return false
		}
		lit := domain[1 : len(domain)-1]
		if v6, ok := strings.CutPrefix(lit, "IPv6:"); ok {
			a, err := netip.ParseAddr(v6)
			return err == nil && a.Is6() && a.Zone() == ""
		}
		return formatIPv4(lit)
	}
	if idn {
		// RFC 6531 names U-labels; the address is taken as a user would type it, so the domain is
		// first put in Unicode NFC as IDNA2008's lookup does (RFC 5891 §5.2).
		return formatIDNHostname(norm.NFC.String(domain))
	}
	return formatHostname(domain)
}

// formatLocalPart is RFC 5321's Local-part: a Dot-string of atext atoms, or a Quoted-string.
func formatLocalPart(local string, idn bool) bool {
	if local[0] == '"' {
		if len(local) < 2 || local[len(local)-1] != '"' {
			return false
		}
		q := local[1 : len(local)-1]
		for i := 0; i < len(q); i++ {
			c := q[i]
			switch {
			case c == '\\':
				// quoted-pairSMTP: a backslash and one printable ASCII character
				if i+1 >= len(q) || q[i+1] < 32 || q[i+1] > 126 {
					return false
				}
				i++
			case c == '"':
				return false
			case c >= 32 && c <= 126, idn && c >= utf8.RuneSelf:
			default:
				return false
			}
		}
		return true
	}
	for atom := range strings.SplitSeq(local, ".") {
		if atom == "" {
			return false
		}
		for i := 0; i < len(atom); i++ {
			if c := atom[i]; !formatIsAtext(c) && !(idn && c >= utf8.RuneSelf) {
				return false
			}
		}
	}
	return true
}

// formatIsAtext is RFC 5322's atext: letters, digits and !#$%&'*+-/=?^_`{|}~.
func formatIsAtext(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0
}

// ---- ipv4 (RFC 2673 §3.2 dotted-quad) ----

// formatIPv4 is four decimal octets 0 to 255 without leading zeros, signs or anything around them.
func formatIPv4(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

// ---- duration (RFC 3339 appendix A) ----

// formatDurationRE is RFC 3339's duration ABNF, word for word: a unit's lower units follow it
// only in order and without gaps (P1Y2D and PT1H2S are not durations), weeks stand alone.
// Go's regexp runs in time linear in the input.
var formatDurationRE = regexp.MustCompile(`^P(?:` +
	`(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?` +
	`|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)` +
	`|[0-9]+W)$`)

func formatDuration(s string) bool { return formatDurationRE.MatchString(s) }
