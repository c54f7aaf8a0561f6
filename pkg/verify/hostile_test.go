package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/verify/schemacheck"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
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
	allOf := func(n int, prefix string) string {
		return prefix + `{"allOf":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}` + strings.Repeat("}", strings.Count(prefix, "{"))
	}
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
		{"allOf fan-out 2^40", wrap(nestedAllOf(40), `{"x":1}`), 422, "expected_schema"},
		{"200 rules over 100,000 elements", wrap(`{}`, bigArray, `,"rules":[`+strings.TrimSuffix(strings.Repeat(`{"type":"gte","field":"[]","value":0},`, 200), ",")+`]`), 422, "rules[9]"},
		{"a number with 1000 digits", wrap(`{}`, "0."+strings.Repeat("1", 999)), 0, ""},
		{"a number with an exponent of a billion", wrap(`{}`, "1e-1000000000"), 422, "submitted_output"},
		{"1,001 patterns", wrap(`{"allOf":[`+strings.Repeat(`{"pattern":"^a"},`, 1000)+`{"pattern":"^b"}]}`, `"a"`), 422, "expected_schema"},
		{"1,001 patternProperties", wrap(`{"patternProperties":{`+hostilePatternKeys(1001)+`}}`, `{}`), 422, "expected_schema"},
		{"101 patterns of .{1000}", wrap(`{"allOf":[`+strings.Repeat(`{"pattern":".{1000}"},`, 100)+`{"pattern":".{1000}"}]}`, `"a"`), 422, "expected_schema"},
		{"45,000 patterns of .{1000}", wrap(`{"allOf":[`+strings.TrimSuffix(strings.Repeat(`{"pattern":".{1000}"},`, 45_000), ",")+`]}`, `"a"`), 422, "expected_schema"},
		{"1,000 patterns of 100 instructions (the caps)", wrap(`{"allOf":[`+strings.TrimSuffix(strings.Repeat(`{"pattern":"x{97}"},`, 1000), ",")+`]}`, `"a"`), 0, ""},
		{"1 MiB of short unknown members", string(unknownMembers(0, "")), 422, "0"},
		{"1 MiB of 40-character unknown members", string(unknownMembers(0, strings.Repeat("k", 34))), 422, strings.Repeat("k", 34) + "0"},
		{"1 MiB of unknown rule fields", wrap(`{}`, `1`, `,"rules":[{"type":"unique","field":"a",`+repeatJoin(80_000, func(i int) string { return fmt.Sprintf(`"f%06d":0`, i) })+`}]`), 422, "rules[0].f000000"},
		{"5,000 subschemas (the limit)", wrap(allOf(MaxSchemaNodes-1, ""), `{}`), 0, ""},
		{"5,001 subschemas", wrap(allOf(MaxSchemaNodes, ""), `{}`), 422, "expected_schema"},
		{"1 MiB of subschemas", wrap(allOf((1<<20-100)/3, ""), `{}`), 422, "expected_schema"},
		{"36,000 properties", wrap(`{"properties":{`+repeatJoin(36_000, func(i int) string { return fmt.Sprintf(`"p%d":{}`, i) })+`}}`, `{}`), 422, "expected_schema"},
		{"1,000 subschemas under a 64 KB name", wrap(allOf(1000, `{"properties":{"`+strings.Repeat("x", 64<<10)+`":`), `{}`), 422, "expected_schema"},
	}
	eng := NewEngine(wire.Limits{})
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
			if !ok || e.Status() != c.status || len(e.Fields) == 0 || e.Fields[0].Field != c.field {
				t.Fatalf("got %v, want %d naming %s", err, c.status, c.field)
			}
			// The answer stays small whatever the input: at most ListCap short problems.
			if b, _ := json.Marshal(e); len(b) > 32<<10 {
				t.Errorf("the error is %d bytes", len(b))
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
// instead of running to the end, with ErrStopped and no verdict: not a report, and not the
// schema_too_complex answer, which a budget alone decides.
func TestStoppedCheckEndsEarly(t *testing.T) {
	items := strings.Repeat(`1,`, 5000) + `1`
	body := []byte(`{"task_id":"t","expected_schema":{"type":"array","items":{"type":"integer"}},"submitted_output":[` + items + `],` +
		`"rules":[{"type":"unique","field":"[]"}],"enforce_rules":true}`)
	eng := NewEngine(wire.Limits{})
	decode := func() (*Request, *Schema) {
		req, sch, err := eng.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		return req, sch
	}
	req, sch := decode()
	if rep, err := eng.Check(req, sch, testEnv); err != nil || rep.Result != "fail" || !slices.Equal(rep.Summary.BlockingChecks, []string{"consistency:unique"}) {
		t.Fatalf("not stopped: %v; want a fail from the unique rule alone", err)
	}
	done := make(chan struct{})
	close(done)
	// Stopped during the schema walk.
	req, sch = decode()
	req.StopWhen(done)
	if rep, err := eng.Check(req, sch, testEnv); err != ErrStopped || rep != nil {
		t.Errorf("stopped in the walk: %v, %v; want ErrStopped and no report", rep, err)
	}
	// Stopped in the rules, which CheckSchema evaluates after the walk (a schema of true has no
	// walk to stop).
	rulesOnly := bytes.Replace(body, []byte(`"expected_schema":{"type":"array","items":{"type":"integer"}}`), []byte(`"expected_schema":true`), 1)
	req, sch, err := eng.Decode(rulesOnly)
	if err != nil {
		t.Fatal(err)
	}
	req.StopWhen(done)
	if err := eng.CheckSchema(req, sch); err != ErrStopped {
		t.Errorf("stopped in the rules: %v; want ErrStopped", err)
	}
	if rep, err := eng.Check(req, sch, testEnv); err != ErrStopped || rep != nil {
		t.Errorf("stopped in the rules: %v, %v; want ErrStopped and no report", rep, err)
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

// TestSchemaCacheBoundedInBytes: the cache keeps compiled schemas within the bytes they are
// charged (what they measure, see schemaCharge), so that schemas at the pattern caps cannot pile
// up, and a schema charged more than the whole cache is used but not kept.
func TestSchemaCacheBoundedInBytes(t *testing.T) {
	doc := decodeValue(t, []byte(`{"allOf":[`+strings.TrimSuffix(strings.Repeat(`{"pattern":"x{97}"},`, 1000), ",")+`]}`))
	sch, err := CompileSchema(doc, false)
	if err != nil {
		t.Fatal(err)
	}
	charge := schemaCharge(sch)
	t.Logf("a schema at the pattern caps is charged %d KB", charge>>10)
	c := NewSchemaCache(SchemaCacheSize, 3*(charge+1))
	for i := range 10 {
		if _, err := c.Get(fmt.Sprint(i), func() (*Schema, error) { return sch, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Len(); got != 3 {
		t.Errorf("holds %d schemas, want 3 within its bytes", got)
	}
	if got, want := c.Bytes(), 3*(charge+1); got != want {
		t.Errorf("charged %d, want %d", got, want)
	}
	small := NewSchemaCache(SchemaCacheSize, charge/2)
	if got, _ := small.Get("big", func() (*Schema, error) { return sch, nil }); got != sch || small.Len() != 0 || small.Bytes() != 0 {
		t.Errorf("a schema larger than the cache: got %p (want %p), cache holds %d charged %d", got, sch, small.Len(), small.Bytes())
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
// is refused as schema_too_complex before the work is done: before the charges each took seconds
// to minutes, some gigabytes. BenchmarkHostileSchemaWork (in make bench) measures them now.
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
	// Each object lacked all 20,000 names: seconds and gigabytes of allocation before required was
	// charged and its failure text made from the first names only.
	{"20,000 required names against 20,000 empty objects", `{"items":{"required":[` + hostileStrings(20_000, "p") + `]}}`, "[" + hostileObjects(20_000) + "]", true},
	{"dependentRequired of 20,000 names against 20,000 objects", `{"items":{"dependentRequired":{"a":[` + hostileStrings(20_000, "p") + `]}}}`, "[" + strings.TrimSuffix(strings.Repeat(`{"a":1},`, 20_000), ",") + "]", true},
	{"20 required names against 20,000 objects missing them (allowed)", `{"items":{"required":[` + hostileStrings(20, "p") + `]}}`, "[" + hostileObjects(20_000) + "]", false},
}

func hostileObjects(n int) string { return strings.TrimSuffix(strings.Repeat("{},", n), ",") }

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
// them is refused (schema_too_complex) within a bounded allocation, and ordinary uses of the same
// keywords are evaluated as before.
func TestHostileSchemaWork(t *testing.T) {
	for _, c := range hostileWork {
		t.Run(c.name, func(t *testing.T) {
			sch, err := CompileSchema(decodeValue(t, []byte(c.schema)), false)
			if err != nil {
				t.Fatal(err)
			}
			out := decodeValue(t, []byte(c.output))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, _, err := sch.Check(out)
			runtime.ReadMemStats(&after)
			var held runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&held)
			e, refused := apperr.As(err)
			if refused && e.Code != apperr.SchemaTooComplex || err != nil && !refused {
				t.Fatalf("got %v, want schema_too_complex or a verdict", err)
			}
			if refused != c.refused {
				t.Fatalf("refused %v, want %v (%d checks, %d failures)", refused, c.refused, got.Total, len(got.Failures))
			}
			// Every failing value's text is made (the race detector's builds, which make test
			// runs, allocate more), but only ListCap failures are kept: the answer stays small
			// however many values fail, where keeping them all grew with every failure.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > raceFactor*32<<20 {
				t.Errorf("allocated %d MiB", grew>>20)
			}
			if kept := int64(held.HeapAlloc) - int64(before.HeapAlloc); kept > raceFactor*1<<20 || len(got.Failures) > ListCap {
				t.Errorf("the answer holds %d KiB and %d failures", kept>>10, len(got.Failures))
			}
			runtime.KeepAlive(got)
		})
	}
}

// BenchmarkHostileSchemaWork measures the hostile schemas above: each is refused, or evaluated
// when allowed, in a bounded time; make bench runs it (docs/PERFORMANCE.md).
func BenchmarkHostileSchemaWork(b *testing.B) {
	for _, c := range hostileWork {
		sch, err := CompileSchema(decodeValue(b, []byte(c.schema)), false)
		if err != nil {
			b.Fatal(err)
		}
		out := decodeValue(b, []byte(c.output))
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sch.Check(out)
			}
		})
	}
}

// hostileRules are rule sets whose every rule resolves the whole output: before the rule work
// budget, 200 unique rules or 200 exists_in rules over these 46,000 objects took seconds and
// gigabytes; BenchmarkHostileRuleWork (in make bench) measures them now.
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
	req, _, err := NewEngine(wire.Limits{}).Decode([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestHostileRuleWork: rules share one work budget per request; past it the remaining rules are
// not run and the request is the error rules_too_complex naming the rule (no verdict, so nothing
// is charged or recorded), within a bounded allocation.
func TestHostileRuleWork(t *testing.T) {
	for _, c := range hostileRules {
		t.Run(c.name, func(t *testing.T) {
			req := hostileRuleRequest(t, c.rules)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := EvaluateRules(req.Output, req.Rules)
			runtime.ReadMemStats(&after)
			var e *apperr.Error
			if !errors.As(err, &e) || e.Code != apperr.RulesTooComplex || len(e.Fields) != 1 || !strings.HasPrefix(e.Fields[0].Field, "rules[") {
				t.Fatalf("err = %v; want rules_too_complex naming the rule", err)
			}
			t.Logf("stopped at %s", e.Fields[0].Field)
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

// unknownMembers is a request with the three required members followed by distinct unknown ones,
// named prefix and a number: n of them, or as many as fit in 1 MiB when n is 0.
func unknownMembers(n int, prefix string) []byte {
	b := []byte(`{"task_id":"t","expected_schema":true,"submitted_output":1`)
	for i := 0; n == 0 || i < n; i++ {
		next := fmt.Appendf(nil, `,"%s%s":0`, prefix, strconv.FormatInt(int64(i), 36))
		if n == 0 && len(b)+len(next)+1 > 1<<20 {
			break
		}
		b = append(b, next...)
	}
	return append(b, '}')
}

// BenchmarkHostileUnknownMembers decodes requests with many unknown top-level members, each
// refused with a 422 whose size the limits bound.
func BenchmarkHostileUnknownMembers(b *testing.B) {
	for _, n := range []int{16 << 10, 32 << 10, 64 << 10, 0} {
		body := unknownMembers(n, "")
		b.Run(fmt.Sprintf("bytes=%d", len(body)), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := DecodeRequest(body, wire.DefaultLimits); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

// hostileSchemas make schemas of n subschemas (or of a size growing with n) in the shapes that
// cost the schema compiler the most per subschema.
var hostileSchemas = []struct {
	name string
	make func(n int) string
}{
	{"allOf of empty schemas", func(n int) string { return `{"allOf":[` + repeatJoin(n, func(int) string { return "{}" }) + `]}` }},
	{"allOf of true", func(n int) string { return `{"allOf":[` + repeatJoin(n, func(int) string { return "true" }) + `]}` }},
	{"properties", func(n int) string {
		return `{"properties":{` + repeatJoin(n, func(i int) string { return fmt.Sprintf(`"p%d":{"type":"string","minLength":1}`, i) }) + `}}`
	}},
	{"resources", func(n int) string {
		return `{"$defs":{` + repeatJoin(n, func(i int) string { return fmt.Sprintf(`"d%d":{"$id":"d%d"}`, i, i) }) + `}}`
	}},
	{"resources with 180-byte ids", func(n int) string {
		return `{"$defs":{` + repeatJoin(n, func(i int) string { return fmt.Sprintf(`"d%d":{"$id":"%s%08d"}`, i, strings.Repeat("i", 172), i) }) + `}}`
	}},
	{"dynamic anchors referred to", func(n int) string {
		return `{"$defs":{` + repeatJoin(n, func(i int) string { return fmt.Sprintf(`"d%d":{"$dynamicAnchor":"a%d","$ref":"#a%d"}`, i, i, i) }) + `}}`
	}},
	{"references", func(n int) string {
		return `{"$defs":{"a":{"type":"string"}},"allOf":[` + repeatJoin(n, func(int) string { return `{"$ref":"#/$defs/a"}` }) + `]}`
	}},
	// Pointers of equal length behind a long common prefix are the compiler's slowest comparison.
	{"allOf under a 4 KB name", func(n int) string {
		return `{"properties":{"` + strings.Repeat("x", 4096) + `":{"allOf":[` + repeatJoin(n, func(int) string { return "{}" }) + `]}}}`
	}},
	{"60 levels of n-byte names", func(n int) string {
		return strings.Repeat(`{"properties":{"`+strings.Repeat("k", n)+`":`, 60) + "{}" + strings.Repeat("}}", 60)
	}},
}

func repeatJoin(n int, item func(int) string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = item(i)
	}
	return strings.Join(items, ",")
}

// largestSchema is the largest n whose schema the decoder accepts, found by bisection.
func largestSchema(make func(int) string) int {
	lo, hi := 1, 1<<20 // lo is accepted, hi is not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if _, err := decodeSchema([]byte(make(mid)), wire.DefaultLimits.MaxDepth); err == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// BenchmarkHostileSchema decodes and compiles, with a cold cache, the largest schema of each
// hostile shape that MaxSchemaNodes lets through.
func BenchmarkHostileSchema(b *testing.B) {
	for _, s := range hostileSchemas {
		n := largestSchema(s.make)
		body := []byte(`{"task_id":"t","expected_schema":` + s.make(n) + `,"submitted_output":null}`)
		b.Run(fmt.Sprintf("%s/n=%d", s.name, n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, _, err := NewEngine(wire.Limits{}).Decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fanOutDefs is the reviewer's schema: levels $defs, each an applicator (allOf, anyOf, oneOf) of
// two $refs to the level below, over leaf.
func fanOutDefs(levels int, applicator, leaf string) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{"d0":` + leaf)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, `,"d%d":{"%s":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, applicator, i-1, i-1)
	}
	fmt.Fprintf(&b, `},"$ref":"#/$defs/d%d"}`, levels)
	return b.String()
}

// A schema that exhausts the evaluation budget is no verdict on the output (which may be valid):
// it is the error schema_too_complex, a 422 naming expected_schema, the limit and how to stay
// under it, never a report (so never charged or recorded: the transports' tests show that). The
// answer is the same every time, compiled or from the cache, and a schema just under the budget
// gets its verdict.
func TestSchemaTooComplexIsAnError(t *testing.T) {
	eng := NewEngine(wire.Limits{})
	body := func(schema, output string) []byte {
		return []byte(`{"task_id":"t","agent_id":"agent-1","expected_schema":` + schema + `,"submitted_output":` + output + `}`)
	}
	budget := strconv.Itoa(schemacheck.EvalBase + schemacheck.EvalPerValue*1) // for an output of one value
	for _, c := range []struct {
		name, schema, output string
	}{
		{"the reviewer's: 16 levels of allOf over integer, output 1", fanOutDefs(16, "allOf", `{"type":"integer"}`), "1"},
		{"the same, output a string it fails", fanOutDefs(16, "allOf", `{"type":"integer"}`), `"x"`},
		{"anyOf over a leaf every branch fails", fanOutDefs(17, "anyOf", `{"type":"string"}`), "1"},
		{"oneOf", fanOutDefs(17, "oneOf", `{"type":"integer"}`), "1"},
		{"40 levels", fanOutDefs(40, "allOf", `true`), "1"},
		{"under a property", strings.Replace(fanOutDefs(16, "allOf", `{"minimum":0}`), `"$ref":"#/$defs/d16"}`, `"properties":{"a":{"$ref":"#/$defs/d16"}}}`, 1), `{"a":1}`},
		{"15 levels (the first over the budget for one value)", fanOutDefs(15, "allOf", `{"type":"integer"}`), "1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := range 20 {
				_, rep, err := eng.Respond(body(c.schema, c.output), testEnv, nil)
				e, ok := apperr.As(err)
				if !ok || rep != nil {
					t.Fatalf("run %d: got %v and a report %v, want schema_too_complex", i, err, rep != nil)
				}
				if e.Code != apperr.SchemaTooComplex || e.Status() != 422 || e.Retryable || e.Charged ||
					len(e.Fields) != 1 || e.Fields[0].Field != "expected_schema" ||
					len(e.NextAction) != 1 || e.NextAction[0].Action != "fix_request_fields" {
					t.Fatalf("run %d: got %+v", i, e)
				}
				if c.output == "1" && !strings.Contains(e.Fields[0].Problem, "limit of "+budget+" units") {
					t.Errorf("the problem does not name the limit of %s units: %q", budget, e.Fields[0].Problem)
				}
				for _, want := range []string{"allOf", "$ref", "Refer to each definition once"} {
					if !strings.Contains(e.Fields[0].Fix, want) {
						t.Errorf("the fix does not say %q: %q", want, e.Fields[0].Fix)
					}
				}
			}
		})
	}
	// 14 levels are within the budget (about 4 units per application of a level, 65,000 in
	// all): a verdict, the same every time.
	for i := range 20 {
		_, rep, err := eng.Respond(body(fanOutDefs(14, "allOf", `{"type":"integer"}`), "1"), testEnv, nil)
		if err != nil || rep.Result != "pass" || rep.SchemaCompliance.Total != 1<<14 {
			t.Fatalf("run %d: 14 levels: %v, want a pass of %d checks", i, err, 1<<14)
		}
	}
}
