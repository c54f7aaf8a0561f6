package wire

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckAgentID is the one check of an agent_id, for the verify request and for every route and
// tool that names an agent: valid UTF-8, 1 to MaxIDLen characters, and no control characters
// (Unicode's Cc: NUL, line breaks, escape, DEL, C1), which a label that logs, stores and signed
// documents carry never means and which a store could not keep faithfully. problem and fix are
// phrased for a 422 on agent_id; problem is "" when the id is fine.
func CheckAgentID(id string) (problem, fix string) {
	switch {
	case !utf8.ValidString(id):
		return "is not valid UTF-8", agentIDFix
	case id == "" || utf8.RuneCountInString(id) > MaxIDLen:
		return fmt.Sprintf("must be 1 to %d characters long", MaxIDLen), agentIDFix
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return "contains a control character", agentIDFix
	}
	return "", ""
}

// agentIDFix is the fix for every problem CheckAgentID finds (written once: the check runs on every
// request that names an agent).
var agentIDFix = fmt.Sprintf("Send an agent_id of 1 to %d characters without control characters.", MaxIDLen)
