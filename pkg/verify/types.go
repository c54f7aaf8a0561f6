package verify

import (
	"encoding/json"
	"math/big"
	"slices"
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
	Field            Path
	EqualsField      *Path        // sum_equals
	Equals           *json.Number // sum_equals
	OtherField       *Path        // gte, lte
	Value            *json.Number // gte, lte
	InField          *Path        // exists_in
	Values           []any        // exists_in; non-nil when given
	Tolerance        *big.Rat     // never nil after decoding
	ToleranceLiteral json.Number
	IfPresent        bool
}

// Bound is one decoded numeric range: every value Path resolves to must lie in [Min, Max].
type Bound struct {
	Path      Path
	Min, Max  *json.Number
	IfPresent bool
}

// Failure is one failed check, with what was expected and what was found (shortened to
// FoundMaxChars). Path is shown as "$." + path; Field is the bare path the caller wrote.
type Failure struct {
	Check    string // "schema:type", "consistency:sum_equals", "bounds:range", "content:placeholder", ...
	Path     string
	Field    string
	Expected string
	Found    string
	Detail   string // one sentence, no check name or path: "values sum to 129.5, expected total (135.0)"
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
// only, so a caller may skip writing its texts (see failCounted).
func (t *Tally) full() bool { return len(t.Failures) >= ListCap }

// failCounted records a failed check of check without its texts when t keeps no more failures,
// and reports whether it did: a check that fails at each of many places then costs no message
// past the first ListCap.
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
