package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// integrityCase is one case of testdata/rules/*.json: an output, rules or bounds written as a
// request would carry them, and the tally they must produce. A failure in want is compared on
// the fields it sets.
type integrityCase struct {
	Name   string      `json:"name"`
	Output any         `json:"output"`
	Rules  []jsonRule  `json:"rules"`
	Bounds []jsonBound `json:"bounds"`
	Want   struct {
		Total    int          `json:"total"`
		Passed   int          `json:"passed"`
		Failures []checkShown `json:"failures"`
	} `json:"want"`
}

type jsonRule struct {
	Type        string       `json:"type"`
	Field       string       `json:"field"`
	EqualsField *string      `json:"equals_field"`
	Equals      *json.Number `json:"equals"`
	OtherField  *string      `json:"other_field"`
	Value       *json.Number `json:"value"`
	InField     *string      `json:"in_field"`
	Values      []any        `json:"values"`
	Tolerance   *json.Number `json:"tolerance"`
	IfPresent   bool         `json:"if_present"`
}

type jsonBound struct {
	Path      string       `json:"path"`
	Min       *json.Number `json:"min"`
	Max       *json.Number `json:"max"`
	IfPresent bool         `json:"if_present"`
}

// decodeJSON decodes with json.Number, as the request decoder hands values to the engine.
func decodeJSON(t testing.TB, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatal(err)
	}
}

func mustPath(t testing.TB, s string) jsonvalue.Path {
	t.Helper()
	p, err := jsonvalue.ParsePath(s)
	if err != nil {
		t.Fatalf("ParsePath(%q): %v", s, err)
	}
	return p
}

func optPath(t testing.TB, s *string) *jsonvalue.Path {
	if s == nil {
		return nil
	}
	p := mustPath(t, *s)
	return &p
}

// toRule builds the Rule the request decoder would build.
func (j jsonRule) toRule(t testing.TB) Rule {
	r := Rule{
		Type: RuleType(j.Type), Field: mustPath(t, j.Field), EqualsField: optPath(t, j.EqualsField),
		Equals: j.Equals, OtherField: optPath(t, j.OtherField), Value: j.Value, InField: optPath(t, j.InField),
		Values: j.Values, IfPresent: j.IfPresent, ToleranceLiteral: wire.DefaultTolerance,
	}
	if j.Tolerance != nil {
		r.ToleranceLiteral = *j.Tolerance
	}
	tol, ok := new(big.Rat).SetString(string(r.ToleranceLiteral))
	if !ok {
		t.Fatalf("tolerance %q", r.ToleranceLiteral)
	}
	r.Tolerance = tol
	return r
}

func loadIntegrityCases(t *testing.T, name string) []integrityCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "rules", name))
	if err != nil {
		t.Fatal(err)
	}
	var cases []integrityCase
	decodeJSON(t, data, &cases)
	return cases
}

// checkTally compares a tally with a case's want, failure fields only where want sets them.
func checkTally(t *testing.T, got Tally, c integrityCase) {
	t.Helper()
	if got.Total != c.Want.Total || got.Passed != c.Want.Passed || len(got.Failures) != c.Want.Total-c.Want.Passed {
		t.Errorf("got total %d passed %d failures %d, want total %d passed %d", got.Total, got.Passed,
			len(got.Failures), c.Want.Total, c.Want.Passed)
	}
	for i, want := range c.Want.Failures {
		if i >= len(got.Failures) {
			t.Errorf("failure %d missing, want %+v", i, want)
			continue
		}
		g := shownOf(got.Failures[i])
		for _, f := range []struct{ name, got, want string }{
			{"check", g.Check, want.Check}, {"path", g.Path, want.Path}, {"field", g.Field, want.Field},
			{"expected", g.Expected, want.Expected}, {"found", g.Found, want.Found}, {"detail", g.Detail, want.Detail},
		} {
			if f.want != "" && f.got != f.want {
				t.Errorf("failure %d %s:\n got %q\nwant %q", i, f.name, f.got, f.want)
			}
		}
	}
	for _, f := range shownAll(got.Failures) {
		for _, s := range []string{f.Expected, f.Found, f.Detail} {
			if !utf8.ValidString(s) {
				t.Errorf("invalid UTF-8 in %q", s)
			}
		}
	}
}

