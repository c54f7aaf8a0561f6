package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
	"github.com/agent-output-verifier/verifier/pkg/store/storetest"
)

// newTable creates a fresh table in the dynalite at endpoint and returns a store on it.
func newTable(t *testing.T, client Client, opts ...Option) (*Store, string) {
	t.Helper()
	table := dynalitetest.TableName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := CreateTable(ctx, client, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	s := New(client, table, opts...)
	t.Cleanup(func() { _ = s.Close() })
	return s, table
}

func TestDynamo(t *testing.T) {
	endpoint := dynalitetest.Start(t)
	client := dynalitetest.Client(endpoint)

	t.Run("Contract", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			s, _ := newTable(t, client)
			return s
		})
	})
	t.Run("ExpiresAtIsEpochSeconds", func(t *testing.T) { testExpiresAtIsEpochSeconds(t, client) })
	t.Run("ExpiryWithClock", func(t *testing.T) { testExpiryWithClock(t, client) })
	t.Run("PingHidesConfiguration", func(t *testing.T) { testPingHidesConfiguration(t, client) })
	t.Run("AggregateOptimisticConcurrency", func(t *testing.T) { testAggregateConflicts(t, client) })
	t.Run("RecordResumesAfterCrash", func(t *testing.T) { testRecordResumes(t, client) })
}

// testExpiresAtIsEpochSeconds reads the raw items back: DynamoDB's TTL only acts on a Number
// attribute holding epoch seconds, and silently ignores anything else (milliseconds, strings).
func testExpiresAtIsEpochSeconds(t *testing.T, client Client) {
	ctx := context.Background()
	s, table := newTable(t, client)
	// Half a second over: epoch seconds drop it, epoch milliseconds would not.
	expires := time.Date(2030, 3, 2, 0, 0, 0, 500_000_000, time.UTC)
	if err := s.ReservePayment(ctx, "nonce-ttl", expires); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}
	if _, _, err := s.ConsumeAllowance(ctx, "client-ttl", "2025-03-01", 5, expires); err != nil {
		t.Fatalf("ConsumeAllowance: %v", err)
	}
	for name, k := range map[string]item{
		"payment":   paymentKey("nonce-ttl"),
		"allowance": allowanceKey("client-ttl", "2025-03-01"),
	} {
		got, err := New(client, table).getItem(ctx, getItemInput{Key: k, ConsistentRead: true})
		if err != nil {
			t.Fatalf("GetItem %s: %v", name, err)
		}
		n := got["expires_at"].N
		if n == nil {
			t.Fatalf("%s item expires_at = %#v, want a Number", name, got["expires_at"])
		}
		if got, want := *n, strconv.FormatInt(expires.Unix(), 10); got != want {
			t.Errorf("%s item expires_at = %s, want %s (epoch seconds)", name, got, want)
		}
	}
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// testExpiryWithClock checks that reads and the reservation condition use the store's clock, not
// the server's, and count in whole seconds like DynamoDB's TTL.
func testExpiryWithClock(t *testing.T, client Client) {
	ctx := context.Background()
	clk := &clock{now: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)}
	s, _ := newTable(t, client, WithClock(clk.Now))
	midnight := time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)
	if _, _, err := s.ConsumeAllowance(ctx, "client", "2025-03-01", 3, midnight); err != nil {
		t.Fatalf("ConsumeAllowance: %v", err)
	}
	if err := s.ReservePayment(ctx, "nonce", midnight); err != nil {
		t.Fatalf("ReservePayment: %v", err)
	}

	clk.Set(midnight.Add(999 * time.Millisecond))
	if got, _ := s.AllowanceUsed(ctx, "client", "2025-03-01"); got != 1 {
		t.Errorf("AllowanceUsed in the expiry second = %d, want 1", got)
	}
	if err := s.ReservePayment(ctx, "nonce", midnight.Add(time.Hour)); !errors.Is(err, store.ErrPaymentReplayed) {
		t.Errorf("ReservePayment in the expiry second = %v, want ErrPaymentReplayed", err)
	}

	clk.Set(midnight.Add(time.Second))
	if got, err := s.AllowanceUsed(ctx, "client", "2025-03-01"); err != nil || got != 0 {
		t.Errorf("AllowanceUsed after expiry = %d, %v; want 0 (the item lingers, the read ignores it)", got, err)
	}
	if err := s.ReservePayment(ctx, "nonce", midnight.Add(time.Hour)); err != nil {
		t.Errorf("ReservePayment over an expired leftover = %v, want nil", err)
	}
	if g, r, err := s.ConsumeAllowance(ctx, "client", "2025-03-01", 3, midnight.Add(time.Hour)); err != nil || !g || r != 2 {
		t.Errorf("ConsumeAllowance over an expired counter = %v, %d, %v; want true, 2, nil", g, r, err)
	}

	// A spent counter that expired is restarted by exactly one of many concurrent callers, and the
	// restarted day still grants no more than the limit.
	const limit, callers = 5, 30
	for range limit {
		if g, _, err := s.ConsumeAllowance(ctx, "client-busy", "2025-03-01", limit, midnight.Add(2*time.Second)); err != nil || !g {
			t.Fatalf("ConsumeAllowance = %v, %v; want a grant", g, err)
		}
	}
	clk.Set(midnight.Add(3 * time.Second))
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			g, _, err := s.ConsumeAllowance(ctx, "client-busy", "2025-03-01", limit, midnight.Add(time.Hour))
			if err != nil {
				t.Errorf("ConsumeAllowance: %v", err)
			}
			if g {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if got := granted.Load(); got != limit {
		t.Errorf("%d concurrent calls on an expired spent counter got %d grants, want %d", callers, got, limit)
	}
}

