package dynamo

import (
	"context"
	"encoding/json"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
	"github.com/agent-output-verifier/verifier/pkg/store/storetest"
)

// testClient is what the tests give a store: the SDK's client, or a hooked one around it.
type testClient interface {
	Client
	TableAdmin
}

// newTable creates a fresh table in the dynalite at endpoint and returns a store on it.
func newTable(t *testing.T, client testClient, opts ...Option) (*Store, string) {
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
	t.Run("Log", func(t *testing.T) {
		storetest.RunLog(t, func(t *testing.T, now func() time.Time) store.ReceiptLog {
			s, _ := newTable(t, client, WithClock(now))
			return s
		})
	})
	t.Run("ExpiresAtIsEpochSeconds", func(t *testing.T) { testExpiresAtIsEpochSeconds(t, client) })
	t.Run("ExpiryWithClock", func(t *testing.T) { testExpiryWithClock(t, client) })
	t.Run("PingHidesConfiguration", func(t *testing.T) { testPingHidesConfiguration(t, client) })
	t.Run("RecordIsOnePut", func(t *testing.T) { testRecordIsOnePut(t, client) })
	t.Run("ReceiptIsOnePut", func(t *testing.T) { testReceiptIsOnePut(t, client) })
	t.Run("ManyInstancesOneAgent", func(t *testing.T) { testManyInstances(t, client) })
	t.Run("FoldCutAtEveryCall", func(t *testing.T) { testFoldCutAtEveryCall(t, client) })
	t.Run("BatchBounded", func(t *testing.T) { testBatchBounded(t, client) })
	t.Run("LegacyOutbox", func(t *testing.T) { testLegacyOutbox(t, client) })
	t.Run("RecordedAgainDuringFinish", func(t *testing.T) { testRecordedAgainDuringFinish(t, client) })
}

// testExpiresAtIsEpochSeconds reads the raw items back: DynamoDB's TTL only acts on a Number
// attribute holding epoch seconds, and silently ignores anything else (milliseconds, strings).
func testExpiresAtIsEpochSeconds(t *testing.T, client *dynamodb.Client) {
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
		got, err := New(client, table).getItem(ctx, &dynamodb.GetItemInput{Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("GetItem %s: %v", name, err)
		}
		n, ok := got["expires_at"].(*types.AttributeValueMemberN)
		if !ok {
			t.Fatalf("%s item expires_at = %#v, want a Number", name, got["expires_at"])
		}
		if got, want := n.Value, strconv.FormatInt(expires.Unix(), 10); got != want {
			t.Errorf("%s item expires_at = %s, want %s (epoch seconds)", name, got, want)
		}
	}
}

