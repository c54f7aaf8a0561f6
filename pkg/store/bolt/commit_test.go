package bolt

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

func openGroup(t *testing.T) *groupCommit { return openLingering(t, 0) }

func openLingering(t *testing.T, linger time.Duration) *groupCommit {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), FileName), 0o600, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return newGroupCommit(db, linger)
}

// put writes key in bucket b and then returns fail.
func put(key string, fail error) func(*bbolt.Tx) error {
	return func(tx *bbolt.Tx) error {
		if err := tx.Bucket([]byte("b")).Put([]byte(key), []byte("v")); err != nil {
			return err
		}
		return fail
	}
}

func keys(t *testing.T, g *groupCommit) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	if err := g.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("b")).ForEach(func(k, _ []byte) error { got[string(k)] = true; return nil })
	}); err != nil {
		t.Fatalf("view: %v", err)
	}
	return got
}

// A function that fails after writing leaves nothing behind, and the others of its batch still
// commit; a panic is an error of its own function, not of the process.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	g := openGroup(t)
	errBoom := errors.New("boom")
	fns := []func(*bbolt.Tx) error{
		put("a", nil),
		put("failed", errBoom),
		put("c", nil),
		func(*bbolt.Tx) error { panic("bug") },
		put("e", nil),
	}
	batch := make([]*groupWrite, len(fns))
	for i, fn := range fns {
		batch[i] = &groupWrite{fn: fn, done: make(chan error, 1)}
	}
	g.commit(batch)

	for i, w := range batch {
		err := <-w.done
		switch i {
		case 1:
			if !errors.Is(err, errBoom) {
				t.Errorf("write %d: got %v, want %v", i, err, errBoom)
			}
		case 3:
			if err == nil {
				t.Errorf("write %d: a panic returned no error", i)
			}
		default:
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
		}
	}
	got, want := keys(t, g), map[string]bool{"a": true, "c": true, "e": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("committed keys %v, want %v", got, want)
	}
}

// Concurrent writers all land, whatever batches they were grouped into.
func TestGroupCommitConcurrent(t *testing.T) {
	g := openGroup(t)
	const writers = 200
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- g.update(put(fmt.Sprint(i), nil))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("update: %v", err)
		}
	}
	if got := len(keys(t, g)); got != writers {
		t.Errorf("%d keys committed, want %d", got, writers)
	}
}

// txOf writes key and reports the id of the transaction it ran in: writes sharing a commit share
// the id.
func txOf(key string, ids chan<- int) func(*bbolt.Tx) error {
	return func(tx *bbolt.Tx) error {
		ids <- int(tx.ID())
		return tx.Bucket([]byte("b")).Put([]byte(key), []byte("v"))
	}
}

// runWrites runs n writes concurrently and fails the test if they have
// not all returned within a generous bound (a write stuck waiting for company would never return).
func runWrites(t *testing.T, n int, write func(i int) error) {
	t.Helper()
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- write(i) }()
	}
	timeout := time.After(30 * time.Second)
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("write: %v", err)
			}
		case <-timeout:
			t.Fatal("writes still waiting after 30 s")
		}
	}
}

// Deferrable writes wait out the linger and then share one commit.
func TestGroupCommitDeferredWritesShareACommit(t *testing.T) {
	const linger = 200 * time.Millisecond
	g := openLingering(t, linger)
	ids := make(chan int, 20)
	start := time.Now()
	runWrites(t, 20, func(i int) error { return g.updateDeferred(txOf(fmt.Sprint(i), ids)) })
	if waited := time.Since(start); waited < linger {
		t.Errorf("deferred writes returned after %v, before the linger of %v", waited, linger)
	}
	close(ids)
	seen := map[int]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 {
		t.Errorf("20 deferred writes ran in %d transactions, want 1", len(seen))
	}
}

