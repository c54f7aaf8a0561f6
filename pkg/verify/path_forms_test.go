package verify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// pathFormsOutput holds values at many shapes: plain keys, keys that need quoting, a key that
// starts with '$', array indexes, nested arrays; "big" is an operand no value there reaches.
const pathFormsOutput = `{"total": 500, "a b": {"x.y": 7}, "items": [{"price": 3, "q'\\": 4}, {"price": 3, "q'\\": 5}],
  "$ref": 9, "grid": [[1, 1], [2]], "big": 1000}`

// pathFormRequest is a request over output carrying rules and bounds as given (JSON texts).
func pathFormRequest(output, rules, bounds string) []byte {
	return fmt.Appendf(nil, `{"task_id":"forms","enforce_rules":true,"expected_schema":{},"submitted_output":%s,"rules":%s,"bounds":%s}`,
		output, rules, bounds)
}

// integrityOf runs body and returns the integrity tally; a 422 fails the test.
func integrityOf(t *testing.T, body []byte) Ratio {
	t.Helper()
	_, rep, err := NewEngine(wire.Limits{}).Respond(body, testEnv, nil)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if rep.IntegrityChecks == nil {
		return Ratio{}
	}
	return *rep.IntegrityChecks
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Every path a report prints, in its "$" form and its bare form (flags, messages), read back as
// the field of a bound and of every rule type and as every operand, makes the same checks as the
// spelling it was printed from: counted, and failing where the value fails, never skipped.
func TestPrintedPathsRoundTrip(t *testing.T) {
	for _, c := range []struct {
		output  string
		written string // the path as a rule writes it, in JSON-string brackets: not the report's form
		printed string // what the report prints for it
		value   int    // the value there (every value, for a pattern)
		places  int
	}{
		{pathFormsOutput, `["total"]`, `$.total`, 500, 1},
		{pathFormsOutput, `["a b"]["x.y"]`, `$['a b']['x.y']`, 7, 1},
		{pathFormsOutput, `["items"][1]["price"]`, `$.items[1].price`, 3, 1},
		{pathFormsOutput, `["items"][0]["q'\\"]`, `$.items[0]['q\'\\']`, 4, 1},
		{pathFormsOutput, `["$ref"]`, `$['$ref']`, 9, 1},
		{pathFormsOutput, `["grid"][0][1]`, `$.grid[0][1]`, 1, 1},
		{pathFormsOutput, `["items"][]["price"]`, `$.items[].price`, 3, 2},
		{pathFormsOutput, `["grid"][0][]`, `$.grid[0][]`, 1, 2},
		{`[5, 5]`, `[1]`, `$[1]`, 5, 1},
		{`[5, 5]`, `[]`, `$[]`, 5, 2},
		{`5`, `$`, `$`, 5, 1},
	} {
		// What the report prints: a failing bound names the place, a pattern is shown as the
		// report shows a rule's field.
		var printed string
		if c.places == 1 {
			body := pathFormRequest(c.output, `[]`, fmt.Sprintf(`{%s:{"max":%d}}`, quoteJSON(c.written), c.value-1))
			_, rep, err := NewEngine(wire.Limits{}).Respond(body, testEnv, nil)
			if err != nil || len(rep.ErrorsDetail) != 1 {
				t.Fatalf("%s: %v %+v", c.written, err, rep)
			}
			printed = rep.ErrorsDetail[0].Path
		} else {
			printed = mustPath(t, c.written).Display()
		}
		if printed != c.printed {
			t.Errorf("%s is printed %q, want %q", c.written, printed, c.printed)
		}
		forms := []string{printed}
		if bare := jsonvalue.Bare(printed); bare != "" {
			forms = append(forms, bare)
		}
		single := c.places == 1
		for _, form := range forms {
			for _, ifPresent := range []bool{false, true} {
				opt := ""
				if ifPresent {
					opt = `,"if_present":true`
				}
				type shape struct {
					name, rules, bounds string
					checks              int // the checks it counts, all failing; -1: one passing check
				}
				at := func(p string) string { return quoteJSON(p) }
				shapes := []shape{
					{"bound max", `[]`, fmt.Sprintf(`{%%s:{"max":%d%s}}`, c.value-1, opt), c.places},
					{"bound min", `[]`, fmt.Sprintf(`{%%s:{"min":%d%s}}`, c.value+1, opt), c.places},
					{"gte value", fmt.Sprintf(`[{"type":"gte","field":%%s,"value":%d%s}]`, c.value+1, opt), `{}`, c.places},
					{"lte value", fmt.Sprintf(`[{"type":"lte","field":%%s,"value":%d%s}]`, c.value-1, opt), `{}`, c.places},
					{"sum_equals equals", fmt.Sprintf(`[{"type":"sum_equals","field":%%s,"equals":%d%s}]`, c.value*c.places+1, opt), `{}`, 1},
					{"exists_in values", fmt.Sprintf(`[{"type":"exists_in","field":%%s,"values":[-1]%s}]`, opt), `{}`, c.places},
				}
				if !single {
					shapes = append(shapes, shape{"unique", fmt.Sprintf(`[{"type":"unique","field":%%s%s}]`, opt), `{}`, 1})
				}
				if single && c.output == pathFormsOutput {
					// The path as every operand, against "big" (1000), which no value here equals.
					shapes = append(shapes,
						shape{"gte field against big", fmt.Sprintf(`[{"type":"gte","field":%%s,"other_field":"big"%s}]`, opt), `{}`, 1},
						shape{"gte other_field", fmt.Sprintf(`[{"type":"gte","field":"big","other_field":%%s%s}]`, opt), `{}`, -1},
						shape{"lte field against big", fmt.Sprintf(`[{"type":"lte","field":%%s,"other_field":"big"%s}]`, opt), `{}`, -1},
						shape{"lte other_field", fmt.Sprintf(`[{"type":"lte","field":"big","other_field":%%s%s}]`, opt), `{}`, 1},
						shape{"sum_equals equals_field", fmt.Sprintf(`[{"type":"sum_equals","field":"big","equals_field":%%s%s}]`, opt), `{}`, 1},
						shape{"exists_in in_field", fmt.Sprintf(`[{"type":"exists_in","field":"big","in_field":%%s%s}]`, opt), `{}`, 1},
					)
				}
				for _, s := range shapes {
					fill := func(p string) []byte {
						return pathFormRequest(c.output, strings.ReplaceAll(s.rules, "%s", at(p)), strings.ReplaceAll(s.bounds, "%s", at(p)))
					}
					want := integrityOf(t, fill(c.written))
					got := integrityOf(t, fill(form))
					name := fmt.Sprintf("%s as %q (if_present %v)", s.name, form, ifPresent)
					if got != want {
						t.Errorf("%s: integrity %+v, written as %s: %+v", name, got, c.written, want)
					}
					checks := s.checks
					if checks < 0 {
						if got.Total != 1 || got.Passed != 1 {
							t.Errorf("%s: integrity %+v, want one passing check", name, got)
						}
						continue
					}
					if got.Total != checks || got.Passed != 0 {
						t.Errorf("%s: integrity %+v, want %d failing checks", name, got, checks)
					}
				}
			}
		}
	}
}

// A path whose form the grammar does not define is a 422 naming where it was written, in a
// bound's key and in every member that takes a path, with if_present or without: never a path
// to a key nobody has, whose check would be skipped.
func TestRefusedPathForms(t *testing.T) {
	refused := []string{
		" total", "total ", "items[]. price", "items[].price ", "\ttotal", "total\u00a0",
		"items.*.a", "items[*].a", "*", "items.*", "$.items[*]", "$..total", "$total", "a.$b", "a$",
		"$.", "$.[0]", "$$", "$ .a", "$]", ".total", "a..b", "$.a.", `a."b"`, `a.'b'`, "a'b",
		"items[?(@.a)]", "items[-1]", "items[0:2]", "[$]", "$['a'", "a\u0001b",
	}
	members := []struct{ name, rules, bounds, field string }{
		{"bound", `[]`, `{%s:{"max":1%s}}`, `bounds[%s]`},
		{"field", `[{"type":"gte","field":%s,"value":1%s}]`, `{}`, "rules[0].field"},
		{"lte field", `[{"type":"lte","field":%s,"value":1%s}]`, `{}`, "rules[0].field"},
		{"other_field", `[{"type":"gte","field":"total","other_field":%s%s}]`, `{}`, "rules[0].other_field"},
		{"sum_equals field", `[{"type":"sum_equals","field":%s,"equals":1%s}]`, `{}`, "rules[0].field"},
		{"equals_field", `[{"type":"sum_equals","field":"total","equals_field":%s%s}]`, `{}`, "rules[0].equals_field"},
		{"unique field", `[{"type":"unique","field":%s%s}]`, `{}`, "rules[0].field"},
		{"exists_in field", `[{"type":"exists_in","field":%s,"values":[1]%s}]`, `{}`, "rules[0].field"},
		{"in_field", `[{"type":"exists_in","field":"total","in_field":%s%s}]`, `{}`, "rules[0].in_field"},
	}
	eng := NewEngine(wire.Limits{})
	for _, p := range refused {
		if _, err := jsonvalue.ParsePath(p); err == nil {
			t.Errorf("ParsePath(%q) is accepted", p)
		}
		for _, m := range members {
			for _, opt := range []string{"", `,"if_present":true`} {
				rules, bounds := m.rules, m.bounds
				if m.name == "bound" {
					bounds = fmt.Sprintf(bounds, quoteJSON(p), opt)
				} else {
					rules = fmt.Sprintf(rules, quoteJSON(p), opt)
				}
				_, _, err := eng.Decode(pathFormRequest(pathFormsOutput, rules, bounds))
				e, ok := apperr.As(err)
				if !ok || e.Status() != 422 {
					t.Errorf("%s %q%s: got %v, want a 422", m.name, p, opt, err)
					continue
				}
				field := m.field
				if m.name == "bound" {
					field = fmt.Sprintf(m.field, strconvQuote(safeName(p)))
				}
				named := false
				for _, f := range e.Fields {
					named = named || f.Field == field
				}
				if !named {
					t.Errorf("%s %q%s: 422 names %+v, want %s", m.name, p, opt, e.Fields, field)
				}
			}
		}
	}
}
