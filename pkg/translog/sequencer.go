package translog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// Point names a place between a step's storage calls, where a test's Crash hook may stop it.
type Point string

// The points a step passes, in order.
const (
	BeforeFinish  Point = "before-finish"  // about to finish the head's batch
	AfterHashes   Point = "after-hashes"   // the batch's stored hashes are written
	AfterLeaves   Point = "after-leaves"   // its leaves are written
	AfterPending  Point = "after-pending"  // its pending entries are deleted
	BeforeCommit  Point = "before-commit"  // the new head is computed, not yet swapped in
	AfterCommit   Point = "after-commit"   // the new head is swapped in, its batch not finished
	AfterFinished Point = "after-finished" // the batch is marked finished
)

// BatchCommitter is a Storage with transactions (bbolt): it commits a batch and everything derived
// from it at once, so a step costs one commit instead of the five of the single-item protocol, and
// a crash leaves all of it or none (Sequencer's single-item protocol is for stores without
// transactions).
type BatchCommitter interface {
	// CommitLogBatch does in one transaction what a step and its finish do: if the stored head's
	// size is still prevSize (else ErrHeadMoved), it writes next (whose Batch is empty), the
	// stored hashes from storage index first, the leaves from index prevSize, their ids'
	// indices, and deletes their pending entries.
	CommitLogBatch(ctx context.Context, prevSize int64, next Head, first int64, hashes []Hash, leaves []Leaf) error
}

// ErrCrashed is what a step returns when the Crash hook stopped it.
var ErrCrashed = errors.New("translog: sequencer stopped by its crash hook")

// Sequencer appends pending leaves to the tree: the service records each answer's leaf as pending
// (keyed by its verification id), and a step appends them. Any number may run against one
// storage: the head's compare-and-swap decides.
//
// Why no leaf gets two indices, none is skipped, and nothing published changes:
//
// The Sequencer works over a Storage of a few single-item operations, so that the same argument
// holds for bbolt, memory and DynamoDB (which has no transaction large enough for a batch). The
// tree head (size, root hash, signed checkpoint, and the batch of leaves the last commit added)
// is one item, and SwapLogHead, a compare-and-swap on its size, is the only commit point. A step:
//
//  1. reads the head; if its batch is not marked finished, finishes it (below);
//  2. reads up to MaxBatch pending leaves, drops (and deletes) those whose verification id
//     already has an index, and computes in memory the stored hashes, the new root and the
//     signed checkpoint of the tree with the rest appended after the head's size;
//  3. commits: SwapLogHead(old size → new head holding the batch). Nothing was written before
//     this point, so a sequencer that crashes or loses the race leaves no trace;
//  4. finishes the batch: writes its stored hashes and its leaves (index → leaf, id → index),
//     deletes its pending entries, and marks the head finished (another swap on the same size).
//
// Exactly one index per leaf: indices are assigned only by a successful swap from size n to
// n+len(batch), and a swap succeeds only against the size it read, so two sequencers can never
// both commit on one size: the loser's batch is dropped unwritten. No gap: a commit appends its
// whole batch after the size it replaced. No leaf twice: a step finishes the last batch before it
// reads pending leaves, so every leaf already committed has its id → index entry by then and is
// dropped (a pending entry that outlived its commit, through a crash before its deletion or a
// retried write of the service, is deleted then). A crash between 3 and 4 leaves a committed,
// unfinished head: readers overlay its batch (View) and the next step finishes it. Finishing is
// idempotent and deterministic: the stored hashes of a batch follow from its leaves and the hashes
// of the tree before it, which were all finished before the batch was committed, so two
// sequencers finishing one batch write the same bytes, and a published tile never changes.
// Marking finished is a swap on the head's own size: it fails, harmlessly, once a newer commit
// has replaced the head (sizes only grow, every commit adds at least one leaf).
//
// A store with transactions (bbolt) may implement BatchCommitter instead: steps 3 and 4 then are
// one transaction, conditional on the head's size like the swap, and the argument is the same
// with nothing ever left unfinished.
type Sequencer struct {
	Storage Storage
	Key     LogKey
	// Batch is how many pending leaves one commit appends at most; 0 means MaxBatch. The local
	// server takes more (its head is a bbolt value, not a DynamoDB item), so that a step's fixed
	// commits are shared by more leaves under load.
	Batch int
	// Crash, when set, is asked at every Point; true stops the step there with ErrCrashed, as a
	// process killed at that moment would stop. For tests.
	Crash func(Point) bool
}

func (q *Sequencer) crash(p Point) bool { return q.Crash != nil && q.Crash(p) }

