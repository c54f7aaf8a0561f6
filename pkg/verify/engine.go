package verify

import (
	"fmt"
	"sync"

	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// Engine runs verifications. It is pure apart from its compiled-schema cache: ids, time and the
// signing key are handed in, so the same input always gives the same report.
type Engine struct {
	limits wire.Limits
	cache  *SchemaCache
}

// NewEngine builds an engine with the given limits (zero fields take the defaults).
func NewEngine(lim wire.Limits) *Engine {
	d := wire.DefaultLimits
	if lim.MaxBody > 0 {
		d.MaxBody = lim.MaxBody
	}
	if lim.MaxDepth > 0 {
		d.MaxDepth = lim.MaxDepth
	}
	if lim.MaxRules > 0 {
		d.MaxRules = lim.MaxRules
	}
	if lim.MaxBounds > 0 {
		d.MaxBounds = lim.MaxBounds
	}
	if lim.MaxPathLen > 0 {
		d.MaxPathLen = lim.MaxPathLen
	}
	return &Engine{limits: d, cache: NewSchemaCache(SchemaCacheSize, SchemaCacheBytes)}
}

// Limits returns the limits in force.
func (e *Engine) Limits() wire.Limits { return e.limits }

// Decode parses and validates a request body and compiles its schema (or takes it from the
// cache). Everything a caller can get wrong is reported here, before anything is charged.
func (e *Engine) Decode(body []byte) (*Request, *Schema, error) {
	req, err := decodeRequest(body, e.limits, e.cache.known)
	if err != nil {
		return nil, nil, err
	}
	// The schema's bytes as sent are part of the caller's body, needed only to alias the schema
	// here: the request must not keep the body.
	raw := req.aliasRaw
	req.aliasRaw = nil
	if req.compiled != nil {
		return req, req.compiled, nil
	}
	key := req.Hashes.Schema
	if req.StrictContentCheck {
		key += ":strict"
	}
	sch, err := e.cache.Get(key, func() (*Schema, error) {
		s, err := CompileSchema(req.Schema, req.StrictContentCheck)
		if err == nil {
			s.canonical, s.hash = req.schemaCanonical, req.Hashes.Schema
		}
		return s, err
	})
	if err != nil {
		return nil, nil, err
	}
	e.cache.alias(key, req.alias, raw)
	return req, sch, nil
}

// CheckSchema validates req's output against its compiled schema and evaluates its rules, and
// keeps the counts in req for Check. It is the one part of checking that can refuse the request:
// a schema that needs more work for this output than the evaluation budget allows is the 422
// schema_too_complex, rules past the rule work budget the 422 rules_too_complex (a check that
// stopped, see Request.StopWhen, is ErrStopped). A caller that must not charge or count a request
// the engine then refuses (the free allowance) runs it before admitting the request; Check runs it
// when nobody did.
func (e *Engine) CheckSchema(req *Request, sch *Schema) error {
	if req.schemaChecked {
		return nil
	}
	schema, undeclared, err := sch.checkUntil(req.Output, req.stop)
	if err != nil {
		return err
	}
	rules, err := evaluateRules(req.Output, req.Rules, req.stop)
	if err != nil {
		return err
	}
	if stopped(req.stop) {
		return ErrStopped // the rules were cut short: no verdict
	}
	req.schemaTally, req.rulesTally, req.undeclared, req.schemaChecked = schema, rules, undeclared, true
	return nil
}

// Check runs every check of a decoded request and shapes the report. Its only errors are
// CheckSchema's.
func (e *Engine) Check(req *Request, sch *Schema, env Envelope) (*Report, error) {
	if err := e.CheckSchema(req, sch); err != nil {
		return nil, err
	}
	var f Findings
	f.Schema = req.schemaTally
	f.Rules = req.rulesTally
	f.Bounds = EvaluateBounds(req.Output, req.Bounds)
	f.Content, f.Info = CheckContent(req.Output, req.StrictContentCheck)
	f.Content.Add(req.undeclared)
	f.Enforce, f.Strict, f.Compact = req.EnforceRules, req.StrictContentCheck, req.Detail == DetailCompact
	return buildReport(req, f, env), nil
}

// Attester signs a response document given with its RFC 8785 form; receipt.Key is one. It must
// not keep response or canonical, nor return either, past the call: the engine reuses their buffers.
type Attester interface {
	AttestCanonical(context string, response, canonical []byte, timestamp string) ([]byte, error)
}

// Respond is one whole verification: decode, check, serialize and, when a is not nil, sign. It
// returns the response bytes and the report they were made from.
func (e *Engine) Respond(body []byte, env Envelope, a Attester) ([]byte, *Report, error) {
	req, sch, err := e.Decode(body)
	if err != nil {
		return nil, nil, err
	}
	return e.Finish(req, sch, env, a)
}

// Finish checks a decoded request, serializes the report and, when a is not nil, signs it.
func (e *Engine) Finish(req *Request, sch *Schema, env Envelope, a Attester) ([]byte, *Report, error) {
	rep, err := e.Check(req, sch, env)
	if err != nil {
		return nil, nil, err
	}
	if a == nil {
		out, err := rep.JSON()
		if err != nil {
			return nil, nil, fmt.Errorf("encode report: %w", err)
		}
		return out, rep, nil
	}
	// Both forms of the report are needed only until the signed answer is written, which is a
	// buffer of its own, so theirs are pooled.
	wirep, canonp := canonPool.Get().(*[]byte), canonPool.Get().(*[]byte)
	defer putPooled(wirep)
	defer putPooled(canonp)
	wire, canon, err, canonErr := rep.bothJSON((*wirep)[:0], (*canonp)[:0])
	*wirep, *canonp = wire, canon
	if err != nil {
		return nil, nil, fmt.Errorf("encode report: %w", err)
	}
	if canonErr != nil {
		canon = nil // the signer canonicalizes the wire form itself
	}
	out, err := rep.attest(a, wirep, canonp, canon)
	if err != nil {
		return nil, nil, fmt.Errorf("attest report: %w", err)
	}
	return out, rep, nil
}

// canonPool holds the buffers Finish writes a report's two forms in, and those Request.hash
// writes the pieces it only hashes in.
var canonPool = sync.Pool{New: func() any { return new([]byte) }}

// putPooled returns a buffer to canonPool unless it grew too large to keep.
func putPooled(bufp *[]byte) {
	if cap(*bufp) <= maxPooledCanon {
		*bufp = (*bufp)[:0]
		canonPool.Put(bufp)
	}
}

// maxPooledCanon keeps one very large report from pinning its buffer in the pool for good.
const maxPooledCanon = 1 << 20
