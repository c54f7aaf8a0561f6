package schemacheck

import (
	"container/heap"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// Check validates instance against the schema and counts its assertions (SPEC §4.2): one check for
// each assertion keyword that applies to the instance at each instance location the schema
// reaches, failures in document order. It also returns the content:undeclared_property tally
// (SPEC §4.5), which the caller uses only under strict_content_check: one check per object whose
// schema at that location declares properties or patternProperties and is silent on
// additionalProperties and unevaluatedProperties (every schema applied in place at the location
// contributes its declarations, so allOf/$ref compositions are judged as a whole); a property
// declared by none of them fails that object's check.
//
// A schema that needs more work for this instance than the evaluation budget allows is not a
// verdict on the instance: Check then returns the 422 schema_too_complex (an *apperr.Error naming
// the limit), and no tallies. The budget depends on the schema and the instance only, so the same
// request always gets the same answer.
//
// The walker is the validator on this path: it evaluates every keyword itself, so that it can
// count, and the library (which compiled the schema the walker's graph is built from) does not
// validate again. The library stays the authority in the differential tests: the walker and the
// library's Validate agree on the whole JSON-Schema-Test-Suite, on the project's own cases and
// under fuzzing (schema_suite_test.go, schema_test.go, FuzzSchemaCheck), all through crossCheck.
//
// Each Result keeps its first keep failures in document order and counts the others. Check stops
// early once stop is closed (nil never is), answering ErrStopped.
func (s *Schema) Check(instance any, keep int, stop <-chan struct{}) (schema Result, undeclared Result, err error) {
	r := s.walk(instance, keep, stop)
	switch {
	case r.stopped:
		return Result{}, Result{}, ErrStopped
	case r.over:
		return Result{}, Result{}, schemaTooComplex(r.budget)
	}
	return r.schema, r.undeclared, nil
}

// ErrStopped is the answer of a check whose caller stopped waiting (Request.StopWhen): it has no
// verdict, and the caller answers its own deadline error.
var ErrStopped = errors.New("verify: the check was stopped before it finished")

// schCheckResult is a walk's answer; libValid is filled in by crossCheck only.
type schCheckResult struct {
	schema, undeclared Result
	walkerValid        bool
	over               bool // the evaluation budget ran out: no verdict
	stopped            bool // Request.StopWhen's channel closed: no verdict
	budget             int  // the budget in force when it ran out
	libValid           bool
}

func (s *Schema) walk(instance any, keep int, stop <-chan struct{}) schCheckResult {
	w := schWalkerPool.Get().(*schWalker)
	w.stop = stop
	w.kept.keep, w.undeclKept.keep = keep, keep
	ok := w.walk(s.root, instance)
	if w.over {
		r := schCheckResult{over: !w.stopped, stopped: w.stopped, budget: w.budget}
		w.release()
		return r
	}
	w.kept.into(&w.tally)
	w.undeclKept.into(&w.undeclared)
	r := schCheckResult{schema: w.tally, undeclared: w.undeclared, walkerValid: ok && w.tally.Failed() == 0}
	w.release()
	return r
}

// The evaluation budget, in work units. Subschema applications can multiply without any cycle
// (allOf of two $refs to a schema that does the same, thirty levels deep, is a small schema and
// 2^30 evaluations), and every evaluation of a keyword that reads a whole string or array
// multiplies with them, so the walker charges one unit per subschema evaluation plus the work of
// such keywords (see the sch*PerUnit constants) and stops past EvalBase plus EvalPerValue for every
// unit of output size (jsonvalue.Size). Real schemas stay far below: the seed invoice spends 22
// units, of a budget of 103,328 for its 13.
const (
	EvalBase     = 100_000
	EvalPerValue = 256
)

// What the keywords whose work grows with the value cost, in evaluation units, each set to its
// time relative to one subschema evaluation (BenchmarkHostileSchemaWork in docs/PERFORMANCE.md
// measures the shapes each charge stops, at the budget):
//   - schBytesPerUnit: reading a string (length, format, content decoding) costs a unit per 16
//     bytes, and 16 bytes of string count as one value when the budget is sized, so a long
//     string is not refused for being read once or a few times;
//   - a pattern match costs length × compiled program size / schMatchPerUnit, as Go's regexp runs
//     its NFA in time proportional to both: (?:a?){1000}b over 60,000 bytes is 7.5 million units
//     where ^a+$ is 22,000;
//   - compiling a value for format "regex" costs schCompilePerInst units per instruction of its
//     estimated program;
//   - uniqueItems costs schUniquePerValue units per value in the array (a canonical key each);
//     const and enum cost the compared value's size for every candidate, divided by
//     schEqualPerUnit, except a string against a large enum, which is one lookup
//     (schNode.enumStrs);
//   - required, dependencies and dependentRequired cost a unit per schLookupsPerUnit names
//     looked up.
const (
	schBytesPerUnit   = jsonvalue.SizeBytesPerUnit
	schMatchPerUnit   = 16
	schCompilePerInst = 8
	schUniquePerValue = 16
	schEqualPerUnit   = 8
	schLookupsPerUnit = 4
)

// schStopEvery is how many units pass between two looks at the stop channel: often enough that a
// stopped check ends at once, rarely enough to cost nothing (TestStoppedCheckEndsEarly).
const schStopEvery = 1024

// schemaTooComplex is the answer for a schema that exceeds the evaluation budget for this output:
// no verdict on the output, which may well be valid, but an error in the request (the schema asks
// for more work than the verifier does for one request), so that nothing is charged, counted or
// recorded and the caller learns the limit and how to stay under it.
func schemaTooComplex(budget int) *apperr.Error {
	e := apperr.Field("expected_schema",
		fmt.Sprintf("needs more evaluation work for this submitted_output than the verifier's limit of %d units "+
			"(%d, plus %d for each value of the output, 16 bytes of string counting as a value); a unit is one application of a subschema, "+
			"and patterns, formats, enums, const and uniqueItems cost more by the size of what they read", budget, EvalBase, EvalPerValue),
		"Keep subschemas from multiplying: each allOf, anyOf or oneOf branch and each $ref applies its target again, so definitions that "+
			"refer twice to the next level double the work at every level (16 such levels apply the last one 65,536 times). "+
			"Refer to each definition once, flatten nested allOf, and apply costly patterns, large enums and uniqueItems once per value; "+
			"then send the request again.")
	e.Code = apperr.SchemaTooComplex
	e.Message = "The check could not finish: expected_schema needs more evaluation work for this output than the verifier's limit, " +
		"so there is no verdict on the output. Nothing was charged, counted against the free allowance or recorded; simplify the schema and send it again."
	return e
}

// ---- the walker ----

var schWalkerPool = sync.Pool{New: func() any { return new(schWalker) }}

// schWalker evaluates a node graph against an instance, mirroring the library's evaluation order,
// dynamic scope, reference-cycle rule and annotation model (for unevaluated*), while counting.
type schWalker struct {
	instance any             // the whole output, for sizing the budget
	evals    int             // work units spent so far
	nextLook int             // evals at which to look at stop next
	budget   int             // units allowed; EvalBase until the output has been measured
	sized    bool            // budget includes the per-value allowance
	over     bool            // budget exceeded or stopped: every evaluation now fails at once
	stopped  bool            // over because stop closed, not because of the budget
	stop     <-chan struct{} // Request.StopWhen, looked at every schStopEvery units
	scope    []schScope      // dynamic scope: every schema being evaluated, outermost first
	base     int             // where the current dynamic scope starts (propertyNames and contentSchema start afresh)
	vid      int             // instance depth, to tell in-place evaluation from a child's
	loc      []schLoc        // the current instance location (counting mode only)
	keys     []string        // scratch stack for sorted object keys

	decl       []*schNode // schemas applied in place at the current object (undeclared-property check)
	declFrom   int
	declOn     bool
	declSpeaks bool
	declAll    bool // the first of them declares every member by name (see object)

	tally, undeclared Result // the counts; the failures are in kept and undeclKept until the end
	kept, undeclKept  schKept
}

type schScope struct {
	n   *schNode
	vid int
}

// schLoc is one step of an instance location: an object key, or an array index when idx >= 0.
type schLoc struct {
	key string
	idx int
}

// walk evaluates the whole instance in counting mode within the evaluation budget.
func (w *schWalker) walk(root *schNode, instance any) bool {
	w.instance, w.budget, w.nextLook = instance, EvalBase, schStopEvery
	return w.enter(root, instance, true)
}

func (w *schWalker) release() {
	w.scope, w.loc, w.keys, w.decl = w.scope[:0], w.loc[:0], w.keys[:0], w.decl[:0]
	w.base, w.vid, w.declFrom, w.declOn, w.declSpeaks, w.declAll = 0, 0, 0, false, false, false
	w.instance, w.evals, w.nextLook, w.budget, w.sized, w.over, w.stopped, w.stop = nil, 0, 0, 0, false, false, false, nil
	w.tally, w.undeclared = Result{}, Result{}
	w.kept.reset()
	w.undeclKept.reset()
	schWalkerPool.Put(w)
}

// schAnn is what a subschema evaluated (JSON Schema annotations), tracked only where an
// unevaluatedProperties/unevaluatedItems keyword needs it.
type schAnn struct {
	allProps bool
	props    map[string]struct{}
	allItems bool
	nItems   int
	items    map[int]struct{}
}

func (a *schAnn) merge(b schAnn) {
	a.allProps = a.allProps || b.allProps
	if !a.allProps {
		for k := range b.props {
			a.addProp(k)
		}
	}
	a.allItems = a.allItems || b.allItems
	a.nItems = max(a.nItems, b.nItems)
	if !a.allItems {
		for i := range b.items {
			a.addItem(i)
		}
	}
}

func (a *schAnn) addProp(k string) {
	if a.props == nil {
		a.props = map[string]struct{}{}
	}
	a.props[k] = struct{}{}
}

func (a *schAnn) addItem(i int) {
	if a.items == nil {
		a.items = map[int]struct{}{}
	}
	a.items[i] = struct{}{}
}

func (a *schAnn) propDone(k string) bool {
	if a.allProps {
		return true
	}
	_, ok := a.props[k]
	return ok
}

func (a *schAnn) itemDone(i int) bool {
	if a.allItems || i < a.nItems {
		return true
	}
	_, ok := a.items[i]
	return ok
}

// child evaluates n at a child location (an object member or array element).
func (w *schWalker) child(n *schNode, v any, count bool, key string, idx int) bool {
	if count {
		w.loc = append(w.loc, schLoc{key: key, idx: idx})
	}
	w.vid++
	ok := w.enter(n, v, count)
	w.vid--
	if count {
		w.loc = w.loc[:len(w.loc)-1]
	}
	return ok
}

// enter evaluates n at a new instance location and, in counting mode, runs that location's
// undeclared-property check once every schema applied there has been seen.
func (w *schWalker) enter(n *schNode, v any, count bool) bool {
	obj, isObj := v.(map[string]any)
	saveOn, saveFrom, saveSpeaks, saveAll := w.declOn, w.declFrom, w.declSpeaks, w.declAll
	w.declOn, w.declFrom, w.declSpeaks, w.declAll = count && isObj, len(w.decl), false, false
	ok, _ := w.eval(n, v, count, false)
	switch {
	case !w.declOn || len(w.decl) == w.declFrom || w.declSpeaks:
	case w.declAll:
		w.undeclared.pass() // what undeclaredCheck finds, without looking every member up again
	default:
		w.undeclaredCheck(obj, w.decl[w.declFrom:])
	}
	w.decl = w.decl[:w.declFrom]
	w.declOn, w.declFrom, w.declSpeaks, w.declAll = saveOn, saveFrom, saveSpeaks, saveAll
	return ok
}

// fresh evaluates n against v in a dynamic scope of its own, silently, as the library does for
// propertyNames and contentSchema.
func (w *schWalker) fresh(n *schNode, v any) bool {
	saveBase, saveVid, saveOn := w.base, w.vid, w.declOn
	w.base, w.vid, w.declOn = len(w.scope), 0, false
	ok, _ := w.eval(n, v, false, false)
	w.base, w.vid, w.declOn = saveBase, saveVid, saveOn
	return ok
}

func (w *schWalker) undeclaredCheck(obj map[string]any, decl []*schNode) {
	var bad []string
	for k := range obj {
		if !w.declared(decl, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		w.undeclared.pass()
		return
	}
	slices.Sort(bad)
	w.undeclared.Total++
	keepFailure(&w.undeclKept, Undeclared{Names: bad}, w.loc)
}

// declared tells whether a schema applied at an object declares property k; past the budget it
// answers true, as the walk has no verdict then anyway.
func (w *schWalker) declared(decl []*schNode, k string) bool {
	for _, n := range decl {
		if _, ok := n.propMap[k]; ok {
			return true
		}
		for _, p := range n.patterns {
			if !w.spend(schMatchCost(k, p.size)) || p.re.MatchString(k) {
				return true
			}
		}
	}
	return false
}

// schMatchCost is the work of matching a pattern whose program has size instructions against s.
func schMatchCost(s string, size int) int { return len(s) * size / schMatchPerUnit }

// spendFormat charges what validating v against a format costs: reading the string and, for
// "regex", compiling it, by the size of its program (an unparsable one is charged its length
// only: the library fails it while parsing).
func (w *schWalker) spendFormat(name string, v any) bool {
	str, ok := v.(string)
	if !ok {
		return true
	}
	if !w.spend(len(str) / schBytesPerUnit) {
		return false
	}
	if name != "regex" {
		return true
	}
	size, err := schRegexSize(str)
	return err != nil || w.spend(schCompilePerInst*size)
}

// pass and fail record one check in counting mode.
func (w *schWalker) pass() { w.tally.pass() }

// fail records a failed check of what k says. It is generic so that k becomes a Kind (which
// allocates) only when the failure is kept: one past the first keep is counted by its keyword.
func fail[K Kind](w *schWalker, k K) {
	w.tally.Total++
	keepFailure(&w.kept, k, w.loc)
}

// spend charges units of work to the budget and reports whether the walk may go on; once it may
// not, every evaluation fails at once and the walk has no verdict (schema_too_complex).
func (w *schWalker) spend(units int) bool {
	if w.evals += units; w.evals > w.budget {
		if !w.sized {
			w.sized = true
			w.budget = EvalBase + EvalPerValue*jsonvalue.Size(w.instance)
		}
		w.over = w.over || w.evals > w.budget
	}
	if w.evals >= w.nextLook {
		w.nextLook = w.evals + schStopEvery
		select {
		case <-w.stop:
			if !w.over {
				w.over, w.stopped = true, true // nobody waits for the answer any more
			}
		default:
		}
	}
	return !w.over
}

// eval evaluates n against v at the current location. count says whether assertions are counted
// (false inside anyOf, oneOf, not, if, contains and propertyNames, which count as one check
// each); in silent mode it stops at the first failure. track says whether the caller needs the
// annotations (evaluated properties and items).
func (w *schWalker) eval(n *schNode, v any, count, track bool) (bool, schAnn) {
	if !w.spend(1) {
		return false, schAnn{}
	}
	if n.boolean != 0 {
		if n.boolean > 0 {
			return true, schAnn{}
		}
		if count {
			fail(w, FalseSchema{Value: v})
		}
		return false, schAnn{}
	}
	// A schema met twice at one instance location without an intervening child step is a
	// reference cycle ({"$ref":"#"}): the library fails it, and the walker must not loop.
	for i := len(w.scope) - 1; i >= w.base && w.scope[i].vid == w.vid; i-- {
		if w.scope[i].n == n {
			if count {
				fail(w, RefCycle{})
			}
			return false, schAnn{}
		}
	}
	w.scope = append(w.scope, schScope{n, w.vid})
	ok, ann := w.evalBody(n, v, count, track)
	w.scope = w.scope[:len(w.scope)-1]
	return ok, ann
}

func (w *schWalker) evalBody(n *schNode, v any, count, track bool) (bool, schAnn) {
	ok := true
	var ann schAnn
	obj, isObj := v.(map[string]any)
	arr, isArr := v.([]any)
	trk := track || (isObj && n.unevProps != nil) || (isArr && n.unevItems != nil)
	if w.declOn {
		if n.declares {
			w.decl = append(w.decl, n)
		}
		if n.speaks {
			w.declSpeaks = true
		}
	}
	if !w.values(n, v, count, &ok) {
		return false, ann
	}
	if n.ref != nil {
		rok, rann := w.eval(n.ref, v, count, trk)
		if !rok {
			ok = false
			if !count {
				return false, ann
			}
		} else if trk {
			ann.merge(rann)
		}
		if n.draft < 2019 {
			// Before 2019-09, $ref's siblings are ignored (the library compiles none of them but
			// const, which it checks above, as this walker does).
			return ok, ann
		}
	}
	if !w.byKind(n, v, count, trk, &ok, &ann) ||
		n.draft >= 2019 && !w.dynamicRefs(n, v, count, trk, &ok, &ann) ||
		!w.logic(n, v, count, trk, &ok, &ann) {
		return false, ann
	}
	if n.draft >= 2019 {
		if isObj && n.unevProps != nil && !w.unevaluatedProps(n, obj, count, &ok, &ann) {
			return false, ann
		}
		if isArr && n.unevItems != nil && !w.unevaluatedItems(n, arr, count, &ok, &ann) {
			return false, ann
		}
	}
	return ok, ann
}

// check records one assertion and answers whether the evaluation goes on: always in counting
// mode, and in silent mode (count false) only while everything passed.
func (w *schWalker) check(pass, count bool, ok *bool) bool {
	if pass {
		if count {
			w.pass()
		}
		return true
	}
	*ok = false
	return count
}

// values checks the keywords that apply to a value of any kind: type, const, enum and format.
// Like every part of evalBody it returns false when silent evaluation must stop.
func (w *schWalker) values(n *schNode, v any, count bool, ok *bool) bool {
	s := n.s
	if n.types != 0 {
		pass := schTypeMatches(n.types, v)
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Type{Want: *n.s.Types, Value: v})
		}
	}
	if s.Const != nil {
		if !w.spend(jsonvalue.Size(v) / schEqualPerUnit) {
			return false
		}
		pass := schEqual(v, *s.Const)
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Const{Want: *s.Const, Value: v})
		}
	}
	if s.Enum != nil && !w.enum(n, v, count, ok) {
		return false
	}
	if s.Format != nil {
		if !w.spendFormat(s.Format.Name, v) {
			return false
		}
		err := s.Format.Validate(v)
		if _, isStr := v.(string); isStr || err != nil {
			if !w.check(err == nil, count, ok) {
				return false
			}
			if err != nil && count {
				fail(w, Format{Want: s.Format.Name, Value: v})
			}
		}
	}
	return true
}