// A write that cannot wait does not wait for the deferred ones, nor carry them: it commits in a
// transaction of its own while they wait out the linger.
func TestGroupCommitUrgentWriteGoesFirst(t *testing.T) {
	const linger = 2 * time.Second // far longer than a commit, even on a slow machine
	g := openLingering(t, linger)
	ids := make(chan int, 2)
	deferred := make(chan error, 1)
	start := time.Now()
	go func() { deferred <- g.updateDeferred(txOf("history", ids)) }()
	for { // until the deferred write is queued
		g.mu.Lock()
		n := len(g.deferred)
		g.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	runWrites(t, 1, func(int) error { return g.update(txOf("allowance", ids)) })
	select {
	case <-deferred:
		t.Fatal("the deferred write committed with the urgent one")
	default:
	}
	if err := <-deferred; err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < linger {
		t.Errorf("the deferred write returned after %v, before the linger of %v", waited, linger)
	}
	if a, b := <-ids, <-ids; a == b {
		t.Errorf("both writes ran in transaction %d; want the urgent one in its own", a)
	}
	if got := len(keys(t, g)); got != 2 {
		t.Errorf("%d keys committed, want 2", got)
	}
}

// maxDeferred deferrable writes do not wait out the linger.
func TestGroupCommitFullBatchDoesNotWait(t *testing.T) {
	g := openLingering(t, time.Hour)
	runWrites(t, maxDeferred, func(i int) error { return g.updateDeferred(put(fmt.Sprint(i), nil)) })
	if got := len(keys(t, g)); got != maxDeferred {
		t.Errorf("%d keys committed, want %d", got, maxDeferred)
	}
}

// The linger is the caller's choice: none unless asked for, since a caller that records before it
// answers would wait it out on every request.
func TestHistoryLingerOption(t *testing.T) {
	for _, d := range []time.Duration{0, 10 * time.Millisecond} {
		var opts []Option
		if d > 0 {
			opts = append(opts, WithHistoryLinger(d))
		}
		s, err := Open(filepath.Join(t.TempDir(), FileName), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if s.writes.linger != d {
			t.Errorf("linger %v, want %v", s.writes.linger, d)
		}
		s.Close()
	}
}

// The committer's choice: urgent writes at once and alone while the deferred ones are not due;
// due deferred ones go with whatever urgent ones are pending, so a steady stream of urgent writes
// never starves them.
func TestGroupCommitTake(t *testing.T) {
	const linger = 10 * time.Millisecond
	g := newGroupCommit(nil, linger)
	t0 := time.Now()
	u1, u2, d1 := &groupWrite{}, &groupWrite{}, &groupWrite{}
	if b, w := g.take(t0); b != nil || w != 0 {
		t.Fatalf("empty queues: batch %d, wait %v; want nothing", len(b), w)
	}
	g.deferred, g.since = []*groupWrite{d1}, t0
	if b, w := g.take(t0.Add(4 * time.Millisecond)); b != nil || w != 6*time.Millisecond {
		t.Fatalf("a deferred write 4 ms old: batch %d, wait %v; want none and 6ms", len(b), w)
	}
	g.urgent = []*groupWrite{u1}
	if b, _ := g.take(t0.Add(5 * time.Millisecond)); len(b) != 1 || b[0] != u1 || len(g.deferred) != 1 {
		t.Fatalf("urgent with a deferred write not due: batch %d; want the urgent one alone", len(b))
	}
	g.urgent = []*groupWrite{u2}
	if b, _ := g.take(t0.Add(linger)); len(b) != 2 || b[0] != u2 || b[1] != d1 || len(g.deferred) != 0 {
		t.Fatalf("urgent with a due deferred write: batch %d; want both", len(b))
	}
	full := make([]*groupWrite, maxDeferred)
	g.deferred, g.since = full, t0
	if b, _ := g.take(t0); len(b) != maxDeferred {
		t.Fatalf("%d deferred writes at once: batch %d; want them all", maxDeferred, len(b))
	}
}