func TestRulesFromTestdata(t *testing.T) {
	for _, c := range loadIntegrityCases(t, "rules.json") {
		t.Run(c.Name, func(t *testing.T) {
			rules := make([]Rule, len(c.Rules))
			for i, j := range c.Rules {
				rules[i] = j.toRule(t)
			}
			checkTally(t, mustRules(t, c.Output, rules), c)
		})
	}
}

func TestBoundsFromTestdata(t *testing.T) {
	for _, c := range loadIntegrityCases(t, "bounds.json") {
		t.Run(c.Name, func(t *testing.T) {
			bounds := make([]Bound, len(c.Bounds))
			for i, j := range c.Bounds {
				bounds[i] = Bound{Path: mustPath(t, j.Path), Min: j.Min, Max: j.Max, IfPresent: j.IfPresent}
			}
			checkTally(t, EvaluateBounds(c.Output, bounds), c)
		})
	}
}

// TestPathSemanticsFromTestdata runs testdata/rules/paths.json: bounds and every rule type over
// outputs where the places a path selects all hold a value, some have nothing there, or none do
// (flat and nested `[]`, on the field and on the operand side), with and without if_present. Each
// case is answered as Path's doc comment says: every value there is checked, a missing place is a
// failed check without if_present and left out with it.
func TestPathSemanticsFromTestdata(t *testing.T) {
	for _, c := range loadIntegrityCases(t, "paths.json") {
		t.Run(c.Name, func(t *testing.T) {
			rules := make([]Rule, len(c.Rules))
			for i, j := range c.Rules {
				rules[i] = j.toRule(t)
			}
			bounds := make([]Bound, len(c.Bounds))
			for i, j := range c.Bounds {
				bounds[i] = Bound{Path: mustPath(t, j.Path), Min: j.Min, Max: j.Max, IfPresent: j.IfPresent}
			}
			got := mustRules(t, c.Output, rules)
			got.Add(EvaluateBounds(c.Output, bounds))
			checkTally(t, got, c)
		})
	}
}

// The seed's draft invoice fails sum_equals with exactly the strings of the seed's response, and
// the corrected total of the final invoice passes.
func TestRuleSeedInvoice(t *testing.T) {
	read := func(name string, v any) {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seed", name))
		if err != nil {
			t.Fatal(err)
		}
		decodeJSON(t, data, v)
	}
	var req struct {
		Output map[string]any `json:"submitted_output"`
		Rules  []jsonRule     `json:"rules"`
	}
	read("invoice-draft.request.json", &req)
	var resp struct {
		Flags []struct{ Check, Field, Detail string }
		Hints []struct{ Check, Path, Expected, Found string }
	}
	read("invoice-draft.response.json", &resp)
	rules := []Rule{req.Rules[0].toRule(t)}

	got := mustRules(t, req.Output, rules)
	want := checkShown{
		Check: resp.Flags[0].Check, Path: resp.Hints[0].Path, Field: resp.Flags[0].Field,
		Expected: resp.Hints[0].Expected, Found: resp.Hints[0].Found, Detail: resp.Flags[0].Detail,
	}
	if want.Detail != "values sum to 129.5, expected total (135.0)" {
		t.Fatalf("seed response changed: %+v", want)
	}
	if got.Total != 1 || got.Passed != 0 || len(got.Failures) != 1 || shownOf(got.Failures[0]) != want {
		t.Fatalf("draft invoice:\n got %+v\nwant %+v", got, want)
	}

	req.Output["total"] = json.Number("129.5")
	if got := mustRules(t, req.Output, rules); got.Total != 1 || got.Passed != 1 {
		t.Fatalf("final invoice: got %+v, want one passing check", got)
	}
}

