package bolt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/internal/testclock"
)

const leaseDay = "2025-03-01"

var leaseExpiry = time.Date(2025, 3, 2, 1, 0, 0, 0, time.UTC)

func openAt(t *testing.T, path string, clk *testclock.Clock) *Store {
	t.Helper()
	s, err := Open(path, WithClock(clk.Now))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// onDisk is the allowance counter as committed, read past the store's memory.
func onDisk(t *testing.T, s *Store, client string) int {
	t.Helper()
	n, _, err := s.readCounter(allowanceKey(client, leaseDay))
	if err != nil {
		t.Fatalf("read counter: %v", err)
	}
	return n
}

// quiesce waits for the reservations under way in the background, so that the disk holds them.
func quiesce(s *Store) {
	s.counters.mu.Lock()
	all := make([]*counter, 0, len(s.counters.m))
	for _, c := range s.counters.m {
		all = append(all, c)
	}
	s.counters.mu.Unlock()
	for _, c := range all {
		c.mu.Lock()
		for c.reserving {
			c.done.Wait()
		}
		c.mu.Unlock()
	}
}

// crash closes the file without the write-back a graceful Close does, as a killed process would
// leave it.
func crash(t *testing.T, s *Store) {
	t.Helper()
	if err := s.db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func consume(t *testing.T, s *Store, client string, limit int) (bool, int) {
	t.Helper()
	g, r, err := s.ConsumeAllowance(context.Background(), client, leaseDay, limit, leaseExpiry)
	if err != nil {
		t.Fatalf("ConsumeAllowance: %v", err)
	}
	return g, r
}

// A client calling faster than leaseWindow reserves 1, 2, 4, ... up to maxLease calls at a time,
// the next batch in the background once half of the current one is used: the disk stays ahead of
// the calls granted, by less than maxLease.
func TestAllowanceReservesAhead(t *testing.T) {
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, filepath.Join(t.TempDir(), FileName), clk)
	t.Cleanup(func() { _ = s.Close() })
	var disk []int
	const calls, limit = 10_000, 100_000
	for i := 1; i <= calls; i++ {
		if g, r := consume(t, s, "fast", limit); !g || r != limit-i {
			t.Fatalf("call %d: granted %v, remaining %d; want true, %d", i, g, r, limit-i)
		}
		quiesce(s)
		d := onDisk(t, s, "fast")
		if d < i || d-i >= maxLease {
			t.Fatalf("call %d: %d on disk; want at least the calls granted and fewer than %d ahead", i, d, maxLease)
		}
		if len(disk) == 0 || disk[len(disk)-1] != d {
			disk = append(disk, d)
		}
	}
	want := []int{1, 3, 6, 11, 22, 45, 92, 187, 378, 761, 1528, 3063, 6134, 8181, 10228, 12275}
	if !slices.Equal(disk, want) {
		t.Errorf("reservations on disk %v, want %v", disk, want)
	}
	if used, err := s.AllowanceUsed(context.Background(), "fast", leaseDay); err != nil || used != calls {
		t.Errorf("AllowanceUsed = %d, %v; want the exact %d, nil", used, err, calls)
	}
}

// A client calling less often than leaseWindow reserves one call at a time: the disk is exact
// after every call, as without reservations.
func TestAllowanceSlowClientIsExactOnDisk(t *testing.T) {
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, filepath.Join(t.TempDir(), FileName), clk)
	t.Cleanup(func() { _ = s.Close() })
	for i := 1; i <= 10; i++ {
		consume(t, s, "slow", 1000)
		if d := onDisk(t, s, "slow"); d != i {
			t.Fatalf("call %d: %d on disk, want %d", i, d, i)
		}
		clk.Set(clk.Now().Add(leaseWindow))
	}
}

// Reservations never pass the limit, and the limit holds exactly in memory.
func TestAllowanceReservationStopsAtLimit(t *testing.T) {
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, filepath.Join(t.TempDir(), FileName), clk)
	t.Cleanup(func() { _ = s.Close() })
	granted := 0
	for range 50 {
		if g, _ := consume(t, s, "c", 20); g {
			granted++
		}
		if d := onDisk(t, s, "c"); d > 20 {
			t.Fatalf("%d reserved on disk, past the limit of 20", d)
		}
	}
	if granted != 20 {
		t.Errorf("%d calls granted, want 20", granted)
	}
}