// Step finishes the last batch if needed and commits at most one new batch of up to MaxBatch
// pending leaves. It returns how many leaves it committed; a lost race is (0, nil).
func (q *Sequencer) Step(ctx context.Context) (int, error) {
	if q.Storage == nil || q.Key.VerifierKey == "" {
		return 0, errors.New("sequencer: no storage or no log key")
	}
	head, err := q.Storage.LogHead(ctx)
	if err != nil {
		return 0, fmt.Errorf("sequencer: read head: %w", err)
	}
	if len(head.Batch) > 0 {
		if err := q.finish(ctx, head); err != nil {
			return 0, err
		}
	}
	batch := q.Batch
	if batch <= 0 {
		batch = MaxBatch
	}
	pending, err := q.Storage.PendingLeaves(ctx, batch)
	if err != nil {
		return 0, fmt.Errorf("sequencer: read pending leaves: %w", err)
	}
	if len(pending) == 0 {
		return 0, nil
	}
	ids := make([]string, len(pending))
	for i, l := range pending {
		ids[i] = l.ID
	}
	known, err := q.Storage.LogIndexes(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("sequencer: read indices: %w", err)
	}
	var fresh []Leaf
	var done []string
	for _, l := range pending {
		if _, ok := known[l.ID]; ok {
			done = append(done, l.ID)
			continue
		}
		fresh = append(fresh, l)
	}
	if len(done) > 0 {
		if err := q.Storage.DeletePendingLeaves(ctx, done); err != nil {
			return 0, fmt.Errorf("sequencer: delete pending leaves already in the log: %w", err)
		}
	}
	if len(fresh) == 0 {
		return 0, nil
	}
	extra := map[int64]Hash{}
	r := overlay{ctx: ctx, s: q.Storage, extra: extra}
	first, hashes, err := appendHashes(head.Size, fresh, r, extra)
	if err != nil {
		return 0, fmt.Errorf("sequencer: %w", err)
	}
	size := head.Size + int64(len(fresh))
	root, err := tlog.TreeHash(size, r)
	if err != nil {
		return 0, fmt.Errorf("sequencer: root of %d leaves: %w", size, err)
	}
	cp, err := q.Key.WithContext(ctx).Sign(size, root)
	if err != nil {
		return 0, fmt.Errorf("sequencer: sign checkpoint: %w", err)
	}
	if q.crash(BeforeCommit) {
		return 0, ErrCrashed
	}
	if bc, ok := q.Storage.(BatchCommitter); ok {
		err := bc.CommitLogBatch(ctx, head.Size, Head{Size: size, Hash: root, Checkpoint: cp}, first, hashes, fresh)
		if errors.Is(err, ErrHeadMoved) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("sequencer: commit batch to %d: %w", size, err)
		}
		return len(fresh), nil
	}
	next := Head{Size: size, Hash: root, Checkpoint: cp, Batch: fresh}
	if err := q.Storage.SwapLogHead(ctx, head.Size, next); err != nil {
		if errors.Is(err, ErrHeadMoved) {
			return 0, nil // another sequencer committed on this size first; its batch stands
		}
		return 0, fmt.Errorf("sequencer: commit head %d: %w", size, err)
	}
	if q.crash(AfterCommit) {
		return 0, ErrCrashed
	}
	if err := q.finishWith(ctx, next, first, hashes); err != nil {
		return len(fresh), err
	}
	return len(fresh), nil
}

// finish writes a committed batch's stored hashes and leaves, deletes its pending entries and
// marks the head finished. It is idempotent: see Sequencer.
func (q *Sequencer) finish(ctx context.Context, head Head) error {
	start := head.Size - int64(len(head.Batch))
	extra := map[int64]Hash{}
	first, hashes, err := appendHashes(start, head.Batch, overlay{ctx: ctx, s: q.Storage, extra: extra}, extra)
	if err != nil {
		return fmt.Errorf("sequencer: finish batch at %d: %w", start, err)
	}
	return q.finishWith(ctx, head, first, hashes)
}

// finishWith is finish with the batch's stored hashes (from storage index first) already
// computed, by the step that committed it.
func (q *Sequencer) finishWith(ctx context.Context, head Head, first int64, hashes []Hash) error {
	if q.crash(BeforeFinish) {
		return ErrCrashed
	}
	start := head.Size - int64(len(head.Batch))
	if err := q.Storage.PutLogHashes(ctx, first, hashes); err != nil {
		return fmt.Errorf("sequencer: write hashes at %d: %w", start, err)
	}
	if q.crash(AfterHashes) {
		return ErrCrashed
	}
	if err := q.Storage.PutLogLeaves(ctx, start, head.Batch); err != nil {
		return fmt.Errorf("sequencer: write leaves at %d: %w", start, err)
	}
	if q.crash(AfterLeaves) {
		return ErrCrashed
	}
	ids := make([]string, len(head.Batch))
	for i, l := range head.Batch {
		ids[i] = l.ID
	}
	if err := q.Storage.DeletePendingLeaves(ctx, ids); err != nil {
		return fmt.Errorf("sequencer: delete pending leaves at %d: %w", start, err)
	}
	if q.crash(AfterPending) {
		return ErrCrashed
	}
	done := head
	done.Batch = nil
	if err := q.Storage.SwapLogHead(ctx, head.Size, done); err != nil && !errors.Is(err, ErrHeadMoved) {
		return fmt.Errorf("sequencer: mark head %d finished: %w", head.Size, err)
	}
	if q.crash(AfterFinished) {
		return ErrCrashed
	}
	return nil
}

// Drain runs steps until no pending leaf is left (or ctx ends), and returns how many leaves it
// committed.
func (q *Sequencer) Drain(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := q.Step(ctx)
		total += n
		if err != nil {
			return total, err
		}
		if n > 0 {
			continue
		}
		// Nothing committed: the log is drained, or another sequencer won the race (and its
		// leaves may not be all there was), so look once more before stopping.
		pending, err := q.Storage.PendingLeaves(ctx, 1)
		if err != nil {
			return total, fmt.Errorf("sequencer: read pending leaves: %w", err)
		}
		if len(pending) == 0 {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// Run is the local server's sequencer: a step every interval until ctx ends, a backlog drained at
// once. Failures are logged and retried at the next tick; the leaves wait, pending, meanwhile.
func (q *Sequencer) Run(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := q.Drain(ctx); err != nil && ctx.Err() == nil {
			log.Warn("log sequencer step failed; retrying", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
