package bolt

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

func openGroup(t *testing.T) *groupCommit {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), FileName), 0o600, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return &groupCommit{db: db}
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
