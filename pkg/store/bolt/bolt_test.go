package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		s, err := Open(filepath.Join(t.TempDir(), FileName), WithClock(now))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestLogContract(t *testing.T) {
	storetest.RunLog(t, func(t *testing.T, now func() time.Time) store.ReceiptLog {
		s, err := Open(filepath.Join(t.TempDir(), FileName), WithClock(now), WithHistoryLinger(5*time.Millisecond))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", FileName) // Open creates the directories
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	exp := time.Now().Add(time.Hour)
	if _, _, err := s.ConsumeAllowance(ctx, "client", "2025-03-01", 5, exp); err != nil {
		t.Fatalf("ConsumeAllowance: %v", err)
	}
	if err := s.ReservePayment(ctx, "nonce", exp); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}
	v := store.Verification{AgentID: "agent", VerificationID: "v1", Result: "pass", VerifiedAt: time.Now()}
	if err := s.RecordVerification(ctx, v); err != nil {
		t.Fatalf("RecordVerification: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = reopen(t, path)
	if got, err := s.AllowanceUsed(ctx, "client", "2025-03-01"); err != nil || got != 1 {
		t.Errorf("AllowanceUsed after restart = %d, %v; want 1, nil", got, err)
	}
	if err := s.ReservePayment(ctx, "nonce", exp); !errors.Is(err, store.ErrPaymentReplayed) {
		t.Errorf("ReservePayment after restart = %v, want ErrPaymentReplayed", err)
	}
	if page, _, err := s.History(ctx, "agent", 10, ""); err != nil || len(page) != 1 {
		t.Errorf("History after restart = %d records, %v; want 1", len(page), err)
	}
	if agg, ok, err := s.AgentAggregate(ctx, "agent"); err != nil || !ok || agg.Verifications != 1 {
		t.Errorf("AgentAggregate after restart = %d verifications, %v, %v; want 1", agg.Verifications, ok, err)
	}
}

func TestExpiry(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, path, clk)
	midnight := time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)
	for range 2 {
		if g, _, err := s.ConsumeAllowance(ctx, "client", "2025-03-01", 2, midnight); err != nil || !g {
			t.Fatalf("ConsumeAllowance = %v, %v; want a grant", g, err)
		}
	}
	if err := s.ReservePayment(ctx, "nonce", midnight); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}

	// Through the second it expires in, an item is alive.
	clk.Set(midnight.Add(999 * time.Millisecond))
	if got, _ := s.AllowanceUsed(ctx, "client", "2025-03-01"); got != 2 {
		t.Fatalf("AllowanceUsed in the expiry second = %d, want 2", got)
	}

	clk.Set(midnight.Add(time.Second))
	if got, err := s.AllowanceUsed(ctx, "client", "2025-03-01"); err != nil || got != 0 {
		t.Fatalf("AllowanceUsed after expiry = %d, %v; want 0, nil", got, err)
	}
	if n := count(t, s, bucketAllowance); n != 0 {
		t.Errorf("expired counter still stored after a read (%d items); want it deleted lazily", n)
	}
	if g, r, err := s.ConsumeAllowance(ctx, "client", "2025-03-01", 2, midnight.Add(time.Hour)); err != nil || !g || r != 1 {
		t.Errorf("ConsumeAllowance over an expired counter = %v, %d, %v; want true, 1, nil", g, r, err)
	}

	// The sweep at Open removes what no read met.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	clk.Set(midnight.Add(2 * time.Hour))
	s = reopen(t, path, WithClock(clk.Now))
	if a, p := count(t, s, bucketAllowance), count(t, s, bucketPayments); a != 0 || p != 0 {
		t.Errorf("after the sweep: %d counters and %d reservations left, want none", a, p)
	}
	if err := s.ReservePayment(ctx, "nonce", midnight.Add(3*time.Hour)); err != nil {
		t.Errorf("ReservePayment of an expired nonce = %v, want nil", err)
	}
}

