package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
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
		storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
			s, _ := newTable(t, client, WithClock(now))
			return s
		})
	})
	t.Run("ExpiresAtIsEpochSeconds", func(t *testing.T) { testExpiresAtIsEpochSeconds(t, client) })
	t.Run("ExpiryWithClock", func(t *testing.T) { testExpiryWithClock(t, client) })
	t.Run("PingHidesConfiguration", func(t *testing.T) { testPingHidesConfiguration(t, client) })
	t.Run("AggregateOptimisticConcurrency", func(t *testing.T) { testAggregateConflicts(t, client) })
	t.Run("RecordResumesAfterCrash", func(t *testing.T) { testRecordResumes(t, client) })
	t.Run("OutboxFlushedByOthers", func(t *testing.T) { testOutboxFlushedByOthers(t, client) })
	t.Run("OutboxWrittenOnRead", func(t *testing.T) { testOutboxWrittenOnRead(t, client) })
	t.Run("OutboxSizeBounded", func(t *testing.T) { testOutboxSizeBounded(t, client) })
	t.Run("RetryReadsHistoryAgain", func(t *testing.T) { testRetryReadsHistoryAgain(t, client) })
	t.Run("RetryRacesFlush", func(t *testing.T) { testRetryRacesFlush(t, client) })
	t.Run("RetryWritesCountedRecord", func(t *testing.T) { testRetryWritesCountedRecord(t, client) })
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

