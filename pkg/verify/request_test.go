package verify

import (
	"encoding/json"
	"fmt"

	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// canary is planted in every invalid request; no error may ever contain it.
const canary = "ZQXJ-canary"

type invalidCase struct {
	Name   string   `json:"name"`
	Body   string   `json:"body"`
	Fields []string `json:"fields"`
}

func invalidCases(t testing.TB) []invalidCase {
	t.Helper()
	b, err := os.ReadFile("testdata/invalid-requests.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []invalidCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	// Cases too large or too binary for the JSON file.
	base := `{"task_id":"t","expected_schema":{},"submitted_output":%s%s}`
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	bounds := make([]string, 201)
	for i := range bounds {
		bounds[i] = fmt.Sprintf(`"p%d":{"min":0}`, i)
	}
	cases = append(cases,
		invalidCase{"201 rules", fmt.Sprintf(base, `"`+canary+`"`, `,"rules":`+many(201, `{"type":"unique","field":"a[]"}`)), []string{"rules"}},
		invalidCase{"201 bounds", fmt.Sprintf(base, `"`+canary+`"`, `,"bounds":{`+strings.Join(bounds, ",")+`}`), []string{"bounds"}},
		invalidCase{"path over 512 bytes", fmt.Sprintf(base, `"`+canary+`"`, `,"rules":[{"type":"unique","field":"`+strings.Repeat("a.", 256)+`b"}]`), []string{"rules[0].field"}},
		invalidCase{"nesting 129 levels", fmt.Sprintf(base, strings.Repeat("[", 128)+`"`+canary+`"`+strings.Repeat("]", 128), ""), []string{"submitted_output"}},
		invalidCase{"schema nesting 129 levels", `{"task_id":"t","submitted_output":1,"expected_schema":` + strings.Repeat(`{"not":`, 128) + `{}` + strings.Repeat("}", 128) + `}`, []string{"expected_schema"}},
		invalidCase{"invalid UTF-8", fmt.Sprintf(base, "\"\xff\xfe"+canary+"\"", ""), []string{"body"}},
		invalidCase{"empty body", "  ", []string{"body"}},
	)
	return cases
}

func TestDecodeRequestInvalid(t *testing.T) {
	eng := NewEngine(wire.Limits{})
	for _, c := range invalidCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			_, _, err := eng.Decode([]byte(c.Body))
			e, ok := apperr.As(err)
			if !ok {
				t.Fatalf("got %v, want an *apperr.Error", err)
			}
			if e.Status() != 422 || e.Code != apperr.InvalidRequest || e.Charged || e.Retryable {
				t.Fatalf("got status %d code %s charged %v retryable %v, want 422 invalid_request", e.Status(), e.Code, e.Charged, e.Retryable)
			}
			var got []string
			for _, f := range e.Fields {
				got = append(got, f.Field)
				if f.Problem == "" || f.Fix == "" {
					t.Errorf("field %s lacks problem or fix: %+v", f.Field, f)
				}
			}
			if !slices.Equal(got, c.Fields) {
				t.Errorf("fields = %q, want %q (message %q)", got, c.Fields, e.Message)
			}
			if len(e.NextAction) != 1 || !slices.Equal(e.NextAction[0].Fields, got) {
				t.Errorf("next_actions = %+v, want fix_request_fields naming %q", e.NextAction, got)
			}
			b, _ := json.Marshal(e)
			if strings.Contains(string(b), canary) {
				t.Errorf("the error echoes the input: %s", b)
			}
		})
	}
}