// enum checks enum: a string against a large enum by one lookup, anything else by comparison.
func (w *schWalker) enum(n *schNode, v any, count bool, ok *bool) bool {
	pass := false
	if str, isStr := v.(string); isStr && n.enumStrs != nil {
		_, pass = n.enumStrs[str]
	} else {
		if !w.spend(len(n.s.Enum.Values) * jsonvalue.Size(v) / schEqualPerUnit) {
			return false
		}
		for _, e := range n.s.Enum.Values {
			if schEqual(v, e) {
				pass = true
				break
			}
		}
	}
	if !w.check(pass, count, ok) {
		return false
	}
	if !pass && count {
		fail(w, Enum{Want: n.s.Enum.Values, Value: v})
	}
	return true
}

// byKind checks the keywords of the value's own kind: object, array, string or number.
func (w *schWalker) byKind(n *schNode, v any, count, trk bool, ok *bool, ann *schAnn) bool {
	switch x := v.(type) {
	case map[string]any:
		return w.object(n, x, count, trk, ok, ann)
	case []any:
		return w.array(n, x, count, trk, ok, ann)
	case string:
		return w.str(n, x, count, ok)
	case bool, nil:
		return true
	}
	if lit, isNum := jsonvalue.NumberLiteral(v); isNum {
		return w.number(n, lit, count, ok)
	}
	// Not a JSON value at all (only possible from a Go caller): the library fails it too.
	if !w.check(false, count, ok) {
		return false
	}
	fail(w, NotJSON{Value: v})
	return true
}