// After a crash the counter on disk is never below the calls granted, so a restart gives nothing
// away; what it costs the client is bounded by maxLease. A graceful Close is exact.
func TestAllowanceAcrossRestarts(t *testing.T) {
	for _, graceful := range []bool{false, true} {
		t.Run(fmt.Sprintf("graceful=%v", graceful), func(t *testing.T) {
			clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
			path := filepath.Join(t.TempDir(), FileName)
			s := openAt(t, path, clk)
			const calls, limit = 100, 150
			for range calls {
				consume(t, s, "c", limit)
			}
			if graceful {
				if err := s.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
			} else {
				crash(t, s)
			}
			s = openAt(t, path, clk)
			t.Cleanup(func() { _ = s.Close() })
			used, err := s.AllowanceUsed(context.Background(), "c", leaseDay)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case graceful && used != calls:
				t.Fatalf("after a graceful restart %d used, want exactly %d", used, calls)
			case used < calls || used-calls >= maxLease:
				t.Fatalf("after a crash %d used; want at least %d and fewer than %d more", used, calls, maxLease)
			}
			granted := 0
			for range limit {
				if g, _ := consume(t, s, "c", limit); g {
					granted++
				}
			}
			if calls+granted > limit {
				t.Fatalf("%d calls granted across the restart, past the limit of %d", calls+granted, limit)
			}
			if granted != limit-used {
				t.Fatalf("%d granted after the restart, want %d", granted, limit-used)
			}
		})
	}
}

