package verify

import (
	"encoding/json"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"slices"
	"strconv"
)

// EvaluateRules runs the cross-field rules in order against submitted_output and returns their
// tally (SPEC §4.3): sum_equals and unique count one check per rule, gte, lte and exists_in one per
// value tested, and a rule skipped by if_present counts nothing. Numbers are compared exactly as
// written, so a report never passes or fails an amount because of float rounding.
func EvaluateRules(output any, rules []Rule) (Tally, error) { return evaluateRules(output, rules, nil) }

// evaluateRules is EvaluateRules that stops before the next rule once stop is closed
// (Request.StopWhen). Rules that need more work than the budget for this output are no verdict
// but an error in the request, rules_too_complex (rulesTooComplex): like a schema too costly to
// evaluate, it is never charged, counted or recorded.
func evaluateRules(output any, rules []Rule, stop <-chan struct{}) (Tally, error) {
	var t Tally
	ev := evaluator{root: output, budget: RuleWorkBase}
	for i := range rules {
		if stopped(stop) {
			break
		}
		ev.rule(&rules[i], &t)
		if ev.over {
			return Tally{}, rulesTooComplex(i, ev.budget)
		}
	}
	return t, nil
}

// rulesTooComplex is the answer for rules that exceed the rule work budget for this output (rule
// i went past it): the request asks for more work than the verifier does for one, so there is no
// verdict, and the caller learns the limit and how to stay under it.
func rulesTooComplex(i, budget int) *apperr.Error {
	e := apperr.Field(fmt.Sprintf("rules[%d]", i),
		fmt.Sprintf("takes the rules past the verifier's work limit for this submitted_output, %d units "+
			"(%d, plus %d for each value of the output); a unit is one value a rule path resolves, and unique and exists_in "+
			"also count the size of every value they compare", budget, RuleWorkBase, RuleWorkPerValue),
		"Use fewer rules over the same large arrays (each rule with [] over an array reads all of it again), "+
			"compare small values with unique and exists_in rather than whole objects, and send the request again.")
	e.Code = apperr.RulesTooComplex
	e.Message = "The check could not finish: the rules need more work for this output than the verifier's limit, " +
		"so there is no verdict on the output. Nothing was charged, counted against the free allowance or recorded; use fewer or narrower rules and send it again."
	return e
}

// spend charges n units of rule work (RuleWorkBase, RuleWorkPerValue) and reports whether
// evaluation may go on; the output is measured only once the base is spent.
func (ev *evaluator) spend(n int) bool {
	if ev.spent += n; ev.spent > ev.budget && !ev.sized {
		ev.sized = true
		ev.budget = RuleWorkBase + RuleWorkPerValue*jsonvalue.Size(ev.root)
	}
	ev.over = ev.over || ev.spent > ev.budget
	return !ev.over
}

// spendHashed charges the values a rule hashes (unique, exists_in): each by its size.
func (ev *evaluator) spendHashed(values []any) bool {
	n := len(values)
	for _, v := range values {
		switch v.(type) {
		case []any, map[string]any:
			n += jsonvalue.Size(v)
		}
	}
	return ev.spend(n)
}

// stopped reports whether stop (Request.StopWhen) is closed; a nil stop never is.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// evaluator holds what evaluating rules and bounds over one output reuses: the output, decimal
// scratch space, a buffer for equality keys, and the rules' work so far.
type evaluator struct {
	root             any
	spent, budget    int
	sized, over      bool
	c                calc
	x, target, total jsonvalue.Decimal
	diff             jsonvalue.Decimal
	key              []byte
}

// ruleCheck is the check name of a rule type ("consistency:<type>").
func ruleCheck(t RuleType) string {
	switch t {
	case SumEquals:
		return "consistency:sum_equals"
	case Gte:
		return "consistency:gte"
	case Lte:
		return "consistency:lte"
	case ExistsIn:
		return "consistency:exists_in"
	case Unique:
		return "consistency:unique"
	}
	return "consistency:" + jsonvalue.Shorten(string(t))
}

func (ev *evaluator) rule(r *Rule, t *Tally) {
	switch r.Type {
	case SumEquals:
		ev.sumEquals(r, t)
	case Gte, Lte:
		ev.compare(r, t)
	case ExistsIn:
		ev.existsIn(r, t)
	case Unique:
		ev.unique(r, t)
	default:
		t.Fail(ev.ruleFailure(r, whole(r.Field), unknownRule{r.Type}))
	}
}