// reopen opens the store at path again, as a restarted server would, and closes it when the test
// ends.
func reopen(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(path, opts...)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func count(t *testing.T, s *Store, bucket []byte) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucket); b != nil { // created by the first write to it
			n = b.Stats().KeyN
		}
		return nil
	}); err != nil {
		t.Fatalf("count %s: %v", bucket, err)
	}
	return n
}

func TestPingAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	err = s.Ping(context.Background())
	if err == nil {
		t.Fatal("Ping of a closed store: no error")
	}
	if got := err.Error(); strings.Contains(got, path) || strings.Contains(got, filepath.Base(filepath.Dir(path))) {
		t.Errorf("Ping error %q names the store's file", got)
	}
}

func TestOpenRefusesSecondOpener(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s2, err := Open(path); err == nil {
		_ = s2.Close()
		t.Fatal("a second Open of a file in use succeeded; want a timeout error")
	}
}

// An aggregate written in the earlier JSON layout is read, and the next update rewrites it in the
// binary one with its version counted on.
func TestLegacyAggregateLayout(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	first := store.Verification{AgentID: "agent", VerificationID: "v1", Result: "pass", VerifiedAt: time.Now()}
	if err := s.RecordVerification(ctx, first); err != nil {
		t.Fatal(err)
	}
	// Rewrite the stored aggregate in the legacy layout, as version 7.
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAggregate)
		_, body, err := splitAggregate(b.Get([]byte("agent")))
		if err != nil {
			return err
		}
		legacy, err := json.Marshal(legacyAggregate{Version: 7, Aggregate: body})
		if err != nil {
			return err
		}
		return b.Put([]byte("agent"), legacy)
	})
	if err != nil {
		t.Fatal(err)
	}
	if agg, ok, err := s.AgentAggregate(ctx, "agent"); err != nil || !ok || agg.Verifications != 1 {
		t.Fatalf("legacy aggregate read as %d verifications, %v, %v; want 1", agg.Verifications, ok, err)
	}
	second := store.Verification{AgentID: "agent", VerificationID: "v2", Result: "fail", VerifiedAt: time.Now()}
	if err := s.RecordVerification(ctx, second); err != nil {
		t.Fatal(err)
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		raw := tx.Bucket(bucketAggregate).Get([]byte("agent"))
		if raw[0] == '{' {
			t.Error("the update kept the legacy layout")
		}
		agg, version, err := decodeAggregate(raw)
		if err != nil || version != 8 || agg.Verifications != 2 || agg.Failed != 1 {
			t.Errorf("after the update: version %d, %d verifications, %d failed, %v; want 8, 2, 1", version, agg.Verifications, agg.Failed, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{{0, 1}, {0xff, 0, 0, 0, 0, 0, 0, 0, '{', '}'}, []byte(`{"version":`)} {
		if _, _, err := decodeAggregate(bad); err == nil {
			t.Errorf("decodeAggregate(%q) accepted a damaged record", bad)
		}
	}
}

// txid is the id of the file's last committed write transaction, which every commit counts up.
func txid(t *testing.T, db *bbolt.DB) int {
	t.Helper()
	var id int
	if err := db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatalf("read transaction: %v", err)
	}
	return id
}

// Opening a fresh file, or reopening one with nothing expired, commits nothing: each commit
// syncs the file, which was most of Open's time on a Lambda cold start.
func TestOpenCommitsNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	// What bbolt itself leaves in a file it has just created.
	raw, err := bbolt.Open(filepath.Join(dir, "raw.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh := txid(t, raw)
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(dir, FileName)
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got := txid(t, s.db); got != fresh {
		t.Errorf("Open of a fresh file committed %d write transactions, want none", got-fresh)
	}
	// Reads of the buckets nothing was written to yet find them empty.
	if used, err := s.AllowanceUsed(ctx, "client", "2025-03-01"); err != nil || used != 0 {
		t.Errorf("AllowanceUsed of a fresh store = %d, %v; want 0, nil", used, err)
	}
	if live, err := s.PaymentReserved(ctx, "nonce"); err != nil || live {
		t.Errorf("PaymentReserved of a fresh store = %v, %v; want false, nil", live, err)
	}
	if page, next, err := s.History(ctx, "agent", 10, ""); err != nil || len(page) != 0 || next != "" {
		t.Errorf("History of a fresh store = %d records, %q, %v; want none", len(page), next, err)
	}
	if _, ok, err := s.AgentAggregate(ctx, "agent"); err != nil || ok {
		t.Errorf("AgentAggregate of a fresh store = %v, %v; want not found", ok, err)
	}
	if got := txid(t, s.db); got != fresh {
		t.Errorf("reads of a fresh store committed %d write transactions, want none", got-fresh)
	}

	exp := time.Now().Add(time.Hour)
	if g, _, err := s.ConsumeAllowance(ctx, "client", "2025-03-01", 5, exp); err != nil || !g {
		t.Fatalf("ConsumeAllowance = %v, %v; want a grant", g, err)
	}
	if err := s.ReservePayment(ctx, "nonce", exp); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}
	if err := s.RecordVerification(ctx, store.Verification{AgentID: "agent", VerificationID: "v1", Result: "pass", VerifiedAt: time.Now()}); err != nil {
		t.Fatalf("RecordVerification: %v", err)
	}
	// One call reserved one: Close has no count to write back. The payment's reservation reaches
	// the disk in the background (ReservePayment): let it.
	s.payments.writing.Wait()
	written := txid(t, s.db)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = reopen(t, path)
	if got := txid(t, s.db); got != written {
		t.Errorf("reopening a file with nothing expired committed %d write transactions, want none", got-written)
	}
	if a, p := count(t, s, bucketAllowance), count(t, s, bucketPayments); a != 1 || p != 1 {
		t.Errorf("after reopening: %d counters and %d reservations, want 1 and 1", a, p)
	}
}

// An expired item is swept at Open even when it is the only thing in the file that changes, and
// a file whose buckets are partly missing (a payment reserved, no counter ever written) is swept
// all the same.
func TestOpenSweepsExpired(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, path, clk)
	if err := s.ReservePayment(ctx, "soon", clk.Now().Add(time.Minute)); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}
	if err := s.ReservePayment(ctx, "later", clk.Now().Add(time.Hour)); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	clk.Set(clk.Now().Add(30 * time.Minute))
	s = reopen(t, path, WithClock(clk.Now))
	if n := count(t, s, bucketPayments); n != 1 {
		t.Errorf("after the sweep: %d reservations, want 1 (the live one)", n)
	}
	if live, err := s.PaymentReserved(ctx, "later"); err != nil || !live {
		t.Errorf("PaymentReserved of the live reservation = %v, %v; want true, nil", live, err)
	}
	if n := count(t, s, bucketAllowance); n != 0 {
		t.Errorf("%d counters in a file that never had one", n)
	}
}

