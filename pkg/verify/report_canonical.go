package verify

import (
	"errors"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// errNotCanonical means the report holds a value this encoder does not write canonically itself
// (a ratio outside the plain decimal range, invalid UTF-8); the caller canonicalizes the wire form
// instead.
var errNotCanonical = errors.New("report value outside the canonical encoder's range")

// canonicalJSON is the report's RFC 8785 form, written straight from the struct: the members of
// every object in UTF-16 order (all names are ASCII, so byte order), with the same omissions as
// JSON's. It saves the signer re-reading and re-ordering the wire form; the tests hold it equal to
// receipt.Canonicalize(JSON()) for every report shape, and fuzzing does for arbitrary requests.
func (r *Report) canonicalJSON(dst []byte) ([]byte, error) {
	c := canonWriter{b: dst}
	c.open('{')
	c.name("agent_id")
	if r.AgentID == nil {
		c.raw("null")
	} else {
		c.str(*r.AgentID)
	}
	c.name("enforce_rules")
	c.boolean(r.EnforceRules)
	if r.Errors != nil {
		c.name("errors")
		c.open('[')
		for _, e := range r.Errors {
			c.elem()
			c.str(e)
		}
		c.close(']')
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
	c.name("strict_content_check")
	c.boolean(r.StrictContentCheck)
	c.name("summary")
	c.open('{')
	c.name("blocking_checks")
	c.open('[')
	for _, b := range r.Summary.BlockingChecks {
		c.elem()
		c.str(b)
	}
	c.close(']')
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

// canonWriter appends canonical JSON, remembering the first error. first is true right after an
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

func (c *canonWriter) raw(s string) { c.b = append(c.b, s...) }

func (c *canonWriter) boolean(v bool) {
	if v {
		c.raw("true")
	} else {
		c.raw("false")
	}
}

func (c *canonWriter) str(s string) {
	var err error
	if c.b, err = jsontext.AppendQuote(c.b, s); err != nil && c.err == nil {
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
	c.name("passed")
	c.b = strconv.AppendInt(c.b, int64(r.Passed), 10)
	c.name("ratio")
	// RFC 8785 writes numbers as ECMAScript does: the shortest round-trip digits, in plain
	// decimal notation from 1e-7 up to 1e21. Ratios lie in [0, 1] with 6 decimals, so they
	// always take this form; anything else goes the general way.
	if a := math.Abs(r.Ratio); r.Ratio != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(r.Ratio) || math.Signbit(r.Ratio) {
		c.err = errNotCanonical
	}
	c.b = strconv.AppendFloat(c.b, r.Ratio, 'f', -1, 64)
	c.name("total")
	c.b = strconv.AppendInt(c.b, int64(r.Total), 10)
	c.close('}')
}
