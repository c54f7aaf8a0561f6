package schemacheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schDecode parses JSON the way the engine's trees look: json.Number for numbers.
func schDecode(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

// schCountCase is one hand-counted case of testdata/schema-count.
type schCountCase struct {
	Comment    string          `json:"comment"`
	Schema     json.RawMessage `json:"schema"`
	Instance   json.RawMessage `json:"instance"`
	Strict     bool            `json:"strict"`
	Total      int             `json:"total"`
	Passed     int             `json:"passed"`
	Failures   [][2]string     `json:"failures"` // check and path, in order; nil: not compared
	Undeclared *struct {
		Total  int `json:"total"`
		Passed int `json:"passed"`
	} `json:"undeclared"`
}

func schCountCases(t testing.TB) map[string]schCountCase {
	t.Helper()
	files, err := filepath.Glob("../testdata/schema-count/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no count cases: %v", err)
	}
	cases := map[string]schCountCase{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c schCountCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Comment == "" {
			t.Fatalf("%s: every case explains its count in a comment", f)
		}
		cases[strings.TrimSuffix(filepath.Base(f), ".json")] = c
	}
	return cases
}

func TestSchemaCountCases(t *testing.T) {
	cases := schCountCases(t)
	if len(cases) < 12 {
		t.Fatalf("only %d count cases", len(cases))
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			sch, err := Compile(schDecode(t, c.Schema), c.Strict)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			r := sch.crossCheck(schDecode(t, c.Instance))
			if r.walkerValid != r.libValid {
				t.Errorf("walker valid=%v, library valid=%v", r.walkerValid, r.libValid)
			}
			got := shown(r.schema, "schema:")
			if got.Total != c.Total || got.Passed != c.Passed {
				t.Errorf("got %d checks, %d passed; want %d, %d\n%s\nfailures: %+v", got.Total, got.Passed, c.Total, c.Passed, c.Comment, got.Failures)
			}
			if got.Passed+len(got.Failures) != got.Total {
				t.Errorf("passed %d + failures %d != total %d", got.Passed, len(got.Failures), got.Total)
			}
			if c.Failures != nil {
				var gotF [][2]string
				for _, f := range got.Failures {
					gotF = append(gotF, [2]string{f.Check, f.Path})
				}
				if fmt.Sprint(gotF) != fmt.Sprint(c.Failures) {
					t.Errorf("failures %v, want %v", gotF, c.Failures)
				}
			}
			if c.Undeclared != nil && (r.undeclared.Total != c.Undeclared.Total || r.undeclared.Passed != c.Undeclared.Passed) {
				t.Errorf("undeclared %d/%d, want %d/%d (%+v)", r.undeclared.Passed, r.undeclared.Total, c.Undeclared.Passed, c.Undeclared.Total, r.undeclared.Failures)
			}
			for _, f := range append(got.Failures, shown(r.undeclared, "content:undeclared_property").Failures...) {
				schAssertFailureShape(t, f)
			}
		})
	}
}

// schAssertFailureShape checks what every failure promises: a check name, a "$" path whose Field is
// the same without "$.", short Expected and Found, and a one-sentence Detail without the path.
func schAssertFailureShape(t *testing.T, f shownFailure) {
	t.Helper()
	if !strings.HasPrefix(f.Check, "schema:") && !strings.HasPrefix(f.Check, "content:") {
		t.Errorf("check %q", f.Check)
	}
	if !strings.HasPrefix(f.Path, "$") {
		t.Errorf("path %q", f.Path)
	}
	if want := jsonvalue.Bare(f.Path); f.Field != want {
		t.Errorf("field %q for path %q", f.Field, f.Path)
	}
	for _, s := range []string{f.Expected, f.Found} {
		if s == "" || utf8.RuneCountInString(s) > jsonvalue.ShownChars {
			t.Errorf("%q: empty or longer than %d characters", s, jsonvalue.ShownChars)
		}
	}
	if f.Detail == "" || strings.Contains(f.Detail, f.Path) && f.Path != "$" {
		t.Errorf("detail %q", f.Detail)
	}
}

