package verify

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// errNotCanonical means the report holds a value this encoder does not write canonically itself
// (a ratio outside the plain decimal range, invalid UTF-8); the caller canonicalizes the wire form
// instead.
var errNotCanonical = errors.New("report value outside the canonical encoder's range")

// wireJSON is the report's wire form: the members in the order of the struct (SPEC §4.6's), with
// the omissions its json tags ask for. Written by hand, like canonicalJSON, because the general
// encoder's reflection was a measurable share of a verification; the tests hold it equal to
// json.Marshal for every report shape.
func (r *Report) wireJSON(dst []byte) ([]byte, error) {
	c := canonWriter{b: dst}
	c.open('{')
	c.name("summary")
	c.open('{')
	c.member("result", r.Summary.Result)
	c.strs("blocking_checks", r.Summary.BlockingChecks)
	c.close('}')
	c.name("next_actions")
	c.open('[')
	for _, a := range r.NextActions {
		c.elem()
		c.open('{')
		c.member("action", a.Action)
		if a.Using != "" {
			c.member("using", a.Using)
		}
		if a.For != "" {
			c.member("for", a.For)
		}
		c.close('}')
	}
	c.close(']')
	c.member("result", r.Result)
	c.member("verification_id", r.VerificationID)
	c.member("task_id", r.TaskID)
	c.optStr("agent_id", r.AgentID)
	c.member("output_hash", r.OutputHash)
	c.member("schema_hash", r.SchemaHash)
	c.member("rules_hash", r.RulesHash)
	if r.RequestHash != "" {
		c.member("request_hash", r.RequestHash)
	}
	c.member("verified_at", r.VerifiedAt)
	c.member("verifier_version", r.VerifierVersion)
	c.boolMember("enforce_rules", r.EnforceRules)
	c.boolMember("strict_content_check", r.StrictContentCheck)
	if r.Errors != nil {
		c.strs("errors", r.Errors)
	}
	c.optInt("errors_total", r.ErrorsTotal)
	c.optInt("errors_omitted", r.ErrorsOmitted)
	if r.ErrorsDetail != nil {
		c.name("errors_detail")
		c.open('[')
		for _, d := range r.ErrorsDetail {
			c.elem()
			c.open('{')
			c.member("check", d.Check)
			c.member("path", d.Path)
			c.member("expected", d.Expected)
			c.member("found", d.Found)
			c.member("message", d.Message)
			c.close('}')
		}
		c.close(']')
	}
	c.optInt("errors_detail_total", r.ErrorsDetailTotal)
	c.optInt("errors_detail_omitted", r.ErrorsDetailOmitted)
	if r.Flags != nil {
		c.name("flags")
		c.open('[')
		for _, f := range r.Flags {
			c.elem()
			c.open('{')
			c.member("check", f.Check)
			c.member("field", f.Field)
			c.member("severity", f.Severity)
			c.member("detail", f.Detail)
			c.close('}')
		}
		c.close(']')
	}
	c.optInt("flags_total", r.FlagsTotal)
	c.optInt("flags_omitted", r.FlagsOmitted)
	if r.Hints != nil {
		c.name("hints")
		c.open('[')
		for _, h := range r.Hints {
			c.elem()
			c.open('{')
			c.member("source", h.Source)
			c.member("check", h.Check)
			c.member("path", h.Path)
			c.member("expected", h.Expected)
			c.member("found", h.Found)
			c.close('}')
		}
		c.close(']')
	}
	c.optInt("hints_total", r.HintsTotal)
	c.optInt("hints_omitted", r.HintsOmitted)
	c.wireRatio("schema_compliance", r.SchemaCompliance)
	c.wireRatio("integrity_checks", r.IntegrityChecks)
	c.wireRatio("overall", r.Overall)
	c.name("verify")
	c.open('{')
	c.member("public_key_url", r.Verify.PublicKeyURL)
	c.member("key_version", r.Verify.KeyVersion)
	c.member("canonicalization", r.Verify.Canonicalization)
	c.member("hash_algorithm", r.Verify.HashAlgorithm)
	c.member("service", r.Verify.Service)
	c.member("mcp", r.Verify.MCP)
	c.close('}')
	c.close('}')
	return c.b, c.err
}

