package storetest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// RunLog runs the receipt log's contract (SPEC §15) against stores made by open, as Run does.
func RunLog(t *testing.T, open func(t *testing.T, now func() time.Time) store.ReceiptLog) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s store.ReceiptLog, clk *testclock.Clock)
	}{
		{"ReceiptRoundTrip", testReceiptRoundTrip},
		{"ReceiptExpires", testReceiptExpires},
		{"HeadSwapIsConditional", testHeadSwap},
		{"SequenceAndProve", testSequenceAndProve},
		{"CrashAtEveryPoint", testCrashAtEveryPoint},
		{"ConcurrentSequencers", testConcurrentSequencers},
		{"RecordReadableThroughSequencing", testRecordThroughSequencing},
		{"IdentityClaimedOnce", testIdentityClaimedOnce},
		{"IdentityOfAnOlderLog", testIdentityOfOlderLog},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := testclock.New(testclock.Epochs()[0])
			tc.run(t, open(t, clk.Now), clk)
		})
	}
}

// LogKey is a fixed log key for tests: the same seed every run.
func LogKey(t testing.TB) translog.LogKey {
	t.Helper()
	seed := sha256.Sum256([]byte("storetest log key"))
	k, err := translog.NewLogKey("verifier.test/log", receipt.Key{Version: "log-test", Private: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sampleReceipt is the record of verification i.
func sampleReceipt(clk *testclock.Clock, i int) store.Receipt {
	id := fmt.Sprintf("ver-%05d", i)
	return store.Receipt{
		VerificationID: id, ReceiptHash: sha256.Sum256([]byte(id)), Result: []string{"pass", "fail"}[i%2],
		VerifiedAt: clk.Now().UTC().Truncate(time.Millisecond), KeyVersion: "v1",
		OutputHash: fmt.Sprintf("%064x", i), SchemaHash: fmt.Sprintf("%064x", i+1), RulesHash: fmt.Sprintf("%064x", i+2),
		Expires: clk.Now().Add(90 * 24 * time.Hour),
	}
}

func testReceiptRoundTrip(t *testing.T, s store.ReceiptLog, clk *testclock.Clock) {
	ctx := context.Background()
	free := sampleReceipt(clk, 1)
	paid := sampleReceipt(clk, 2)
	paid.RequestHash = fmt.Sprintf("%064x", 99)
	paid.Settlement = json.RawMessage(`{"success":true,"transaction":"0xabc","network":"eip155:84532","payer":"0x1111111111111111111111111111111111111111"}`)
	paid.EnforceRules, paid.VerifierVersion, paid.TaskID = true, "1.2.3", "invoice-42"
	for _, r := range []store.Receipt{free, paid, free} { // the second write of free changes nothing
		if err := s.RecordReceipt(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []store.Receipt{free, paid} {
		got, ok, err := s.Receipt(ctx, want.VerificationID)
		if err != nil || !ok {
			t.Fatalf("Receipt(%s) = ok %v, %v", want.VerificationID, ok, err)
		}
		if !got.VerifiedAt.Equal(want.VerifiedAt) || !got.Expires.Equal(want.Expires) {
			t.Errorf("times: got %v/%v, want %v/%v", got.VerifiedAt, got.Expires, want.VerifiedAt, want.Expires)
		}
		got.VerifiedAt, got.Expires, want.VerifiedAt, want.Expires = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("Receipt round trip:\n got %s\nwant %s", gj, wj)
		}
	}
	if _, ok, err := s.Receipt(ctx, "never-recorded"); ok || err != nil {
		t.Errorf("Receipt(unknown) = ok %v, %v; want not found", ok, err)
	}
	pending, err := s.PendingLeaves(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 || pending[0].ID != free.VerificationID || pending[0].Hash != free.ReceiptHash || pending[1].ID != paid.VerificationID {
		t.Errorf("pending = %+v, want free then paid, once each", pending)
	}
}

func testReceiptExpires(t *testing.T, s store.ReceiptLog, clk *testclock.Clock) {
	ctx := context.Background()
	r := sampleReceipt(clk, 7)
	r.Expires = clk.Now().Add(time.Hour)
	if err := s.RecordReceipt(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Receipt(ctx, r.VerificationID); !ok {
		t.Fatal("a live record is not found")
	}
	clk.Advance(2 * time.Hour)
	if _, ok, err := s.Receipt(ctx, r.VerificationID); ok || err != nil {
		t.Errorf("an expired record: ok %v, %v; want gone", ok, err)
	}
}

func testHeadSwap(t *testing.T, s store.ReceiptLog, clk *testclock.Clock) {
	ctx := context.Background()
	h, err := s.LogHead(ctx)
	if err != nil || h.Size != 0 || h.Checkpoint != nil {
		t.Fatalf("empty head = %+v, %v", h, err)
	}
	next := translog.Head{Size: 2, Hash: tlog.Hash{1}, Checkpoint: []byte("cp"), Batch: []translog.Leaf{{ID: "a"}, {ID: "b", Hash: tlog.Hash{2}}}}
	if err := s.SwapLogHead(ctx, 0, next); err != nil {
		t.Fatal(err)
	}
	if err := s.SwapLogHead(ctx, 0, translog.Head{Size: 1}); !errors.Is(err, translog.ErrHeadMoved) {
		t.Errorf("a second swap from size 0 = %v, want ErrHeadMoved", err)
	}
	got, err := s.LogHead(ctx)
	if err != nil || got.Size != 2 || got.Hash != next.Hash || string(got.Checkpoint) != "cp" || len(got.Batch) != 2 || got.Batch[1] != next.Batch[1] {
		t.Errorf("head = %+v, %v; want %+v", got, err, next)
	}
	if _, err := s.ReadLogHashes(ctx, []int64{0}); !errors.Is(err, translog.ErrNotFound) {
		t.Errorf("reading an unwritten hash = %v, want ErrNotFound", err)
	}
}

// proofStride is how far apart the leaves are whose proofs an intermediate checkLog checks.
const proofStride = 7

// checkLog checks the log holds exactly ids, each once, at indices 0…len(ids)-1 (the data tiles
// recomputed to the signed checkpoint by Audit, leaf by leaf), and that inclusion proofs verify
// under the checkpoint (tlog.CheckRecord, note.Open): every leaf's when all is set, else every
// proofStride-th and the last (each proof is a store read; the final check of a test proves all).
// It returns the checkpoint.
func checkLog(t *testing.T, s store.ReceiptLog, key translog.LogKey, want map[string]tlog.Hash, all bool) translog.Checkpoint {
	t.Helper()
	ctx := context.Background()
	v, err := translog.Read(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := translog.OpenCheckpoint(v.Head.Checkpoint, key.VerifierKey)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if cp.Size != int64(len(want)) || v.Head.Size != cp.Size {
		t.Fatalf("the tree has %d leaves (head %d), want %d", cp.Size, v.Head.Size, len(want))
	}
	leaves, err := translog.Audit(func(path string) ([]byte, error) {
		data, _, err := v.Tile(path)
		return data, err
	}, cp, nil)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	byHash := make(map[tlog.Hash]string, len(want))
	for id, leaf := range want {
		byHash[leaf] = id
	}
	seen := map[string]int64{}
	for i, l := range leaves {
		id, ok := byHash[l]
		if !ok {
			t.Fatalf("data tile leaf %d is no recorded verification's receipt hash", i)
		}
		if j, dup := seen[id]; dup {
			t.Fatalf("%s is at index %d and at %d", id, j, i)
		}
		seen[id] = int64(i)
	}
	if len(seen) != len(want) {
		t.Fatalf("the data tiles hold %d of the %d verifications", len(seen), len(want))
	}
	for id, i := range seen {
		if !all && i%proofStride != 0 && i != int64(len(leaves))-1 {
			continue
		}
		inc, ok, err := v.Prove(id)
		if err != nil || !ok {
			t.Fatalf("Prove(%s) = ok %v, %v", id, ok, err)
		}
		if inc.Index != i {
			t.Fatalf("Prove(%s) gives index %d, the data tiles %d", id, inc.Index, i)
		}
		if _, err := translog.CheckInclusion(inc.Checkpoint, key.VerifierKey, want[id], inc.Index, inc.Proof); err != nil {
			t.Fatalf("inclusion of %s: %v", id, err)
		}
	}
	pending, err := s.PendingLeaves(ctx, 1)
	if err != nil || len(pending) != 0 {
		t.Errorf("pending after draining = %v, %v; want none", pending, err)
	}
	return cp
}

// checkConsistent checks every checkpoint's tree is a prefix of the next one's (tlog.CheckTree
// on a proof from the latest view).
func checkConsistent(t *testing.T, s store.ReceiptLog, cps []translog.Checkpoint) {
	t.Helper()
	v, err := translog.Read(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	last, err := translog.OpenCheckpoint(v.Head.Checkpoint, LogKey(t).VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range cps {
		p, err := v.ProveTree(old.Size)
		if err != nil {
			t.Fatalf("prove tree %d: %v", old.Size, err)
		}
		if err := tlog.CheckTree(p, last.Size, last.Hash, old.Size, old.Hash); err != nil {
			t.Fatalf("checkpoint of %d leaves is not consistent with the latest (%d): %v", old.Size, last.Size, err)
		}
	}
}

func testSequenceAndProve(t *testing.T, s store.ReceiptLog, clk *testclock.Clock) {
	ctx := context.Background()
	key := LogKey(t)
	q := &translog.Sequencer{Storage: s, Key: key}
	want := map[string]tlog.Hash{}
	var cps []translog.Checkpoint
	// Batches of several sizes, across tile boundaries (256) and MaxBatch.
	n := 0
	for _, batch := range []int{1, 2, 5, 300, 1, 255, 40} {
		for range batch {
			r := sampleReceipt(clk, n)
			n++
			want[r.VerificationID] = r.ReceiptHash
			if err := s.RecordReceipt(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		cps = append(cps, checkLog(t, s, key, want, false))
	}
	checkConsistent(t, s, cps)
	// A verification recorded again after it was sequenced is never sequenced again.
	if err := s.RecordReceipt(ctx, sampleReceipt(clk, 3)); err != nil {
		t.Fatal(err)
	}
	if added, err := q.Drain(ctx); err != nil || added != 0 {
		t.Errorf("draining a recorded-again verification added %d, %v; want 0", added, err)
	}
	checkLog(t, s, key, want, true)
}

// points are every place a sequencer can be stopped.
var points = []translog.Point{translog.BeforeFinish, translog.AfterHashes, translog.AfterLeaves,
	translog.AfterPending, translog.BeforeCommit, translog.AfterCommit, translog.AfterFinished}

func testCrashAtEveryPoint(t *testing.T, s store.ReceiptLog, clk *testclock.Clock) {
	ctx := context.Background()
	key := LogKey(t)
	want := map[string]tlog.Hash{}
	n := 0
	var cps []translog.Checkpoint
	for _, p := range points {
		for _, nth := range []int{1, 2} { // the first time the point is passed, then the second
			for range 3 {
				r := sampleReceipt(clk, n)
				n++
				want[r.VerificationID] = r.ReceiptHash
				if err := s.RecordReceipt(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			passed := 0
			crashing := &translog.Sequencer{Storage: s, Key: key, Crash: func(at translog.Point) bool {
				if at == p {
					passed++
				}
				return at == p && passed == nth
			}}
			for range 2 {
				if _, err := crashing.Step(ctx); err != nil && !errors.Is(err, translog.ErrCrashed) {
					t.Fatalf("crash at %s: %v", p, err)
				}
			}
			if _, err := (&translog.Sequencer{Storage: s, Key: key}).Drain(ctx); err != nil {
				t.Fatalf("after a crash at %s: %v", p, err)
			}
			cps = append(cps, checkLog(t, s, key, want, false))
		}
	}
	checkLog(t, s, key, want, true)
	checkConsistent(t, s, cps)
}

// Leaves, writers and sequencers of the concurrency contract (the numbers), and how
// often at least the killed sequencer must be stopped mid-batch, with up to maxTopUp leaves more
// to make it so.
const (
	minCrashes = 3
	maxTopUp   = 200
	logLeaves  = 1000
	logWriters = 50
)

// testConcurrentSequencers: 1,000 records from 50 writers while two sequencers race, one of
// them killed mid-batch again and again (its crash hook stops it at a random point); then every
// leaf is in the log exactly once at indices 0…999, every proof verifies, and every checkpoint
// the racing sequencers published is consistent with every later one.
func testConcurrentSequencers(t *testing.T, s store.ReceiptLog, clk *testclock.Clock) {
	ctx := context.Background()
	key := LogKey(t)
	want := make(map[string]tlog.Hash, logLeaves)
	var mu sync.Mutex
	var writers sync.WaitGroup
	for w := range logWriters {
		writers.Go(func() {
			for i := w; i < logLeaves; i += logWriters {
				r := sampleReceipt(clk, i)
				if err := s.RecordReceipt(ctx, r); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[r.VerificationID] = r.ReceiptHash
				mu.Unlock()
			}
		})
	}
	var crashes atomic.Int64
	rng := rand.New(rand.NewPCG(1, 2))
	var rngMu sync.Mutex
	killer := &translog.Sequencer{Storage: s, Key: key, Crash: func(translog.Point) bool {
		rngMu.Lock()
		defer rngMu.Unlock()
		if rng.IntN(2) == 0 {
			crashes.Add(1)
			return true
		}
		return false
	}}
	steady := &translog.Sequencer{Storage: s, Key: key}
	var cpMu sync.Mutex
	var cps []translog.Checkpoint
	done := make(chan struct{})
	var seqs sync.WaitGroup
	for _, q := range []*translog.Sequencer{killer, steady} {
		seqs.Go(func() {
			for {
				_, err := q.Step(ctx)
				if err != nil && !errors.Is(err, translog.ErrCrashed) {
					t.Error(err)
					return
				}
				if h, err := s.LogHead(ctx); err == nil && h.Size > 0 {
					cp, err := translog.OpenCheckpoint(h.Checkpoint, key.VerifierKey)
					if err != nil {
						t.Error(err)
						return
					}
					cpMu.Lock()
					cps = append(cps, cp)
					cpMu.Unlock()
				}
				select {
				case <-done:
					return
				default:
				}
			}
		})
	}
	writers.Wait()
	close(done)
	seqs.Wait()
	// A fast store can sequence everything in a few steps, leaving the killed sequencer few
	// chances to be stopped mid-batch: give it more leaves, alone, until it has been stopped
	// minCrashes times, so every run shows crashes whatever the store's speed.
	for i := logLeaves; crashes.Load() < minCrashes; i++ {
		if i >= logLeaves+maxTopUp {
			t.Fatalf("the killed sequencer was stopped %d times in %d extra leaves", crashes.Load(), maxTopUp)
		}
		r := sampleReceipt(clk, i)
		if err := s.RecordReceipt(ctx, r); err != nil {
			t.Fatal(err)
		}
		want[r.VerificationID] = r.ReceiptHash
		if _, err := killer.Step(ctx); err != nil && !errors.Is(err, translog.ErrCrashed) {
			t.Fatal(err)
		}
	}
	if _, err := steady.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	checkLog(t, s, key, want, true)
	checkConsistent(t, s, cps)
	t.Logf("%d leaves, %d checkpoints seen, the killed sequencer stopped %d times", len(want), len(cps), crashes.Load())
}

// testRecordThroughSequencing: a record reads the same while its leaf is pending, after every
// crash point of the sequencer, and once it is sequenced; recorded again with another content
// after sequencing, the first record stays.
func testRecordThroughSequencing(t *testing.T, s store.ReceiptLog, clk *testclock.Clock) {
	ctx := context.Background()
	key := LogKey(t)
	want := map[string]store.Receipt{}
	check := func(when string) {
		t.Helper()
		for id, w := range want {
			got, ok, err := s.Receipt(ctx, id)
			if err != nil || !ok || got.ReceiptHash != w.ReceiptHash || got.Result != w.Result || !got.Expires.Equal(w.Expires) || string(got.Settlement) != string(w.Settlement) {
				t.Fatalf("%s: Receipt(%s) = %+v, ok %v, %v; want %+v", when, id, got, ok, err, w)
			}
		}
	}
	n := 0
	for _, p := range points {
		for range 2 {
			r := sampleReceipt(clk, n)
			n++
			r.Settlement = json.RawMessage(fmt.Sprintf(`{"success":true,"transaction":"0x%04x"}`, n))
			want[r.VerificationID] = r
			if err := s.RecordReceipt(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		check("pending")
		crashing := &translog.Sequencer{Storage: s, Key: key, Crash: func(at translog.Point) bool { return at == p }}
		for range 2 {
			if _, err := crashing.Step(ctx); err != nil && !errors.Is(err, translog.ErrCrashed) {
				t.Fatalf("crash at %s: %v", p, err)
			}
		}
		check("after a crash at " + string(p))
	}
	if _, err := (&translog.Sequencer{Storage: s, Key: key}).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	check("sequenced")
	again := sampleReceipt(clk, 0)
	again.Result, again.Settlement = "pass-again", json.RawMessage(`{"other":true}`)
	if err := s.RecordReceipt(ctx, again); err != nil {
		t.Fatal(err)
	}
	if _, err := (&translog.Sequencer{Storage: s, Key: key}).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	check("recorded again after sequencing")
}

// otherLogKey is a log key with another key than LogKey's, for origin.
func otherLogKey(t *testing.T, origin string) translog.LogKey {
	t.Helper()
	seed := sha256.Sum256([]byte("storetest other log key"))
	k, err := translog.NewLogKey(origin, receipt.Key{Version: "log-other", Private: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testIdentityClaimedOnce: of concurrent claims of the log's identity exactly one is stored and
// every claim returns it; CheckIdentity then accepts that key alone, and refuses another key or
// another origin.
func testIdentityClaimedOnce(t *testing.T, s store.ReceiptLog, _ *testclock.Clock) {
	ctx := context.Background()
	const claimants = 8
	got := make([]translog.Identity, claimants)
	var wg sync.WaitGroup
	for i := range claimants {
		wg.Go(func() {
			id := translog.Identity{Origin: fmt.Sprintf("verifier-%d.test/log", i), VerifierKey: fmt.Sprintf("key-%d", i)}
			var err error
			if got[i], err = s.ClaimLogIdentity(ctx, id); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	first := got[0]
	if first.Origin == "" {
		t.Fatalf("claim returned %+v", first)
	}
	for i, g := range got {
		if g != first {
			t.Fatalf("claim %d returned %+v, claim 0 %+v: two identities stored", i, g, first)
		}
	}
	if again, err := s.ClaimLogIdentity(ctx, translog.Identity{Origin: "late.test/log", VerifierKey: "late"}); err != nil || again != first {
		t.Errorf("a later claim = %+v, %v; want the first %+v", again, err, first)
	}
}

// testIdentityOfOlderLog: a log started before its identity was kept (a head, no identity) is
// claimed only by the key and origin that signed its checkpoint; an instance with another key
// or origin is refused and claims nothing.
func testIdentityOfOlderLog(t *testing.T, s store.ReceiptLog, clk *testclock.Clock) {
	ctx := context.Background()
	key := LogKey(t)
	if err := s.RecordReceipt(ctx, sampleReceipt(clk, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := (&translog.Sequencer{Storage: s, Key: key}).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	otherOrigin, err := translog.NewLogKey("elsewhere.test/log", receipt.Key{Version: "log-test", Private: ed25519.NewKeyFromSeed(func() []byte {
		seed := sha256.Sum256([]byte("storetest log key"))
		return seed[:]
	}())})
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]translog.LogKey{"another key": otherLogKey(t, key.Origin), "another origin": otherOrigin} {
		if err := translog.CheckIdentity(ctx, s, k); !errors.Is(err, translog.ErrOtherLog) {
			t.Errorf("%s: CheckIdentity = %v, want ErrOtherLog", name, err)
		}
	}
	if err := translog.CheckIdentity(ctx, s, key); err != nil {
		t.Fatalf("the log's own key: %v", err)
	}
	for name, k := range map[string]translog.LogKey{"another key": otherLogKey(t, key.Origin), "another origin": otherOrigin} {
		err := translog.CheckIdentity(ctx, s, k)
		if !errors.Is(err, translog.ErrOtherLog) || !strings.Contains(err.Error(), key.Origin) {
			t.Errorf("%s after the claim: CheckIdentity = %v, want ErrOtherLog naming %s", name, err, key.Origin)
		}
	}
	if err := translog.CheckIdentity(ctx, s, key); err != nil {
		t.Errorf("the log's own key again: %v", err)
	}
}