// ruleFailure builds a failure of rule r at loc: it is filed under the rule's own field, so every
// failure of one rule is filed under the path the caller wrote, while loc says where to repair.
func (ev *evaluator) ruleFailure(r *Rule, loc where, k Kind) Failure {
	return Failure{Check: ruleCheck(r.Type), At: loc.steps, Elems: loc.elems(), Filed: &r.Field, Kind: k}
}

// notFound is the failing check of a place where a path finds nothing (see Path): loc is that
// place, and more how many other places the path selects have nothing there, for a check that
// stands for all of them (sum_equals, unique, an operand).
func (ev *evaluator) notFound(r *Rule, loc where, want wanted, more int) Failure {
	return ev.ruleFailure(r, loc, notFound{want: want, at: loc, more: more})
}

// notFoundDetail says that nothing is at loc, nor at more other places the same path selects.
func notFoundDetail(loc string, more int) string {
	d := jsonvalue.Shorten(loc) + " was not found"
	switch {
	case more == 1:
		d += "; 1 more place the path selects has nothing there"
	case more > 1:
		d += "; " + strconv.Itoa(more) + " more places the path selects have nothing there"
	}
	return d
}

// firstMissing is the first place p selects in root with nothing there, where a `[]` that an
// absent place never reached stays `[]`. It resolves again, so it is for failures only.
func firstMissing(p jsonvalue.Path, root any) where {
	values, at, _ := jsonvalue.Places(p.Steps, root, true)
	w := jsonvalue.CountAll(p.Steps)
	for i, v := range values {
		if jsonvalue.IsAbsent(v) {
			return where{steps: p.Steps, at: at[i*w : (i+1)*w]}
		}
	}
	return whole(p)
}

// operandValues resolves an operand path (equals_field, other_field, in_field) as Path says:
// without if_present a place with nothing there is one failed check (expecting what+p) and ok is
// false, the rule going no further; with if_present those places are left out, and an operand
// with no value at all skips the rule (ok false, nothing counted). Otherwise it returns the
// values there.
func (ev *evaluator) operandValues(r *Rule, t *Tally, p jsonvalue.Path, what string, hashed bool) (values []any, ok bool) {
	slots, _, missing := jsonvalue.Places(p.Steps, ev.root, false)
	if hashed && !ev.spendHashed(slots) || !hashed && !ev.spend(len(slots)) {
		return nil, false
	}
	if missing == 0 {
		return slots, true
	}
	if !r.IfPresent {
		t.Fail(ev.notFound(r, firstMissing(p, ev.root), wanted{text: what, path: p}, missing-1))
		return nil, false
	}
	if missing == len(slots) {
		return nil, false
	}
	values = make([]any, 0, len(slots)-missing)
	for _, v := range slots {
		if !jsonvalue.IsAbsent(v) {
			values = append(values, v)
		}
	}
	return values, true
}

// noOperand guards against a rule that reached evaluation without its operand (the decoder
// rejects those); it fails rather than passes.
func (ev *evaluator) noOperand(r *Rule, t *Tally) {
	t.Fail(ev.ruleFailure(r, whole(r.Field), noOperand{}))
}

// wholeArray guards against an exists_in path without `[]` that names an array (the decoder
// refuses those, see refuseWholeValues): it fails rather than compare the array as one value.
func (ev *evaluator) wholeArray(r *Rule, t *Tally, p jsonvalue.Path) bool {
	if !jsonvalue.ArrayWithoutAll(p, ev.root) {
		return false
	}
	t.Fail(ev.ruleFailure(r, whole(p), wholeArray{p}))
	return true
}