// testExpiryWithClock checks that reads and the reservation condition use the store's clock, not
// the server's, and count in whole seconds like DynamoDB's TTL.
func testExpiryWithClock(t *testing.T, client *dynamodb.Client) {
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
func testPingHidesConfiguration(t *testing.T, client *dynamodb.Client) {
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

// opCounter is a Client that counts the calls it sends by operation, and the aggregate writes
// DynamoDB refused for a stale version.
type opCounter struct {
	*hooked
	mu        sync.Mutex
	ops       map[string]int
	conflicts atomic.Int64
}

func newOpCounter(client *dynamodb.Client) *opCounter {
	c := &opCounter{hooked: &hooked{Client: client}}
	c.hook = func(operation string, in any, call func() error) error {
		c.mu.Lock()
		if c.ops == nil {
			c.ops = map[string]int{}
		}
		c.ops[operation]++
		c.mu.Unlock()
		err := call()
		if operation == "PutItem" && sortKey(in) == skAggregate && isConditionFailed(err) {
			c.conflicts.Add(1)
		}
		return err
	}
	return c
}

func (c *opCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

// testRecordIsOnePut: recording is one PutItem and nothing else, whether the verification is new,
// waiting in the inbox, or counted already; this is all an answer waits for.
func testRecordIsOnePut(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	counting := newOpCounter(client)
	s, _ := newTable(t, counting)
	v := verificationAt("agent-one-put", "v-1", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	for _, when := range []string{"new", "waiting in the inbox", "counted"} {
		if when == "counted" {
			if _, _, err := s.Fold(ctx, v.AgentID); err != nil {
				t.Fatal(err)
			}
		}
		counting.take()
		if err := s.RecordVerification(ctx, v); err != nil {
			t.Fatalf("RecordVerification (%s): %v", when, err)
		}
		if got := counting.take(); !maps.Equal(got, map[string]int{"PutItem": 1}) {
			t.Errorf("recording a verification %s sent %v, want one PutItem", when, got)
		}
	}
	if agg := aggregateOf(t, s, v.AgentID); agg.Verifications != 1 {
		t.Errorf("%d verifications counted, want 1", agg.Verifications)
	}
}

// testReceiptIsOnePut: a receipt's record and its pending leaf are one PutItem (one atomic write:
// no crash can leave one without the other), and the record reads back from it before the leaf
// is sequenced.
func testReceiptIsOnePut(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	counting := newOpCounter(client)
	s, _ := newTable(t, counting)
	r := store.Receipt{VerificationID: "v-one-put", ReceiptHash: [32]byte{7}, Result: "pass", KeyVersion: "v1",
		VerifiedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Expires: time.Date(2126, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, when := range []string{"new", "pending"} {
		counting.take()
		if err := s.RecordReceipt(ctx, r); err != nil {
			t.Fatalf("RecordReceipt (%s): %v", when, err)
		}
		if got := counting.take(); !maps.Equal(got, map[string]int{"PutItem": 1}) {
			t.Errorf("recording a receipt (%s) sent %v, want one PutItem", when, got)
		}
	}
	if got, ok, err := s.Receipt(ctx, r.VerificationID); err != nil || !ok || got.ReceiptHash != r.ReceiptHash {
		t.Errorf("Receipt while pending = %+v, ok %v, %v", got, ok, err)
	}
	if p, err := s.PendingLeaves(ctx, 10); err != nil || len(p) != 1 || p[0].Hash != r.ReceiptHash {
		t.Errorf("pending = %+v, %v", p, err)
	}
}

// Sizes of testManyInstances: instances share the table as `verifier serve` processes or Lambda
// sandboxes do, each with writers recording for one agent at once, as the service does (record,
// then fold); every third fold is given a timeout short enough to cut it off half-way.
const (
	manyInstances = 4
	manyWriters   = 6 // per instance
	manyRecords   = 12
)

// testManyInstances is the defect this design fixes: many writers on several store instances
// record for one agent at once, folding after each record, some folds cut off by a timeout. Every
// record must be in the history once and counted once, and the aggregate must equal the replay of
// the history; the folds must have raced each other, or the concurrency control went untested.
func testManyInstances(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	counting := newOpCounter(client)
	_, table := newTable(t, counting)
	const agent = "agent-hot"
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var cutOff atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range manyInstances {
		s := New(counting, table)
		for w := range manyWriters {
			wg.Go(func() {
				<-start
				for r := range manyRecords {
					v := verificationAt(agent, fmt.Sprintf("i%d-w%d-r%02d", i, w, r), base.Add(time.Duration(r)*time.Minute))
					v.Paid = r%2 == 0
					if err := s.RecordVerification(ctx, v); err != nil {
						t.Errorf("RecordVerification: %v", err)
						return
					}
					fctx, cancel := context.WithCancel(ctx)
					if r%3 == 2 {
						fctx, cancel = context.WithTimeout(ctx, time.Duration(1+r%5)*time.Millisecond)
					}
					if _, _, err := s.Fold(fctx, agent); err != nil {
						cutOff.Add(1)
					}
					cancel()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	const want = manyInstances * manyWriters * manyRecords
	reader := New(client, table)
	if n := len(inHistory(t, reader, agent)); n != want {
		t.Errorf("%d records in the history, want %d", n, want)
	}
	agg := aggregateOf(t, reader, agent)
	if agg.Verifications != want || agg.Paid != want/2 {
		t.Errorf("aggregate counts %d verifications, %d paid; want %d, %d", agg.Verifications, agg.Paid, want, want/2)
	}
	if err := reputation.Compare(agg, replay(t, reader, agent)); err != nil {
		t.Errorf("aggregate and history disagree: %v", err)
	}
	if counting.conflicts.Load() == 0 {
		t.Errorf("no aggregate write lost a race among %d concurrent folders: the concurrency control went untested", manyInstances*manyWriters)
	}
	if cutOff.Load() == 0 {
		t.Error("no fold was cut off: the resumption went untested")
	}
	if left := inboxOf(t, reader, agent); len(left) != 0 {
		t.Errorf("%d records left in the inbox after a read", len(left))
	}
	t.Logf("%d records; %d aggregate writes lost a race, %d folds were cut off", want, counting.conflicts.Load(), cutOff.Load())
}

// failAt is a Client whose n-th call (counting from 1) fails without being sent, as a folder that
// dies or times out just before that call.
func failAt(client *dynamodb.Client, n int64) *hooked {
	var calls atomic.Int64
	return &hooked{Client: client, hook: func(_ string, _ any, call func() error) error {
		if calls.Add(1) == n {
			return errInjected
		}
		return call()
	}}
}

var errInjected = errors.New("injected failure")

// cutRecords is how many new records wait when testFoldCutAtEveryCall cuts a fold: enough for
// the finishing of a batch to run in parallel; folds of more than one step are testBatchBounded's.
const cutRecords = 5

// testFoldCutAtEveryCall cuts a fold off before each of its calls in turn, one agent per cut: the
// records waiting are new ones and one recorded again after it was counted. After the cut, a verification recorded and a read by another instance must find
// every verification in the history once and counted once.
func testFoldCutAtEveryCall(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	_, table := newTable(t, client)
	clean := New(client, table)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for cut := int64(1); ; cut++ {
		agent := fmt.Sprintf("agent-cut-%03d", cut)
		counted := verificationAt(agent, "counted", base)
		if err := clean.RecordVerification(ctx, counted); err != nil {
			t.Fatal(err)
		}
		if _, _, err := clean.Fold(ctx, agent); err != nil {
			t.Fatal(err)
		}
		want := []string{"counted", "late"}
		records := []store.Verification{counted} // recorded again: must not count twice
		for i := range cutRecords {
			v := verificationAt(agent, fmt.Sprintf("new-%03d", i), base.Add(time.Duration(i)*time.Second))
			records = append(records, v)
			want = append(want, v.VerificationID)
		}
		for _, v := range records {
			if err := clean.RecordVerification(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		dying := New(failAt(client, cut), table)
		_, _, err := dying.Fold(ctx, agent)
		if err != nil && !errors.Is(err, errInjected) {
			t.Fatalf("cut before call %d: Fold: %v", cut, err)
		}
		if err := clean.RecordVerification(ctx, verificationAt(agent, "late", base.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if got := inHistory(t, clean, agent); !slices.Equal(got, want) {
			t.Fatalf("cut before call %d: history has %d records, want %d, each once", cut, len(got), len(want))
		}
		agg := aggregateOf(t, clean, agent)
		if agg.Verifications != int64(len(want)) {
			t.Fatalf("cut before call %d: %d verifications counted, want %d", cut, agg.Verifications, len(want))
		}
		if err := reputation.Compare(agg, replay(t, clean, agent)); err != nil {
			t.Fatalf("cut before call %d: aggregate and history disagree: %v", cut, err)
		}
		if err == nil {
			t.Logf("a fold of %d records makes %d calls; cut before each, none was lost or counted twice", len(records), cut-1)
			return // the fold ran to the end: every call was cut once
		}
	}
}

// testBatchBounded: records with the longest ids and labels, each a large share of an item, are
// folded in steps whose batch keeps the aggregate item far under DynamoDB's 400 KB, and all are
// counted and in the history.
func testBatchBounded(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	hooked := &hookClient{hooked: &hooked{Client: client}}
	hooked.hook = hooked.call
	s, _ := newTable(t, hooked)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	agent := strings.Repeat("<", storekey.MaxIDLength)
	label := strings.Repeat("<", storekey.MaxLabelLength)
	const records = 60
	for i := range records {
		id := fmt.Sprintf("%02d", i) + strings.Repeat("<", storekey.MaxIDLength-2)
		if err := s.RecordVerification(ctx, store.Verification{AgentID: agent, VerificationID: id, TaskID: label,
			CallerID: label, Result: "pass", OverallRatio: 0.1234567890123, VerifiedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	largest, steps := 0, 0
	hooked.before = func(operation string, in any) {
		if put, ok := in.(*dynamodb.PutItemInput); ok && sortKey(in) == skAggregate {
			mu.Lock()
			largest, steps = max(largest, itemSize(put.Item)), steps+1
			mu.Unlock()
		}
	}
	agg := aggregateOf(t, s, agent)
	hooked.before = nil
	if n := len(inHistory(t, s, agent)); agg.Verifications != records || n != records {
		t.Errorf("%d counted and %d in the history, want %d each", agg.Verifications, n, records)
	}
	if largest > 300<<10 || steps < 2 {
		t.Errorf("%d fold steps wrote aggregate items of up to %d bytes; want several steps, each at most 300 KB", steps, largest)
	}
	t.Logf("%d fold steps, aggregate items of up to %d bytes", steps, largest)
}

// testLegacyOutbox: an aggregate an earlier version of this package wrote, with a record counted
// and waiting in its outbox (not in the history) and recent_ids, is taken over by the next fold:
// the record is written to the history, nothing is counted twice, and the old attributes go.
func testLegacyOutbox(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	s, _ := newTable(t, client)
	const agent = "agent-legacy"
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	old := verificationAt(agent, "in-outbox", at)
	var agg reputation.Aggregate
	agg.Add(old.Observation())
	body, err := json.Marshal(agg)
	if err != nil {
		t.Fatal(err)
	}
	// The record in DynamoDB's JSON form, as the earlier version wrote it.
	record := map[string]map[string]any{
		attrPK: {"S": prefixAgent + agent}, attrSK: {"S": historySK(old)},
		attrAgentID: {"S": agent}, attrVerifID: {"S": old.VerificationID}, attrTaskID: {"S": old.TaskID},
		attrCallerID: {"S": old.CallerID}, attrResult: {"S": old.Result}, attrRatio: {"N": "1"},
		attrVerifiedAt: {"S": at.Format(time.RFC3339Nano)}, attrPaid: {"BOOL": old.Paid},
	}
	entry, err := json.Marshal(map[string]any{"queued": at.Unix(), "record": record})
	if err != nil {
		t.Fatal(err)
	}
	it := aggregateKey(agent)
	it[attrAgentID] = str(agent)
	it[attrVersion] = number(1)
	it[attrAggregate] = str(string(body))
	it[attrRecentIDs] = &types.AttributeValueMemberL{Value: []types.AttributeValue{str("in-outbox")}}
	it[attrOutbox] = &types.AttributeValueMemberM{Value: item{"in-outbox": str(string(entry))}}
	if err := s.putItem(ctx, &dynamodb.PutItemInput{Item: it}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []store.Verification{old, verificationAt(agent, "new", at.Add(time.Minute))} {
		if err := s.RecordVerification(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if got := inHistory(t, s, agent); !slices.Equal(got, []string{"in-outbox", "new"}) {
		t.Errorf("history = %v, want [in-outbox new]", got)
	}
	if n := aggregateOf(t, s, agent).Verifications; n != 2 {
		t.Errorf("%d verifications counted, want 2", n)
	}
	raw, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: aggregateKey(agent), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{attrOutbox, attrRecentIDs, attrBatch} {
		if _, ok := raw[name]; ok {
			t.Errorf("the aggregate still holds %s after the fold", name)
		}
	}
}

// testRecordedAgainDuringFinish: a verification recorded again while a fold finishes it, after its
// history record is written and before its inbox item is deleted, and again after the deletion,
// is counted once: the next fold finds its history record and deletes the inbox item.
func testRecordedAgainDuringFinish(t *testing.T, client *dynamodb.Client) {
	ctx := context.Background()
	hooked := &hookClient{hooked: &hooked{Client: client}}
	hooked.hook = hooked.call
	s, table := newTable(t, hooked)
	other := New(client, table)
	const agent = "agent-again"
	v := verificationAt(agent, "again", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	if err := other.RecordVerification(ctx, v); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	hooked.after = func(operation string, in any) {
		if operation == "PutItem" && strings.HasPrefix(sortKey(in), prefixHistory) {
			once.Do(func() {
				if err := other.RecordVerification(ctx, v); err != nil {
					t.Error(err)
				}
			})
		}
	}
	if _, _, err := s.Fold(ctx, agent); err != nil {
		t.Fatal(err)
	}
	hooked.after = nil
	if err := other.RecordVerification(ctx, v); err != nil {
		t.Fatal(err)
	}
	if n := len(inboxOf(t, s, agent)); n != 1 {
		t.Fatalf("%d records in the inbox after recording a counted one again, want 1", n)
	}
	if agg := aggregateOf(t, other, agent); agg.Verifications != 1 {
		t.Errorf("%d verifications counted, want 1", agg.Verifications)
	}
	if n := len(inboxOf(t, s, agent)); n != 0 {
		t.Errorf("%d records left in the inbox after a read, want 0", n)
	}
	if got := inHistory(t, s, agent); !slices.Equal(got, []string{"again"}) {
		t.Errorf("history = %v, want [again]", got)
	}
}

func verificationAt(agent, id string, at time.Time) store.Verification {
	return store.Verification{AgentID: agent, VerificationID: id, TaskID: "t", Result: "pass", OverallRatio: 1, VerifiedAt: at, CallerID: "c"}
}

func aggregateOf(t *testing.T, s *Store, agent string) reputation.Aggregate {
	t.Helper()
	agg, ok, err := s.AgentAggregate(context.Background(), agent)
	if err != nil || !ok {
		t.Fatalf("AgentAggregate(%s) = ok %v, %v", agent, ok, err)
	}
	return agg
}

// replay is the aggregate of agent's whole history, built from scratch.
func replay(t *testing.T, s *Store, agent string) reputation.Aggregate {
	t.Helper()
	page, next, err := s.History(context.Background(), agent, store.MaxHistoryPage, "")
	if err != nil || next != "" {
		t.Fatalf("History(%s): next %q, %v; want one page", agent, next, err)
	}
	obs := make([]reputation.Observation, len(page))
	for i, v := range page {
		obs[i] = v.Observation()
	}
	return reputation.Replay(obs)
}

// inboxOf lists the verification ids waiting in agent's inbox, read without folding.
func inboxOf(t *testing.T, s *Store, agent string) []string {
	t.Helper()
	out, err := s.client.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :in)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: item{":pk": str(prefixAgent + agent), ":in": str(prefixInbox)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(1000),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range out.Items {
		id, err := stringAttr(it, attrVerifID)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
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

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return 21
	case *types.AttributeValueMemberBOOL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + len(v.Value) + itemSize(v.Value)
	}
	return 0
}

// hooked is the SDK's client with hook run around each call the store makes, given the
// operation's name and input, and the call itself; a nil hook just calls.
type hooked struct {
	*dynamodb.Client
	hook func(operation string, in any, call func() error) error
}

func (c *hooked) do(operation string, in any, call func() error) error {
	if c.hook == nil {
		return call()
	}
	return c.hook(operation, in, call)
}

func (c *hooked) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.GetItemOutput, err error) {
	err = c.do("GetItem", in, func() (err error) { out, err = c.Client.GetItem(ctx, in, opts...); return err })
	return out, err
}

func (c *hooked) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = c.do("PutItem", in, func() (err error) { out, err = c.Client.PutItem(ctx, in, opts...); return err })
	return out, err
}

func (c *hooked) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = c.do("UpdateItem", in, func() (err error) { out, err = c.Client.UpdateItem(ctx, in, opts...); return err })
	return out, err
}

func (c *hooked) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.DeleteItemOutput, err error) {
	err = c.do("DeleteItem", in, func() (err error) { out, err = c.Client.DeleteItem(ctx, in, opts...); return err })
	return out, err
}

func (c *hooked) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (out *dynamodb.QueryOutput, err error) {
	err = c.do("Query", in, func() (err error) { out, err = c.Client.Query(ctx, in, opts...); return err })
	return out, err
}

func (c *hooked) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.BatchWriteItemOutput, err error) {
	err = c.do("BatchWriteItem", in, func() (err error) { out, err = c.Client.BatchWriteItem(ctx, in, opts...); return err })
	return out, err
}

func (c *hooked) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (out *dynamodb.BatchGetItemOutput, err error) {
	err = c.do("BatchGetItem", in, func() (err error) { out, err = c.Client.BatchGetItem(ctx, in, opts...); return err })
	return out, err
}

// hookClient is a Client that calls before ahead of each call it sends and after once the call is
// answered, so that a test can put another writer's steps between two of a store's calls.
type hookClient struct {
	*hooked
	before, after func(operation string, in any)
}

func (c *hookClient) call(operation string, in any, call func() error) error {
	if c.before != nil {
		c.before(operation, in)
	}
	err := call()
	if c.after != nil {
		c.after(operation, in)
	}
	return err
}

// sortKey is the sort key a GetItem reads or a PutItem writes, and "" for any other call.
func sortKey(in any) string {
	var k item
	switch in := in.(type) {
	case *dynamodb.GetItemInput:
		k = in.Key
	case *dynamodb.PutItemInput:
		k = in.Item
	}
	sk, _ := stringAttr(k, attrSK)
	return sk
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