// dynamicRefs applies $recursiveRef (2019-09) and $dynamicRef (2020-12), each resolved in the
// dynamic scope.
func (w *schWalker) dynamicRefs(n *schNode, v any, count, trk bool, ok *bool, ann *schAnn) bool {
	if n.recRef != nil {
		target := n.recRef
		if target.s.RecursiveAnchor {
			for i := w.base; i < len(w.scope); i++ {
				if w.scope[i].n.resRecursive {
					target = w.scope[i].n
					break
				}
			}
		}
		if !w.inPlace(target, v, count, trk, ok, ann) {
			return false
		}
	}
	if n.dynRef != nil {
		target := n.dynRef
		if n.dynAnchor != "" {
			for i := w.base; i < len(w.scope); i++ {
				if d, found := w.scope[i].n.resAnchors[n.dynAnchor]; found {
					target = d
					break
				}
			}
		}
		if !w.inPlace(target, v, count, trk, ok, ann) {
			return false
		}
	}
	return true
}

// logic applies the in-place applicators: not, allOf, anyOf, oneOf and if/then/else.
func (w *schWalker) logic(n *schNode, v any, count, trk bool, ok *bool, ann *schAnn) bool {
	if n.not != nil {
		nok, _ := w.eval(n.not, v, false, false)
		if !w.check(!nok, count, ok) {
			return false
		}
		if nok && count {
			fail(w, Not{})
		}
	}
	for _, a := range n.allOf {
		if !w.inPlace(a, v, count, trk, ok, ann) {
			return false
		}
	}
	if len(n.anyOf) > 0 && !w.anyOf(n, v, count, trk, ok, ann) ||
		len(n.oneOf) > 0 && !w.oneOf(n, v, count, trk, ok, ann) {
		return false
	}
	if n.ifS != nil {
		// The if check itself never fails: its outcome picks the branch, whose assertions count.
		iok, iann := w.eval(n.ifS, v, false, trk)
		w.check(true, count, ok)
		branch := n.elseS
		if iok {
			if trk {
				ann.merge(iann)
			}
			branch = n.thenS
		}
		if branch != nil && !w.inPlace(branch, v, count, trk, ok, ann) {
			return false
		}
	}
	return true
}

