package verify

import (
	"encoding/json"
	"strconv"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

// The kinds of the rules' and bounds' failures: each holds the rule's expectation and what the
// output had, places as steps (where), and writes its texts only when the report shows it.

// wanted is what a rule or bound expected, as its texts say it: text before a path ("numbers at
// items[].qty"), text alone ("a number to add up"), what a bound allows, or, element by element,
// a number at op to compare the value at of with.
type wanted struct {
	text        string
	path        jsonvalue.Path // written after text when it has steps
	bound       *Bound
	op, of      where
	elementwise bool
}

func (w wanted) String() string {
	switch {
	case w.bound != nil:
		return boundExpected(w.bound)
	case w.elementwise:
		return "a number at " + jsonvalue.Shorten(w.op.raw()) + " to compare " + jsonvalue.Shorten(w.of.raw()) + " with"
	case w.path.Steps != nil:
		return w.text + jsonvalue.Shorten(w.path.String())
	}
	return w.text
}

// notFound: nothing is at the place at, nor at more other places the same path selects.
type notFound struct {
	want wanted
	at   where
	more int
}

func (k notFound) Texts() (string, string, string) {
	return k.want.String(), "field not found", notFoundDetail(k.at.raw(), k.more)
}

// notNumber: the value at a place is not a number, or one too large to compute with (err).
type notNumber struct {
	want  wanted
	value any
	err   error
	at    where
}

func (k notNumber) Texts() (string, string, string) {
	return k.want.String(), foundValue(k.value, k.err), notNumberDetail(k.at.raw(), k.value, k.err)
}

// badOperand: a number the request gives (a rule's value or target, a bound's limit; what names
// it) is one too large to compute with.
type badOperand struct {
	want wanted
	what string
	lit  string
	err  error
}

func (k badOperand) Texts() (string, string, string) {
	return k.want.String(), foundValue(json.Number(k.lit), k.err), k.what + " " + jsonvalue.Shorten(k.lit) + " " + k.err.Error()
}

// operandCount: an operand path (name: equals_field or other_field) resolves to n values, not one.
type operandCount struct {
	name string
	p    jsonvalue.Path
	n    int
}

func (k operandCount) Texts() (string, string, string) {
	p, n := jsonvalue.Shorten(k.p.String()), strconv.Itoa(k.n)
	detail := k.name + " " + p + " resolves to " + n + " values, not one number"
	if k.name == "other_field" {
		detail = k.name + " " + p + " resolves to " + n + " values; it must be one number, or share field's [] prefix to compare element by element"
	}
	return "exactly one number at " + p, n + " values", detail
}

// sumMismatch: the values of rule r (sum_equals) add up to sum (its exact decimal), not to the
// target lit (its equals, or the number at its equals_field) within its tolerance.
type sumMismatch struct {
	r        *Rule
	lit, sum string
}

func (k sumMismatch) Texts() (string, string, string) {
	lit, within, sum := jsonvalue.Shorten(k.lit), "", jsonvalue.Shorten(k.sum)
	if toleranceShown(k.r) {
		within = " within " + toleranceText(k.r)
	}
	// The three texts are one concatenation cut apart, one allocation where a concatenation per
	// text cost three. The target reads "135.0" with equals, "total (135.0)" with equals_field.
	const expected, found, detail = "a sum equal to ", "sum ", "values sum to "
	var s string
	var target int
	if k.r.EqualsField == nil {
		s = expected + lit + within + found + sum + detail + sum + ", expected " + lit + within
		target = len(lit)
	} else {
		name := jsonvalue.Shorten(k.r.EqualsField.String())
		s = expected + name + " (" + lit + ")" + within + found + sum +
			detail + sum + ", expected " + name + " (" + lit + ")" + within
		target = len(name) + len(" (") + len(lit) + len(")")
	}
	f := len(expected) + target + len(within) // where found starts
	d := f + len(found) + len(sum)            // where detail starts
	return s[:f], s[f:d], s[d:]
}

// outOfOrder: a value of rule r (gte or lte) is on the wrong side of its operand beyond its
// tolerance, or is not a number it can compare (number false; err says why a number is
// unusable).
type outOfOrder struct {
	r      *Rule
	op     operand
	value  any
	number bool
	err    error
	at     where
}

func (k outOfOrder) Texts() (string, string, string) {
	rel, word := ">=", "less than"
	if k.r.Type != Gte {
		rel, word = "<=", "greater than"
	}
	expected := "a number " + rel + " " + k.op.label()
	if toleranceShown(k.r) {
		expected += " (tolerance " + toleranceText(k.r) + ")"
	}
	if !k.number {
		return expected, foundValue(k.value, k.err), notNumberDetail(k.at.raw(), k.value, k.err)
	}
	return expected, jsonvalue.Describe(k.value), jsonvalue.Describe(k.value) + " is " + word + " " + k.op.label()
}

// toleranceShown tells whether a rule's texts name its tolerance: when it is not the default.
func toleranceShown(r *Rule) bool { return r.Tolerance != nil && !isDefaultTolerance(r.Tolerance) }

// notIn: a value of an exists_in rule occurs neither at the in_field path (in) nor, without one,
// among the rule's values (set).
type notIn struct {
	in    *jsonvalue.Path
	set   []any
	value any
}

func (k notIn) Texts() (string, string, string) {
	v := jsonvalue.Describe(k.value)
	if k.in != nil {
		in := jsonvalue.Shorten(k.in.String())
		return "a value that occurs in " + in, v, v + " does not occur in " + in
	}
	set := jsonvalue.Preview(k.set)
	return "one of " + set, v, v + " is not one of " + set
}

// notUnique: the value at again repeats the one at first, and repeats values in all repeat
// earlier ones.
type notUnique struct {
	first, again where
	value        any
	repeats      int
}

func (k notUnique) Texts() (string, string, string) {
	v := jsonvalue.Describe(k.value)
	detail := "values are not unique: " + jsonvalue.Shorten(k.again.raw()) + " repeats " + jsonvalue.Shorten(k.first.raw()) + " (" + v + ")"
	if k.repeats > 1 {
		detail += "; " + strconv.Itoa(k.repeats-1) + " more value(s) repeat earlier ones"
	}
	return "no two values equal", "duplicate " + v, detail
}

// oneValue: a unique rule's path has no `[]`, so it selects one value (the decoder refuses it).
type oneValue struct{ p jsonvalue.Path }

func (k oneValue) Texts() (string, string, string) {
	return "a path with [] to the values to compare", "one value",
		jsonvalue.Shorten(k.p.String()) + " selects one value, which is always unique; select the values with []"
}

// wholeArray: an exists_in path without `[]` names an array (the decoder refuses it).
type wholeArray struct{ p jsonvalue.Path }

func (k wholeArray) Texts() (string, string, string) {
	p := jsonvalue.Shorten(k.p.String())
	return "a path with [] to the elements of the array at " + p, "an array", p + " names an array; write " + p + "[] to check its elements"
}

// noOperand: a rule reached evaluation without its operand (the decoder refuses it).
type noOperand struct{}

func (noOperand) Texts() (string, string, string) {
	return "a rule with its operand", "no operand", "the rule has no operand to compare with"
}

// unknownRule: a rule of a type this verifier does not know (the decoder refuses it).
type unknownRule struct{ typ RuleType }

func (k unknownRule) Texts() (string, string, string) {
	return "a known rule type", "rule type " + jsonvalue.QuoteShort(string(k.typ)), "the rule type is not one this verifier knows"
}
