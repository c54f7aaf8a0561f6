package verify

import (
	"encoding/json"
	"math/big"
	"slices"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// Values of submitted_output, expected_schema and rule operands are held as the decoder builds
// them: nil, bool, string, json.Number (the literal exactly as sent), []any and map[string]any.
// json.Number keeps every digit so rules compute exactly and the schema library (which accepts
// json.Number) sees what the caller sent.

// RuleType is one of the five rule kinds of SPEC §4.3.
type RuleType string

// The rule types, in the order error messages list them.
const (
	SumEquals RuleType = "sum_equals"
	Gte       RuleType = "gte"
	Lte       RuleType = "lte"
	ExistsIn  RuleType = "exists_in"
	Unique    RuleType = "unique"
)

// RuleTypes lists the allowed rule types in documentation order.
var RuleTypes = []RuleType{SumEquals, Gte, Lte, ExistsIn, Unique}

// Rule is one decoded, validated cross-field rule. Exactly one operand is set, as its type
// requires (none for unique).
type Rule struct {
	Type             RuleType
	Field            jsonvalue.Path
	EqualsField      *jsonvalue.Path // sum_equals
	Equals           *json.Number    // sum_equals
	OtherField       *jsonvalue.Path // gte, lte
	Value            *json.Number    // gte, lte
	InField          *jsonvalue.Path // exists_in
	Values           []any           // exists_in; non-nil when given
	Tolerance        *big.Rat        // never nil after decoding
	ToleranceLiteral json.Number
	IfPresent        bool
}

// Bound is one decoded numeric range: every value Path resolves to must lie in [Min, Max].
type Bound struct {
	Path      jsonvalue.Path
	Min, Max  *json.Number
	IfPresent bool
}

// Failure is one failed check as values: where it failed, as steps, and what it found, as a
// Kind. Nothing of it is text until the report lists it (Show): a failure counted past ListCap,
// or one the report's lists leave out, is never written, and every path a report prints,
// locations and the paths inside texts alike, is written by the one renderer
// (jsonvalue.AppendPath) there.
type Failure struct {
	Check string // "schema:type", "consistency:sum_equals", "bounds:range", "content:placeholder", ...
	// At is where to repair: the steps of the location and, for each `[]` step among them in
	// order, the element meant (or a negative number where the step still means every element),
	// as jsonvalue.AppendPath takes them.
	At    []jsonvalue.Step
	Elems []int
	// Filed is the path the report files the failure under (a flag's field, a message's
	// location): a rule's or bound's own path as the caller wrote it; nil files it under At.
	Filed *jsonvalue.Path
	// Kind is what the check found; nil only for a failure counted past ListCap.
	Kind Kind
}

// Kind is what a failed check found, as values: the expectation and what the output had there.
// Texts writes it for the report, each text shortened (jsonvalue.ShownChars), the detail one
// sentence without the check name or the failure's location ("values sum to 129.5, expected
// total (135.0)"). The schema evaluator's kinds (schemacheck.Kind) are Kinds.
type Kind interface {
	Texts() (expected, found, detail string)
}

// ShownFailure is a failure as a report writes it: Path is its location ("$.items[0].qty"),
// Field the path it is filed under without "$" ("items[].qty", "" for the root), and the texts
// of its Kind.
type ShownFailure struct {
	Path, Field, Expected, Found, Detail string
}

// Show writes f as a report does: its location in the report's one path syntax
// (jsonvalue.AppendPath) and its texts.
func (f *Failure) Show() ShownFailure {
	s := ShownFailure{Path: jsonvalue.Render(f.At, f.Elems)}
	if f.Filed != nil {
		s.Field = f.Filed.String()
	} else {
		s.Field = jsonvalue.Bare(s.Path)
	}
	if f.Kind != nil {
		s.Expected, s.Found, s.Detail = f.Kind.Texts()
	}
	return s
}

// Tally counts checks of one family and keeps the failures a report can show: the first ListCap
// in report order. The others are counted, with the check names only they have, so that an
// output failing a check a hundred thousand times holds ListCap failures, not all of them.
type Tally struct {
	Total, Passed int
	Failures      []Failure
	// dropped counts the failures after Failures; dropChecks are the Check names that only
	// they have, in the order of their first appearance; seen holds every Check name, once
	// failures are dropped.
	dropped    int
	dropChecks []string
	seen       map[string]struct{}
}

// Add merges other into t, other's failures after t's.
func (t *Tally) Add(other Tally) {
	t.Total += other.Total
	t.Passed += other.Passed
	for _, f := range other.Failures {
		t.keep(f)
	}
	t.dropped += other.dropped
	for _, c := range other.dropChecks {
		t.dropCheck(c)
	}
}

// Pass records one passing check.
func (t *Tally) Pass() { t.Total++; t.Passed++ }

// Fail records one failing check.
func (t *Tally) Fail(f Failure) { t.Total++; t.keep(f) }

// full tells whether t keeps no more failures: one failed now is counted by its Check name
// only, so a caller may skip making its location and Kind (see failCounted).
func (t *Tally) full() bool { return len(t.Failures) >= ListCap }

// failCounted records a failed check of check without its location and Kind when t keeps no
// more failures, and reports whether it did: a check that fails at each of many places then
// costs nothing past the first ListCap.
func (t *Tally) failCounted(check string) bool {
	if !t.full() {
		return false
	}
	t.Fail(Failure{Check: check})
	return true
}

// Failed is how many checks failed, the ones not kept in Failures included.
func (t *Tally) Failed() int { return len(t.Failures) + t.dropped }

// appendChecks appends to dst, in order of first appearance, the Check names of t's failures
// that dst does not hold yet.
func (t *Tally) appendChecks(dst []string) []string {
	for _, f := range t.Failures {
		if !slices.Contains(dst, f.Check) {
			dst = append(dst, f.Check)
		}
	}
	for _, c := range t.dropChecks {
		if !slices.Contains(dst, c) {
			dst = append(dst, c)
		}
	}
	return dst
}

func (t *Tally) keep(f Failure) {
	if len(t.Failures) < ListCap {
		t.Failures = append(t.Failures, f)
		return
	}
	t.dropped++
	t.dropCheck(f.Check)
}

func (t *Tally) dropCheck(c string) {
	if t.seen == nil {
		t.seen = make(map[string]struct{}, 8)
		for _, f := range t.Failures {
			t.seen[f.Check] = struct{}{}
		}
	}
	if _, ok := t.seen[c]; !ok {
		t.seen[c] = struct{}{}
		t.dropChecks = append(t.dropChecks, c)
	}
}