// anyOf is one check: some branch matches. With annotations tracked every branch is evaluated.
func (w *schWalker) anyOf(n *schNode, v any, count, trk bool, ok *bool, ann *schAnn) bool {
	matched := false
	for _, b := range n.anyOf {
		bok, bann := w.eval(b, v, false, trk)
		if bok {
			matched = true
			if !trk {
				break
			}
			ann.merge(bann)
		}
	}
	if !w.check(matched, count, ok) {
		return false
	}
	if !matched && count {
		fail(w, AnyOf{Of: len(n.anyOf)})
	}
	return true
}

// oneOf is one check: exactly one branch matches.
func (w *schWalker) oneOf(n *schNode, v any, count, trk bool, ok *bool, ann *schAnn) bool {
	first, second := -1, -1
	var firstAnn schAnn
	for i, b := range n.oneOf {
		bok, bann := w.eval(b, v, false, trk && first < 0)
		if bok {
			if first < 0 {
				first, firstAnn = i, bann
			} else {
				second = i
				break
			}
		}
	}
	pass := first >= 0 && second < 0
	if !w.check(pass, count, ok) {
		return false
	}
	if pass && trk {
		ann.merge(firstAnn)
	}
	if !pass && count {
		fail(w, OneOf{Of: len(n.oneOf), First: first, Second: second})
	}
	return true
}