// canonicalJSON is the report's RFC 8785 form, written straight from the struct: the members of
// every object in UTF-16 order (all names are ASCII, so byte order), with the same omissions as
// JSON's. It saves the signer re-reading and re-ordering the wire form; the tests hold it equal to
// receipt.Canonicalize(JSON()) for every report shape, and fuzzing does for arbitrary requests.
func (r *Report) canonicalJSON(dst []byte) ([]byte, error) {
	c := canonWriter{b: dst}
	c.open('{')
	c.optStr("agent_id", r.AgentID)
	c.boolMember("enforce_rules", r.EnforceRules)
	if r.Errors != nil {
		c.strs("errors", r.Errors)
	}
	if r.ErrorsDetail != nil {
		c.name("errors_detail")
		c.open('[')
		for _, d := range r.ErrorsDetail {
			c.elem()
			c.open('{')
			c.member("check", d.Check)
			c.member("expected", d.Expected)
			c.member("found", d.Found)
			c.member("message", d.Message)
			c.member("path", d.Path)
			c.close('}')
		}
		c.close(']')
	}
	c.optInt("errors_detail_omitted", r.ErrorsDetailOmitted)
	c.optInt("errors_detail_total", r.ErrorsDetailTotal)
	c.optInt("errors_omitted", r.ErrorsOmitted)
	c.optInt("errors_total", r.ErrorsTotal)
	if r.Flags != nil {
		c.name("flags")
		c.open('[')
		for _, f := range r.Flags {
			c.elem()
			c.open('{')
			c.member("check", f.Check)
			c.member("detail", f.Detail)
			c.member("field", f.Field)
			c.member("severity", f.Severity)
			c.close('}')
		}
		c.close(']')
	}
	c.optInt("flags_omitted", r.FlagsOmitted)
	c.optInt("flags_total", r.FlagsTotal)
	if r.Hints != nil {
		c.name("hints")
		c.open('[')
		for _, h := range r.Hints {
			c.elem()
			c.open('{')
			c.member("check", h.Check)
			c.member("expected", h.Expected)
			c.member("found", h.Found)
			c.member("path", h.Path)
			c.member("source", h.Source)
			c.close('}')
		}
		c.close(']')
	}
	c.optInt("hints_omitted", r.HintsOmitted)
	c.optInt("hints_total", r.HintsTotal)
	c.optRatio("integrity_checks", r.IntegrityChecks)
	c.name("next_actions")
	c.open('[')
	for _, a := range r.NextActions {
		c.elem()
		c.open('{')
		c.member("action", a.Action)
		if a.For != "" {
			c.member("for", a.For)
		}
		if a.Using != "" {
			c.member("using", a.Using)
		}
		c.close('}')
	}
	c.close(']')
	c.member("output_hash", r.OutputHash)
	c.optRatio("overall", r.Overall)
	if r.RequestHash != "" {
		c.member("request_hash", r.RequestHash)
	}
	c.member("result", r.Result)
	c.member("rules_hash", r.RulesHash)
	c.optRatio("schema_compliance", r.SchemaCompliance)
	c.member("schema_hash", r.SchemaHash)
	c.boolMember("strict_content_check", r.StrictContentCheck)
	c.name("summary")
	c.open('{')
	c.strs("blocking_checks", r.Summary.BlockingChecks)
	c.member("result", r.Summary.Result)
	c.close('}')
	c.member("task_id", r.TaskID)
	c.member("verification_id", r.VerificationID)
	c.member("verified_at", r.VerifiedAt)
	c.member("verifier_version", r.VerifierVersion)
	c.name("verify")
	c.open('{')
	c.member("canonicalization", r.Verify.Canonicalization)
	c.member("hash_algorithm", r.Verify.HashAlgorithm)
	c.member("key_version", r.Verify.KeyVersion)
	c.member("mcp", r.Verify.MCP)
	c.member("public_key_url", r.Verify.PublicKeyURL)
	c.member("service", r.Verify.Service)
	c.close('}')
	c.close('}')
	return c.b, c.err
}

