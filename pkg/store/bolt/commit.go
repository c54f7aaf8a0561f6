package bolt

import (
	"fmt"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// groupCommit runs concurrent write functions together in one bbolt transaction, so that they share
// one commit (bbolt syncs the file twice per commit) instead of queueing for one each. Unlike
// bbolt's own DB.Batch, it never makes a write on the request path wait for company: such a write
// that finds no commit under way starts one at once, and the writes that arrive while a commit runs
// form the next one. Batches therefore grow with the load and add no latency when it is light.
//
// With a linger, deferrable writes (history records, which no answer waits for) are queued apart
// and wait up to linger for others to share their commit: under load the history alone otherwise
// kept a commit, with its syncs, running back to back. Writes that cannot wait do not wait for
// them: they commit at once, in commits of their own until the deferred ones are due, so that a
// payment's reservation rarely waits behind a batch of history pages; maxDeferred deferrable
// writes do not wait out the linger.
//
// Durability is unchanged: a write returns only after the commit that holds it has synced, so
// nothing is acknowledged before it is on disk.
type groupCommit struct {
	db       *bbolt.DB
	linger   time.Duration // how long deferrable writes may wait for company; 0: not at all
	mu       sync.Mutex
	urgent   []*groupWrite // writes that cannot wait
	deferred []*groupWrite // deferrable writes (only with a linger)
	since    time.Time     // when the oldest deferred write arrived
	running  bool          // a committer goroutine is draining the queues
	flushing bool          // the store is closing: deferred writes wait for nobody
	kick     chan struct{} // wakes a committer waiting for company (buffered 1)
}

// maxDeferred deferrable writes commit without waiting out the linger.
const maxDeferred = 1024

func newGroupCommit(db *bbolt.DB, linger time.Duration) *groupCommit {
	return &groupCommit{db: db, linger: linger, kick: make(chan struct{}, 1)}
}

type groupWrite struct {
	fn   func(*bbolt.Tx) error
	done chan error
}

// update runs fn in a write transaction, possibly shared with other writes, and returns when that
// transaction has committed (or failed). As with DB.Batch, fn may run more than once (when another
// function of its batch fails, the rest are run again without it), so it must set its results
// afresh on each run; a function that fails is run again on its own, so its error is the one it
// gets in a transaction of its own.
func (g *groupCommit) update(fn func(*bbolt.Tx) error) error { return g.write(fn, false) }

// updateDeferred is update for a write that may wait up to g.linger for company.
func (g *groupCommit) updateDeferred(fn func(*bbolt.Tx) error) error { return g.write(fn, true) }

func (g *groupCommit) write(fn func(*bbolt.Tx) error, deferrable bool) error {
	w := &groupWrite{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	if deferrable && g.linger > 0 {
		if len(g.deferred) == 0 {
			g.since = time.Now()
		}
		g.deferred = append(g.deferred, w)
		if len(g.deferred) >= maxDeferred {
			g.wake()
		}
	} else {
		g.urgent = append(g.urgent, w)
		g.wake()
	}
	start := !g.running
	g.running = true
	g.mu.Unlock()
	if start {
		go g.run()
	}
	return <-w.done
}

// flush makes every deferred write due at once, now and from now on: a closing store waits for
// its writes, not for the linger.
func (g *groupCommit) flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flushing = true
	g.wake()
}

// wake ends a committer's wait for company, if it is waiting.
func (g *groupCommit) wake() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// run commits batches of pending writes until none are left.
func (g *groupCommit) run() {
	for {
		g.mu.Lock()
		batch, wait := g.take(time.Now())
		if batch == nil && wait <= 0 {
			g.running = false
		}
		g.mu.Unlock()
		switch {
		case batch != nil:
			g.commit(batch)
		case wait > 0:
			g.waitForCompany(wait)
		default:
			return
		}
	}
}

// take removes the next batch from the queues: the urgent writes at once, the deferred ones once
// they have waited out the linger or are enough, together with any urgent ones then pending (so
// that a steady stream of urgent writes never starves them). With nothing to commit yet, wait is
// how long the deferred ones still wait for company; with nothing queued, both are zero. The
// caller holds g.mu.
func (g *groupCommit) take(now time.Time) (batch []*groupWrite, wait time.Duration) {
	if len(g.deferred) > 0 {
		wait = g.linger - now.Sub(g.since)
	}
	due := len(g.deferred) > 0 && (wait <= 0 || len(g.deferred) >= maxDeferred || g.flushing)
	if len(g.urgent) == 0 && !due {
		return nil, max(wait, 0)
	}
	batch, g.urgent = g.urgent, nil
	if due {
		batch, g.deferred = append(batch, g.deferred...), nil
	}
	return batch, 0
}

// waitForCompany sleeps for d or until a write that cannot wait arrives.
func (g *groupCommit) waitForCompany(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.kick:
	case <-t.C:
	}
}

// commit runs batch in one transaction. A function that fails rolls the transaction back; the
// others are committed without it, and then it runs alone, so one caller's error (a replayed
// payment) never fails or half-applies another's write.
func (g *groupCommit) commit(batch []*groupWrite) {
	var solo []*groupWrite
	for len(batch) > 0 {
		failed := -1
		err := g.db.Update(func(tx *bbolt.Tx) error {
			for i, w := range batch {
				if err := safeCall(w.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, w := range batch {
				w.done <- err
			}
			break
		}
		solo = append(solo, batch[failed])
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
	for _, w := range solo {
		w.done <- g.db.Update(func(tx *bbolt.Tx) error { return safeCall(w.fn, tx) })
	}
}

// safeCall turns a panic in fn into an error, as DB.Batch does: it runs on the committer
// goroutine, where a panic would otherwise take the whole server down.
func safeCall(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write transaction panicked: %v", p)
		}
	}()
	return fn(tx)
}