// sumEquals: the numbers at field add up to the target within the tolerance. One check.
func (ev *evaluator) sumEquals(r *Rule, t *Tally) {
	values, _, missing := jsonvalue.Places(r.Field.Steps, ev.root, false)
	if !ev.spend(len(values)) {
		return
	}
	if missing > 0 {
		if !r.IfPresent {
			t.Fail(ev.notFound(r, firstMissing(r.Field, ev.root), wanted{text: "a sum of the values at ", path: r.Field}, missing-1))
			return
		}
		if missing == len(values) {
			return
		}
	}
	var lit string // the target
	switch {
	case r.EqualsField != nil:
		ef := *r.EqualsField
		tv, ok := ev.operandValues(r, t, ef, "a sum equal to ", false)
		if !ok {
			return
		}
		if len(tv) != 1 {
			t.Fail(ev.ruleFailure(r, whole(ef), operandCount{name: "equals_field", p: ef, n: len(tv)}))
			return
		}
		n, ok := tv[0].(json.Number)
		if !ok {
			t.Fail(ev.ruleFailure(r, whole(ef), notNumber{want: wanted{text: "a number at ", path: ef}, value: tv[0], at: whole(ef)}))
			return
		}
		lit = string(n)
	case r.Equals != nil:
		lit = string(*r.Equals)
	default:
		ev.noOperand(r, t)
		return
	}
	if err := jsonvalue.ParseDecimal(lit, &ev.target); err != nil {
		t.Fail(ev.ruleFailure(r, whole(r.Field), badOperand{want: wanted{text: "a number to compare the sum with"},
			what: "the target number", lit: lit, err: err}))
		return
	}
	ev.total.SetZero()
	intLike := true
	for i, v := range values {
		if jsonvalue.IsAbsent(v) {
			continue // if_present: only the values there are summed
		}
		n, ok := v.(json.Number)
		var err error
		if ok {
			err = jsonvalue.ParseDecimal(string(n), &ev.x)
		}
		if !ok || err != nil {
			loc := locate(r.Field.Steps, ev.root, i)
			t.Fail(ev.ruleFailure(r, loc, notNumber{want: wanted{text: "a number to add up"}, value: v, err: err, at: loc}))
			return
		}
		intLike = intLike && jsonvalue.IntegerLiteral(string(n))
		ev.c.Add(&ev.total, &ev.total, &ev.x)
	}
	tol := newTolerance(r.Tolerance)
	ev.c.Sub(&ev.diff, &ev.total, &ev.target)
	if ev.c.within(&ev.diff, tol) {
		t.Pass()
		return
	}
	t.Fail(ev.ruleFailure(r, whole(r.Field), sumMismatch{r: r, lit: lit, sum: ev.total.PyString(intLike)}))
}

// compare: gte and lte, one check per place of field. The operand is value, a single number at
// other_field, or, when field and other_field share their `[]` prefix, the operand of the same
// element (see jsonvalue.ElementwisePrefix).
func (ev *evaluator) compare(r *Rule, t *Tally) {
	if r.OtherField != nil {
		if n := jsonvalue.ElementwisePrefix(r.Field, *r.OtherField); n > 0 {
			ev.compareElementwise(r, t, newTolerance(r.Tolerance), *r.OtherField, n)
			return
		}
	}
	values, at, missing := jsonvalue.Places(r.Field.Steps, ev.root, true)
	if !ev.spend(len(values)) {
		return
	}
	width := jsonvalue.CountAll(r.Field.Steps)
	if missing > 0 && missing == len(values) {
		// Nothing there at all: no value to compare, so the operand is not looked at.
		if !r.IfPresent {
			for i := range values {
				if !t.failCounted(ruleCheck(r.Type)) {
					t.Fail(ev.notFound(r, where{steps: r.Field.Steps, at: at[i*width : (i+1)*width]}, wanted{text: "numbers at ", path: r.Field}, 0))
				}
			}
		}
		return
	}
	tol := newTolerance(r.Tolerance)
	var op operand
	switch {
	case r.Value != nil:
		op.lit = string(*r.Value)
		if err := jsonvalue.ParseDecimal(op.lit, &ev.target); err != nil {
			t.Fail(ev.ruleFailure(r, whole(r.Field), badOperand{want: wanted{text: "a number to compare with"},
				what: "the rule's value", lit: op.lit, err: err}))
			return
		}
	case r.OtherField != nil:
		other := *r.OtherField
		ovals, ok := ev.operandValues(r, t, other, "a number at ", false)
		if !ok {
			return
		}
		if len(ovals) != 1 {
			t.Fail(ev.ruleFailure(r, whole(other), operandCount{name: "other_field", p: other, n: len(ovals)}))
			return
		}
		n, ok := ovals[0].(json.Number)
		var err error
		if ok {
			err = jsonvalue.ParseDecimal(string(n), &ev.target)
		}
		if !ok || err != nil {
			t.Fail(ev.ruleFailure(r, whole(other), notNumber{want: wanted{text: "a number at ", path: other}, value: ovals[0], err: err, at: whole(other)}))
			return
		}
		op = operand{lit: string(n), name: other.String()}
	default:
		ev.noOperand(r, t)
		return
	}
	for i, v := range values {
		vAt := at[i*width : (i+1)*width]
		if jsonvalue.IsAbsent(v) {
			if !r.IfPresent && !t.failCounted(ruleCheck(r.Type)) {
				t.Fail(ev.notFound(r, where{steps: r.Field.Steps, at: vAt}, wanted{text: "numbers at ", path: r.Field}, 0))
			}
			continue
		}
		ev.compareOne(r, t, tol, v, where{steps: r.Field.Steps, at: vAt}, op)
	}
}