// A 422 names at most ListCap problems: unknown members come after the other problems, named
// while there is room and counted after, and any other problems past the cap are counted.
func TestDecodeRequestProblemCap(t *testing.T) {
	members := func(n int, format string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, format, i)
		}
		return b.String()
	}
	cases := []struct {
		name      string
		body      string
		first     string // the first field named
		named     int    // how many entries name fields before the last
		last      string // the last entry's field
		lastCount string // the number the last entry's problem gives
	}{
		{"100 unknown members, task_id missing", `{"expected_schema":{},"submitted_output":1` + members(100, `,"m%d":0`) + `}`,
			"task_id", ListCap - 2, "body", "53 more unknown members"},
		{"unknown members too long to name", `{"task_id":"t","expected_schema":{},"submitted_output":1` + members(3, `,"`+strings.Repeat("x", 41)+`%d":0`) + `}`,
			"body", 0, "body", "3 unknown members"},
		{"a rule with 100 unknown fields", `{"task_id":"t","expected_schema":{},"submitted_output":1,"rules":[{"type":"unique","field":"a"` + members(100, `,"f%03d":0`) + `}]}`,
			"rules[0].f000", ListCap - 2, "rules[0]", "52 more unknown members"},
		{"200 rules of an unknown type", `{"task_id":"t","expected_schema":{},"submitted_output":1,"rules":[` +
			strings.TrimSuffix(members(200, `{"type":"x%d","field":"a"},`), ",") + `]}`,
			"rules[0].type", ListCap - 1, "body", "151 more problems"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(c.body), wire.DefaultLimits)
			e, ok := apperr.As(err)
			if !ok || e.Status() != 422 {
				t.Fatalf("got %v, want a 422", err)
			}
			n := len(e.Fields)
			if got, want := n-1, c.named; got != want || n > ListCap {
				t.Fatalf("got %d entries, want %d and a last one", n, want+1)
			}
			if e.Fields[0].Field != c.first || e.Fields[n-1].Field != c.last || !strings.Contains(e.Fields[n-1].Problem, "has "+c.lastCount) {
				t.Errorf("got first %q, last %+v; want first %q, last %q having %s", e.Fields[0].Field, e.Fields[n-1], c.first, c.last, c.lastCount)
			}
		})
	}
}

// A 422 says what is wrong, wherever in the body it is: a repeated member name is called one in
// expected_schema as in submitted_output (not "could not be read"), and a value nested past the
// depth limit names the limit, also when it is so deep that the JSON decoder's own nesting limit
// stops reading it first (which said "not valid JSON").
func TestDecodeProblemNamesCause(t *testing.T) {
	nest := func(levels int, open, inner, close string) string {
		return strings.Repeat(open, levels) + inner + strings.Repeat(close, levels)
	}
	deepArr := func(levels int) string { return nest(levels, "[", `"`+canary+`"`, "]") }
	deepObj := func(levels int) string { return nest(levels, `{"`+canary+`":`, "1", "}") }
	body := func(schema, output, extra string) string {
		return `{"task_id":"t","expected_schema":` + schema + `,"submitted_output":` + output + extra + `}`
	}
	dup := "has a duplicate object member name"
	depth := fmt.Sprintf("nests deeper than the limit of %d levels", wire.DefaultLimits.MaxDepth)
	cases := []struct {
		name, body, field, problem string
	}{
		{"duplicate keyword at the schema's root", body(`{"type":"object","type":"string"}`, "1", ""), "expected_schema", dup},
		{"duplicate name deep in the schema", body(`{"properties":{"a":{"items":{"x":1,"y":{"`+canary+`":1,"`+canary+`":2}}}}}`, "1", ""), "expected_schema", dup},
		{"duplicate property name in the schema", body(`{"properties":{"`+canary+`":{},"`+canary+`":{}}}`, "1", ""), "expected_schema", dup},
		{"duplicate name in the output", body("{}", `{"a":[{"`+canary+`":1,"`+canary+`":2}]}`, ""), "submitted_output", dup},
		{"duplicate name in a rule", body("{}", "1", `,"rules":[{"type":"unique","field":"a","field":"b"}]`), "rules", dup},
		{"output 129 levels", body("{}", deepArr(128), ""), "submitted_output", depth},
		{"output 10,000 arrays", body("{}", deepArr(10_000), ""), "submitted_output", depth},
		{"output 10,001 objects", body("{}", deepObj(10_001), ""), "submitted_output", depth},
		{"schema 200 levels", body(nest(200, `{"not":`, "{}", "}"), "1", ""), "expected_schema", depth},
		{"schema 10,000 arrays", body(deepArr(10_000), "1", ""), "expected_schema", depth},
		{"schema 10,001 objects", body(deepObj(10_001), "1", ""), "expected_schema", depth},
		{"rules 10,001 arrays", body("{}", "1", `,"rules":`+deepArr(10_001)), "rules", depth},
		{"bounds 10,001 objects", body("{}", "1", `,"bounds":`+deepObj(10_001)), "bounds", depth},
		{"an unknown member 10,001 arrays", body("{}", "1", `,"extra":`+deepArr(10_001)), "extra", depth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(c.body), wire.DefaultLimits)
			e, ok := apperr.As(err)
			if !ok || e.Status() != 422 || len(e.Fields) == 0 {
				t.Fatalf("got %v, want a 422", err)
			}
			f := e.Fields[0]
			if f.Field != c.field || !strings.Contains(f.Problem, c.problem) {
				t.Errorf("got %q %q, want %q %q", f.Field, f.Problem, c.field, c.problem)
			}
			if c.problem == depth && !strings.Contains(f.Fix, strconv.Itoa(wire.DefaultLimits.MaxDepth)) {
				t.Errorf("fix %q does not name the limit", f.Fix)
			}
			for _, wrong := range []string{"could not be read", "not valid JSON", "Send valid JSON"} {
				if strings.Contains(f.Problem+f.Fix, wrong) {
					t.Errorf("%q %q says %q", f.Problem, f.Fix, wrong)
				}
			}
			if b, _ := json.Marshal(e); strings.Contains(string(b), canary) {
				t.Errorf("the error echoes the input: %s", b)
			}
		})
	}
	// A lower configured limit is the one named.
	_, err := DecodeRequest([]byte(body("{}", deepArr(10_001), "")), wire.Limits{MaxBody: 1 << 20, MaxDepth: 16, MaxRules: 1, MaxBounds: 1, MaxPathLen: 8})
	if e, ok := apperr.As(err); !ok || !strings.Contains(e.Fields[0].Problem, "limit of 16 levels") {
		t.Errorf("got %v, want the configured limit of 16 named", err)
	}
}

