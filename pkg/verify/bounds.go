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
			t.Fail(Failure{Check: boundsCheck, Path: b.Path.Display(), Field: b.Path.String(), Expected: boundExpected(b),
				Found: foundValue(*lim.lit, err), Detail: "the bound's " + lim.name + " " + jsonvalue.Shorten(string(*lim.lit)) + " " + err.Error()})
			return
		}
	}
	width := jsonvalue.CountAll(b.Path.Steps)
	for i, v := range values {
		if jsonvalue.IsAbsent(v) {
			if !b.IfPresent && !t.failCounted(boundsCheck) {
				loc := placeOf(b.Path, at[i*width:(i+1)*width])
				t.Fail(Failure{Check: boundsCheck, Path: jsonvalue.Display(loc), Field: b.Path.String(), Expected: boundExpected(b),
					Found: "field not found", Detail: notFoundDetail(loc, 0)})
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
		loc := jsonvalue.Field(b.Path.Steps, at[i*width:(i+1)*width])
		var detail string
		switch {
		case low:
			detail = jsonvalue.Describe(v) + " is below the minimum " + jsonvalue.Shorten(string(*b.Min))
		case high:
			detail = jsonvalue.Describe(v) + " is above the maximum " + jsonvalue.Shorten(string(*b.Max))
		default:
			detail = notNumberDetail(loc, v, err)
		}
		t.Fail(Failure{Check: boundsCheck, Path: jsonvalue.Display(loc), Field: b.Path.String(), Expected: boundExpected(b),
			Found: foundValue(v, err), Detail: detail})
	}
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
