package verify

import (
	"github.com/agent-output-verifier/verifier/pkg/verify/schemacheck"
)

// Schema is a compiled expected_schema (schemacheck.Schema) with what the engine keeps beside it
// in its cache. It is immutable once cached, so one compiled schema serves any number of
// concurrent checks.
type Schema struct {
	check *schemacheck.Schema

	// canonical and hash are the schema's RFC 8785 form and schema_hash, set by the engine when
	// it caches the schema, so that a request found by alias reuses them.
	canonical []byte
	hash      string

	// memory is what the schema holds on the heap, measured by the cache when it keeps it
	// (schemaCharge), which the cache is bounded by.
	memory int
}

// CompileSchema compiles the caller's expected_schema (see schemacheck.Compile).
func CompileSchema(doc any, strict bool) (*Schema, error) {
	s, err := schemacheck.Compile(doc, strict)
	if err != nil {
		return nil, err
	}
	return &Schema{check: s}, nil
}

// ErrStopped is the answer of a check whose caller stopped waiting (Request.StopWhen): it has no
// verdict, and the caller answers its own deadline error.
var ErrStopped = schemacheck.ErrStopped

// Check validates instance against the schema and counts its assertions (schemacheck's Check),
// and returns the schema_compliance tally and the content:undeclared_property one.
func (s *Schema) Check(instance any) (schema Tally, undeclared Tally, err error) {
	return s.checkUntil(instance, nil)
}

// checkUntil is Check that stops early once stop is closed (Request.StopWhen), answering
// ErrStopped.
func (s *Schema) checkUntil(instance any, stop <-chan struct{}) (schema Tally, undeclared Tally, err error) {
	sr, ur, err := s.check.Check(instance, ListCap, stop)
	if err != nil {
		return Tally{}, Tally{}, err
	}
	return schemaTally(sr, "schema:"), schemaTally(ur, checkUndeclared), nil
}

// checkUndeclared is the check name of the undeclared-property family (SPEC §4.5).
const checkUndeclared = "content:undeclared_property"

// schemaTally is a schemacheck.Result as a report's tally: each failure located and typed as the
// evaluator answered it, named prefix+keyword (the undeclared family is one check, prefix alone).
func schemaTally(r schemacheck.Result, prefix string) Tally {
	t := Tally{Total: r.Total, Passed: r.Passed}
	if len(r.Failures) > 0 {
		t.Failures = make([]Failure, len(r.Failures))
		for i, f := range r.Failures {
			t.Failures[i] = Failure{Check: prefix + f.Kind.Keyword(), At: f.At, Kind: f.Kind}
		}
	}
	for _, kw := range r.OmittedKeywords {
		t.dropCheck(prefix + kw)
	}
	t.dropped = r.Omitted
	return t
}
