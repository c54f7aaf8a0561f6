package verify

import (
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/verify/schemacheck"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"runtime"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// memRepeat joins n items made by f with commas.
func memRepeat(n int, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return strings.Join(parts, ",")
}

// memShapes are schemas of every kind of thing a compiled schema holds, each as large as the
// request limits let it be (1 MiB bodies, MaxSchemaNodes, the pattern caps) and tag-able so that
// copies are distinct schemas.
var memShapes = []struct {
	name string
	doc  func(tag int) string
}{
	{"empty-subschemas", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","prefixItems":[%s]}`, tag, memRepeat(4990, func(int) string { return "{}" }))
	}},
	{"boolean-subschemas", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","prefixItems":[%s]}`, tag, memRepeat(4990, func(int) string { return "true" }))
	}},
	{"nested-defs", func(tag int) string {
		key := strings.Repeat("k", 200)
		return fmt.Sprintf(`{"title":"t%d","$ref":"#%s",`, tag, strings.Repeat("/$defs/"+key, 60)) +
			strings.Repeat(`"$defs":{"`+key+`":{"type":"object",`, 60) + `"minimum":1` + strings.Repeat("}}", 60) + `}`
	}},
	{"nested-properties", func(tag int) string {
		key := strings.Repeat("k", 200)
		return fmt.Sprintf(`{"title":"t%d",`, tag) + strings.Repeat(`"properties":{"`+key+`":{"type":"object",`, 60) +
			`"minimum":1` + strings.Repeat("}}", 60) + `}`
	}},
	{"many-properties", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","properties":{%s}}`, tag, memRepeat(4990, func(i int) string { return fmt.Sprintf(`"k%05d":{}`, i) }))
	}},
	{"long-property-names", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","properties":{%s}}`, tag, memRepeat(3000, func(i int) string { return fmt.Sprintf(`"%0200d":{}`, i) }))
	}},
	{"enum-strings", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","enum":[%s]}`, tag, memRepeat(100000, func(i int) string { return fmt.Sprintf(`"%d"`, i) }))
	}},
	{"enum-numbers", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","enum":[%s]}`, tag, memRepeat(100000, func(i int) string { return fmt.Sprint(i) }))
	}},
	{"enum-arrays", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","enum":[%s]}`, tag, memRepeat(100000, func(int) string { return "[]" }))
	}},
	{"const-nulls", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","const":[%s]}`, tag, memRepeat(150000, func(int) string { return "null" }))
	}},
	{"const-string", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","const":"%s"}`, tag, strings.Repeat("x", 1000000))
	}},
	{"required", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","required":[%s]}`, tag, memRepeat(100000, func(i int) string { return fmt.Sprintf(`"%d"`, i) }))
	}},
	{"dependent-required", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","dependentRequired":{%s}}`, tag, memRepeat(3000, func(i int) string {
			return fmt.Sprintf(`"d%d":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p"]`, i)
		}))
	}},
	{"long-pattern", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","pattern":"%s"}`, tag, strings.Repeat(`a{1000}`, 99))
	}},
	{"many-anchored-patterns", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","allOf":[%s]}`, tag, memRepeat(1000, func(i int) string { return fmt.Sprintf(`{"pattern":"^x%d.{80}$"}`, i) }))
	}},
	{"pattern-properties", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","patternProperties":{%s}}`, tag, memRepeat(1000, func(i int) string { return fmt.Sprintf(`"^p%d[a-z]{90}$":{}`, i) }))
	}},
	{"unicode-classes", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","allOf":[%s]}`, tag, memRepeat(40, func(i int) string { return fmt.Sprintf(`{"pattern":"^x%d[\\p{L}\\p{N}]{20}$"}`, i) }))
	}},
	{"anyOf-fan-out", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","anyOf":[%s]}`, tag, memRepeat(4990, func(int) string { return `{"type":"string"}` }))
	}},
	{"keywords-and-numbers", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","anyOf":[%s]}`, tag, memRepeat(2490, func(i int) string {
			return fmt.Sprintf(`{"format":"email","minLength":1,"maximum":12.5,"multipleOf":0.0001,"description":"field %d"}`, i)
		}))
	}},
	{"refs", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","$defs":{"x":{"type":"integer"}},"anyOf":[%s]}`, tag, memRepeat(4900, func(int) string { return `{"$ref":"#/$defs/x"}` }))
	}},
	{"dynamic-refs", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","$dynamicAnchor":"n","anyOf":[%s]}`, tag, memRepeat(700, func(i int) string {
			return fmt.Sprintf(`{"$id":"r%d","$dynamicAnchor":"n","items":{"$dynamicRef":"#n"}}`, i)
		}))
	}},
	{"examples-and-default", func(tag int) string {
		return fmt.Sprintf(`{"title":"t%d","default":[%s],"examples":[%s]}`, tag,
			memRepeat(50000, func(int) string { return "1" }), memRepeat(50000, func(i int) string { return fmt.Sprintf(`"e%d"`, i) }))
	}},
}

// TestSchemaMemoryBoundRefuses: a small schema whose compiled form would be enormous (unicode
// classes repeated in a thousand patterns, within the pattern caps, keep hundreds of MB) is a 422 on
// expected_schema naming the limit, decided before anything is compiled.
func TestSchemaMemoryBoundRefuses(t *testing.T) {
	body := fmt.Sprintf(`{"task_id":"t","expected_schema":{"allOf":[%s]},"submitted_output":"x"}`,
		memRepeat(1000, func(i int) string { return fmt.Sprintf(`{"pattern":"^x%d[\\p{L}]{40}$"}`, i) }))
	e := NewEngine(wire.Limits{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := e.Decode([]byte(body))
	runtime.ReadMemStats(&after)
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Status() != 422 || len(ae.Fields) != 1 || ae.Fields[0].Field != "expected_schema" ||
		!strings.Contains(ae.Fields[0].Problem, fmt.Sprintf("%d MiB", schemacheck.MaxSchemaMemory>>20)) {
		t.Fatalf("got %v, want a 422 on expected_schema naming the %d MiB limit", err, schemacheck.MaxSchemaMemory>>20)
	}
	// Parsing the patterns (twice: for the pattern caps and for the bound) takes a fraction of
	// the bound below; compiling them allocates far more.
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("refusing it allocated %d bytes: it was compiled", got)
	}
}