// testPingHidesConfiguration makes Ping fail in the two ways a deployment can be misconfigured and
// checks that the message names neither the table nor the endpoint.
func testPingHidesConfiguration(t *testing.T, client Client) {
	ctx := context.Background()
	s, _ := newTable(t, client)
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping of a working table: %v", err)
	}

	const missing = "verifier-table-that-does-not-exist"
	err := New(client, missing).Ping(ctx)
	var pe *PingError
	if !errors.As(err, &pe) || pe.Reason != "ResourceNotFoundException" {
		t.Fatalf("Ping of a missing table = %v, want a PingError with ResourceNotFoundException", err)
	}
	if strings.Contains(err.Error(), missing) {
		t.Errorf("Ping error %q names the table", err)
	}

	const endpoint = "http://127.0.0.1:1" // nothing listens on port 1
	unreachable := dynalitetest.Client(endpoint)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = New(unreachable, missing).Ping(ctx)
	if !errors.As(err, &pe) || (pe.Reason != "unreachable" && pe.Reason != "timeout") {
		t.Fatalf("Ping of a closed port = %v, want a PingError unreachable or timeout", err)
	}
	if msg := err.Error(); strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, missing) {
		t.Errorf("Ping error %q names the endpoint or table", msg)
	}
	if errors.Unwrap(err) == nil {
		t.Errorf("Ping error keeps no cause for the log")
	}
}

// conflictCounter is a Client that counts the aggregate writes DynamoDB refused for a stale
// version.
type conflictCounter struct {
	Client
	conflicts atomic.Int64
}

func (c *conflictCounter) Call(ctx context.Context, operation string, in, out any) error {
	err := c.Client.Call(ctx, operation, in, out)
	if put, ok := in.(*putItemInput); ok && isConditionFailed(err) {
		if sk := put.Item[attrSK].S; sk != nil && *sk == skAggregate {
			c.conflicts.Add(1)
		}
	}
	return err
}

// testAggregateConflicts has many writers update one agent's aggregate at once through a client
// that counts the aggregate writes DynamoDB refused for a stale version: the races must happen, and
// every refused write must have been retried until counted, so the version equals the number of
// verifications.
func testAggregateConflicts(t *testing.T, client Client) {
	ctx := context.Background()
	counting := &conflictCounter{Client: client}
	conflicts := &counting.conflicts
	s, _ := newTable(t, counting)
	const writers, each = 20, 10
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range each {
				v := store.Verification{AgentID: "agent-hot", VerificationID: fmt.Sprintf("w%d-%d", w, i), TaskID: "t",
					Result: "pass", VerifiedAt: time.Now(), Paid: i%2 == 0}
				if err := s.RecordVerification(ctx, v); err != nil {
					t.Errorf("RecordVerification: %v", err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if conflicts.Load() == 0 {
		t.Errorf("no aggregate write lost a race among %d concurrent writers: the concurrency control went untested", writers)
	}
	got, err := s.getItem(ctx, getItemInput{Key: aggregateKey("agent-hot"), ConsistentRead: true})
	if err != nil {
		t.Fatal(err)
	}
	agg, version, _, err := decodeAggregate(got)
	if err != nil {
		t.Fatal(err)
	}
	if version != writers*each || agg.Verifications != writers*each {
		t.Errorf("version %d, %d verifications counted; want %d each", version, agg.Verifications, writers*each)
	}
	t.Logf("%d aggregate writes lost a race and were retried", conflicts.Load())
}

// testRecordResumes simulates a writer that died half-way, after the history write (step 1) and
// after the aggregate write (step 2): recording the verification again completes it, and counts it
// exactly once either way.
func testRecordResumes(t *testing.T, client Client) {
	ctx := context.Background()
	s, _ := newTable(t, client)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	v := func(id string) store.Verification {
		return store.Verification{AgentID: "agent-resume", VerificationID: id, TaskID: "t", Result: "pass", VerifiedAt: at, CallerID: "c"}
	}
	pending := func(id string) bool {
		t.Helper()
		got, err := s.getItem(ctx, getItemInput{ConsistentRead: true,
			Key: key(prefixAgent+"agent-resume", prefixHistory+storekey.HistoryKey(at, id))})
		if err != nil || got == nil {
			t.Fatalf("read history record %s: %v", id, err)
		}
		_, ok := got[attrPending]
		return ok
	}

	// Died after step 1: the record is there, pending, and the aggregate knows nothing.
	if inserted, err := s.putHistory(ctx, v("after-history")); err != nil || !inserted {
		t.Fatalf("putHistory = %v, %v", inserted, err)
	}
	if _, ok, _ := s.AgentAggregate(ctx, "agent-resume"); ok {
		t.Fatal("aggregate exists before step 2")
	}
	// Died after step 2: counted, still pending.
	if inserted, err := s.putHistory(ctx, v("after-aggregate")); err != nil || !inserted {
		t.Fatalf("putHistory = %v, %v", inserted, err)
	}
	if err := s.addToAggregate(ctx, v("after-aggregate")); err != nil {
		t.Fatal(err)
	}
	if !pending("after-history") || !pending("after-aggregate") {
		t.Fatal("half-written records are not marked pending")
	}
	for _, id := range []string{"after-history", "after-aggregate", "after-history", "after-aggregate"} {
		if err := s.RecordVerification(ctx, v(id)); err != nil {
			t.Fatalf("RecordVerification(%s) again: %v", id, err)
		}
	}
	if pending("after-history") || pending("after-aggregate") {
		t.Error("completed records are still marked pending")
	}
	agg, ok, err := s.AgentAggregate(ctx, "agent-resume")
	if err != nil || !ok || agg.Verifications != 2 {
		t.Fatalf("aggregate after the retries = %d verifications, %v, %v; want 2", agg.Verifications, ok, err)
	}
}