// compareElementwise compares, for each element the shared prefix selects, the values of field
// under it with the one value of other_field under it. Each place of field is one check: with
// nothing there, or nothing at its element's operand, it fails as not found (or, with
// if_present, is left out).
func (ev *evaluator) compareElementwise(r *Rule, t *Tally, tol *tolerance, other jsonvalue.Path, n int) {
	prefix := r.Field.Steps[:n]
	rest, orest := r.Field.Steps[n:], other.Steps[n:]
	elems, eat, _ := jsonvalue.Places(prefix, ev.root, true)
	pw, rw := jsonvalue.CountAll(prefix), jsonvalue.CountAll(rest)
	if !ev.spend(2 * len(elems)) {
		return
	}
	var one [1]any // the one place of field under an element when rest has no `[]`
	for i, e := range elems {
		eAt := eat[i*pw : (i+1)*pw]
		if jsonvalue.IsAbsent(e) {
			// The prefix itself has nothing here: one place of field, not found.
			if !r.IfPresent && !t.failCounted(ruleCheck(r.Type)) {
				t.Fail(ev.notFound(r, where{steps: r.Field.Steps, at: eAt}, wanted{text: "numbers at ", path: r.Field}, 0))
			}
			continue
		}
		opAt := where{steps: other.Steps, at: eAt}
		ov, opThere := jsonvalue.One(orest, e)
		num, ok := ov.(json.Number)
		var err error
		if ok {
			err = jsonvalue.ParseDecimal(string(num), &ev.target)
		}
		vals, vat := one[:], []int(nil)
		if rw == 0 {
			v, there := jsonvalue.One(rest, e)
			if !there {
				v = jsonvalue.Absent
			}
			one[0] = v
		} else {
			vals, vat, _ = jsonvalue.Places(rest, e, true)
			if !ev.spend(len(vals)) {
				return
			}
		}
		for j, v := range vals {
			w := where{steps: r.Field.Steps, at: eAt, more: vat[j*rw : (j+1)*rw]}
			switch {
			case jsonvalue.IsAbsent(v):
				if !r.IfPresent && !t.failCounted(ruleCheck(r.Type)) {
					t.Fail(ev.notFound(r, w, wanted{text: "numbers at ", path: r.Field}, 0))
				}
			case !opThere:
				if !r.IfPresent && !t.failCounted(ruleCheck(r.Type)) {
					t.Fail(ev.notFound(r, opAt, wanted{op: opAt, of: w, elementwise: true}, 0))
				}
			default:
				ev.compareElement(r, t, tol, v, w, ov, opAt, ok && err == nil, err)
			}
		}
	}
}

// compareElement is one element-wise check; a non-number operand fails the check and names it.
func (ev *evaluator) compareElement(r *Rule, t *Tally, tol *tolerance, v any, w where, ov any, opAt where, opOK bool, opErr error) {
	if opOK {
		ev.compareOne(r, t, tol, v, w, operand{lit: string(ov.(json.Number)), at: opAt, elem: true})
		return
	}
	if t.failCounted(ruleCheck(r.Type)) {
		return
	}
	t.Fail(ev.ruleFailure(r, opAt, notNumber{want: wanted{op: opAt, of: w, elementwise: true}, value: ov, err: opErr, at: opAt}))
}

// operand is what a gte or lte value is compared with (already parsed into ev.target): a literal,
// and where it came from when it came from other_field.
type operand struct {
	lit  string
	name string // other_field as the caller wrote it; "" for a `value` operand
	at   where  // the operand's own element, when compared element by element (elem)
	elem bool
}

// label shows the operand in messages: "10", "limit (10)", "items[2].start (10)".
func (o operand) label() string {
	switch {
	case o.elem:
		return jsonvalue.Shorten(o.at.raw()) + " (" + jsonvalue.Shorten(o.lit) + ")"
	case o.name != "":
		return jsonvalue.Shorten(o.name) + " (" + jsonvalue.Shorten(o.lit) + ")"
	}
	return jsonvalue.Shorten(o.lit)
}