// testExpiryWithClock checks that reads and the reservation condition use the store's clock, not
// the server's, and count in whole seconds like DynamoDB's TTL.
func testExpiryWithClock(t *testing.T, client Client) {
	ctx := context.Background()
	clk := testclock.New(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
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
	a := readAggregate(t, s, "agent-hot")
	if a.version != writers*each || a.agg.Verifications != writers*each {
		t.Errorf("version %d, %d verifications counted; want %d each", a.version, a.agg.Verifications, writers*each)
	}
	// A writer's removal from the outbox can be undone by a racing writer's put of what it read
	// before, which is harmless (the record is written) and flushed later; the history is whole.
	if n := len(inHistory(t, s, "agent-hot")); n != writers*each {
		t.Errorf("%d records in the history, want %d", n, writers*each)
	}
	t.Logf("%d aggregate writes lost a race and were retried", conflicts.Load())
}

// testRecordResumes simulates writers that died half-way: after counting (step 1), after writing
// the record too (step 2), and a record an earlier version of the package left pending. Recording
// each again completes it and counts it exactly once; recording a finished one again, long after,
// changes nothing.
func testRecordResumes(t *testing.T, client Client) {
	ctx := context.Background()
	s, _ := newTable(t, client)
	const agent = "agent-resume"
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	v := func(id string) store.Verification {
		return store.Verification{AgentID: agent, VerificationID: id, TaskID: "t", Result: "pass", VerifiedAt: at, CallerID: "c"}
	}

	// Died after step 1: counted, in the outbox, not in the history.
	countOnly(t, s, v("after-count"))
	// Died after step 2: counted, written, still in the outbox.
	countOnly(t, s, v("after-write"))
	if err := s.putRecord(ctx, historyItem(v("after-write"))); err != nil {
		t.Fatal(err)
	}
	// Left by an earlier version: the record written first, marked pending, and not counted.
	legacy := historyItem(v("legacy"))
	legacy[attrPending] = boolean(true)
	if err := s.putItem(ctx, putItemInput{Item: legacy}); err != nil {
		t.Fatal(err)
	}
	if got := inHistory(t, s, agent); !slices.Equal(got, []string{"after-write", "legacy"}) {
		t.Fatalf("history before the retries = %v", got)
	}
	if n := len(readAggregate(t, s, agent).outbox); n != 2 {
		t.Fatalf("outbox holds %d records before the retries, want 2", n)
	}

	for _, id := range []string{"after-count", "after-write", "legacy", "after-count", "after-write", "legacy"} {
		if err := s.RecordVerification(ctx, v(id)); err != nil {
			t.Fatalf("RecordVerification(%s) again: %v", id, err)
		}
	}
	// Step 0 finds after-write's record and stops there, so its outbox entry, whose record is
	// written, waits for a later writer to flush it (a no-op write then).
	a := readAggregate(t, s, agent)
	if left := slices.Sorted(maps.Keys(a.outbox)); a.agg.Verifications != 3 || !slices.Equal(left, []string{"after-write"}) {
		t.Fatalf("after the retries: %d verifications counted, outbox %v; want 3 and [after-write]", a.agg.Verifications, left)
	}
	if got := inHistory(t, s, agent); !slices.Equal(got, []string{"after-count", "after-write", "legacy"}) {
		t.Fatalf("history after the retries = %v", got)
	}
	if raw, err := s.getItem(ctx, getItemInput{Key: historyItemKey(v("legacy")), ConsistentRead: true}); err != nil || raw == nil {
		t.Fatalf("read the legacy record: %v", err)
	} else if _, pending := raw[attrPending]; pending {
		t.Error("the legacy record is still marked pending")
	}

	// Long after, with the first ids gone from recent_ids: recording again counts nothing.
	for i := range recentIDs + 2 {
		if err := s.RecordVerification(ctx, v(fmt.Sprintf("later-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordVerification(ctx, v("after-count")); err != nil {
		t.Fatal(err)
	}
	if n := readAggregate(t, s, agent).agg.Verifications; n != 3+recentIDs+2 {
		t.Errorf("%d verifications counted after recording a finished one again, want %d", n, 3+recentIDs+2)
	}
}

// testOutboxFlushedByOthers: a record whose writer died after counting it and never came back is
// written to the history by the next writer to the same aggregate once it has waited outboxGrace,
// and not before; past maxOutbox records, the oldest are written whatever their age.
func testOutboxFlushedByOthers(t *testing.T, client Client) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s, _ := newTable(t, client, WithClock(func() time.Time { return now }))
	const agent = "agent-orphans"
	v := func(id string) store.Verification {
		return store.Verification{AgentID: agent, VerificationID: id, TaskID: "t", Result: "pass", VerifiedAt: now, CallerID: "c"}
	}
	countOnly(t, s, v("orphan"))
	now = now.Add(outboxGrace - time.Second)
	if err := s.RecordVerification(ctx, v("young")); err != nil {
		t.Fatal(err)
	}
	if got := inHistory(t, s, agent); !slices.Equal(got, []string{"young"}) {
		t.Fatalf("history within the grace = %v, want the orphan left to its owner", got)
	}
	now = now.Add(time.Second)
	if err := s.RecordVerification(ctx, v("old")); err != nil {
		t.Fatal(err)
	}
	if got := inHistory(t, s, agent); !slices.Equal(got, []string{"old", "orphan", "young"}) {
		t.Fatalf("history after the grace = %v, want the orphan written", got)
	}
	a := readAggregate(t, s, agent)
	if a.agg.Verifications != 3 || len(a.outbox) != 0 {
		t.Fatalf("%d verifications counted, outbox %v; want 3 and empty", a.agg.Verifications, slices.Collect(maps.Keys(a.outbox)))
	}

	// More orphans than the outbox holds, all young.
	for i := range maxOutbox + 5 {
		id := fmt.Sprintf("crowd-%02d", i)
		countOnly(t, s, v(id))
		now = now.Add(time.Millisecond * 10)
	}
	if n := len(readAggregate(t, s, agent).outbox); n > maxOutbox {
		t.Fatalf("outbox holds %d records, more than %d", n, maxOutbox)
	}
	if err := s.RecordVerification(ctx, v("last")); err != nil {
		t.Fatal(err)
	}
	a = readAggregate(t, s, agent)
	inOutbox := len(a.outbox)
	if want := int64(3 + maxOutbox + 5 + 1); a.agg.Verifications != want {
		t.Errorf("%d verifications counted, want %d", a.agg.Verifications, want)
	}
	// Every counted record is in the history or still in the outbox, never both missing.
	if n := len(inHistory(t, s, agent)); n+inOutbox != 3+maxOutbox+5+1 || inOutbox >= maxOutbox {
		t.Errorf("%d records in the history and %d in the outbox, want %d together and fewer than %d waiting",
			n, inOutbox, 3+maxOutbox+5+1, maxOutbox)
	}
}

// testOutboxWrittenOnRead: an agent whose writer died after counting and that records nothing more
// would show fewer records than it counts; reading its aggregate writes out the records that have
// waited outboxGrace, and leaves younger ones to their owners.
func testOutboxWrittenOnRead(t *testing.T, client Client) {
	ctx := context.Background()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := testclock.New(start)
	s, _ := newTable(t, client, WithClock(clk.Now))
	const agent = "agent-quiet"
	v := func(id string) store.Verification {
		return store.Verification{AgentID: agent, VerificationID: id, TaskID: "t", Result: "pass", VerifiedAt: start, CallerID: "c"}
	}
	countOnly(t, s, v("orphan"))
	clk.Set(start.Add(outboxGrace - time.Second))
	countOnly(t, s, v("young"))
	clk.Set(start.Add(outboxGrace))
	agg, ok, err := s.AgentAggregate(ctx, agent)
	if err != nil || !ok || agg.Verifications != 2 {
		t.Fatalf("AgentAggregate = %d verifications, %v, %v; want 2, true, nil", agg.Verifications, ok, err)
	}
	if got := inHistory(t, s, agent); !slices.Equal(got, []string{"orphan"}) {
		t.Errorf("history after the read = %v, want [orphan]", got)
	}
	if got := slices.Sorted(maps.Keys(readAggregate(t, s, agent).outbox)); !slices.Equal(got, []string{"young"}) {
		t.Errorf("outbox after the read = %v, want [young]", got)
	}
}

// testOutboxSizeBounded counts records of the largest size the store accepts, with every character
// one that JSON escapes to six bytes, and no writer that lives to write them: the outbox stays
// within maxOutboxBytes and the item far under DynamoDB's 400 KB, and every record counted is in
// the history or the outbox.
func testOutboxSizeBounded(t *testing.T, client Client) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s, _ := newTable(t, client, WithClock(func() time.Time { return at }))
	agent := strings.Repeat("<", storekey.MaxIDLength)
	label := strings.Repeat("<", storekey.MaxLabelLength)
	const records = maxOutbox
	var largest int
	for i := range records {
		id := fmt.Sprintf("%02d", i) + strings.Repeat("<", storekey.MaxIDLength-2)
		countOnly(t, s, store.Verification{AgentID: agent, VerificationID: id, TaskID: label, CallerID: label,
			Result: "pass", OverallRatio: 0.1234567890123, VerifiedAt: at})
		raw, err := s.getItem(ctx, getItemInput{Key: aggregateKey(agent), ConsistentRead: true})
		if err != nil {
			t.Fatal(err)
		}
		outbox := 0
		for id, v := range *raw[attrOutbox].M {
			outbox += len(id) + len(*v.S)
		}
		if outbox > maxOutboxBytes {
			t.Fatalf("after %d records the outbox takes %d bytes, more than %d", i+1, outbox, maxOutboxBytes)
		}
		largest = max(largest, itemSize(raw))
	}
	if largest > 300<<10 {
		t.Errorf("the aggregate item took up to %d bytes, want at most 300 KB of DynamoDB's 400 KB", largest)
	}
	a := readAggregate(t, s, agent)
	if n := len(inHistory(t, s, agent)); a.agg.Verifications != records || n+len(a.outbox) != records {
		t.Errorf("%d counted, %d in the history and %d in the outbox; want %d counted, each in one of them",
			a.agg.Verifications, n, len(a.outbox), records)
	}
	t.Logf("the item took up to %d bytes with %d records in the outbox", largest, len(a.outbox))
}

// itemSize is the size of it as DynamoDB counts it against its 400 KB limit: names and strings by their
// UTF-8 bytes, a number at most 21 bytes, a boolean 1, and a list or map 3 bytes and 1 more for
// each element.
func itemSize(it item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v value) int {
	switch {
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return 21
	case v.BOOL != nil:
		return 1
	case v.L != nil:
		n := 3
		for _, e := range *v.L {
			n += 1 + valueSize(e)
		}
		return n
	case v.M != nil:
		return 3 + len(*v.M) + itemSize(*v.M)
	}
	return 0
}

// hookClient is a Client that calls before ahead of each call it sends and after once the call is
// answered, so that a test can put another writer's steps between two of a store's calls.
type hookClient struct {
	Client
	before, after func(operation string, in any)
}

func (c *hookClient) Call(ctx context.Context, operation string, in, out any) error {
	if c.before != nil {
		c.before(operation, in)
	}
	err := c.Client.Call(ctx, operation, in, out)
	if c.after != nil {
		c.after(operation, in)
	}
	return err
}

// sortKey is the sort key a GetItem reads or a PutItem writes, and "" for any other call.
func sortKey(in any) string {
	var k item
	switch in := in.(type) {
	case *getItemInput:
		k = in.Key
	case *putItemInput:
		k = in.Item
	}
	if sk := k[attrSK].S; sk != nil {
		return *sk
	}
	return ""
}

// testRetryReadsHistoryAgain: a call whose aggregate write loses a race to another call of the same
// verification, which finishes every step while recentIDs more are counted, finds the verification
// neither in the outbox nor in recent_ids when it retries. Its history record, read again after the
// aggregate on every retry, keeps the call from counting it twice.
func testRetryReadsHistoryAgain(t *testing.T, client Client) {
	ctx := context.Background()
	hooked := &hookClient{Client: client}
	s, table := newTable(t, hooked)
	other := New(client, table)
	const agent = "agent-twice-at-once"
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	v := func(id string) store.Verification {
		return store.Verification{AgentID: agent, VerificationID: id, TaskID: "t", Result: "pass", VerifiedAt: at, CallerID: "c"}
	}
	if err := s.RecordVerification(ctx, v("first")); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	hooked.before = func(operation string, in any) {
		if operation != "PutItem" || sortKey(in) != skAggregate {
			return
		}
		once.Do(func() {
			if err := other.RecordVerification(ctx, v("twice")); err != nil {
				t.Error(err)
			}
			for i := range recentIDs {
				if err := other.RecordVerification(ctx, v(fmt.Sprintf("other-%d", i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	if err := s.RecordVerification(ctx, v("twice")); err != nil {
		t.Fatal(err)
	}
	hooked.before = nil
	if got, want := readAggregate(t, s, agent).agg.Verifications, int64(2+recentIDs); got != want {
		t.Errorf("%d verifications counted, want %d (each once)", got, want)
	}
}

// testRetryRacesFlush: a verification recorded again long after its writer died having counted it
// races another writer that writes it out of the outbox. Step 0 finds no record, and the aggregate,
// read just after the other writer's put, no longer holds it in the outbox; its id in recent_ids,
// where the other writer put it, keeps the verification from being counted twice.
func testRetryRacesFlush(t *testing.T, client Client) {
	ctx := context.Background()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := testclock.New(start)
	hooked := &hookClient{Client: client}
	s, table := newTable(t, hooked, WithClock(clk.Now))
	other := New(client, table, WithClock(clk.Now))
	const agent = "agent-retry-flush"
	v := func(id string) store.Verification {
		return store.Verification{AgentID: agent, VerificationID: id, TaskID: "t", Result: "pass", VerifiedAt: start, CallerID: "c"}
	}
	countOnly(t, s, v("orphan"))
	for i := range recentIDs {
		if err := s.RecordVerification(ctx, v(fmt.Sprintf("later-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	clk.Set(start.Add(outboxGrace))

	stepZero := make(chan struct{})
	var stepZeroOnce, readOnce sync.Once
	hooked.after = func(operation string, in any) {
		if operation == "GetItem" && strings.HasPrefix(sortKey(in), prefixHistory) {
			stepZeroOnce.Do(func() { close(stepZero) })
		}
	}
	hooked.before = func(operation string, in any) {
		if operation != "GetItem" || sortKey(in) != skAggregate {
			return
		}
		readOnce.Do(func() {
			<-stepZero
			if err := other.RecordVerification(ctx, v("flusher")); err != nil {
				t.Error(err)
			}
		})
	}
	if err := s.RecordVerification(ctx, v("orphan")); err != nil {
		t.Fatal(err)
	}
	hooked.before, hooked.after = nil, nil
	if got, want := readAggregate(t, s, agent).agg.Verifications, int64(1+recentIDs+1); got != want {
		t.Errorf("%d verifications counted, want %d (each once)", got, want)
	}
	if got := inHistory(t, s, agent); len(got) != 1+recentIDs+1 {
		t.Errorf("history = %v, want every verification once", got)
	}
}

// testRetryWritesCountedRecord: a verification recorded again with other content after its writer
// died having counted it gets the record that was counted, from the outbox, in its history.
func testRetryWritesCountedRecord(t *testing.T, client Client) {
	ctx := context.Background()
	s, _ := newTable(t, client)
	counted := store.Verification{AgentID: "agent-content", VerificationID: "v", TaskID: "t", Result: "pass",
		VerifiedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Paid: true, CallerID: "c"}
	countOnly(t, s, counted)
	retry := counted
	retry.Result, retry.Paid = "fail", false
	if err := s.RecordVerification(ctx, retry); err != nil {
		t.Fatal(err)
	}
	page, _, err := s.History(ctx, counted.AgentID, 10, "")
	if err != nil || len(page) != 1 {
		t.Fatalf("History = %d records, %v; want 1", len(page), err)
	}
	if got := page[0]; got.Result != counted.Result || got.Paid != counted.Paid {
		t.Errorf("history record result %s, paid %v; want %s, %v as counted", got.Result, got.Paid, counted.Result, counted.Paid)
	}
}

// countOnly is a writer that dies after step 1: v is counted and in the outbox, and nothing more.
func countOnly(t *testing.T, s *Store, v store.Verification) {
	t.Helper()
	got, err := s.getItem(context.Background(), getItemInput{Key: aggregateKey(v.AgentID), ConsistentRead: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.addToAggregate(context.Background(), v, historyItem(v), got); err != nil {
		t.Fatal(err)
	}
}

// readAggregate reads and decodes agent's aggregate item.
func readAggregate(t *testing.T, s *Store, agent string) aggregateItem {
	t.Helper()
	got, err := s.getItem(context.Background(), getItemInput{Key: aggregateKey(agent), ConsistentRead: true})
	if err != nil || got == nil {
		t.Fatalf("read aggregate of %s: %v (found: %v)", agent, err, got != nil)
	}
	a, err := decodeAggregate(got)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// inHistory lists the verification ids in agent's history, sorted.
func inHistory(t *testing.T, s *Store, agent string) []string {
	t.Helper()
	var ids []string
	for cursor := ""; ; {
		page, next, err := s.History(context.Background(), agent, 100, cursor)
		if err != nil {
			t.Fatalf("History(%s): %v", agent, err)
		}
		for _, v := range page {
			ids = append(ids, v.VerificationID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	slices.Sort(ids)
	return ids
}