// inPlace applies a subschema to the same value (transparent applicators) and merges its
// annotations when it passes. It returns false when silent evaluation must stop.
func (w *schWalker) inPlace(sub *schNode, v any, count, trk bool, ok *bool, ann *schAnn) bool {
	sok, sann := w.eval(sub, v, count, trk)
	if !sok {
		*ok = false
		return count
	}
	if trk {
		ann.merge(sann)
	}
	return true
}

// sortedKeys pushes obj's keys, sorted, on the scratch stack; pop with w.keys = w.keys[:from].
func (w *schWalker) sortedKeys(obj map[string]any) (keys []string, from int) {
	from = len(w.keys)
	w.spend(len(obj)) // sorting; a walk over budget stops at its next evaluation
	for k := range obj {
		w.keys = append(w.keys, k)
	}
	slices.Sort(w.keys[from:])
	end := len(w.keys)
	return w.keys[from:end:end], from
}

// object checks the object keywords of n on obj. Like every part of evalBody it returns false
// when silent evaluation must stop.
func (w *schWalker) object(n *schNode, obj map[string]any, count, trk bool, ok *bool, ann *schAnn) bool {
	if !w.objectSize(n, obj, count, ok) || !w.objectRequired(n, obj, count, trk, ok, ann) {
		return false
	}
	if len(n.patterns) == 0 && n.addl == 0 && n.addlS == nil && !trk {
		// Fast path: only declared properties to visit, in sorted order.
		found := 0
		for _, p := range n.props {
			pv, present := obj[p.name]
			if !present {
				continue
			}
			found++
			if !w.child(p.n, pv, count, p.name, -1) {
				*ok = false
				if !count {
					return false
				}
			}
		}
		// Every member is one of n's properties. When n is the first schema the
		// undeclared-property check consults here, that check finds each member in n at once,
		// spending nothing, so enter passes it without looking the members up again.
		if found == len(obj) && w.declOn && n.declares && w.decl[w.declFrom] == n {
			w.declAll = true
		}
	} else {
		keys, from := w.sortedKeys(obj)
		goOn := w.members(n, obj, keys, count, trk, ok, ann)
		w.keys = w.keys[:from]
		if !goOn {
			return false
		}
	}
	if n.propNames != nil && !w.propertyNames(n, obj, count, ok) {
		return false
	}
	for _, d := range n.depSchemas {
		if _, present := obj[d.name]; present {
			if !w.inPlace(d.n, obj, count, trk, ok, ann) {
				return false
			}
		}
	}
	for _, d := range n.depReq {
		if _, present := obj[d.name]; present && !w.requires(d, "dependentRequired", obj, count, ok) {
			return false
		}
	}
	return true
}

// objectSize checks minProperties and maxProperties.
func (w *schWalker) objectSize(n *schNode, obj map[string]any, count bool, ok *bool) bool {
	s := n.s
	if s.MinProperties != nil {
		pass := len(obj) >= *s.MinProperties
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Count{Assertion: "minProperties", Want: *s.MinProperties, Got: len(obj)})
		}
	}
	if s.MaxProperties != nil {
		pass := len(obj) <= *s.MaxProperties
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Count{Assertion: "maxProperties", Want: *s.MaxProperties, Got: len(obj)})
		}
	}
	return true
}

// objectRequired checks required and draft 4-7's dependencies (names, or a schema applied in
// place).
func (w *schWalker) objectRequired(n *schNode, obj map[string]any, count, trk bool, ok *bool, ann *schAnn) bool {
	if len(n.required) > 0 {
		w.spend(len(n.required) / schLookupsPerUnit) // a walk over budget stops at its next evaluation
		missing, nMissing := schMissing(obj, n.required)
		if !w.check(nMissing == 0, count, ok) {
			return false
		}
		if nMissing > 0 && count {
			fail(w, Required{Want: n.required, Missing: missing, NMissing: nMissing})
		}
	}
	for _, d := range n.deps {
		if _, present := obj[d.name]; !present {
			continue
		}
		if d.n != nil {
			if !w.inPlace(d.n, obj, count, trk, ok, ann) {
				return false
			}
		} else if !w.requires(d, "dependencies", obj, count, ok) {
			return false
		}
	}
	return true
}

// requires checks that obj, which holds d.name, holds every name d requires (dependentRequired,
// or dependencies before 2019-09), under keyword kw.
func (w *schWalker) requires(d schDep, kw string, obj map[string]any, count bool, ok *bool) bool {
	w.spend(len(d.req) / schLookupsPerUnit)
	missing, nMissing := schMissing(obj, d.req)
	if !w.check(nMissing == 0, count, ok) {
		return false
	}
	if nMissing > 0 && count {
		fail(w, Dependent{Assertion: kw, Property: d.name, Want: d.req, Missing: missing})
	}
	return true
}