// compareOne checks v against ev.target: gte passes when v ≥ target − tolerance, lte when
// v ≤ target + tolerance.
func (ev *evaluator) compareOne(r *Rule, t *Tally, tol *tolerance, v any, w where, op operand) {
	gte := r.Type == Gte
	n, ok := v.(json.Number)
	var err error
	if ok {
		err = jsonvalue.ParseDecimal(string(n), &ev.x)
	}
	if ok && err == nil {
		if gte {
			ev.c.Sub(&ev.diff, &ev.target, &ev.x) // how far v falls short
		} else {
			ev.c.Sub(&ev.diff, &ev.x, &ev.target) // how far v goes over
		}
		if ev.diff.Sign() <= 0 || ev.c.within(&ev.diff, tol) {
			t.Pass()
			return
		}
	}
	if t.failCounted(ruleCheck(r.Type)) {
		return
	}
	t.Fail(ev.ruleFailure(r, w, outOfOrder{r: r, op: op, value: v, number: ok && err == nil, err: err, at: w}))
}

// existsIn: each value of field occurs among the operand values (canonical JSON equality). One
// check per place of field.
func (ev *evaluator) existsIn(r *Rule, t *Tally) {
	values, at, missing := jsonvalue.Places(r.Field.Steps, ev.root, true)
	if !ev.spendHashed(values) {
		return
	}
	width := jsonvalue.CountAll(r.Field.Steps)
	if missing > 0 && missing == len(values) {
		// Nothing there at all: no value to look up, so the operand is not looked at.
		if !r.IfPresent {
			for i := range values {
				if !t.failCounted(ruleCheck(r.Type)) {
					t.Fail(ev.notFound(r, where{steps: r.Field.Steps, at: at[i*width : (i+1)*width]}, wanted{text: "values at ", path: r.Field}, 0))
				}
			}
		}
		return
	}
	if ev.wholeArray(r, t, r.Field) {
		return
	}
	var set []any
	var in *jsonvalue.Path
	switch {
	case r.InField != nil:
		in = r.InField
		if ev.wholeArray(r, t, *in) {
			return
		}
		var ok bool
		if set, ok = ev.operandValues(r, t, *in, "values at ", true); !ok {
			return
		}
	case r.Values != nil:
		set = r.Values
		if !ev.spendHashed(set) {
			return
		}
	default:
		ev.noOperand(r, t)
		return
	}
	members := newValueSet(len(set))
	for i, v := range set {
		ev.remember(members, v, i)
	}
	for i, v := range values {
		vAt := at[i*width : (i+1)*width]
		if jsonvalue.IsAbsent(v) {
			if !r.IfPresent && !t.failCounted(ruleCheck(r.Type)) {
				t.Fail(ev.notFound(r, where{steps: r.Field.Steps, at: vAt}, wanted{text: "values at ", path: r.Field}, 0))
			}
			continue
		}
		if _, ok := ev.find(members, v); ok {
			t.Pass()
			continue
		}
		if t.failCounted(ruleCheck(r.Type)) {
			continue
		}
		t.Fail(ev.ruleFailure(r, where{steps: r.Field.Steps, at: vAt}, notIn{in: in, set: set, value: v}))
	}
}

// unique: no two values of field are equal (canonical JSON equality). One check per rule; the
// failure names the first place with nothing there (without if_present), else the first value
// that repeats an earlier one.
func (ev *evaluator) unique(r *Rule, t *Tally) {
	values, _, missing := jsonvalue.Places(r.Field.Steps, ev.root, false)
	if !ev.spendHashed(values) {
		return
	}
	if missing > 0 {
		if !r.IfPresent {
			t.Fail(ev.notFound(r, firstMissing(r.Field, ev.root), wanted{text: "distinct values at ", path: r.Field}, missing-1))
			return
		}
		if missing == len(values) {
			return
		}
	}
	if jsonvalue.CountAll(r.Field.Steps) == 0 {
		// The decoder refuses this (refuseWholeValues): one value would always pass.
		t.Fail(ev.ruleFailure(r, whole(r.Field), oneValue{r.Field}))
		return
	}
	seen := newValueSet(len(values) - missing)
	repeats, first, again := 0, -1, -1
	for i, v := range values {
		if jsonvalue.IsAbsent(v) {
			continue
		}
		if j, ok := ev.find(seen, v); ok {
			if repeats == 0 {
				first, again = j, i
			}
			repeats++
			continue
		}
		ev.remember(seen, v, i)
	}
	if repeats == 0 {
		t.Pass()
		return
	}
	t.Fail(ev.ruleFailure(r, whole(r.Field), notUnique{first: locate(r.Field.Steps, ev.root, first), again: locate(r.Field.Steps, ev.root, again),
		value: values[again], repeats: repeats}))
}

