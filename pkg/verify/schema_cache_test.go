package verify

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

func TestSchemaCacheNoRecompile(t *testing.T) {
	c := NewSchemaCache(4, SchemaCacheBytes)
	var compiles int
	compile := func() (*Schema, error) {
		compiles++
		return CompileSchema(map[string]any{"type": "object"}, false)
	}
	first, err := c.Get("h1", compile)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		again, err := c.Get("h1", compile)
		if err != nil || again != first {
			t.Fatalf("cache miss on a repeated key: %v", err)
		}
	}
	if compiles != 1 {
		t.Errorf("compiled %d times, want 1", compiles)
	}
	// Errors are returned and not cached.
	bad := func() (*Schema, error) {
		compiles++
		return CompileSchema(map[string]any{"type": json.Number("12")}, false)
	}
	for range 2 {
		if _, err := c.Get("bad", bad); err == nil {
			t.Fatal("want an error")
		}
	}
	if compiles != 3 || c.Len() != 1 {
		t.Errorf("compiles %d, len %d", compiles, c.Len())
	}
}

func TestSchemaCacheLRUEviction(t *testing.T) {
	c := NewSchemaCache(2, SchemaCacheBytes)
	compiled := map[string]int{}
	get := func(key string) {
		t.Helper()
		if _, err := c.Get(key, func() (*Schema, error) {
			compiled[key]++
			return CompileSchema(true, false)
		}); err != nil {
			t.Fatal(err)
		}
	}
	get("a")
	get("b")
	get("a") // a is now the most recently used
	get("c") // evicts b
	if c.Len() != 2 {
		t.Errorf("len %d, want 2", c.Len())
	}
	get("a")
	get("c")
	if compiled["a"] != 1 || compiled["c"] != 1 {
		t.Errorf("a or c recompiled: %v", compiled)
	}
	get("b")
	if compiled["b"] != 2 {
		t.Errorf("b was not evicted: %v", compiled)
	}
}

// Aliases find an entry by the bytes it was sent as, are bounded per entry, and go with it.
func TestSchemaCacheAliases(t *testing.T) {
	c := NewSchemaCache(1, SchemaCacheBytes)
	compile := func() (*Schema, error) { return CompileSchema(true, false) }
	first, err := c.Get("a", compile)
	if err != nil {
		t.Fatal(err)
	}
	spellings := []string{`true`, ` true`, `true `, `  true`, `   true`}
	for _, sp := range spellings {
		c.alias("a", aliasOf([]byte(sp), false), []byte(sp))
	}
	for i, sp := range spellings {
		got := c.known(aliasOf([]byte(sp), false), []byte(sp))
		if i < maxAliases && got != first {
			t.Errorf("spelling %d (%q) not known", i, sp)
		}
		if i >= maxAliases && got != nil {
			t.Errorf("spelling %d (%q) known past the bound of %d", i, sp, maxAliases)
		}
	}
	if c.known(aliasOf([]byte(`true`), true), []byte(`true`)) != nil {
		t.Error("the strict alias of the same bytes is known")
	}
	// A fast hash can collide: what decides is the bytes, so other bytes under the same alias
	// are not known, and a long schema's alias is its SHA-256.
	if c.known(aliasOf([]byte(`true`), false), []byte(`false`)) != nil {
		t.Error("other bytes under a known alias are known")
	}
	long := []byte(`{"description":"` + strings.Repeat("x", maxShortAlias) + `"}`)
	if a := aliasOf(long, false); a.short || a.digest != sha256.Sum256(long) {
		t.Errorf("a schema of %d bytes aliased by a fast hash", len(long))
	}
	c.alias("missing", aliasOf([]byte(`false`), false), []byte(`false`))
	if c.known(aliasOf([]byte(`false`), false), []byte(`false`)) != nil {
		t.Error("an alias attached to no entry is known")
	}
	if _, err := c.Get("b", compile); err != nil { // evicts a
		t.Fatal(err)
	}
	if c.known(aliasOf([]byte(`true`), false), []byte(`true`)) != nil || len(c.aliases) != 0 {
		t.Errorf("aliases of an evicted entry remain: %d", len(c.aliases))
	}
}

func TestSchemaCacheConcurrent(t *testing.T) {
	c := NewSchemaCache(8, SchemaCacheBytes)
	var compiles atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]*Schema, 32)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "same"
			if i%4 == 3 {
				key = fmt.Sprintf("k%d", i%16)
			}
			s, err := c.Get(key, func() (*Schema, error) {
				compiles.Add(1)
				<-release
				return CompileSchema(map[string]any{"type": "string"}, false)
			})
			if err != nil {
				t.Error(err)
			}
			if key == "same" {
				results[i] = s
			}
		}()
	}
	close(release)
	wg.Wait()
	var first *Schema
	for _, s := range results {
		if s == nil {
			continue
		}
		if first == nil {
			first = s
		}
		if s != first {
			t.Error("concurrent misses for one key got different schemas")
		}
	}
	// "same" compiles once; the other keys k3, k7, k11, k15 once each.
	if n := compiles.Load(); n != 5 {
		t.Errorf("compiled %d times, want 5", n)
	}
}

func TestSchemaCachePanickingCompile(t *testing.T) {
	c := NewSchemaCache(2, SchemaCacheBytes)
	_, err := c.Get("p", func() (*Schema, error) { panic("boom") })
	if err == nil {
		t.Fatal("want an error from a panicking compile")
	}
	if _, err := c.Get("p", func() (*Schema, error) { return CompileSchema(true, false) }); err != nil {
		t.Fatal(err)
	}
}

// The same answer through the engine, every time (the schema is refused before the cache keeps
// it), and a known format is a counted check that fails a bad value.
func TestEngineUnknownFormat(t *testing.T) {
	eng := NewEngine(wire.Limits{})
	body := []byte(`{"task_id":"t","expected_schema":{"type":"object","properties":{"email":{"type":"string","format":"emial"}}},"submitted_output":{"email":"not an address"}}`)
	for range 3 {
		_, _, err := eng.Decode(body)
		if e, ok := apperr.As(err); !ok || e.Status() != 422 || len(e.Fields) != 1 || !strings.Contains(e.Fields[0].Problem, "expected_schema.properties.email.format") {
			t.Fatalf("got %v, want the unknown-format 422", err)
		}
	}
	req, sch, err := eng.Decode([]byte(strings.Replace(string(body), "emial", "email", 1)))
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := sch.Check(req.Output)
	if got.Total != 3 || got.Passed != 2 || got.Failures[0].Check != "schema:format" {
		t.Errorf("got %+v, want 3 checks (type, type, format) with schema:format failing", got)
	}
}

// ExampleCompileSchema shows the engine's use: compile once (the cache keeps it), check many.
func ExampleCompileSchema() {
	var doc, output any
	_ = json.Unmarshal([]byte(`{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}`), &doc)
	_ = json.Unmarshal([]byte(`{"id":7}`), &output)
	sch, err := CompileSchema(doc, false)
	if err != nil {
		var e *apperr.Error
		if errors.As(err, &e) {
			fmt.Println(e.Fields[0].Problem)
		}
		return
	}
	tally, _, _ := sch.Check(output)
	fmt.Printf("%d of %d checks passed\n", tally.Passed, tally.Total)
	for _, f := range tally.Failures {
		shown := f.Show()
		fmt.Printf("%s at %s: expected %s, found %s\n", f.Check, shown.Path, shown.Expected, shown.Found)
	}
	// Output:
	// 2 of 3 checks passed
	// schema:type at $.id: expected type string, found number
}