// members walks every member of obj in sorted key order through properties,
// patternProperties and additionalProperties, noting the evaluated ones when trk.
func (w *schWalker) members(n *schNode, obj map[string]any, keys []string, count, trk bool, ok *bool, ann *schAnn) bool {
	var extra []string
	for _, k := range keys {
		evaluated := false
		if pn, found := n.propMap[k]; found {
			evaluated = true
			if !w.child(pn, obj[k], count, k, -1) {
				*ok = false
				if !count {
					return false
				}
			}
		}
		for _, p := range n.patterns {
			if !w.spend(schMatchCost(k, p.size)) {
				return false
			}
			if !p.re.MatchString(k) {
				continue
			}
			evaluated = true
			if !w.child(p.n, obj[k], count, k, -1) {
				*ok = false
				if !count {
					return false
				}
			}
		}
		if !evaluated {
			switch {
			case n.addl < 0:
				extra = append(extra, k)
			case n.addlS != nil:
				if !w.child(n.addlS, obj[k], count, k, -1) {
					*ok = false
					if !count {
						return false
					}
				}
			}
			evaluated = n.addl != 0 || n.addlS != nil
		}
		if evaluated && trk {
			ann.addProp(k)
		}
	}
	if n.addl >= 0 {
		return true
	}
	if !w.check(len(extra) == 0, count, ok) {
		return false
	}
	if len(extra) > 0 && count {
		fail(w, AdditionalProperties{Names: extra})
	}
	return true
}

// propertyNames is one check: every key of obj is valid against n.propNames.
func (w *schWalker) propertyNames(n *schNode, obj map[string]any, count bool, ok *bool) bool {
	keys, from := w.sortedKeys(obj)
	pass, bad := true, ""
	for _, k := range keys {
		if !w.fresh(n.propNames, k) {
			pass, bad = false, k
			break
		}
	}
	w.keys = w.keys[:from]
	if !w.check(pass, count, ok) {
		return false
	}
	if !pass && count {
		fail(w, PropertyNames{Name: bad})
	}
	return true
}

func (w *schWalker) unevaluatedProps(n *schNode, obj map[string]any, count bool, ok *bool, ann *schAnn) bool {
	u := n.unevProps
	if !ann.allProps {
		keys, from := w.sortedKeys(obj)
		var extra []string
		for _, k := range keys {
			if ann.propDone(k) {
				continue
			}
			if u.boolean < 0 {
				extra = append(extra, k)
			} else if u.boolean == 0 && !w.child(u, obj[k], count, k, -1) {
				*ok = false
				if !count {
					w.keys = w.keys[:from]
					return false
				}
			}
		}
		w.keys = w.keys[:from]
		if u.boolean < 0 {
			if len(extra) > 0 {
				*ok = false
				if !count {
					return false
				}
				fail(w, UnevaluatedProperties{Names: extra})
			} else if count {
				w.pass()
			}
		}
	} else if u.boolean < 0 && count {
		w.pass()
	}
	ann.allProps = true
	return true
}

func (w *schWalker) unevaluatedItems(n *schNode, arr []any, count bool, ok *bool, ann *schAnn) bool {
	u := n.unevItems
	extra := 0
	for i := range arr {
		if ann.itemDone(i) {
			continue
		}
		if u.boolean < 0 {
			extra++
		} else if u.boolean == 0 && !w.child(u, arr[i], count, "", i) {
			*ok = false
			if !count {
				return false
			}
		}
	}
	if u.boolean < 0 {
		if extra > 0 {
			*ok = false
			if !count {
				return false
			}
			fail(w, UnevaluatedItems{Extra: extra})
		} else if count {
			w.pass()
		}
	}
	ann.allItems = true
	return true
}

func (w *schWalker) array(n *schNode, arr []any, count, trk bool, ok *bool, ann *schAnn) bool {
	s := n.s
	if s.MinItems != nil {
		pass := len(arr) >= *s.MinItems
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Count{Assertion: "minItems", Want: *s.MinItems, Got: len(arr)})
		}
	}
	if s.MaxItems != nil {
		pass := len(arr) <= *s.MaxItems
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Count{Assertion: "maxItems", Want: *s.MaxItems, Got: len(arr)})
		}
	}
	if s.UniqueItems {
		if !w.spend(schUniquePerValue * jsonvalue.Size(arr)) {
			return false
		}
		i, j := schDuplicate(arr)
		if !w.check(i < 0, count, ok) {
			return false
		}
		if i >= 0 && count {
			fail(w, UniqueItems{First: i, Second: j})
		}
	}
	np := min(len(n.prefix), len(arr))
	for i := 0; i < np; i++ {
		if !w.child(n.prefix[i], arr[i], count, "", i) {
			*ok = false
			if !count {
				return false
			}
		}
	}
	if n.restFalse != "" {
		pass := len(arr) <= len(n.prefix)
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Count{Assertion: n.restFalse, Want: len(n.prefix), Got: len(arr)})
		}
	} else if n.rest != nil && n.rest.boolean <= 0 {
		for i := np; i < len(arr); i++ {
			if !w.child(n.rest, arr[i], count, "", i) {
				*ok = false
				if !count {
					return false
				}
			}
		}
	}
	if trk {
		if n.restAll {
			ann.allItems = true
		}
		ann.nItems = max(ann.nItems, len(n.prefix))
	}
	if n.contains != nil {
		matched := 0
		for i, item := range arr {
			if w.child(n.contains, item, false, "", i) {
				matched++
				if trk && n.draft >= 2020 {
					ann.addItem(i)
				}
			}
		}
		pass := matched > 0
		if s.MinContains != nil {
			pass = matched >= *s.MinContains
		}
		if s.MaxContains != nil && matched > *s.MaxContains {
			pass = false
		}
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Contains{Min: s.MinContains, Max: s.MaxContains, Matched: matched})
		}
	}
	return true
}