func TestRuleMessagesAreShort(t *testing.T) {
	long := strings.Repeat("é", 500)
	for _, c := range []struct{ in, want string }{
		{"abc", "abc"},
		{strings.Repeat("a", 80), strings.Repeat("a", 80)},
		{strings.Repeat("a", 81), strings.Repeat("a", 79) + "…"},
		{strings.Repeat("é", 80), strings.Repeat("é", 80)},
		{long, strings.Repeat("é", 79) + "…"},
	} {
		if got := jsonvalue.Shorten(c.in); got != c.want {
			t.Errorf("jsonvalue.Shorten(%d runes) = %q", utf8.RuneCountInString(c.in), got)
		}
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, "null"}, {true, "boolean true"}, {"a\"b\n", `string "a\"b\n"`}, {json.Number("1.50"), "number 1.50"},
		{[]any{json.Number("1"), "x"}, `array [1,"x"]`}, {map[string]any{"b": nil, "a": false}, `object {"a":false,"b":null}`},
		{long, `string "` + strings.Repeat("é", 78) + "…"},
	} {
		if got := jsonvalue.Describe(c.v); got != c.want {
			t.Errorf("jsonvalue.Describe(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	// A huge value, a huge path and a huge set never show more than FoundMaxChars of themselves.
	huge := map[string]any{strings.Repeat("k", 1000): []any{strings.Repeat("v", 100000)}}
	keyPath := `["` + strings.Repeat("k", 1000) + `"]`
	rules := []Rule{
		{Type: ExistsIn, Field: mustPath(t, keyPath), Values: []any{huge}, Tolerance: big.NewRat(0, 1)},
		{Type: Gte, Field: mustPath(t, keyPath+"[]"), Value: ptrNumber(json.Number("1" + strings.Repeat("0", 300))), Tolerance: big.NewRat(0, 1)},
		{Type: SumEquals, Field: mustPath(t, keyPath+"[]"), EqualsField: ptrPath(mustPath(t, keyPath)), Tolerance: big.NewRat(0, 1)},
	}
	got := mustRules(t, huge, rules)
	if len(got.Failures) != 3 {
		t.Fatalf("got %d failures, want 3", len(got.Failures))
	}
	for _, f := range shownAll(got.Failures) {
		for _, s := range []string{f.Expected, f.Found, f.Detail} {
			if n := utf8.RuneCountInString(s); n > 3*FoundMaxChars+40 {
				t.Errorf("%s: %d characters: %.100q", f.Check, n, s)
			}
			if strings.Contains(s, strings.Repeat("v", FoundMaxChars)) || strings.Contains(s, strings.Repeat("k", FoundMaxChars)) {
				t.Errorf("%s shows more than %d characters of a value: %.200q", f.Check, FoundMaxChars, s)
			}
		}
	}
}

func ptrNumber(n json.Number) *json.Number     { return &n }
func ptrPath(p jsonvalue.Path) *jsonvalue.Path { return &p }

func TestRuleUnknownTypeFails(t *testing.T) {
	got := mustRules(t, map[string]any{"a": json.Number("1")}, []Rule{{Type: "between", Field: mustPath(t, "a"), Tolerance: new(big.Rat)}})
	if got.Total != 1 || got.Passed != 0 || got.Failures[0].Check != "consistency:between" {
		t.Fatalf("got %+v", got)
	}
	got = mustRules(t, map[string]any{"a": json.Number("1")}, []Rule{{Type: Gte, Field: mustPath(t, "a"), Tolerance: new(big.Rat)}})
	if got.Total != 1 || got.Passed != 0 {
		t.Fatalf("rule without operand: got %+v", got)
	}
}

// ExampleEvaluateRules checks that an invoice's line items add up to its total.
func ExampleEvaluateRules() {
	var output any
	dec := json.NewDecoder(strings.NewReader(`{"line_items": [{"line_total": 87.0}, {"line_total": 42.5}], "total": 135.0}`))
	dec.UseNumber()
	_ = dec.Decode(&output)
	field, _ := jsonvalue.ParsePath("line_items[].line_total")
	total, _ := jsonvalue.ParsePath("total")
	tol, _ := new(big.Rat).SetString(wire.DefaultTolerance)
	t, _ := EvaluateRules(output, []Rule{{Type: SumEquals, Field: field, EqualsField: &total, Tolerance: tol}})
	fmt.Println(t.Passed, "of", t.Total, "passed")
	shown := t.Failures[0].Show()
	fmt.Println(t.Failures[0].Check, shown.Path)
	fmt.Println(shown.Detail)
	// Output:
	// 0 of 1 passed
	// consistency:sum_equals $.line_items[].line_total
	// values sum to 129.5, expected total (135.0)
}

// benchInvoiceOutput builds an n-item invoice as the decoder would: json.Number literals.
func benchInvoiceOutput(n int) (any, []Rule) {
	items := make([]any, n)
	total := new(big.Rat)
	for i := range items {
		qty := i%5 + 1
		unit := fmt.Sprintf("%d.%02d", 10+i%90, i%100)
		u, _ := new(big.Rat).SetString(unit)
		line := new(big.Rat).Mul(u, big.NewRat(int64(qty), 1))
		total.Add(total, line)
		items[i] = map[string]any{
			"sku": fmt.Sprintf("SKU-%04d", i), "qty": json.Number(fmt.Sprint(qty)),
			"unit_price": json.Number(unit), "line_total": json.Number(line.FloatString(2)),
		}
	}
	output := map[string]any{"invoice_id": "INV-0001", "currency": "USD", "line_items": items,
		"total": json.Number(total.FloatString(2))}
	p := func(s string) jsonvalue.Path { q, _ := jsonvalue.ParsePath(s); return q }
	tol, _ := new(big.Rat).SetString(wire.DefaultTolerance)
	totalPath, unitPath := p("total"), p("line_items[].unit_price")
	rules := []Rule{
		{Type: SumEquals, Field: p("line_items[].line_total"), EqualsField: &totalPath, Tolerance: tol},
		{Type: Unique, Field: p("line_items[].sku"), Tolerance: tol},
		{Type: Gte, Field: p("line_items[].line_total"), OtherField: &unitPath, Tolerance: tol},
	}
	return output, rules
}

func TestRuleBenchInvoicePasses(t *testing.T) {
	output, rules := benchInvoiceOutput(200)
	if got := mustRules(t, output, rules); got.Total != 202 || got.Passed != 202 {
		t.Fatalf("got total %d passed %d, failures %+v", got.Total, got.Passed, got.Failures)
	}
}

func BenchmarkRulesInvoice200(b *testing.B) {
	output, rules := benchInvoiceOutput(200)
	b.ReportAllocs()
	for b.Loop() {
		EvaluateRules(output, rules)
	}
}

func BenchmarkRulesSumEquals200(b *testing.B) {
	output, rules := benchInvoiceOutput(200)
	b.ReportAllocs()
	for b.Loop() {
		EvaluateRules(output, rules[:1])
	}
}

// Past ListCap kept failures, a failing place is counted by its check name without its texts
// (Tally.failCounted): the totals, the kept failures and the blocking check names stay exact.
func TestFailuresPastTheCapAreCounted(t *testing.T) {
	const n = 3 * ListCap
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"q": json.Number("1")} // no "p": every place is missing
		if i%2 == 1 {
			items[i] = map[string]any{"p": json.Number("-1")} // below the minimum
		}
	}
	output := map[string]any{"o": items}
	zero := json.Number("0")
	for _, c := range []struct {
		name  string
		check string
		eval  func() Tally
	}{
		{"bounds", boundsCheck, func() Tally {
			return EvaluateBounds(output, []Bound{{Path: mustPath(t, "o[].p"), Min: &zero}})
		}},
		{"gte", "consistency:gte", func() Tally {
			return mustRules(t, output, []Rule{{Type: Gte, Field: mustPath(t, "o[].p"), Value: &zero, Tolerance: defaultTolerance()}})
		}},
		{"exists_in", "consistency:exists_in", func() Tally {
			return mustRules(t, output, []Rule{{Type: ExistsIn, Field: mustPath(t, "o[].p"), Values: []any{json.Number("0")}, Tolerance: defaultTolerance()}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.eval()
			if got.Total != n || got.Passed != 0 || got.Failed() != n || len(got.Failures) != ListCap {
				t.Fatalf("total %d passed %d failed %d kept %d, want %d, 0, %d, %d", got.Total, got.Passed, got.Failed(), len(got.Failures), n, n, ListCap)
			}
			for i, f := range shownAll(got.Failures) {
				want := fmt.Sprintf("$.o[%d].p", i)
				if f.Path != want || f.Check != c.check || f.Detail == "" {
					t.Fatalf("failure %d: %+v, want path %s", i, f, want)
				}
			}
			if checks := got.appendChecks(nil); len(checks) != 1 || checks[0] != c.check {
				t.Errorf("check names %q", checks)
			}
		})
	}
}

// The rules and bounds of a 200-item invoice allocate a fixed handful of times whatever the
// number of items: resolving a path allocates per `[]` step, not per value, and a passing check
// writes no text.
func TestRulesAllocs(t *testing.T) {
	output, rules := benchInvoiceOutput(200)
	zero := json.Number("0")
	bounds := []Bound{{Path: mustPath(t, "line_items[].line_total"), Min: &zero}, {Path: mustPath(t, "total"), Min: &zero}}
	for _, c := range []struct {
		name string
		max  float64
		run  func()
	}{
		{"sum_equals, unique and element-wise gte", 16, func() { mustRules(t, output, rules) }},
		{"sum_equals", 7, func() { mustRules(t, output, rules[:1]) }},
		{"two bounds", 5, func() { EvaluateBounds(output, bounds) }},
	} {
		if n := testing.AllocsPerRun(20, c.run); n > c.max*raceFactor {
			t.Errorf("%s: %v allocations, want at most %v", c.name, n, c.max*raceFactor)
		}
	}
}

// mustRules is EvaluateRules for rules within the work budget: an error ends the test.
func mustRules(t *testing.T, output any, rules []Rule) Tally {
	t.Helper()
	got, err := EvaluateRules(output, rules)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRuleTolerance(t *testing.T) {
	dec := func(s string) *jsonvalue.Decimal {
		var d jsonvalue.Decimal
		if err := jsonvalue.ParseDecimal(s, &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
	var c calc
	// A tolerance that is not a decimal (1/3) is compared as a rational.
	tol := newTolerance(big.NewRat(1, 3))
	if tol.exact {
		t.Fatal("1/3 held as a decimal")
	}
	if !c.within(dec("0.333333"), tol) || c.within(dec("-0.3333334"), tol) {
		t.Error("within 1/3 wrong")
	}
	if !newTolerance(nil).isDefault() || newTolerance(big.NewRat(1, 100)).isDefault() {
		t.Error("isDefault wrong")
	}
	if tol := newTolerance(big.NewRat(3, 8)); !tol.exact || tol.d.PyString(false) != "0.375" {
		t.Errorf("3/8 as a decimal: %v", tol.d.PyString(false))
	}
	if !c.within(dec("-0.375"), newTolerance(big.NewRat(3, 8))) || c.within(dec("0.3751"), newTolerance(big.NewRat(3, 8))) {
		t.Error("within 3/8 wrong")
	}
}

// decodeValue parses JSON the way the engine's trees look: json.Number for numbers.
func decodeValue(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	decodeJSON(t, b, &v)
	return v
}