// TestSchemaSeedInvoice counts the seed request itself (SPEC §4.2's worked example).
func TestSchemaSeedInvoice(t *testing.T) {
	b, err := os.ReadFile("../../../testdata/seed/invoice-draft.request.json")
	if err != nil {
		t.Fatal(err)
	}
	req := schDecode(t, b).(map[string]any)
	sch, err := Compile(req["expected_schema"], false)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := sch.check(req["submitted_output"])
	if got.Total != 22 || got.Passed != 22 || len(got.Failures) != 0 {
		t.Fatalf("seed: %d/%d, failures %v; want 22/22", got.Passed, got.Total, got.Failures)
	}
}

func TestSchemaFailureText(t *testing.T) {
	sch, err := Compile(schDecode(t, []byte(`{
		"type": "object",
		"required": ["invoice_id", "total"],
		"properties": {
			"currency": {"enum": ["USD", "EUR"]},
			"lines": {"type": "array", "minItems": 1},
			"total": {"type": "number"},
			"a.b": {"type": "integer", "minimum": 1},
			"long": {"type": "string", "maxLength": 3}
		}
	}`)), false)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 500)
	got, _, _ := sch.check(schDecode(t, []byte(`{"invoice_id": "i", "currency": "GBP", "lines": [], "a.b": 0, "long": "`+long+`"}`)))
	want := []shownFailure{
		{Check: "schema:required", Path: "$", Field: "", Expected: "required properties invoice_id, total", Found: "missing total"},
		{Check: "schema:minimum", Path: `$['a.b']`, Field: `['a.b']`, Expected: "at least 1", Found: "value 0"},
		{Check: "schema:enum", Path: "$.currency", Field: "currency", Expected: `one of ["USD","EUR"]`, Found: `value "GBP"`},
		{Check: "schema:minItems", Path: "$.lines", Field: "lines", Expected: "at least 1 item", Found: "0 items"},
		{Check: "schema:maxLength", Path: "$.long", Field: "long", Expected: "at most 3 characters", Found: "500 characters"},
	}
	if len(got.Failures) != len(want) {
		t.Fatalf("failures %+v", got.Failures)
	}
	for i, w := range want {
		g := got.Failures[i]
		if g.Check != w.Check || g.Path != w.Path || g.Field != w.Field || g.Expected != w.Expected || g.Found != w.Found {
			t.Errorf("failure %d:\n got %+v\nwant %+v", i, g, w)
		}
		schAssertFailureShape(t, g)
	}
	if d := got.Failures[2].Detail; d != "the value is not one of the 2 allowed values" {
		t.Errorf("enum detail %q", d)
	}
	// A large enum is listed clipped, the same for every value it refuses.
	var vals []string
	for i := range 40 {
		vals = append(vals, fmt.Sprintf(`"value-%02d-%s"`, i, strings.Repeat("v", 20)))
	}
	sch3, _ := Compile(schDecode(t, []byte(`{"items": {"enum": [`+strings.Join(vals, ",")+`]}}`)), false)
	got3, _, _ := sch3.check(schDecode(t, []byte(`["a", "b", "value-00"]`)))
	wantExpected := "one of [" + strings.Join(vals[:2], ",") + ","
	if len(got3.Failures) != 3 {
		t.Fatalf("enum failures %+v", got3.Failures)
	}
	for _, f := range got3.Failures {
		if !strings.HasPrefix(f.Expected, wantExpected) || !strings.HasSuffix(f.Expected, "…") || utf8.RuneCountInString(f.Expected) != jsonvalue.ShownChars {
			t.Errorf("large enum shown as %q", f.Expected)
		}
		if f.Expected != got3.Failures[0].Expected || f.Detail != "the value is not one of the 40 allowed values" {
			t.Errorf("enum failure %+v", f)
		}
	}
	// A long value is shown clipped, never copied.
	sch2, _ := Compile(schDecode(t, []byte(`{"properties": {"`+long+`": {"const": 1}}}`)), false)
	got2, _, _ := sch2.check(schDecode(t, []byte(`{"`+long+`": "`+long+`"}`)))
	f := got2.Failures[0]
	schAssertFailureShape(t, f)
	for _, s := range []string{f.Path, f.Field, f.Expected, f.Found, f.Detail} {
		if strings.Count(s, "x") > jsonvalue.ShownChars {
			t.Errorf("more than %d characters of the caller's value in %q", jsonvalue.ShownChars, s)
		}
	}
}