// Concurrent callers from many clients: every client gets exactly its limit, and the disk is
// never below the grants.
func TestAllowanceConcurrentClients(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), FileName), testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)))
	const clients, callers, calls, limit = 4, 8, 40, 250
	var mu sync.Mutex
	granted := map[string]int{}
	var wg sync.WaitGroup
	for c := range clients {
		for range callers {
			wg.Go(func() {
				client := fmt.Sprintf("client-%d", c)
				for range calls {
					g, _, err := s.ConsumeAllowance(context.Background(), client, leaseDay, limit, leaseExpiry)
					if err != nil {
						t.Error(err)
						return
					}
					if g {
						mu.Lock()
						granted[client]++
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	for c := range clients {
		client := fmt.Sprintf("client-%d", c)
		if granted[client] != limit {
			t.Errorf("%s: %d granted of %d calls, want exactly %d", client, granted[client], callers*calls, limit)
		}
		if d := onDisk(t, s, client); d < limit {
			t.Errorf("%s: %d on disk, below the %d granted", client, d, limit)
		}
	}
	crash(t, s)
}

// With no room for another counter in memory, counters that hold no reservation beyond their use
// are dropped first, without loss; then an idle one with a reservation is, and its unused part
// counts as used (never fewer).
func TestAllowanceCountersBounded(t *testing.T) {
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, filepath.Join(t.TempDir(), FileName), clk)
	t.Cleanup(func() { _ = s.Close() })
	s.counters.max = 2
	for range 5 {
		consume(t, s, "a", 100)
		consume(t, s, "b", 100)
	}
	quiesce(s)
	if onDisk(t, s, "a") == 5 || onDisk(t, s, "b") == 5 {
		t.Fatal("the fast clients hold no reservation ahead; the test needs them to")
	}
	clk.Set(clk.Now().Add(leaseWindow)) // c calls slowly: its counter holds nothing ahead
	consume(t, s, "c", 100)
	quiesce(s)
	if len(s.counters.m) != 2 || s.counters.m[string(allowanceKey("c", leaseDay))] == nil {
		t.Fatalf("counters in memory: %d; want 2, c's among them", len(s.counters.m))
	}
	for _, client := range []string{"a", "b"} {
		used, _ := s.AllowanceUsed(context.Background(), client, leaseDay)
		if used < 5 || used-5 >= maxLease {
			t.Errorf("%s: AllowanceUsed %d; want at least 5 and fewer than %d more", client, used, maxLease)
		}
	}
	// c's counter holds nothing ahead, so making room for d drops it without loss.
	if onDisk(t, s, "c") != 1 {
		t.Fatalf("c: %d on disk, want 1", onDisk(t, s, "c"))
	}
	var kept string
	for _, client := range []string{"a", "b"} {
		if s.counters.m[string(allowanceKey(client, leaseDay))] != nil {
			kept = client
		}
	}
	clk.Set(clk.Now().Add(leaseWindow))
	consume(t, s, "d", 100)
	quiesce(s)
	if s.counters.m[string(allowanceKey(kept, leaseDay))] == nil || s.counters.m[string(allowanceKey("c", leaseDay))] != nil {
		t.Errorf("making room dropped a counter with a reservation while one without could go")
	}
	if used, _ := s.AllowanceUsed(context.Background(), "c", leaseDay); used != 1 {
		t.Errorf("c: AllowanceUsed %d after its counter was dropped, want exactly 1", used)
	}
}

// A failed reservation commit grants nothing and leaves the counter as it was.
func TestAllowanceReservationFailureGrantsNothing(t *testing.T) {
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, filepath.Join(t.TempDir(), FileName), clk)
	consume(t, s, "c", 100) // reserves 1
	quiesce(s)
	crash(t, s) // every later commit fails
	if g, _, err := s.ConsumeAllowance(context.Background(), "c", leaseDay, 100, leaseExpiry); err == nil || g {
		t.Fatalf("ConsumeAllowance with the file closed = %v, %v; want no grant and an error", g, err)
	}
	c := s.counters.m[string(allowanceKey("c", leaseDay))]
	if c.reserved != 1 || c.used != 2 {
		t.Errorf("counter after the failed reservation: used %d, reserved %d; want 2 (the failed call's number stays taken) and 1", c.used, c.reserved)
	}
}

// A call waiting for a reservation that does not commit (a disk that hangs) gives up when its
// context ends, with an error, instead of holding its request past the deadline. Its number
// stays taken, so nothing is granted twice once the disk comes back.
func TestAllowanceWaitEndsWithContext(t *testing.T) {
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, filepath.Join(t.TempDir(), FileName), clk)
	t.Cleanup(func() { _ = s.Close() })
	clk.Set(clk.Now().Add(leaseWindow)) // one call reserved at a time
	consume(t, s, "c", 10)
	quiesce(s)

	// Hold bbolt's single writer, so that the next reservation cannot commit.
	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.db.Update(func(*bbolt.Tx) error { close(holding); <-release; return nil })
	}()
	<-holding
	clk.Set(clk.Now().Add(leaseWindow))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	type answer struct {
		granted bool
		err     error
	}
	answered := make(chan answer, 1)
	go func() {
		g, _, err := s.ConsumeAllowance(ctx, "c", leaseDay, 10, leaseExpiry)
		answered <- answer{g, err}
	}()
	select {
	case a := <-answered:
		if !errors.Is(a.err, context.DeadlineExceeded) || a.granted {
			t.Fatalf("ConsumeAllowance behind a hung commit = %v, %v; want no grant and the context's error", a.granted, a.err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("ConsumeAllowance still waiting 5 s after its 50 ms context ended")
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	quiesce(s)
	// The call that gave up counts as used: 8 of 10 remain, and exactly 8 are granted.
	granted := 0
	for range 12 {
		clk.Set(clk.Now().Add(leaseWindow))
		if g, _ := consume(t, s, "c", 10); g {
			granted++
		}
	}
	if granted != 8 {
		t.Errorf("%d calls granted after the wait ended, want 8", granted)
	}
	if used, err := s.AllowanceUsed(context.Background(), "c", leaseDay); err != nil || used != 10 {
		t.Errorf("AllowanceUsed = %d, %v; want 10, nil", used, err)
	}
}

// A reservation holds at most an eighth of the daily limit ahead (leaseShare), however fast the
// client calls, so that a crash or a dropped counter costs it a small part of its day.
func TestAllowanceLeaseShareOfLimit(t *testing.T) {
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	s := openAt(t, filepath.Join(t.TempDir(), FileName), clk)
	t.Cleanup(func() { _ = s.Close() })
	const limit = 80
	for i := 1; i <= 70; i++ {
		consume(t, s, "fast", limit)
		quiesce(s)
		if d := onDisk(t, s, "fast"); d < i || d-i >= limit/leaseShare {
			t.Fatalf("call %d: %d on disk; want at least the calls granted and fewer than %d ahead", i, d, limit/leaseShare)
		}
	}
}
