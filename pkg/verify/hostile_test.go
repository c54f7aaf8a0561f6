package verify

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// hangGuard bounds how long any one hostile request may take before the test calls it a hang. It
// is a guard against unbounded work, not a speed claim: the benchmarks measure speed.
const hangGuard = 20 * time.Second

// Hostile inputs (SPEC §14): each is answered cleanly — a report or a 4xx naming the field — and
// nothing panics, hangs or grows memory beyond a bound.
func TestHostileInputs(t *testing.T) {
	key := receipt.Key{Version: "h", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))}
	wrap := func(schema, output string, extra ...string) string {
		return `{"task_id":"hostile","expected_schema":` + schema + `,"submitted_output":` + output + strings.Join(extra, "") + `}`
	}
	longString := `"` + strings.Repeat("a", 1<<20-200) + `"`
	bigArray := "[" + strings.TrimSuffix(strings.Repeat("1,", 100_000), ",") + "]"
	cases := []struct {
		name   string
		body   string
		status int    // 0: a report
		field  string // for errors
	}{
		{"128 levels of nesting (the limit)", wrap(`{}`, strings.Repeat("[", 126)+strings.Repeat("]", 126)), 0, ""},
		{"129 levels of nesting", wrap(`{}`, strings.Repeat("[", 128)+strings.Repeat("]", 128)), 422, "submitted_output"},
		{"10000 levels of nesting", wrap(`{}`, strings.Repeat("[", 10000)+strings.Repeat("]", 10000)), 422, "submitted_output"},
		{"a 1 MiB string", wrap(`{"type":"string","maxLength":10}`, longString), 0, ""},
		{"a 1 MiB string with strict content checks", wrap(`{"type":"string","pattern":"^(a+)+$"}`, longString, `,"strict_content_check":true`), 0, ""},
		{"100,000 elements", wrap(`{"type":"array","items":{"type":"integer","minimum":0},"uniqueItems":true}`, bigArray,
			`,"rules":[{"type":"unique","field":"[]"},{"type":"sum_equals","field":"[]","equals":100000}]`), 0, ""},
		{"1e400", wrap(`{}`, `1e400`), 422, "submitted_output"},
		{"-1e400 in the schema", wrap(`{"maximum":-1e400}`, `1`), 422, "expected_schema"},
		{"-0", wrap(`{"const":0}`, `-0`), 0, ""},
		{"a lone surrogate", wrap(`{}`, `"\udfff"`), 422, "submitted_output"},
		{"duplicate keys deep down", wrap(`{}`, `{"a":{"b":{"c":1,"c":2}}}`), 422, "submitted_output"},
		{"an exponential regex against a long string", wrap(`{"pattern":"^(a|a)*(a+)+b$"}`, `"`+strings.Repeat("a", 100_000)+`"`), 0, ""},
		{"a lookbehind pattern", wrap(`{"pattern":"(?<=a)b"}`, `"ab"`), 422, "expected_schema"},
		{"a $ref to a URL", wrap(`{"$ref":"https://127.0.0.1:1/schema.json"}`, `1`), 422, "expected_schema"},
		{"a $ref to a file", wrap(`{"$ref":"file:///etc/passwd"}`, `1`), 422, "expected_schema"},
		{"a schema that references itself forever", wrap(`{"$ref":"#"}`, `{"a":{"a":{"a":1}}}`), 0, ""},
		{"mutually recursive definitions", wrap(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`), 0, ""},
		{"allOf fan-out 2^40", wrap(nestedAllOf(40), `{"x":1}`), 0, ""},
		{"200 rules over 100,000 elements", wrap(`{}`, bigArray, `,"rules":[`+strings.TrimSuffix(strings.Repeat(`{"type":"gte","field":"[]","value":0},`, 200), ",")+`]`), 0, ""},
		{"a number with 1000 digits", wrap(`{}`, "0."+strings.Repeat("1", 999)), 0, ""},
		{"a number with an exponent of a billion", wrap(`{}`, "1e-1000000000"), 422, "submitted_output"},
		{"1,001 patterns", wrap(`{"allOf":[`+strings.Repeat(`{"pattern":"^a"},`, 1000)+`{"pattern":"^b"}]}`, `"a"`), 422, "expected_schema"},
		{"1,001 patternProperties", wrap(`{"patternProperties":{`+hostilePatternKeys(1001)+`}}`, `{}`), 422, "expected_schema"},
		{"101 patterns of .{1000}", wrap(`{"allOf":[`+strings.Repeat(`{"pattern":".{1000}"},`, 100)+`{"pattern":".{1000}"}]}`, `"a"`), 422, "expected_schema"},
		{"45,000 patterns of .{1000}", wrap(`{"allOf":[`+strings.TrimSuffix(strings.Repeat(`{"pattern":".{1000}"},`, 45_000), ",")+`]}`, `"a"`), 422, "expected_schema"},
		{"1,000 patterns of 100 instructions (the caps)", wrap(`{"allOf":[`+strings.TrimSuffix(strings.Repeat(`{"pattern":".{97}"},`, 1000), ",")+`]}`, `"a"`), 0, ""},
	}
	eng := NewEngine(Limits{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			done := make(chan struct{})
			var out []byte
			var err error
			go func() {
				defer close(done)
				out, _, err = eng.Respond([]byte(c.body), testEnv, key)
			}()
			select {
			case <-done:
			case <-time.After(hangGuard):
				t.Fatalf("no answer within %s", hangGuard)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			// Memory stays bounded: a 1 MiB body never costs more than a few hundred MiB in all.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 512<<20 {
				t.Errorf("allocated %d MiB for one request", grew>>20)
			}
			if c.status == 0 {
				if err != nil {
					t.Fatalf("want a report, got %v", err)
				}
				if err := receipt.VerifyAttestation(out, receipt.ContextVerify, []receipt.PublicKey{key.Public()}); err != nil {
					t.Fatalf("the report's receipt does not verify: %v", err)
				}
				return
			}
			e, ok := apperr.As(err)
			if !ok || e.Status != c.status || len(e.Fields) == 0 || e.Fields[0].Field != c.field {
				t.Fatalf("got %v, want %d naming %s", err, c.status, c.field)
			}
		})
	}
}

// nestedAllOf is a small schema whose naive evaluation doubles at every level.
func nestedAllOf(levels int) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{"l0":{"type":"object"}`)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, `,"l%d":{"allOf":[{"$ref":"#/$defs/l%d"},{"$ref":"#/$defs/l%d"}]}`, i, i-1, i-1)
	}
	fmt.Fprintf(&b, `},"$ref":"#/$defs/l%d"}`, levels)
	return b.String()
}