func TestDecodeRequestTooLarge(t *testing.T) {
	eng := NewEngine(wire.Limits{MaxBody: 1 << 20})
	body := `{"task_id":"t","expected_schema":{},"submitted_output":"` + strings.Repeat("x", 1<<20) + `"}`
	_, _, err := eng.Decode([]byte(body))
	e, ok := apperr.As(err)
	if !ok || e.Status() != 413 || e.Limit != 1<<20 || e.Code != apperr.PayloadTooLarge {
		t.Fatalf("got %#v, want 413 with the limit", err)
	}
}

func TestDecodeRequestDefaults(t *testing.T) {
	req, err := DecodeRequest([]byte(`{"task_id":"t","agent_id":null,"expected_schema":true,"submitted_output":null,
		"rules":[{"type":"gte","field":"a","value":1,"if_present":true}],"bounds":{"b":{"max":2}},"detail":"compact"}`), wire.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if req.AgentID != nil || req.Output != nil || req.Detail != DetailCompact || req.EnforceRules || req.StrictContentCheck {
		t.Errorf("got %+v", req)
	}
	if len(req.Rules) != 1 || req.Rules[0].Type != Gte || req.Rules[0].Value == nil || string(*req.Rules[0].Value) != "1" ||
		!req.Rules[0].IfPresent || req.Rules[0].ToleranceLiteral != wire.DefaultTolerance || req.Rules[0].Tolerance.RatString() != "1/1000000000" {
		t.Errorf("rule = %+v", req.Rules[0])
	}
	if len(req.Bounds) != 1 || req.Bounds[0].Min != nil || string(*req.Bounds[0].Max) != "2" || req.Bounds[0].Path.Raw != "b" {
		t.Errorf("bound = %+v", req.Bounds[0])
	}
}

// The request-hash vectors of the seed, through the engine's fast canonical path.
func TestRequestHashVectors(t *testing.T) {
	b, err := os.ReadFile("../../testdata/seed/request-hash-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Request     json.RawMessage `json:"request"`
		RequestHash string          `json:"request_hash"`
	}
	if err := json.Unmarshal(b, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) != 3 {
		t.Fatalf("got %d vectors, want 3", len(vectors))
	}
	for i, v := range vectors {
		req, err := DecodeRequest(v.Request, wire.DefaultLimits)
		if err != nil {
			t.Fatalf("vector %d: %v", i+1, err)
		}
		if req.Hashes.Request != v.RequestHash {
			t.Errorf("vector %d: request_hash = %s, want %s", i+1, req.Hashes.Request, v.RequestHash)
		}
	}
}

// The four hashes of the seed's invoice draft.
func TestSeedInvoiceHashes(t *testing.T) {
	body, want := seedFile(t, "invoice-draft.request.json"), seedResponse(t, "invoice-draft.response.json")
	req, err := DecodeRequest(body, wire.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"output_hash": req.Hashes.Output, "schema_hash": req.Hashes.Schema,
		"rules_hash": req.Hashes.Rules, "request_hash": req.Hashes.Request}
	for k, v := range got {
		if v != want[k] {
			t.Errorf("%s = %s, want %s", k, v, want[k])
		}
	}
}

func seedFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/seed/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func seedResponse(t testing.TB, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(seedFile(t, name), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// BenchmarkDecodeRequest is decoding alone, the schema's tree included (no cache).
func BenchmarkDecodeRequest(b *testing.B) {
	for _, n := range []int{0, 200} {
		body := benchInvoice(b, n)
		b.Run(itemsName(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := DecodeRequest(body, wire.DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	cases := invalidCases(f)
	for _, c := range cases {
		if len(c.Body) < 4096 {
			f.Add([]byte(c.Body))
		}
	}
	f.Add(seedFile(f, "invoice-draft.request.json"))
	f.Add([]byte(`{"task_id":"t","expected_schema":{"type":"array","items":{"type":"number"}},"submitted_output":[1,2.50,-0,1e21],
		"rules":[{"type":"sum_equals","field":"[]","equals":4.5}],"bounds":{"[0]":{"min":0}}}`))
	eng := NewEngine(wire.Limits{})
	f.Fuzz(func(t *testing.T, body []byte) {
		checkReadMembers(t, body)
		req, sch, err := eng.Decode(body)
		if err != nil {
			e, ok := apperr.As(err)
			if !ok || (e.Status() != 422 && e.Status() != 413) || len(e.Fields) == 0 && e.Status() == 422 {
				t.Fatalf("got %v, want a 422 naming fields or a 413", err)
			}
			return
		}
		rep, err := eng.Check(req, sch, testEnv)
		if e, ok := apperr.As(err); ok && e.Code == apperr.SchemaTooComplex {
			return // a fuzzed schema may be too costly for its output: no verdict, and no report
		}
		if err != nil {
			t.Fatal(err)
		}
		if rep.Result != "pass" && rep.Result != "fail" {
			t.Fatalf("result %q", rep.Result)
		}
		assertCanonicalReport(t, rep)
	})
}

// The published request schema accepts every request the decoder accepts.
func TestRequestSchemaAgreesWithDecoder(t *testing.T) {
	sch, err := CompileSchema(wire.RequestSchema(), false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(wire.RequestSchemaJSON()), fmt.Sprintf("at most %d subschemas", MaxSchemaNodes)) ||
		!strings.Contains(string(wire.RequestSchemaJSON()), fmt.Sprintf("once more per %d bytes", SchemaPointerBytes)) {
		t.Error("the request schema does not give the subschema limit the decoder enforces")
	}
	ex, _ := json.Marshal(wire.ExampleRequest())
	bodies := [][]byte{seedFile(t, "invoice-draft.request.json"), ex}
	var vectors []struct {
		Request json.RawMessage `json:"request"`
	}
	json.Unmarshal(seedFile(t, "request-hash-vectors.json"), &vectors)
	for _, v := range vectors {
		bodies = append(bodies, v.Request)
	}
	for i, b := range bodies {
		if _, err := DecodeRequest(b, wire.DefaultLimits); err != nil {
			t.Fatalf("body %d: decoder refuses: %v", i, err)
		}
		doc, _ := decodeTree(b, 1000, 0)
		if tally, _, _ := sch.Check(doc); len(tally.Failures) > 0 {
			t.Errorf("body %d: the request schema refuses what the decoder accepts: %+v", i, tally.Failures)
		}
	}
	rep, err := NewEngine(wire.Limits{}).Check(mustDecodeRequest(t, ex), mustCompile(t, ex), testEnv)
	if err != nil || !rep.Passed() {
		t.Errorf("the example request does not pass: %+v", rep.Summary)
	}
}

func mustDecodeRequest(t *testing.T, b []byte) *Request {
	t.Helper()
	r, err := DecodeRequest(b, wire.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustCompile(t *testing.T, b []byte) *Schema {
	t.Helper()
	_, sch, err := NewEngine(wire.Limits{}).Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// unique and exists_in paths that would compare an array as one value are refused with a fix
// that says to add [] (the cases of testdata/invalid-requests.json name the fields); the paths
// that select single values or elements are accepted, whatever the output holds there.
func TestDecodeWholeValues(t *testing.T) {
	eng := NewEngine(wire.Limits{})
	req := func(output, rule string) []byte {
		return []byte(`{"task_id":"t","expected_schema":{},"submitted_output":` + output + `,"rules":[` + rule + `]}`)
	}
	for _, c := range []struct {
		name, output, rule string
		refused            bool
	}{
		{"unique without [] over an array", `{"a":[1,1]}`, `{"type":"unique","field":"a"}`, true},
		{"unique without [] over a missing key", `{}`, `{"type":"unique","field":"a","if_present":true}`, true},
		{"exists_in without [] over an array", `{"a":[1]}`, `{"type":"exists_in","field":"a","values":[1]}`, true},
		{"exists_in in_field without [] over an array", `{"a":1,"s":[1]}`, `{"type":"exists_in","field":"a","in_field":"s"}`, true},
		{"unique with []", `{"a":[1,1]}`, `{"type":"unique","field":"a[]"}`, false},
		{"unique with [] over arrays compares them whole", `{"a":[{"t":[1]},{"t":[1]}]}`, `{"type":"unique","field":"a[].t"}`, false},
		{"exists_in with [] on both sides", `{"a":[1],"s":[1]}`, `{"type":"exists_in","field":"a[]","in_field":"s[]"}`, false},
		{"exists_in without [] over one value", `{"currency":"USD"}`, `{"type":"exists_in","field":"currency","values":["USD"]}`, false},
		{"exists_in without [] over an object", `{"o":{"k":1},"s":[{"k":1}]}`, `{"type":"exists_in","field":"o","in_field":"s[]"}`, false},
		{"exists_in without [] over a missing key", `{}`, `{"type":"exists_in","field":"a","values":[1]}`, false},
		{"exists_in in_field without [] over one value", `{"a":1,"s":1}`, `{"type":"exists_in","field":"a","in_field":"s"}`, false},
		{"gte without [] over an array is not concerned", `{"a":[1]}`, `{"type":"gte","field":"a","value":0}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := eng.Decode(req(c.output, c.rule))
			if !c.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := apperr.As(err)
			if !ok || e.Status() != 422 || len(e.Fields) == 0 {
				t.Fatalf("got %v, want a 422", err)
			}
			for _, f := range e.Fields {
				if !strings.HasPrefix(f.Field, "rules[0].") || !strings.Contains(f.Fix, "[]") {
					t.Errorf("field %q fix %q: want the rule's path named and a fix that says to add []", f.Field, f.Fix)
				}
			}
		})
	}
}

// checkReadMembers holds readMembers, the tree builder's one pass over a body, to the decoder's
// reading of it: the same members, trees and unknown names for a body the builder accepts, and
// a refusal by the decoder of every body the builder refuses.
func checkReadMembers(t *testing.T, body []byte) {
	t.Helper()
	if !utf8.Valid(body) {
		return // decodeRequest refuses it before reading
	}
	fast, fastUnknown, ok := readMembers(body, wire.DefaultLimits.MaxDepth, nil)
	slow, slowUnknown, err := readObjectDecoder(body, wire.DefaultLimits.MaxDepth, nil)
	switch {
	case !ok && err == nil:
		t.Fatalf("%q: the tree builder refuses a body the decoder reads", body)
	case ok && err != nil:
		t.Fatalf("%q: the tree builder reads a body the decoder refuses: %v", body, err)
	case ok && (!reflect.DeepEqual(fast, slow) || !slices.Equal(fastUnknown, slowUnknown)):
		t.Fatalf("%q: the tree builder reads\n%+v %q\nthe decoder\n%+v %q", body, fast, fastUnknown, slow, slowUnknown)
	}
}
