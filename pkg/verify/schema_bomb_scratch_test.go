package verify

import (
	"fmt"
	"testing"
	"time"
)

func TestScratchBomb(t *testing.T) {
	for _, depth := range []int{10, 14, 18} {
		defs := map[string]any{}
		for i := 0; i < depth; i++ {
			next := fmt.Sprintf("#/$defs/d%d", i+1)
			defs[fmt.Sprintf("d%d", i)] = map[string]any{"allOf": []any{map[string]any{"$ref": next}, map[string]any{"$ref": next, "minimum": 0}}}
		}
		defs[fmt.Sprintf("d%d", depth)] = map[string]any{"type": "integer"}
		sch, err := CompileSchema(map[string]any{"$defs": defs, "$ref": "#/$defs/d0"}, false)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		w := schWalkerPool.Get().(*schWalker)
		w.enter(sch.root, 1, true)
		tw := time.Since(t0)
		n := w.tally.Total
		w.release()
		t0 = time.Now()
		_ = sch.lib.Validate(1)
		t.Logf("depth %d: walker %v (%d checks), library %v", depth, tw, n, time.Since(t0))
	}
}
