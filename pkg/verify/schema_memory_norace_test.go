//go:build !race

package verify

import (
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/verify/schemacheck"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"runtime"
	"testing"
)

// The heap tests compare the cache's accounting with the runtime's count of the plain build,
// the one that runs: the race detector's allocator does not pack small objects together (enum
// strings cost more under it), and it makes these tests slow.

// memKept compiles n copies of a schema and returns them with what each keeps on the heap, as
// the runtime counts it (the documents they were compiled from dropped).
func memKept(t *testing.T, raw func(tag int) string, n int) ([]*Schema, int) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := make([]*Schema, n)
	for i := range kept {
		doc, err := decodeSchema([]byte(raw(i)), wire.DefaultLimits.MaxDepth)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if kept[i], err = CompileSchema(doc, false); err != nil {
			t.Fatalf("compile: %v", err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return kept, (int(after.HeapAlloc) - int(before.HeapAlloc)) / n
}

// TestSchemaMemoryMeasured: what the cache charges for a compiled schema (HeapBytes plus its
// margin) is at least what the runtime counts the schema keeping, and not far more, for schemas of
// every shape at the request limits; and schemacheck.MemoryBound, the check made before compiling, is
// at least the charge, so that a schema it admits cannot keep more than schemacheck.MaxSchemaMemory.
func TestSchemaMemoryMeasured(t *testing.T) {
	for _, sh := range memShapes {
		t.Run(sh.name, func(t *testing.T) {
			doc, err := decodeSchema([]byte(sh.doc(0)), wire.DefaultLimits.MaxDepth)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			bound := schemacheck.MemoryBound(doc)
			if bound > schemacheck.MaxSchemaMemory {
				t.Fatalf("bound %d is over schemacheck.MaxSchemaMemory: make the shape fit the limits", bound)
			}
			schemas, kept := memKept(t, sh.doc, 2)
			charge := schemaCharge(schemas[0])
			t.Logf("%7d bytes of JSON keep %8d bytes; charged %8d (%.2f×), bound %8d (%.2f×)",
				len(sh.doc(0)), kept, charge, float64(charge)/float64(kept), bound, float64(bound)/float64(charge))
			// The slack is the runtime's noise between two counts (pools, the tests' own state).
			const noise = 16 << 10
			if kept > charge+noise {
				t.Errorf("keeps %d bytes, more than its charge %d", kept, charge)
			}
			if charge > 2*kept+4*noise {
				t.Errorf("charged %d, more than twice the %d bytes it keeps", charge, kept)
			}
			if bound < charge {
				t.Errorf("bound %d before compiling is below the charge %d after", bound, charge)
			}
			runtime.KeepAlive(schemas)
		})
	}
}

// TestSchemaCacheHeapBounded sends a stream of distinct large schemas of several shapes through
// the engine: after each, the live heap stays within the cache's bound plus a fixed overhead, and
// at the end what the cache is charged is at least what it really holds (the heap it frees when
// dropped) and not more than twice that.
func TestSchemaCacheHeapBounded(t *testing.T) {
	shapes := []int{0, 4, 14, 15, 6, 18} // subschemas, properties, patterns, enum strings, anyOf
	var base, now runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	e := NewEngine(wire.Limits{})
	// The overhead is what one request's trees and the runtime hold beside the cache: the
	// largest schema document here decodes to less than 12 MiB.
	const overhead = 24 << 20
	peak := 0
	for i := range 24 {
		sh := memShapes[shapes[i%len(shapes)]]
		body := fmt.Sprintf(`{"task_id":"t","expected_schema":%s,"submitted_output":[]}`, sh.doc(1000+i))
		if _, _, err := e.Respond([]byte(body), Envelope{}, nil); err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		runtime.GC()
		runtime.ReadMemStats(&now)
		live := int(now.HeapAlloc) - int(base.HeapAlloc)
		peak = max(peak, live)
		if live > SchemaCacheBytes+overhead {
			t.Fatalf("after %d schemas the heap grew by %d bytes, more than the cache's %d plus %d", i+1, live, SchemaCacheBytes, overhead)
		}
		if b := e.cache.Bytes(); b > SchemaCacheBytes {
			t.Fatalf("the cache is charged %d, over its bound %d", b, SchemaCacheBytes)
		}
	}
	held, charged, n := int(now.HeapAlloc), e.cache.Bytes(), e.cache.Len()
	runtime.KeepAlive(e)
	e = nil
	runtime.GC()
	runtime.ReadMemStats(&now)
	held -= int(now.HeapAlloc)
	t.Logf("24 large schemas: heap peak +%d MiB; the cache holds %d schemas, charged %d MiB, freeing %d MiB when dropped",
		peak>>20, n, charged>>20, held>>20)
	if n < 2 {
		t.Errorf("the cache holds %d schemas, want at least 2", n)
	}
	if held > charged || charged > 2*held {
		t.Errorf("the cache is charged %d for %d bytes it holds", charged, held)
	}
}
