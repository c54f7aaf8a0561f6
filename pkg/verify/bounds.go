package verify

import (
	"encoding/json"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// boundsCheck is the check name of every bound (SPEC §4.3).
const boundsCheck = "bounds:range"

// EvaluateBounds runs the numeric ranges in order against submitted_output (SPEC §4.4): every
// place a bound's path selects is one check, passing when it holds a number within [min, max]
// (inclusive, compared exactly as written). A place with nothing there is a failed check, or none
// when if_present (see Path), so that a typo in a path can never pass silently, and a value that
// is there is checked whatever its neighbours lack.
func EvaluateBounds(output any, bounds []Bound) Tally {
	var t Tally
	ev := evaluator{root: output}
	for i := range bounds {
		ev.bound(&bounds[i], &t)
	}
	return t
}

func (ev *evaluator) bound(b *Bound, t *Tally) {
	values, at, missing := jsonvalue.Places(b.Path.Steps, ev.root, true)
	if missing == len(values) && (missing == 0 || b.IfPresent) {
		return // no place, or (if_present) none holds a value
	}
	// The limits are parsed into ev.target (min) and ev.total (max) once per bound.
	for _, lim := range []struct {
		lit  *json.Number
		into *jsonvalue.Decimal
		name string
	}{{b.Min, &ev.target, "minimum"}, {b.Max, &ev.total, "maximum"}} {
		if lim.lit == nil {
			continue
		}
		if err := jsonvalue.ParseDecimal(string(*lim.lit), lim.into); err != nil {
			t.Fail(Failure{Check: boundsCheck, At: b.Path.Steps, Filed: &b.Path,
				Kind: badOperand{want: wanted{bound: b}, what: "the bound's " + lim.name, lit: string(*lim.lit), err: err}})
			return
		}
	}
	width := jsonvalue.CountAll(b.Path.Steps)
	for i, v := range values {
		here := where{steps: b.Path.Steps, at: at[i*width : (i+1)*width]}
		if jsonvalue.IsAbsent(v) {
			if !b.IfPresent && !t.failCounted(boundsCheck) {
				t.Fail(Failure{Check: boundsCheck, At: here.steps, Elems: here.at, Filed: &b.Path,
					Kind: notFound{want: wanted{bound: b}, at: here}})
			}
			continue
		}
		n, ok := v.(json.Number)
		var err error
		if ok {
			err = jsonvalue.ParseDecimal(string(n), &ev.x)
		}
		low := ok && err == nil && b.Min != nil && ev.c.Cmp(&ev.x, &ev.target) < 0
		high := ok && err == nil && !low && b.Max != nil && ev.c.Cmp(&ev.x, &ev.total) > 0
		if ok && err == nil && !low && !high {
			t.Pass()
			continue
		}
		if t.failCounted(boundsCheck) {
			continue
		}
		t.Fail(Failure{Check: boundsCheck, At: here.steps, Elems: here.at, Filed: &b.Path,
			Kind: outOfBounds{b: b, value: v, err: err, low: low, high: high, at: here}})
	}
}

// outOfBounds is a value at a bound's place that is not a number within it: below the minimum
// (low), above the maximum (high), or not a number at all (err says why a number is unusable).
type outOfBounds struct {
	b         *Bound
	value     any
	err       error
	low, high bool
	at        where
}

func (k outOfBounds) Texts() (string, string, string) {
	var detail string
	switch {
	case k.low:
		detail = jsonvalue.Describe(k.value) + " is below the minimum " + jsonvalue.Shorten(string(*k.b.Min))
	case k.high:
		detail = jsonvalue.Describe(k.value) + " is above the maximum " + jsonvalue.Shorten(string(*k.b.Max))
	default:
		detail = notNumberDetail(k.at.raw(), k.value, k.err)
	}
	return boundExpected(k.b), foundValue(k.value, k.err), detail
}

// boundExpected says what a bound wants: "a number between 0 and 100", "a number >= 0" or
// "a number <= 100".
func boundExpected(b *Bound) string {
	switch {
	case b.Min != nil && b.Max != nil:
		return "a number between " + jsonvalue.Shorten(string(*b.Min)) + " and " + jsonvalue.Shorten(string(*b.Max))
	case b.Min != nil:
		return "a number >= " + jsonvalue.Shorten(string(*b.Min))
	case b.Max != nil:
		return "a number <= " + jsonvalue.Shorten(string(*b.Max))
	}
	return "a number"
}
