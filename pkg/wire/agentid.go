package wire

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// AgentID is the one reading of an agent_id, for the verify request and for every route and tool
// that names an agent. It answers the id as it is used, stored, compared and signed: the NFC form
// of what was sent, so that spellings people read as one name (`sellér` composed or decomposed)
// are one agent. It refuses, with problem and fix phrased for a 422 on agent_id (problem is "" when
// the id is fine):
//   - invalid UTF-8, and an id that is not 1 to MaxIDLen characters long (after NFC);
//   - control characters (Unicode's Cc: NUL, line breaks, escape, DEL, C1), which a label that
//     logs, stores and signed documents carry never means and which a store could not keep
//     faithfully;
//   - format characters (Unicode's Cf): the bidi controls (U+061C, U+200E-U+200F,
//     U+202A-U+202E, U+2066-U+2069), which make an id display as another (`\u202erelles` shows
//     as "sellér" read backwards), and the invisible ones (zero-width space and joiners, soft
//     hyphen, word joiner, BOM, tag characters), which make two ids that look the same differ;
//   - an id of white space only (Unicode's White_Space), which names nobody a reader could see.
//
// NFC, not NFKC: compatibility forms (ﬁ, full-width letters) are other names, as a reader of
// them sees other characters.
func AgentID(id string) (normalized, problem, fix string) {
	if !utf8.ValidString(id) {
		return "", "is not valid UTF-8", agentIDFix
	}
	if !PlainASCII(id) {
		id = norm.NFC.String(id)
	}
	switch {
	case id == "" || utf8.RuneCountInString(id) > MaxIDLen:
		return "", fmt.Sprintf("must be 1 to %d characters long", MaxIDLen), agentIDFix
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return "", "contains a control character", agentIDFix
	case strings.IndexFunc(id, isFormat) >= 0:
		return "", "contains an invisible format character (a bidi control, zero-width character or the like)", agentIDVisibleFix
	case strings.TrimFunc(id, unicode.IsSpace) == "":
		return "", "is only white space", agentIDVisibleFix
	}
	return id, "", ""
}

// isFormat reports Unicode's Cf (format) characters, the bidi controls among them.
func isFormat(r rune) bool { return r >= 0x80 && unicode.Is(unicode.Cf, r) }

// agentIDFix and agentIDVisibleFix are the fixes for the problems AgentID finds (written once:
// the check runs on every request that names an agent).
var (
	agentIDFix        = fmt.Sprintf("Send an agent_id of 1 to %d characters without control characters.", MaxIDLen)
	agentIDVisibleFix = "Send an agent_id people can read as it is: visible characters, without bidi controls, zero-width or other format characters."
)