// A payment's reservation is decided at once, even while its write waits for the history's next
// commit: a second use is a replay from the start, exactly one of concurrent uses wins, and Close
// puts the reservation on disk without waiting out the linger.
func TestReservePaymentDecidesAtOnce(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreLingering(t)
	exp := time.Now().Add(time.Hour)
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { f(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s waited for the linger", what)
		}
	}
	within("ReservePayment", func() {
		if err := s.ReservePayment(ctx, evmNonce, exp); err != nil {
			t.Errorf("ReservePayment: %v", err)
		}
	})
	if live, err := s.PaymentReserved(ctx, evmNonce); err != nil || !live {
		t.Errorf("PaymentReserved before the write committed = %v, %v; want true", live, err)
	}
	if err := s.ReservePayment(ctx, evmNonce, exp); !errors.Is(err, store.ErrPaymentReplayed) {
		t.Errorf("second ReservePayment = %v, want ErrPaymentReplayed", err)
	}
	var wins sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 20 {
		wins.Add(1)
		go func() {
			defer wins.Done()
			if err := s.ReservePayment(ctx, evmRace, exp); err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else if !errors.Is(err, store.ErrPaymentReplayed) {
				t.Errorf("ReservePayment: %v", err)
			}
		}()
	}
	within("20 reservations", wins.Wait)
	if won != 1 {
		t.Errorf("%d of 20 concurrent uses of one payment won, want 1", won)
	}
	within("Close", func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	s = reopen(t, path)
	for _, id := range []string{evmNonce, evmRace} {
		if live, err := s.PaymentReserved(ctx, id); err != nil || !live {
			t.Errorf("after Close and Open, PaymentReserved(%s) = %v, %v; want true", id, live, err)
		}
	}
}

// What a crash can lose: an EVM payment's reservation whose write had not committed.
// ReservePayment's comment says why that costs no safety (the token refuses a settled
// authorization's replay).
func TestReservationLostInCrash(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreLingering(t)
	if err := s.ReservePayment(ctx, evmNonce, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	crash(t, s)
	s = reopen(t, path)
	if live, err := s.PaymentReserved(ctx, evmNonce); err != nil || live {
		t.Errorf("PaymentReserved after a crash before the write = %v, %v; want false", live, err)
	}
}

// A Solana payment's reservation is on disk when ReservePayment returns, linger or not: nothing
// on the cluster would refuse its replay (see ReservePayment).
func TestSolanaReservationSurvivesCrash(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreLingering(t)
	const id = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	var wins sync.WaitGroup
	var won atomic.Int32
	for range 8 {
		wins.Go(func() {
			if err := s.ReservePayment(ctx, id, time.Now().Add(time.Hour)); err == nil {
				won.Add(1)
			} else if !errors.Is(err, store.ErrPaymentReplayed) {
				t.Errorf("ReservePayment: %v", err)
			}
		})
	}
	wins.Wait()
	if won.Load() != 1 {
		t.Errorf("%d of 8 concurrent uses of one payment won, want 1", won.Load())
	}
	crash(t, s)
	s = reopen(t, path)
	if live, err := s.PaymentReserved(ctx, id); err != nil || !live {
		t.Errorf("PaymentReserved after a crash = %v, %v; want true", live, err)
	}
	if err := s.ReservePayment(ctx, id, time.Now().Add(time.Hour)); !errors.Is(err, store.ErrPaymentReplayed) {
		t.Errorf("ReservePayment after a crash = %v, want ErrPaymentReplayed", err)
	}
}

// TestReleasedReservationStaysReleased: a reservation released while its deferred write still
// waits for the next commit, or after that write, is not on disk after a restart, and one made
// again after the release is.
func TestReleasedReservationStaysReleased(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreLingering(t)
	exp := time.Now().Add(time.Hour)
	// evmNonce: released before its write committed. evmRace: written, then released, then
	// reserved again.
	for _, id := range []string{evmNonce, evmRace} {
		if err := s.ReservePayment(ctx, id, exp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ReleasePayment(ctx, evmNonce); err != nil {
		t.Fatal(err)
	}
	s.writes.flush()
	s.payments.writing.Wait()
	if err := s.ReleasePayment(ctx, evmRace); err != nil {
		t.Fatal(err)
	}
	if err := s.ReservePayment(ctx, evmRace, exp); err != nil {
		t.Fatalf("ReservePayment after the release: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, path)
	if live, err := s.PaymentReserved(ctx, evmNonce); err != nil || live {
		t.Errorf("released before its write: PaymentReserved after a restart = %v, %v; want false", live, err)
	}
	if live, err := s.PaymentReserved(ctx, evmRace); err != nil || !live {
		t.Errorf("reserved again after the release: PaymentReserved after a restart = %v, %v; want true", live, err)
	}
}

// openStoreLingering opens a store in a new directory with an hour's history linger, so that EVM
// reservations' deferred writes wait for a flush or Close.
func openStoreLingering(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(path, WithHistoryLinger(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

// EVM payment ids, as x402.PaymentID makes them.
const (
	evmNonce = "eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913/0x70997970c51812dc3a010c7d01b50e0d17dc79c8/0x0000000000000000000000000000000000000000000000000000000000000001"
	evmRace  = "eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913/0x70997970c51812dc3a010c7d01b50e0d17dc79c8/0x0000000000000000000000000000000000000000000000000000000000000002"
)