// canonWriter appends JSON with minimal string escaping and no whitespace (the canonical
// writing of RFC 8785 when members come in sorted order), remembering the first error. first is true right after an
// opening bracket, where the next member or element takes no comma.
type canonWriter struct {
	b     []byte
	first bool
	err   error
}

func (c *canonWriter) open(bracket byte)  { c.b = append(c.b, bracket); c.first = true }
func (c *canonWriter) close(bracket byte) { c.b = append(c.b, bracket); c.first = false }

// elem starts an array element.
func (c *canonWriter) elem() {
	if !c.first {
		c.b = append(c.b, ',')
	}
	c.first = false
}

// name starts an object member; n needs no escaping.
func (c *canonWriter) name(n string) {
	c.elem()
	c.b = append(c.b, '"')
	c.b = append(c.b, n...)
	c.b = append(c.b, '"', ':')
}

func (c *canonWriter) boolMember(n string, v bool) {
	c.name(n)
	c.b = strconv.AppendBool(c.b, v)
}

// optStr writes a nullable string.
func (c *canonWriter) optStr(n string, v *string) {
	c.name(n)
	if v == nil {
		c.b = append(c.b, "null"...)
	} else {
		c.str(*v)
	}
}

// strs writes an array of strings; nil is written as [] like a present empty list.
func (c *canonWriter) strs(n string, v []string) {
	c.name(n)
	c.open('[')
	for _, s := range v {
		c.elem()
		c.str(s)
	}
	c.close(']')
}

func (c *canonWriter) str(s string) {
	var err error
	if c.b, err = appendQuoted(c.b, s); err != nil && c.err == nil {
		c.err = errNotCanonical
	}
}

func (c *canonWriter) member(n, v string) { c.name(n); c.str(v) }

func (c *canonWriter) optInt(n string, v *int) {
	if v != nil {
		c.name(n)
		c.b = strconv.AppendInt(c.b, int64(*v), 10)
	}
}

func (c *canonWriter) optRatio(n string, r *Ratio) {
	if r == nil {
		return
	}
	c.name(n)
	c.open('{')
	c.intMember("passed", r.Passed)
	c.ratio(r.Ratio)
	c.intMember("total", r.Total)
	c.close('}')
}

func (c *canonWriter) wireRatio(n string, r *Ratio) {
	if r == nil {
		return
	}
	c.name(n)
	c.open('{')
	c.ratio(r.Ratio)
	c.intMember("passed", r.Passed)
	c.intMember("total", r.Total)
	c.close('}')
}

func (c *canonWriter) intMember(n string, v int) {
	c.name(n)
	c.b = strconv.AppendInt(c.b, int64(v), 10)
}

// ratio writes the "ratio" member. RFC 8785 (and Go's JSON encoder) write numbers as ECMAScript
// does: the shortest round-trip digits, in plain decimal notation from 1e-7 up to 1e21. Ratios
// lie in [0, 1] with 6 decimals, so they always take this form; anything else is refused and the
// caller goes the general way.
func (c *canonWriter) ratio(v float64) {
	c.name("ratio")
	if a := math.Abs(v); v != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(v) || math.Signbit(v) {
		c.err = errNotCanonical
	}
	c.b = strconv.AppendFloat(c.b, v, 'f', -1, 64)
}

// plainASCII tells whether s is written as is between quotes: printable ASCII without '"' or '\\',
// which no JSON writer escapes. It looks at eight bytes at a time: a word has none of the
// characters to escape when no byte has its high bit set, none is below 0x20, and none equals '"'
// or '\\' (the classic tests for a zero or a small byte in a word, exact as a yes/no answer).
func plainASCII(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		quote, backslash := w^(ones*'"'), w^(ones*'\\')
		if (w|(w-ones*0x20)|((quote-ones)&^quote)|((backslash-ones)&^backslash))&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