func (w *schWalker) str(n *schNode, str string, count bool, ok *bool) bool {
	s := n.s
	if s.MinLength != nil || s.MaxLength != nil {
		if !w.spend(len(str) / schBytesPerUnit) {
			return false
		}
		l := utf8.RuneCountInString(str)
		if s.MinLength != nil {
			pass := l >= *s.MinLength
			if !w.check(pass, count, ok) {
				return false
			}
			if !pass && count {
				fail(w, Count{Assertion: "minLength", Want: *s.MinLength, Got: l})
			}
		}
		if s.MaxLength != nil {
			pass := l <= *s.MaxLength
			if !w.check(pass, count, ok) {
				return false
			}
			if !pass && count {
				fail(w, Count{Assertion: "maxLength", Want: *s.MaxLength, Got: l})
			}
		}
	}
	if s.Pattern != nil {
		if !w.spend(schMatchCost(str, n.patternSize)) {
			return false
		}
		pass := s.Pattern.MatchString(str)
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Pattern{Want: s.Pattern, Value: str})
		}
	}
	if s.ContentEncoding == nil && s.ContentMediaType == nil {
		return true
	}
	// Content assertion (strict mode only: the compiler sets these fields only then).
	if !w.spend(len(str) / schBytesPerUnit) {
		return false
	}
	decoded := []byte(str)
	if s.ContentEncoding != nil {
		d, err := s.ContentEncoding.Decode(str)
		if !w.check(err == nil, count, ok) {
			return false
		}
		if err != nil {
			if count {
				fail(w, ContentEncoding{Want: s.ContentEncoding.Name})
			}
			return true
		}
		decoded = d
	}
	var deserialized any
	haveValue := false
	if s.ContentMediaType != nil {
		var err error
		if s.ContentSchema == nil {
			err = s.ContentMediaType.Validate(decoded)
		} else {
			deserialized, err = s.ContentMediaType.UnmarshalJSON(decoded)
			haveValue = err == nil
		}
		if !w.check(err == nil, count, ok) {
			return false
		}
		if err != nil && count {
			fail(w, ContentMediaType{Want: s.ContentMediaType.Name})
		}
	}
	if haveValue && n.contentS != nil {
		pass := w.fresh(n.contentS, deserialized)
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, ContentSchema{})
		}
	}
	return true
}

// schNumber is an instance number: its literal, an exact int64 decimal when the literal fits
// (the fast path), and a big.Rat made only when needed. Never float64.
type schNumber struct {
	lit string
	d   jsonvalue.Small
	dok bool
	r   *big.Rat
}

func schParseNumber(lit string) schNumber {
	d, ok := jsonvalue.ParseSmall(lit)
	return schNumber{lit: lit, d: d, dok: ok}
}

func (x *schNumber) rat() *big.Rat {
	if x.r == nil {
		if r, ok := new(big.Rat).SetString(x.lit); ok {
			x.r = r
		} else {
			x.r = new(big.Rat)
		}
	}
	return x.r
}

// cmp compares the number with a bound: -1, 0 or 1.
func (x *schNumber) cmp(b schBound) int {
	if x.dok && b.dok {
		if c, ok := jsonvalue.CmpSmall(x.d, b.d); ok {
			return c
		}
	}
	return x.rat().Cmp(b.r)
}

func (x *schNumber) isInteger() bool {
	if x.dok {
		return x.d.IsInteger()
	}
	return x.rat().IsInt()
}

// multipleOf tells whether x / b is an integer.
func (x *schNumber) multipleOf(b schBound) bool {
	if x.dok && b.dok && b.d.M != 0 {
		if xm, bm, ok := jsonvalue.AlignSmall(x.d, b.d); ok {
			return xm%bm == 0
		}
	}
	return new(big.Rat).Quo(x.rat(), b.r).IsInt()
}

func (w *schWalker) number(n *schNode, lit string, count bool, ok *bool) bool {
	s := n.s
	if s.Minimum == nil && s.Maximum == nil && s.ExclusiveMinimum == nil && s.ExclusiveMaximum == nil && s.MultipleOf == nil {
		return true
	}
	x := schParseNumber(lit)
	bounds := [...]struct {
		kw   string
		b    schBound
		pass func(c int) bool
	}{
		{"minimum", n.minI, func(c int) bool { return c >= 0 }},
		{"maximum", n.maxI, func(c int) bool { return c <= 0 }},
		{"exclusiveMinimum", n.exMinI, func(c int) bool { return c > 0 }},
		{"exclusiveMaximum", n.exMaxI, func(c int) bool { return c < 0 }},
	}
	for _, bd := range bounds {
		if bd.b.r == nil {
			continue
		}
		pass := bd.pass(x.cmp(bd.b))
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, Bound{Assertion: bd.kw, Want: bd.b.r, Value: lit})
		}
	}
	if s.MultipleOf != nil {
		pass := x.multipleOf(n.multI)
		if !w.check(pass, count, ok) {
			return false
		}
		if !pass && count {
			fail(w, MultipleOf{Want: s.MultipleOf, Value: lit})
		}
	}
	return true
}

func schTypeMatches(types uint8, v any) bool {
	switch v.(type) {
	case nil:
		return types&schTNull != 0
	case bool:
		return types&schTBoolean != 0
	case string:
		return types&schTString != 0
	case []any:
		return types&schTArray != 0
	case map[string]any:
		return types&schTObject != 0
	}
	lit, isNum := jsonvalue.NumberLiteral(v)
	if !isNum {
		return false
	}
	if types&schTNumber != 0 {
		return true
	}
	if types&schTInteger != 0 {
		x := schParseNumber(lit)
		return x.isInteger()
	}
	return false
}

func schMissing(obj map[string]any, names []string) (shown []string, n int) {
	for _, name := range names {
		if _, ok := obj[name]; !ok {
			if shown == nil {
				shown = make([]string, 0, min(len(names), schShownNames))
			}
			if n < schShownNames {
				shown = append(shown, name)
			}
			n++
		}
	}
	return shown, n
}

// schShownNames is how many names schMissing keeps for a failure's text: more than schNames
// shows of any list (each name adds at least ", " to jsonvalue.ShownChars), so that the text is the same
// as of the whole list, which for thousands of required names and as many objects missing them
// was gigabytes of allocation.
const schShownNames = jsonvalue.ShownChars/2 + 8

