package schemacheck

import (
	"slices"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// Result is what Check counted of one family of checks (the schema's assertions, or the
// undeclared-property check), with the failures a report can show located, not rendered: the
// report writes their paths (see jsonvalue.AppendPath), as the library leaves rendering its
// ValidationError to its caller.
type Result struct {
	Total, Passed int
	// Failures are the first keep failures (Check's argument) in document order: object keys
	// sorted, array indices ascending, a container before its contents, and within one location
	// the order the evaluator met them in.
	Failures []Failure
	// Omitted counts the failures after Failures; OmittedKeywords are their keywords, each once,
	// in the document order of its first failure among them.
	Omitted         int
	OmittedKeywords []string
}

// Failed is how many checks failed, the omitted ones included.
func (r *Result) Failed() int { return len(r.Failures) + r.Omitted }

func (r *Result) pass() { r.Total++; r.Passed++ }

// Failure is one failed assertion at one instance location, as values: the report renders its
// location (jsonvalue.AppendPath) and its texts (Kind.Texts) when it shows it.
type Failure struct {
	// At is the instance location: keys and indices (jsonvalue.StepKey and StepIndex), outermost
	// first; empty for the root.
	At []jsonvalue.Step
	// Kind is what failed, with the schema's expectation and what the instance had; its Keyword
	// names the assertion.
	Kind Kind
}

// steps is a location as jsonvalue steps.
func steps(loc []schLoc) []jsonvalue.Step {
	if len(loc) == 0 {
		return nil
	}
	s := make([]jsonvalue.Step, len(loc))
	for i, l := range loc {
		if l.idx >= 0 {
			s[i] = jsonvalue.Step{Kind: jsonvalue.StepIndex, Index: l.idx}
		} else {
			s[i] = jsonvalue.Step{Kind: jsonvalue.StepKey, Key: l.key}
		}
	}
	return s
}

// addOmitted notes a keyword among the omitted failures.
func (r *Result) addOmitted(kw string) {
	if !slices.Contains(r.OmittedKeywords, kw) {
		r.OmittedKeywords = append(r.OmittedKeywords, kw)
	}
}