// A check whose caller stopped waiting (Request.StopWhen: the deadline answered already) stops
// instead of running to the end: the schema walk fails closed and no rule is evaluated.
func TestStoppedCheckEndsEarly(t *testing.T) {
	items := strings.Repeat(`1,`, 5000) + `1`
	body := []byte(`{"task_id":"t","expected_schema":{"type":"array","items":{"type":"integer"}},"submitted_output":[` + items + `],` +
		`"rules":[{"type":"unique","field":"[]"}],"enforce_rules":true}`)
	eng := NewEngine(Limits{})
	req, sch, err := eng.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if rep := eng.Check(req, sch, testEnv); rep.Result != "fail" || slices.Contains(rep.Summary.BlockingChecks, "schema:complexity") {
		t.Fatalf("not stopped: %s, blocking %v; want a fail from the unique rule alone", rep.Result, rep.Summary.BlockingChecks)
	}
	done := make(chan struct{})
	close(done)
	req.StopWhen(done)
	rep := eng.Check(req, sch, testEnv)
	if !slices.Contains(rep.Summary.BlockingChecks, "schema:complexity") || slices.Contains(rep.Summary.BlockingChecks, "consistency:unique") {
		t.Errorf("stopped: blocking %v; want the schema walk failed closed and no rule run", rep.Summary.BlockingChecks)
	}
}

func hostilePatternKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"^p%d$":{}`, i)
	}
	return b.String()
}

// TestSchemaCacheBoundedInBytes: the cache keeps compiled schemas within its byte estimate, so
// that schemas at the pattern caps cannot pile up, and measures what one of them keeps.
func TestSchemaCacheBoundedInBytes(t *testing.T) {
	doc := schDecode(t, []byte(`{"allOf":[`+strings.TrimSuffix(strings.Repeat(`{"pattern":".{97}"},`, 1000), ",")+`]}`))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sch, err := CompileSchema(doc, false)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int(after.HeapAlloc) - int(before.HeapAlloc)
	t.Logf("a schema at the pattern caps keeps %d KB; estimated %d KB", kept>>10, sch.memory>>10)
	if kept > sch.memory {
		t.Errorf("keeps %d bytes, more than its estimate %d", kept, sch.memory)
	}
	runtime.KeepAlive(sch)

	c := NewSchemaCache(SchemaCacheSize, 3*sch.memory)
	for i := range 10 {
		if _, err := c.Get(fmt.Sprint(i), func() (*Schema, error) { return sch, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Len(); got != 3 {
		t.Errorf("holds %d schemas, want 3 within its bytes", got)
	}
	big := &Schema{memory: 4 * sch.memory}
	if got, _ := c.Get("big", func() (*Schema, error) { return big, nil }); got != big || c.Len() != 3 {
		t.Errorf("a schema larger than the cache: got %p (want %p), cache holds %d", got, big, c.Len())
	}
}

// fanOut is a schema that applies leaf 2^levels times through a $ref fan-out.
func fanOut(levels int, leaf string) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{"l0":` + leaf)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, `,"l%d":{"allOf":[{"$ref":"#/$defs/l%d"},{"$ref":"#/$defs/l%d"}]}`, i, i-1, i-1)
	}
	fmt.Fprintf(&b, `},"$ref":"#/$defs/l%d"}`, levels)
	return b.String()
}

// hostileWork are schemas whose keywords cost work in proportion to the output at every visit
// (patterns, uniqueItems, enum, format "regex"), which the evaluation budget charges by work: each
// is refused as schema:complexity before the work is done. The reviewer measured them at 3.7 s,
// minutes, 10.7 s and 2.1 GB, 930 ms and 650 MB, and 8.5 s before the charges.
var hostileWork = []struct {
	name, schema, output string
	refused              bool
}{
	{"a backtracking-shaped pattern four times", `{"allOf":[` + strings.Repeat(`{"pattern":"(?:a?){1000}b"},`, 3) + `{"pattern":"(?:a?){1000}b"}]}`,
		`"` + strings.Repeat("a", 60_000) + `"`, true},
	{"a simple pattern four times (allowed)", `{"allOf":[` + strings.Repeat(`{"pattern":"^a+$"},`, 3) + `{"pattern":"^a+$"}]}`,
		`"` + strings.Repeat("a", 60_000) + `"`, false},
	{"a pattern behind a 2^10 fan-out", fanOut(10, `{"pattern":"(?:a?){1000}b"}`), `"` + strings.Repeat("a", 60_000) + `"`, true},
	{"uniqueItems behind a 2^10 fan-out", fanOut(10, `{"uniqueItems":true}`), "[" + hostileNumbers(10_000) + "]", true},
	{"uniqueItems over 100,000 numbers (allowed)", `{"uniqueItems":true}`, "[" + hostileNumbers(100_000) + "]", false},
	{"format regex compiling .{1000} 6,000 times", `{"items":{"format":"regex"}}`, "[" + strings.TrimSuffix(strings.Repeat(`".{1000}",`, 6000), ",") + "]", true},
	{"an enum of 35,000 strings against 35,000 strings (a lookup each)", `{"items":{"enum":[` + hostileStrings(35_000, "e") + `]}}`, "[" + hostileStrings(35_000, "o") + "]", false},
	{"an enum of 35,000 numbers against 35,000 numbers", `{"items":{"enum":[` + hostileNumbers(35_000) + `]}}`, "[" + hostileNumbers(35_000) + "]", true},
	{"an enum of 50 strings against 35,000 strings (allowed)", `{"items":{"enum":[` + hostileStrings(50, "o") + `]}}`, "[" + hostileStrings(35_000, "o") + "]", false},
}

