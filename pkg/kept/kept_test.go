package kept_test

import (
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/kept"
)

// The LRU keeps its bound, drops the least recently used, and a Get makes a value recent.
func TestLRUDropsTheLeastRecentlyUsed(t *testing.T) {
	c := kept.NewLRU[int, string](3)
	for i := range 3 {
		c.Put(i, "v")
	}
	if _, ok := c.Get(0); !ok { // 0 is now the most recently used, 1 the least
		t.Fatal("0 not kept")
	}
	c.Put(3, "new")
	if c.Len() != 3 {
		t.Fatalf("Len = %d, want 3", c.Len())
	}
	for k, want := range map[int]bool{0: true, 1: false, 2: true, 3: true} {
		if _, got := c.Get(k); got != want {
			t.Errorf("Get(%d) kept %v, want %v", k, got, want)
		}
	}
	c.Put(3, "newer")
	if v, _ := c.Get(3); v != "newer" || c.Len() != 3 {
		t.Errorf("a second Put: %q, %d kept", v, c.Len())
	}
}

// The ration hands out its burst, then perSecond a second, all or none, and never more than
// its burst after a long pause.
func TestRationIsATokenBucket(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := kept.NewRation(2, 4)
	if !r.Take(3, now) || r.Take(2, now) || !r.Take(1, now) || r.Take(1, now) {
		t.Fatal("the burst of 4 is not handed out exactly, all or none")
	}
	now = now.Add(time.Second)
	if !r.Take(2, now) || r.Take(1, now) {
		t.Error("a second later, 2 and no more")
	}
	now = now.Add(time.Hour)
	if !r.Take(4, now) || r.Take(1, now) {
		t.Error("after an hour, the burst and no more")
	}
}