// schEqual is JSON equality as the library defines it: numbers by value (1 equals 1.0), objects
// by content.
func schEqual(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case []any:
		bb, ok := b.([]any)
		if !ok || len(a) != len(bb) {
			return false
		}
		for i := range a {
			if !schEqual(a[i], bb[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bb, ok := b.(map[string]any)
		if !ok || len(a) != len(bb) {
			return false
		}
		for k, av := range a {
			bv, ok := bb[k]
			if !ok || !schEqual(av, bv) {
				return false
			}
		}
		return true
	}
	la, ok := jsonvalue.NumberLiteral(a)
	if !ok {
		return false
	}
	lb, ok := jsonvalue.NumberLiteral(b)
	if !ok {
		return false
	}
	if la == lb {
		return true
	}
	x, y := schParseNumber(la), schParseNumber(lb)
	if x.dok && y.dok {
		if c, ok := jsonvalue.CmpSmall(x.d, y.d); ok {
			return c == 0
		}
	}
	return x.rat().Cmp(y.rat()) == 0
}

// schDuplicate returns the first pair of equal items (j < i), or -1, -1.
func schDuplicate(arr []any) (int, int) {
	if len(arr) <= 20 {
		for i := 1; i < len(arr); i++ {
			for j := 0; j < i; j++ {
				if schEqual(arr[i], arr[j]) {
					return j, i
				}
			}
		}
		return -1, -1
	}
	seen := make(map[string]int, len(arr))
	var b []byte
	for i, item := range arr {
		b = jsonvalue.AppendKey(b[:0], item)
		if j, ok := seen[string(b)]; ok {
			return j, i
		}
		seen[string(b)] = i
	}
	return -1, -1
}

// schKept holds the failures of a walk that a report can show: the first keep in document
// order (object keys sorted, array indices ascending, a container before its contents; the walk's
// keyword order within one location), which the walk does not meet in that order. They are kept
// in a heap whose top is the last of them; a failure after it is only counted, with the first
// position of each check name that only such failures have.
type schKept struct {
	keep    int // how many to keep
	heap    []schFailureAt
	found   int          // failures added, the seq of the next
	dropped []schDropped // per keyword among the failures not kept, the first
}

// schDropped is where the first failure of a keyword among those not kept was found.
type schDropped struct {
	keyword string
	schFailureAt
}

// schFailureAt is a failure with its instance location and the order the walk found it in.
type schFailureAt struct {
	kind Kind
	loc  []schLoc
	seq  int
}

func (a *schFailureAt) compare(loc []schLoc, seq int) int {
	if c := schCompareLoc(a.loc, loc); c != 0 {
		return c
	}
	return a.seq - seq
}

func (k *schKept) reset() {
	clear(k.heap)
	clear(k.dropped)
	k.heap, k.dropped, k.found = k.heap[:0], k.dropped[:0], 0
}

// keepFailure records a failure of what kd says, found at loc in k. One that is not kept is
// counted by its keyword, and kd never becomes a Kind (see fail).
func keepFailure[K Kind](k *schKept, kd K, loc []schLoc) {
	seq := k.found
	k.found++
	if len(k.heap) < k.keep {
		k.heap = append(k.heap, schFailureAt{kd, slices.Clone(loc), seq})
		heap.Fix(k, len(k.heap)-1)
		return
	}
	if len(k.heap) == 0 || k.heap[0].compare(loc, seq) < 0 {
		k.drop(kd.Keyword(), loc, seq)
		return
	}
	top := &k.heap[0]
	k.drop(top.kind.Keyword(), top.loc, top.seq)
	*top = schFailureAt{kd, slices.Clone(loc), seq}
	heap.Fix(k, 0)
}

// drop notes a failure not kept: its keyword's first position among those.
func (k *schKept) drop(keyword string, loc []schLoc, seq int) {
	for i := range k.dropped {
		if d := &k.dropped[i]; d.keyword == keyword {
			if d.compare(loc, seq) > 0 {
				d.loc, d.seq = slices.Clone(loc), seq
			}
			return
		}
	}
	k.dropped = append(k.dropped, schDropped{keyword, schFailureAt{nil, slices.Clone(loc), seq}})
}

// Len, Less, Swap, Push and Pop make schKept a heap (container/heap) of the kept failures with the
// last, in document order, on top.
func (k *schKept) Len() int           { return len(k.heap) }
func (k *schKept) Less(i, j int) bool { return k.heap[i].compare(k.heap[j].loc, k.heap[j].seq) > 0 }
func (k *schKept) Swap(i, j int)      { k.heap[i], k.heap[j] = k.heap[j], k.heap[i] }
func (k *schKept) Push(x any)         { k.heap = append(k.heap, x.(schFailureAt)) }
func (k *schKept) Pop() any {
	last := k.heap[len(k.heap)-1]
	k.heap[len(k.heap)-1] = schFailureAt{}
	k.heap = k.heap[:len(k.heap)-1]
	return last
}

// into puts the kept failures in r in document order, located, and counts the others.
func (k *schKept) into(r *Result) {
	byPosition := func(a, b schFailureAt) int { return a.compare(b.loc, b.seq) }
	slices.SortFunc(k.heap, byPosition)
	if len(k.heap) > 0 {
		r.Failures = make([]Failure, len(k.heap))
		for i := range k.heap {
			r.Failures[i] = Failure{At: steps(k.heap[i].loc), Kind: k.heap[i].kind}
		}
	}
	slices.SortFunc(k.dropped, func(a, b schDropped) int { return byPosition(a.schFailureAt, b.schFailureAt) })
	for _, d := range k.dropped {
		r.addOmitted(d.keyword)
	}
	r.Omitted = k.found - len(k.heap)
}

func schCompareLoc(a, b []schLoc) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		switch {
		case x.idx >= 0 && y.idx >= 0:
			if x.idx != y.idx {
				return x.idx - y.idx
			}
		case x.idx < 0 && y.idx < 0:
			if c := strings.Compare(x.key, y.key); c != 0 {
				return c
			}
		case x.idx >= 0:
			return -1
		default:
			return 1
		}
	}
	return len(a) - len(b)
}