func hostileNumbers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i)
	}
	return b.String()
}

func hostileStrings(n int, prefix string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s%d"`, prefix, i)
	}
	return b.String()
}

// TestHostileSchemaWork: costly keywords are charged by their work, so a schema that repeats
// them is refused (schema:complexity) within a bounded allocation, and ordinary uses of the same
// keywords are evaluated as before.
func TestHostileSchemaWork(t *testing.T) {
	for _, c := range hostileWork {
		t.Run(c.name, func(t *testing.T) {
			sch, err := CompileSchema(schDecode(t, []byte(c.schema)), false)
			if err != nil {
				t.Fatal(err)
			}
			out := schDecode(t, []byte(c.output))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, _ := sch.Check(out)
			runtime.ReadMemStats(&after)
			refused := len(got.Failures) > 0 && got.Failures[0].Check == "schema:complexity"
			if refused != c.refused {
				t.Fatalf("refused %v, want %v (%d checks, %d failures)", refused, c.refused, got.Total, len(got.Failures))
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("allocated %d MiB", grew>>20)
			}
		})
	}
}

// BenchmarkHostileSchemaWork measures the hostile schemas above: each is refused, or evaluated
// when allowed, in a bounded time (see the report of the commit that added the charges).
func BenchmarkHostileSchemaWork(b *testing.B) {
	for _, c := range hostileWork {
		sch, err := CompileSchema(schDecode(b, []byte(c.schema)), false)
		if err != nil {
			b.Fatal(err)
		}
		out := schDecode(b, []byte(c.output))
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sch.Check(out)
			}
		})
	}
}

// hostileRules are rule sets whose every rule resolves the whole output: before the rule work
// budget, 200 unique rules over these 46,000 objects took 15.1 s and 4.5 GB, and 200 exists_in
// rules 13.6 s.
var hostileRules = []struct{ name, rules string }{
	{"200 unique rules", strings.TrimSuffix(strings.Repeat(`{"type":"unique","field":"[]"},`, 200), ",")},
	{"200 exists_in rules", strings.TrimSuffix(strings.Repeat(`{"type":"exists_in","field":"[].a[]","in_field":"[].a[]"},`, 200), ",")},
}

// hostileRuleRequest decodes a request of 46,000 objects {"a":[{"b":i}]} (925 KB) with rules.
func hostileRuleRequest(t testing.TB, rules string) *Request {
	var b strings.Builder
	b.WriteString(`{"task_id":"hostile","expected_schema":{},"submitted_output":[`)
	for i := range 46_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"a":[{"b":%d}]}`, i)
	}
	b.WriteString(`],"rules":[` + rules + `]}`)
	req, _, err := NewEngine(Limits{}).Decode([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestHostileRuleWork: rules share one work budget per request; past it the remaining rules are
// not run and consistency:complexity fails, within a bounded allocation.
func TestHostileRuleWork(t *testing.T) {
	for _, c := range hostileRules {
		t.Run(c.name, func(t *testing.T) {
			req := hostileRuleRequest(t, c.rules)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got := EvaluateRules(req.Output, req.Rules)
			runtime.ReadMemStats(&after)
			last := got.Failures[len(got.Failures)-1]
			if last.Check != "consistency:complexity" {
				t.Fatalf("%d checks, last failure %s; want the rules stopped at consistency:complexity", got.Total, last.Check)
			}
			t.Logf("%d checks before the limit", got.Total)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
				t.Errorf("allocated %d MiB", grew>>20)
			}
		})
	}
}

func BenchmarkHostileRuleWork(b *testing.B) {
	for _, c := range hostileRules {
		req := hostileRuleRequest(b, c.rules)
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				EvaluateRules(req.Output, req.Rules)
			}
		})
	}
}