// valueSet holds values by canonical JSON equality, remembering the position each was first
// seen at. Strings, the common case, are keyed by themselves so that adding them allocates
// nothing; every other value by its canonical key (see appendKey).
type valueSet struct {
	strs  map[string]int
	other map[string]int
}

func newValueSet(n int) *valueSet { return &valueSet{strs: make(map[string]int, n)} }

// remember adds v, first seen at position i.
func (ev *evaluator) remember(s *valueSet, v any, i int) {
	if str, ok := v.(string); ok {
		s.strs[str] = i
		return
	}
	if s.other == nil {
		s.other = make(map[string]int)
	}
	ev.key = jsonvalue.AppendKey(ev.key[:0], v)
	s.other[string(ev.key)] = i
}

// find says where a value equal to v was first seen, if it was.
func (ev *evaluator) find(s *valueSet, v any) (int, bool) {
	if str, ok := v.(string); ok {
		i, ok := s.strs[str]
		return i, ok
	}
	ev.key = jsonvalue.AppendKey(ev.key[:0], v)
	i, ok := s.other[string(ev.key)]
	return i, ok
}

// where is the concrete location of one value: the rule's steps with the indices its `[]` steps
// took (at, then more for `[]` steps past an element-wise prefix). A failure holds it as it is
// (Failure.At and Elems, and inside its Kind); it is turned into text only when a report shows
// the failure.
type where struct {
	steps    []jsonvalue.Step
	at, more []int
}

// whole is the place a path names as a whole: its `[]` steps meaning every element.
func whole(p jsonvalue.Path) where { return where{steps: p.Steps} }

// elems is the element of each `[]` step, as Failure.Elems holds them.
func (w where) elems() []int {
	if len(w.more) == 0 {
		return w.at
	}
	return append(slices.Clip(w.at), w.more...)
}

// raw is the place in the report's path syntax without "$" ("items[2].qty"), for texts.
func (w where) raw() string { return jsonvalue.Field(w.steps, w.elems()) }

// locate is the i-th place steps select under root ("line_items[1].line_total"). It resolves
// again, so it is for failures only.
func locate(steps []jsonvalue.Step, root any, i int) where {
	_, at, _ := jsonvalue.Places(steps, root, true)
	w := jsonvalue.CountAll(steps)
	return where{steps: steps, at: at[i*w : (i+1)*w]}
}

// notNumberDetail says why the value at loc cannot be used as a number: it is not one, or it is
// one too large to compute with (err from jsonvalue.ParseDecimal).
func notNumberDetail(loc string, v any, err error) string {
	if _, ok := v.(json.Number); ok && err != nil {
		return jsonvalue.Shorten(loc) + " is " + jsonvalue.Describe(v) + ", which " + err.Error()
	}
	return jsonvalue.Shorten(loc) + " is " + jsonvalue.Describe(v) + ", not a number"
}

// foundValue is the Found text of a value that could not be used as a number: what it is, and
// for a number too large to compute with, why ("number 1e-999 (exponent beyond ±400)").
func foundValue(v any, err error) string {
	switch err {
	case nil:
		return jsonvalue.Describe(v)
	case jsonvalue.ErrExponent:
		return jsonvalue.Describe(v) + " (exponent beyond ±400)"
	case jsonvalue.ErrManyDigits:
		return jsonvalue.Describe(v) + " (more than 1000 significant digits)"
	}
	return jsonvalue.Describe(v) + " (not a JSON number)"
}

// toleranceText shows a rule's tolerance as the caller wrote it.
func toleranceText(r *Rule) string {
	if r.ToleranceLiteral != "" {
		return jsonvalue.Shorten(string(r.ToleranceLiteral))
	}
	if r.Tolerance == nil {
		return wire.DefaultTolerance
	}
	return jsonvalue.Shorten(r.Tolerance.RatString())
}
