package schemacheck

import (
	"slices"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// reportKeep is how many failures the tests' checks keep: a report's list cap.
const reportKeep = 50

// shownFailure is a Failure as a report shows it (pkg/verify renders it the same way): its check
// name and its location rendered, so that tests compare what a caller reads.
type shownFailure struct{ Check, Path, Field, Expected, Found, Detail string }

// shownResult is a Result with its failures shown.
type shownResult struct {
	Total, Passed int
	Failures      []shownFailure
	omitted       int
	omittedChecks []string
}

func shown(r Result, prefix string) shownResult {
	s := shownResult{Total: r.Total, Passed: r.Passed, omitted: r.Omitted}
	for _, f := range r.Failures {
		path := jsonvalue.Render(f.At, nil)
		expected, found, detail := f.Kind.Texts()
		s.Failures = append(s.Failures, shownFailure{prefix + f.Kind.Keyword(), path, jsonvalue.Bare(path), expected, found, detail})
	}
	for _, kw := range r.OmittedKeywords {
		s.omittedChecks = append(s.omittedChecks, prefix+kw)
	}
	return s
}

// Failed is how many checks failed, the omitted ones included.
func (s shownResult) Failed() int { return len(s.Failures) + s.omitted }

// appendChecks appends the check names of the failures, kept or omitted, each once in order.
func (s shownResult) appendChecks(dst []string) []string {
	for _, f := range s.Failures {
		if !slices.Contains(dst, f.Check) {
			dst = append(dst, f.Check)
		}
	}
	for _, c := range s.omittedChecks {
		if !slices.Contains(dst, c) {
			dst = append(dst, c)
		}
	}
	return dst
}

// check is Check as the engine calls it (a report's worth of failures kept), shown.
func (s *Schema) check(instance any) (schema, undeclared shownResult, err error) {
	return s.checkKeeping(instance, reportKeep)
}

func (s *Schema) checkKeeping(instance any, keep int) (schema, undeclared shownResult, err error) {
	sr, ur, err := s.Check(instance, keep, nil)
	return shown(sr, "schema:"), shown(ur, "content:undeclared_property"), err
}