// ---- compile safety and errors ----

// schAssert422 checks err is the expected_schema 422 and that its message does not echo secret.
func schAssert422(t *testing.T, err error, secret string, wantInProblem ...string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok {
		t.Fatalf("error %v (%T), want *apperr.Error", err, err)
	}
	if e.Code != apperr.InvalidRequest || e.Status() != 422 || len(e.Fields) != 1 || e.Fields[0].Field != "expected_schema" {
		t.Fatalf("error %+v, want a 422 on expected_schema", e)
	}
	if secret != "" && (strings.Contains(e.Message, secret) || strings.Contains(e.Fields[0].Problem, secret)) {
		t.Errorf("message echoes the input %q: %s", secret, e.Message)
	}
	for _, w := range wantInProblem {
		if !strings.Contains(e.Fields[0].Problem, w) {
			t.Errorf("problem %q does not say %q", e.Fields[0].Problem, w)
		}
	}
}

func TestSchemaRefusesRemoteRefs(t *testing.T) {
	// A file whose content would make the schema valid: it must still never be read.
	dir := t.TempDir()
	target := filepath.Join(dir, "schema.json")
	if err := os.WriteFile(target, []byte(`{"type":"integer"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fileURL := "file://" + filepath.ToSlash(target)
	for _, ref := range []string{
		"file:///etc/passwd",
		fileURL,
		fileURL + "#/type",
		"http://example.com/x",
		"https://example.com/schema.json",
		"http://localhost:1234/integer.json",
		"other.json",
		"./other.json#/$defs/a",
		"../etc/passwd",
		"//example.com/x",
		target, // a bare absolute path is a relative reference here
	} {
		t.Run(ref, func(t *testing.T) {
			for _, kw := range []string{"$ref", "$dynamicRef"} {
				_, err := Compile(map[string]any{kw: ref}, false)
				schAssert422(t, err, ref, "outside itself")
			}
			// Behind an $id that makes the reference look local to a file, too.
			_, err := Compile(map[string]any{"$id": "file://" + filepath.ToSlash(dir) + "/", "$ref": "schema.json"}, false)
			schAssert422(t, err, dir)
		})
	}
	// draft-07 and draft-04 dialects refuse the same way.
	for _, d := range []string{"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#"} {
		_, err := Compile(map[string]any{"$schema": d, "properties": map[string]any{"a": map[string]any{"$ref": fileURL}}}, false)
		schAssert422(t, err, fileURL, "outside itself", "expected_schema.properties.a['$ref']")
	}
}

// TestSchemaLoaderRefusesEverything proves the loader itself reads nothing, whatever the URL.
func TestSchemaLoaderRefusesEverything(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(target, []byte(`true`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"file://" + filepath.ToSlash(target), "http://example.com/", schemaBaseURL, "https://json-schema.org/draft/2020-12/schema"} {
		if doc, err := (schemaRefusingLoader{}).Load(u); err == nil || doc != nil {
			t.Errorf("loader answered %v, %v for %s", doc, err, u)
		}
	}
}

func TestSchemaMetaSchemasResolve(t *testing.T) {
	for _, tc := range []struct {
		schema, good, bad string
	}{
		{`{"$ref": "https://json-schema.org/draft/2020-12/schema"}`, `{"type": "string"}`, `{"type": 12}`},
		{`{"$ref": "http://json-schema.org/draft-07/schema#"}`, `{"minLength": 1}`, `{"minLength": -1}`},
		{`{"$schema": "https://json-schema.org/draft/2019-09/schema", "$ref": "https://json-schema.org/draft/2019-09/schema"}`, `{"required": ["a"]}`, `{"required": "a"}`},
		{`{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}`, `{}`, `[]`},
		{`{"$schema": "http://json-schema.org/draft-06/schema#", "const": 1}`, `1`, `2`},
	} {
		sch, err := Compile(schDecode(t, []byte(tc.schema)), false)
		if err != nil {
			t.Errorf("%s: %v", tc.schema, err)
			continue
		}
		if r := sch.crossCheck(schDecode(t, []byte(tc.good))); !r.walkerValid || !r.libValid {
			t.Errorf("%s: %s should be valid: %+v", tc.schema, tc.good, r.schema.Failures)
		}
		if r := sch.crossCheck(schDecode(t, []byte(tc.bad))); r.walkerValid || r.libValid {
			t.Errorf("%s: %s should be invalid", tc.schema, tc.bad)
		}
	}
}

func TestSchemaCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, schema, secret string
		want                 []string
	}{
		{"unsupported dialect", `{"$schema": "http://example.com/custom", "type": "object"}`, "example.com", []string{"unsupported dialect"}},
		{"draft 3", `{"$schema": "http://json-schema.org/draft-03/schema#"}`, "draft-03", []string{"unsupported dialect"}},
		{"embedded unknown dialect", `{"$defs": {"x": {"$id": "http://e.com/x", "$schema": "http://example.com/custom"}}}`, "example.com", []string{"unsupported dialect"}},
		{"lookahead", `{"type": "string", "pattern": "(?=secret)a"}`, "secret", []string{"lookahead, which RE2 does not support", "expected_schema.pattern"}},
		{"negative lookbehind", `{"properties": {"p": {"pattern": "(?<!secret)b"}}}`, "secret", []string{"negative lookbehind", "expected_schema.properties.p.pattern"}},
		{"backreference", `{"pattern": "(secret)\\1"}`, "secret", []string{"backreference"}},
		{"pattern property", `{"patternProperties": {"^(?!secret)": {}}}`, "secret", []string{"negative lookahead", "expected_schema.patternProperties"}},
		{"draft7 lookahead", `{"$schema": "http://json-schema.org/draft-07/schema#", "pattern": "(?=secret)"}`, "secret", []string{"lookahead"}},
		{"type not a type", `{"type": 12}`, "", []string{"expected_schema.type"}},
		{"nested type", `{"properties": {"total": {"type": "secretnumber"}}}`, "secretnumber", []string{"expected_schema.properties.total.type"}},
		{"negative minLength", `{"minLength": -1}`, "", []string{"expected_schema.minLength", "minimum 0"}},
		{"required not array", `{"items": [{"required": "secret"}]}`, "secret", []string{"expected_schema"}},
		{"missing pointer", `{"$ref": "#/$defs/secret"}`, "secret", []string{"does not exist"}},
		{"missing anchor", `{"$ref": "#secret"}`, "secret", []string{"anchor"}},
		{"not a schema", `"secret"`, "secret", []string{"object or a boolean"}},
		{"duplicate id", `{"$defs": {"a": {"$id": "http://e.com/secret"}, "b": {"$id": "http://e.com/secret"}}}`, "secret", []string{"$id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(schDecode(t, []byte(tc.schema)), false)
			schAssert422(t, err, tc.secret, tc.want...)
		})
	}
}

func TestSchemaDefaultDraft2020(t *testing.T) {
	// prefixItems is a 2020-12 keyword: absent $schema means 2020-12, so it applies.
	sch, err := Compile(schDecode(t, []byte(`{"prefixItems": [{"type": "string"}]}`)), false)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := sch.check(schDecode(t, []byte(`[1]`))); got.Total != 1 || got.Passed != 0 {
		t.Errorf("prefixItems not applied: %+v", got)
	}
}

// TestSchemaCrossCheckSeesDisagreement forces a disagreement (the walker follows another schema
// than the library) and checks that crossCheck, which every differential test relies on, reports
// it both ways: the differential tests can fail.
func TestSchemaCrossCheckSeesDisagreement(t *testing.T) {
	str, _ := Compile(schDecode(t, []byte(`{"type": "string"}`)), false)
	num, _ := Compile(schDecode(t, []byte(`{"type": "number"}`)), false)
	five := schDecode(t, []byte(`5`))

	if r := (&Schema{lib: str.lib, root: num.root}).crossCheck(five); !r.walkerValid || r.libValid {
		t.Errorf("walker valid, library invalid: got walker %v, library %v", r.walkerValid, r.libValid)
	}
	if r := (&Schema{lib: num.lib, root: str.root}).crossCheck(five); r.walkerValid || !r.libValid {
		t.Errorf("walker invalid, library valid: got walker %v, library %v", r.walkerValid, r.libValid)
	}
}

func TestSchemaConcurrentCheck(t *testing.T) {
	cases := schCountCases(t)
	c := cases["seed-invoice-broken"]
	sch, err := Compile(schDecode(t, c.Schema), false)
	if err != nil {
		t.Fatal(err)
	}
	inst := schDecode(t, c.Instance)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if got, _, _ := sch.check(inst); got.Total != c.Total || got.Passed != c.Passed {
					t.Errorf("concurrent check: %+v", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// ---- cache ----

// ---- fuzzing ----

// FuzzSchemaCheck compiles arbitrary schemas and checks arbitrary instances: nothing may panic,
// the walker must agree with the library on validity, and every tally must add up.
func FuzzSchemaCheck(f *testing.F) {
	for _, c := range schCountCases(f) {
		f.Add([]byte(c.Schema), []byte(c.Instance), c.Strict)
	}
	for _, d := range schOtherDrafts {
		for _, inst := range d.instances {
			f.Add([]byte(d.schema), []byte(inst), false)
		}
	}
	f.Add([]byte(`{"$ref":"#"}`), []byte(`{"a":[1,2]}`), false)
	f.Add([]byte(`{"items":{"$ref":"#"},"minItems":1}`), []byte(`[[[]]]`), false)
	f.Fuzz(func(t *testing.T, schemaJSON, instanceJSON []byte, strict bool) {
		doc, ok := schFuzzDecode(schemaJSON)
		if !ok {
			return
		}
		inst, ok := schFuzzDecode(instanceJSON)
		if !ok {
			return
		}
		sch, err := Compile(doc, strict)
		if err != nil {
			if _, ok := apperr.As(err); !ok {
				t.Fatalf("compile error is not an apperr: %v", err)
			}
			return
		}
		r := sch.crossCheck(inst)
		if r.walkerValid != r.libValid {
			t.Fatalf("walker valid=%v, library valid=%v\nschema %s\ninstance %s", r.walkerValid, r.libValid, schemaJSON, instanceJSON)
		}
		for _, tl := range []Result{r.schema, r.undeclared} {
			if tl.Passed+tl.Failed() != tl.Total || tl.Passed < 0 {
				t.Fatalf("tally does not add up: %+v", tl)
			}
		}
	})
}

// schFuzzDecode accepts only inputs the engine's decoder would: one JSON value, numbers within
// the double range, a modest size and depth.
func schFuzzDecode(b []byte) (any, bool) {
	if len(b) > 4096 || !json.Valid(b) || bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > 64 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if !schFuzzNumbersOK(v) {
		return nil, false
	}
	return v, true
}

func schFuzzNumbersOK(v any) bool {
	switch v := v.(type) {
	case json.Number:
		// Literals whose exponent underflows a double pass ParseFloat yet cost big.Rat (and the
		// library) tens of milliseconds each; the request decoder is where they belong to be refused.
		if i := strings.IndexAny(string(v), "eE"); i >= 0 {
			if e, err := strconv.Atoi(string(v[i+1:])); err != nil || e > 400 || e < -400 {
				return false
			}
		}
		_, err := v.Float64()
		return err == nil && len(v) < 40
	case []any:
		for _, e := range v {
			if !schFuzzNumbersOK(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range v {
			if !schFuzzNumbersOK(e) {
				return false
			}
		}
	}
	return true
}

// ---- benchmarks ----

func schSeed(b *testing.B) (schema, output any) {
	raw, err := os.ReadFile("../../../testdata/seed/invoice-draft.request.json")
	if err != nil {
		b.Fatal(err)
	}
	req := schDecode(b, raw).(map[string]any)
	return req["expected_schema"], req["submitted_output"]
}

// BenchmarkSchemaCheck is Check on the seed invoice with the compiled schema cached: walker and
// library validation together.
func BenchmarkSchemaCheck(b *testing.B) {
	doc, out := schSeed(b)
	sch, err := Compile(doc, false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, _, _ := sch.check(out); got.Total != 22 {
			b.Fatal(got)
		}
	}
}

// BenchmarkSchemaWalker is the counting walker alone (what Check adds to the library).
func BenchmarkSchemaWalker(b *testing.B) {
	doc, out := schSeed(b)
	sch, err := Compile(doc, false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		w := schWalkerPool.Get().(*schWalker)
		w.walk(sch.root, out)
		if w.tally.Total != 22 {
			b.Fatal(w.tally)
		}
		w.release()
	}
}

// BenchmarkLibraryValidate is the bare library validation of the same document, the baseline.
func BenchmarkLibraryValidate(b *testing.B) {
	doc, out := schSeed(b)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("http://example.com/s.json", doc); err != nil {
		b.Fatal(err)
	}
	sch, err := c.Compile("http://example.com/s.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := sch.Validate(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchemaCompile is a cache miss: compiling the seed schema.
func BenchmarkSchemaCompile(b *testing.B) {
	doc, _ := schSeed(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(doc, false); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSchemaDecimalFastPath checks the walker's int64 decimal arithmetic against big.Rat on
// literals around its limits (18 digits, exponents, zeros, signs).
func TestSchemaDecimalFastPath(t *testing.T) {
	lits := []string{"0", "-0", "0.0", "1", "-1", "1.0", "87.0", "42.5", "0.1", "0.30", "1e3", "1E-3", "-2.5e+2",
		"19.99", "0.01", "100", "999999999999999999", "-999999999999999999", "1000000000000000000", "123456789012345678.9",
		"1e17", "1e18", "1e19", "1e-18", "1e-19", "5e-324", "1.7976931348623157e308", "12345678901234567890", "0.000", "7", "3.5",
		"1000000000.10", "0.20", "1000000000.30", "9223372036854775807", "-9223372036854775808", "2.0", "1e-7", "0.0000001"}
	for _, a := range lits {
		x := schParseNumber(a)
		ra, _ := new(big.Rat).SetString(a)
		if got, want := x.isInteger(), ra.IsInt(); got != want {
			t.Errorf("isInteger(%s) = %v", a, got)
		}
		for _, b := range lits {
			rb, _ := new(big.Rat).SetString(b)
			bd := schBoundOf(rb)
			if got, want := x.cmp(bd), ra.Cmp(rb); got != want {
				t.Errorf("cmp(%s, %s) = %d, want %d", a, b, got, want)
			}
			if rb.Sign() != 0 {
				if got, want := x.multipleOf(bd), new(big.Rat).Quo(ra, rb).IsInt(); got != want {
					t.Errorf("multipleOf(%s, %s) = %v, want %v", a, b, got, want)
				}
			}
			if got, want := schEqual(json.Number(a), json.Number(b)), ra.Cmp(rb) == 0; got != want {
				t.Errorf("equal(%s, %s) = %v", a, b, got)
			}
		}
	}
}

// TestSchemaEvaluationBudget: a schema whose subschemas multiply (each level applies the next
// twice) fails closed quickly instead of hanging, while large real outputs stay within budget.
func TestSchemaEvaluationBudget(t *testing.T) {
	defs := map[string]any{}
	const depth = 40 // 2^40 evaluations without the budget
	for i := 0; i < depth; i++ {
		next := fmt.Sprintf("#/$defs/d%d", i+1)
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"allOf": []any{map[string]any{"$ref": next}, map[string]any{"$ref": next}}}
	}
	defs[fmt.Sprintf("d%d", depth)] = map[string]any{"type": "integer"}
	sch, err := Compile(map[string]any{"$defs": defs, "$ref": "#/$defs/d0"}, false)
	if err != nil {
		t.Fatal(err)
	}
	got, undeclared, err := sch.check(json.Number("1"))
	if e, ok := apperr.As(err); !ok || e.Code != apperr.SchemaTooComplex || got.Total != 0 || undeclared.Total != 0 {
		t.Fatalf("bomb: %v, %+v", err, got)
	}

	// 20,000 seed line items: 140,000 checks, well within the budget.
	cases := schCountCases(t)
	seed := cases["seed-invoice"]
	sch, err = Compile(schDecode(t, seed.Schema), false)
	if err != nil {
		t.Fatal(err)
	}
	out := schDecode(t, seed.Instance).(map[string]any)
	item := out["line_items"].([]any)[0]
	items := make([]any, 20000)
	for i := range items {
		items[i] = item
	}
	out["line_items"] = items
	if got, _, _ := sch.check(out); got.Total != 8+7*len(items) || len(got.Failures) != 0 {
		t.Fatalf("large invoice: %d checks, %d failures", got.Total, len(got.Failures))
	}
}

// schOtherDrafts are differential cases for drafts the suite subset does not cover: 2019-09
// ($recursiveRef, unevaluated*, dependentSchemas), draft 6 and draft 4. The walker must agree
// with the library on every instance.
var schOtherDrafts = []struct {
	schema    string
	instances []string
}{
	{`{"$schema": "https://json-schema.org/draft/2019-09/schema",
	   "$id": "https://example.com/tree", "$recursiveAnchor": true,
	   "type": "object", "properties": {"data": true, "children": {"type": "array", "items": {"$recursiveRef": "#"}}}}`,
		[]string{`{"data": 1, "children": [{"children": []}]}`, `{"children": [1]}`, `[]`}},
	{`{"$schema": "https://json-schema.org/draft/2019-09/schema",
	   "$id": "https://example.com/strict-tree", "$recursiveAnchor": true,
	   "$ref": "tree", "unevaluatedProperties": false,
	   "$defs": {"tree": {"$id": "tree", "$recursiveAnchor": true, "type": "object",
	     "properties": {"data": true, "children": {"type": "array", "items": {"$recursiveRef": "#"}}}}}}`,
		[]string{`{"children": [{"daat": 1}]}`, `{"children": [{"data": 1}]}`, `{"x": 1}`, `{}`}},
	{`{"$schema": "https://json-schema.org/draft/2019-09/schema",
	   "items": [{"type": "string"}], "additionalItems": false, "unevaluatedItems": false,
	   "dependentSchemas": {"a": {"required": ["b"]}}, "contains": {"const": "x"}, "minContains": 1}`,
		[]string{`["x"]`, `["x", 1]`, `[1]`, `{"a": 1}`, `{"a": 1, "b": 2}`}},
	{`{"$schema": "https://json-schema.org/draft/2019-09/schema",
	   "allOf": [{"properties": {"a": true}}], "anyOf": [{"properties": {"b": true}}, {"properties": {"c": true}}],
	   "unevaluatedProperties": false}`,
		[]string{`{"a": 1, "b": 1}`, `{"a": 1, "b": 1, "c": 1}`, `{"d": 1}`}},
	{`{"$schema": "http://json-schema.org/draft-06/schema#",
	   "properties": {"n": {"type": "integer", "exclusiveMaximum": 5}, "s": {"type": "string", "pattern": "^a"}},
	   "propertyNames": {"maxLength": 1}, "contains": {"const": 1}, "dependencies": {"n": {"required": ["s"]}}}`,
		[]string{`{"n": 4, "s": "ab"}`, `{"n": 5}`, `{"nn": 1}`, `[2, 1]`, `[2]`}},
	{`{"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://example.com/d4",
	   "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": true}, "r": {"$ref": "#/definitions/pos"}},
	   "definitions": {"pos": {"minimum": 0, "exclusiveMinimum": true}}, "additionalProperties": {"type": "boolean"}}`,
		[]string{`{"n": 4.9, "r": 1, "x": true}`, `{"n": 5}`, `{"r": 0}`, `{"x": 1}`}},
}

func TestSchemaOtherDrafts(t *testing.T) {
	for _, tc := range schOtherDrafts {
		sch, err := Compile(schDecode(t, []byte(tc.schema)), false)
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		for _, inst := range tc.instances {
			r := sch.crossCheck(schDecode(t, []byte(inst)))
			if r.walkerValid != r.libValid {
				t.Errorf("%s\n%s: walker valid=%v, library valid=%v (%+v)", tc.schema, inst, r.walkerValid, r.libValid, r.schema.Failures)
			}
		}
	}
}

// A walk keeps the first reportKeep failures in document order, although it meets them in another
// (each branch of allOf walks the object's members on its own), and counts the rest with their
// check names in the order they first appear: the same as keeping every failure, sorting and
// cutting.
func TestSchemaKeepsFirstFailures(t *testing.T) {
	// Members k00 to k99 each fail type once, k00 to k04 minimum too, so the first reportKeep
	// failures are those of k00 to k44. schema:maximum first fails at k90; schema:exclusiveMaximum
	// at k60, though the walk meets it at k95 first; schema:not at k02, among the kept.
	sch, err := Compile(schDecode(t, []byte(`{"allOf": [
		{"additionalProperties": {"type": "string"}},
		{"patternProperties": {"^k0[0-4]$": {"minimum": 5}}},
		{"properties": {"k90": {"maximum": -1}}},
		{"properties": {"k95": {"exclusiveMaximum": -1}}},
		{"properties": {"k60": {"exclusiveMaximum": -1}}},
		{"properties": {"k02": {"not": {"const": 2}}}}
	]}`)), false)
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for i := range 100 {
		members = append(members, fmt.Sprintf(`"k%02d": %d`, i, i))
	}
	out := schDecode(t, []byte("{"+strings.Join(members, ",")+"}"))

	all, _, _ := sch.checkKeeping(out, 1<<30)
	got, _, _ := sch.check(out)

	if len(all.Failures) <= 2*reportKeep || all.Failed() != len(all.Failures) {
		t.Fatalf("reference walk kept %d of %d failures, want all of them, more than %d", len(all.Failures), all.Failed(), 2*reportKeep)
	}
	if !slices.Equal(got.Failures, all.Failures[:reportKeep]) {
		t.Errorf("kept failures are not the first %d in document order:\n got %v\nwant %v", reportKeep, got.Failures, all.Failures[:reportKeep])
	}
	if got.Failed() != all.Failed() || got.Total != all.Total || got.Passed != all.Passed {
		t.Errorf("counts %d failed of %d (%d passed), want %d of %d (%d)", got.Failed(), got.Total, got.Passed, all.Failed(), all.Total, all.Passed)
	}
	want := []string{"schema:type", "schema:minimum", "schema:not", "schema:exclusiveMaximum", "schema:maximum"}
	if !slices.Equal(all.appendChecks(nil), want) {
		t.Fatalf("reference check names %v, want %v", all.appendChecks(nil), want)
	}
	if gotChecks := got.appendChecks(nil); !slices.Equal(gotChecks, want) {
		t.Errorf("check names %v, want %v", gotChecks, want)
	}
}

// A failure past the kept ones is counted by its keyword and costs no allocation: its Kind is
// never made, let alone written (fail is generic for this). Twice the failing items, all past
// the kept ones, allocate no more, but for the walkers the race detector's sync.Pool drops at
// random (hence a margin of one allocation per 50 failures; writing each failure's texts cost
// eight).
func TestDroppedFailuresAllocateNothing(t *testing.T) {
	sch, err := Compile(schDecode(t, []byte(`{"items": {"type": "string", "minimum": 5}}`)), false)
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(n int) float64 {
		items := make([]any, n)
		for i := range items {
			items[i] = json.Number(strconv.Itoa(i % 5)) // fails type and minimum
		}
		return testing.AllocsPerRun(10, func() {
			r, _, err := sch.Check(items, reportKeep, nil)
			if err != nil || r.Failed() != 2*n || len(r.Failures) != reportKeep {
				t.Fatalf("%d items: %d failed, %d kept (%v)", n, r.Failed(), len(r.Failures), err)
			}
		})
	}
	small, large := allocs(1000), allocs(2000)
	t.Logf("allocations: %v for 1,000 failing items, %v for 2,000", small, large)
	if large-small > 1000/50 {
		t.Errorf("1,000 more failures past the kept ones cost %v allocations (%v for 1,000 items, %v for 2,000)", large-small, small, large)
	}
}
