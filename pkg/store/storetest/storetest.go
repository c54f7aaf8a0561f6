// Package storetest is the one contract every store.Store must pass. Each implementation's tests
// call Run with a function that opens a fresh, empty store, so bolt and DynamoDB are held to exactly
// the same behaviour: the handlers above them are written against this contract, not against either.
package storetest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
)

// Run runs the contract against stores made by open. open must return a new, empty store each
// time (it is called once per subtest, possibly in parallel) that reads time from now, the one
// clock of the subtest, and arrange its own cleanup. The tests whose outcome involves days and
// expiry run at every testclock.Epochs instant, so the contract holds whatever the date.
func Run(t *testing.T, open func(t *testing.T, now func() time.Time) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Store, clk *testclock.Clock)
		// dated says the outcome involves the calendar (days, expiry): it runs at every epoch.
		dated bool
	}{
		{"AllowanceConcurrentCap", testAllowanceConcurrentCap, true},
		{"AllowanceSeparation", testAllowanceSeparation, true},
		{"AllowanceZeroLimit", testAllowanceZeroLimit, true},
		{"AllowanceBadArguments", testAllowanceBadArguments, true},
		{"PaymentReservedOnce", testPaymentReservedOnce, true},
		{"PaymentConcurrentReservation", testPaymentConcurrent, true},
		{"PaymentExpiredReservationReused", testPaymentExpiredReused, true},
		{"PaymentReleased", testPaymentReleased, true},
		{"ClaimOnce", testClaimOnce, true},
		{"ClaimLifecycle", testClaimLifecycle, true},
		{"ClaimReleased", testClaimReleased, true},
		{"ClaimExpires", testClaimExpires, true},
		{"ClaimConcurrent", testClaimConcurrent, false},
		{"ClaimConcurrentTakeOver", testClaimConcurrentTakeOver, false},
		{"HistoryPagination", testHistoryPagination, false},
		{"HistoryFieldsRoundTrip", testHistoryFields, false},
		{"HistoryRecordIsIdempotent", testHistoryIdempotent, false},
		{"HistoryUnknownAgent", testHistoryUnknownAgent, false},
		{"HistoryLongestAgentID", testLongestAgentID, false},
		{"HistoryBadCursor", testHistoryBadCursor, false},
		{"HistoryBadLimit", testHistoryBadLimit, false},
		{"RecordRejectsInvalid", testRecordRejectsInvalid, false},
		{"AggregateMatchesHistory", testAggregateMatchesHistory, false},
		{"AggregateConcurrentWriters", testAggregateConcurrent, false},
		{"OneAgentManyWriters", testOneAgentManyWriters, false},
		{"Ping", testPing, false},
	}
	epochs := testclock.Epochs()
	for _, tc := range tests {
		at := epochs
		if !tc.dated {
			at = at[:1]
		}
		for _, start := range at {
			name := tc.name
			if tc.dated {
				name += "/" + start.Format("2006-01-02")
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				clk := testclock.New(start)
				tc.run(t, open(t, clk.Now), clk)
			})
		}
	}
}

// day1 is the test clock's UTC day and day2 the day after, as the service names days.
func day1(clk *testclock.Clock) string { return clk.Now().UTC().Format(time.DateOnly) }
func day2(clk *testclock.Clock) string {
	return clk.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
}

// future is far enough ahead of the test clock that nothing the suite writes expires while it runs.
func future(clk *testclock.Clock) time.Time { return clk.Now().Add(48 * time.Hour) }

func testAllowanceConcurrentCap(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const limit, callers = 20, 50
	type answer struct {
		granted   bool
		remaining int
		err       error
	}
	answers := make([]answer, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			g, r, err := s.ConsumeAllowance(ctx, "198.51.100.7", day1(clk), limit, future(clk))
			answers[i] = answer{g, r, err}
		})
	}
	close(start)
	wg.Wait()

	var remainders []int
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("caller %d: ConsumeAllowance: %v", i, a.err)
		}
		if a.granted {
			remainders = append(remainders, a.remaining)
		} else if a.remaining != 0 {
			t.Errorf("caller %d: refused with remaining %d, want 0", i, a.remaining)
		}
	}
	if got, want := len(remainders), limit; got != want {
		t.Fatalf("granted %d of %d concurrent calls, want exactly %d", got, callers, want)
	}
	// Each grant saw a distinct count, so the remainders are exactly limit-1 down to 0.
	slices.Sort(remainders)
	for i, r := range remainders {
		if r != i {
			t.Fatalf("remaining values of the grants = %v, want 0..%d each once", remainders, limit-1)
		}
	}
	if got, err := s.AllowanceUsed(ctx, "198.51.100.7", day1(clk)); err != nil || got != limit {
		t.Fatalf("AllowanceUsed = %d, %v; want %d, nil", got, err, limit)
	}
	if g, r, err := s.ConsumeAllowance(ctx, "198.51.100.7", day1(clk), limit, future(clk)); err != nil || g || r != 0 {
		t.Fatalf("call after the cap = %v, %d, %v; want false, 0, nil", g, r, err)
	}
}

func testAllowanceSeparation(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const limit = 2
	steps := []struct {
		client, day   string
		wantGranted   bool
		wantRemaining int
	}{
		{"client-a", day1(clk), true, 1},
		{"client-a", day1(clk), true, 0},
		{"client-a", day1(clk), false, 0},
		{"client-b", day1(clk), true, 1}, // another client has its own allowance
		{"client-a", day2(clk), true, 1}, // a new day starts afresh
		{"client-a", day1(clk), false, 0},
	}
	for i, st := range steps {
		g, r, err := s.ConsumeAllowance(ctx, st.client, st.day, limit, future(clk))
		if err != nil {
			t.Fatalf("step %d: ConsumeAllowance(%s, %s): %v", i, st.client, st.day, err)
		}
		if g != st.wantGranted || r != st.wantRemaining {
			t.Fatalf("step %d: ConsumeAllowance(%s, %s) = %v, %d; want %v, %d", i, st.client, st.day, g, r, st.wantGranted, st.wantRemaining)
		}
	}
	used := []struct {
		client, day string
		want        int
	}{
		{"client-a", day1(clk), 2},
		{"client-a", day2(clk), 1},
		{"client-b", day1(clk), 1},
		{"client-b", day2(clk), 0},
		{"client-never-seen", day1(clk), 0},
	}
	for _, u := range used {
		got, err := s.AllowanceUsed(ctx, u.client, u.day)
		if err != nil {
			t.Fatalf("AllowanceUsed(%s, %s): %v", u.client, u.day, err)
		}
		if got != u.want {
			t.Errorf("AllowanceUsed(%s, %s) = %d, want %d", u.client, u.day, got, u.want)
		}
	}
}

func testAllowanceZeroLimit(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	g, r, err := s.ConsumeAllowance(ctx, "client-z", day1(clk), 0, future(clk))
	if err != nil || g || r != 0 {
		t.Fatalf("ConsumeAllowance with limit 0 = %v, %d, %v; want false, 0, nil", g, r, err)
	}
	if got, err := s.AllowanceUsed(ctx, "client-z", day1(clk)); err != nil || got != 0 {
		t.Fatalf("AllowanceUsed after a refused call = %d, %v; want 0, nil", got, err)
	}
}

func testAllowanceBadArguments(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	cases := []struct{ name, client, day string }{
		{"empty client", "", day1(clk)},
		{"day not a date", "client-a", "yesterday"},
		{"day out of range", "client-a", "2025-13-01"},
		{"day with time", "client-a", "2025-03-01T00:00:00Z"},
	}
	if _, _, err := s.ConsumeAllowance(ctx, "client-a", day1(clk), 5, clk.Now().Add(-time.Hour)); err == nil {
		t.Errorf("ConsumeAllowance with an expiry in the past: no error")
	}
	for _, c := range cases {
		if _, _, err := s.ConsumeAllowance(ctx, c.client, c.day, 5, future(clk)); err == nil {
			t.Errorf("ConsumeAllowance with %s: no error", c.name)
		}
		if _, err := s.AllowanceUsed(ctx, c.client, c.day); err == nil {
			t.Errorf("AllowanceUsed with %s: no error", c.name)
		}
	}
}

func testPaymentReservedOnce(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const id = "0x3b9aca00f1e2d3c4b5a6978812345678900abcdef0123456789abcdef0123456"
	if live, err := s.PaymentReserved(ctx, id); err != nil || live {
		t.Fatalf("PaymentReserved before any reservation = %v, %v; want false", live, err)
	}
	if err := s.ReservePayment(ctx, id, future(clk)); err != nil {
		t.Fatalf("first ReservePayment: %v", err)
	}
	if live, err := s.PaymentReserved(ctx, id); err != nil || !live {
		t.Fatalf("PaymentReserved after the reservation = %v, %v; want true", live, err)
	}
	if err := s.ReservePayment(ctx, id, future(clk)); !errors.Is(err, store.ErrPaymentReplayed) {
		t.Fatalf("second ReservePayment = %v, want ErrPaymentReplayed", err)
	}
	if err := s.ReservePayment(ctx, id+"-other", future(clk)); err != nil {
		t.Fatalf("ReservePayment of another id: %v", err)
	}
	if err := s.ReservePayment(ctx, "", future(clk)); err == nil || errors.Is(err, store.ErrPaymentReplayed) {
		t.Fatalf("ReservePayment of an empty id = %v, want a plain error", err)
	}
}

// testPaymentReleased: a released reservation is gone, so the same payment can be reserved again
// (and then once only); releasing what is not reserved is no error. Both kinds of id: an EVM
// payment's reservation may still be on its way to disk when it is released.
func testPaymentReleased(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	for _, id := range []string{
		"eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913/0x70997970c51812dc3a010c7d01b50e0d17dc79c8/0x00000000000000000000000000000000000000000000000000000000000000aa",
		"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp/aa86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	} {
		if err := s.ReleasePayment(ctx, id); err != nil {
			t.Fatalf("ReleasePayment of an id never reserved: %v", err)
		}
		if err := s.ReservePayment(ctx, id, future(clk)); err != nil {
			t.Fatalf("ReservePayment: %v", err)
		}
		if err := s.ReleasePayment(ctx, id); err != nil {
			t.Fatalf("ReleasePayment: %v", err)
		}
		if live, err := s.PaymentReserved(ctx, id); err != nil || live {
			t.Fatalf("PaymentReserved after the release = %v, %v; want false", live, err)
		}
		if err := s.ReservePayment(ctx, id, future(clk)); err != nil {
			t.Fatalf("ReservePayment after the release: %v", err)
		}
		if err := s.ReservePayment(ctx, id, future(clk)); !errors.Is(err, store.ErrPaymentReplayed) {
			t.Fatalf("second ReservePayment after the release = %v, want ErrPaymentReplayed", err)
		}
	}
	if err := s.ReleasePayment(ctx, ""); err == nil {
		t.Fatal("ReleasePayment of an empty id: no error")
	}
}

func testPaymentConcurrent(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const racers = 20
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			errs[i] = s.ReservePayment(ctx, "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW", future(clk))
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, store.ErrPaymentReplayed):
		default:
			t.Fatalf("racer %d: ReservePayment: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent reservations of one payment won, want exactly 1", won, racers)
	}
}

func testPaymentExpiredReused(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const id = "nonce-expired"
	if err := s.ReservePayment(ctx, id, clk.Now().Add(-time.Hour)); err != nil {
		t.Fatalf("ReservePayment with a past expiry: %v", err)
	}
	if live, err := s.PaymentReserved(ctx, id); err != nil || live {
		t.Fatalf("PaymentReserved of an expired reservation = %v, %v; want false", live, err)
	}
	if err := s.ReservePayment(ctx, id, future(clk)); err != nil {
		t.Fatalf("ReservePayment over an expired reservation = %v, want nil", err)
	}
	if err := s.ReservePayment(ctx, id, future(clk)); !errors.Is(err, store.ErrPaymentReplayed) {
		t.Fatalf("ReservePayment over a live reservation = %v, want ErrPaymentReplayed", err)
	}
}

// sampleHistory is agent's verifications in the order History must return them: newest first,
// and for one instant the larger verification id first.
func sampleHistory(agent string) []store.Verification {
	base := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	zone := time.FixedZone("UTC+2", 2*60*60)
	at := []time.Time{
		base.Add(3 * time.Hour).In(zone), // stored in UTC, compared with Equal
		base.Add(2 * time.Hour),
		base.Add(time.Hour + time.Nanosecond),
		base.Add(time.Hour), // the next two share an instant
		base.Add(time.Hour),
		base,
		base.Add(-400 * 24 * time.Hour),
	}
	ids := []string{"v-7", "v-6", "v-5", "v-4b", "v-4a", "v-2", "v-1"}
	out := make([]store.Verification, len(at))
	for i := range at {
		out[i] = store.Verification{
			AgentID:        agent,
			VerificationID: ids[i],
			TaskID:         fmt.Sprintf("task-%d", i%3),
			Result:         []string{"pass", "fail"}[i%2],
			OverallRatio:   float64(i) / 7,
			VerifiedAt:     at[i],
			Paid:           i%3 == 0,
			CallerID:       fmt.Sprintf("%064x", i),
		}
	}
	return out
}

// recordShuffled records vs in an order unrelated to the expected one, so the store's ordering is
// what is tested.
func recordShuffled(t *testing.T, s store.Store, vs []store.Verification) {
	t.Helper()
	for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
		if i >= len(vs) {
			continue
		}
		if err := s.RecordVerification(context.Background(), vs[i]); err != nil {
			t.Fatalf("RecordVerification(%s): %v", vs[i].VerificationID, err)
		}
	}
}

func ids(vs []store.Verification) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.VerificationID
	}
	return out
}

func testHistoryPagination(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	want := sampleHistory("agent-paged")
	recordShuffled(t, s, want)
	recordShuffled(t, s, sampleHistory("agent-other")) // must not leak into agent-paged's pages

	for _, limit := range []int{1, 2, 3, 6, 7, 8, 100} {
		t.Run(fmt.Sprintf("limit%d", limit), func(t *testing.T) {
			var got []store.Verification
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > len(want)+1 {
					t.Fatalf("pagination did not end after %d pages", pages)
				}
				page, next, err := s.History(ctx, "agent-paged", limit, cursor)
				if err != nil {
					t.Fatalf("History(limit %d, page %d): %v", limit, pages, err)
				}
				if len(page) > limit {
					t.Fatalf("page %d has %d items, limit %d", pages, len(page), limit)
				}
				got = append(got, page...)
				if next == "" {
					break
				}
				if len(page) != limit {
					t.Fatalf("page %d has %d items and a next cursor; only the last page may be short", pages, len(page))
				}
				cursor = next
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Fatalf("history through cursors = %v, want %v", ids(got), ids(want))
			}
			for _, v := range got {
				if v.AgentID != "agent-paged" {
					t.Fatalf("history of agent-paged holds a record of %q", v.AgentID)
				}
			}
		})
	}
}

func testHistoryFields(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	want := sampleHistory("agent-fields")
	// Optional fields left empty must come back empty.
	want[1].TaskID, want[1].CallerID = "", ""
	want[2].OverallRatio = 1
	want[3].OverallRatio = 0
	recordShuffled(t, s, want)
	got, next, err := s.History(ctx, "agent-fields", len(want), "")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if next != "" {
		t.Errorf("History of every record: next = %q, want \"\"", next)
	}
	if len(got) != len(want) {
		t.Fatalf("History returned %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.VerifiedAt.Equal(w.VerifiedAt) {
			t.Errorf("record %d: VerifiedAt = %v, want %v", i, g.VerifiedAt, w.VerifiedAt)
		}
		g.VerifiedAt, w.VerifiedAt = time.Time{}, time.Time{}
		if g != w {
			t.Errorf("record %d = %+v, want %+v", i, g, w)
		}
	}
}

func testHistoryIdempotent(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	v := sampleHistory("agent-twice")[0]
	for range 3 {
		if err := s.RecordVerification(ctx, v); err != nil {
			t.Fatalf("RecordVerification: %v", err)
		}
	}
	got, _, err := s.History(ctx, "agent-twice", 10, "")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("recording one verification three times left %d records, want 1", len(got))
	}
}

// testLongestAgentID: the service accepts agent ids of 200 characters, up to 800 bytes of UTF-8;
// such an agent's verifications are recorded and read back like any other's.
func testLongestAgentID(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	agent := strings.Repeat("\U0001F600", 200) // 800 bytes
	v := sampleHistory(agent)[0]
	if err := s.RecordVerification(ctx, v); err != nil {
		t.Fatalf("RecordVerification of an 800-byte agent id: %v", err)
	}
	page, _, err := s.History(ctx, agent, 10, "")
	if err != nil || len(page) != 1 || page[0].AgentID != agent {
		t.Fatalf("History of an 800-byte agent id = %d records, %v; want the one recorded", len(page), err)
	}
	if agg, ok, err := s.AgentAggregate(ctx, agent); err != nil || !ok || agg.Verifications != 1 {
		t.Fatalf("AgentAggregate of an 800-byte agent id = %d, %v, %v; want 1 verification", agg.Verifications, ok, err)
	}
}

func testHistoryUnknownAgent(t *testing.T, s store.Store, clk *testclock.Clock) {
	recordShuffled(t, s, sampleHistory("agent-known"))
	page, next, err := s.History(context.Background(), "agent-unknown", 10, "")
	if err != nil || len(page) != 0 || next != "" {
		t.Fatalf("History of an unknown agent = %d records, next %q, %v; want none, \"\", nil", len(page), next, err)
	}
}

func testHistoryBadCursor(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	recordShuffled(t, s, sampleHistory("agent-cursor"))
	b64 := base64.RawURLEncoding.EncodeToString
	cursors := []struct{ name, cursor string }{
		{"not base64", "%%%not-a-cursor%%%"},
		{"padded standard base64", "aGVsbG8="},
		{"random text", b64([]byte("hello"))},
		{"time without id", b64([]byte("2025-03-01T12:00:00.000000000Z#"))},
		{"bad time", b64([]byte("2025-02-30T12:00:00.000000000Z#v-1"))},
		{"short time", b64([]byte("2025-03-01T12:00:00Z#v-1"))},
		{"wrong separator", b64([]byte("2025-03-01T12:00:00.000000000Z/v-1"))},
	}
	for _, c := range cursors {
		page, next, err := s.History(ctx, "agent-cursor", 3, c.cursor)
		if !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("History with cursor %s = %d records, next %q, %v; want ErrBadCursor", c.name, len(page), next, err)
		}
	}
}

func testHistoryBadLimit(t *testing.T, s store.Store, clk *testclock.Clock) {
	for _, limit := range []int{0, -1} {
		if _, _, err := s.History(context.Background(), "agent-limit", limit, ""); err == nil || errors.Is(err, store.ErrBadCursor) {
			t.Errorf("History with limit %d = %v, want a plain error", limit, err)
		}
	}
	if _, _, err := s.History(context.Background(), "", 10, ""); err == nil {
		t.Errorf("History of an empty agent id: no error")
	}
}

func testRecordRejectsInvalid(t *testing.T, s store.Store, clk *testclock.Clock) {
	valid := sampleHistory("agent-invalid")[0]
	cases := []struct {
		name   string
		mutate func(*store.Verification)
	}{
		{"empty agent id", func(v *store.Verification) { v.AgentID = "" }},
		{"empty verification id", func(v *store.Verification) { v.VerificationID = "" }},
		{"unknown result", func(v *store.Verification) { v.Result = "maybe" }},
		{"zero time", func(v *store.Verification) { v.VerifiedAt = time.Time{} }},
		{"task id of 2 KB", func(v *store.Verification) { v.TaskID = strings.Repeat("t", 2048) }},
		{"caller id of 2 KB", func(v *store.Verification) { v.CallerID = strings.Repeat("c", 2048) }},
	}
	for _, c := range cases {
		v := valid
		c.mutate(&v)
		if err := s.RecordVerification(context.Background(), v); err == nil {
			t.Errorf("RecordVerification with %s: no error", c.name)
		}
	}
	page, _, err := s.History(context.Background(), "agent-invalid", 10, "")
	if err != nil || len(page) != 0 {
		t.Fatalf("History after refused records = %d records, %v; want none", len(page), err)
	}
}

func testPing(t *testing.T, s store.Store, clk *testclock.Clock) {
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// replayHistory reads the agent's whole history through History's pages and replays it into an
// aggregate from scratch: what the maintained aggregate must equal.
func replayHistory(t *testing.T, s store.Store, agent string) (reputation.Aggregate, int) {
	t.Helper()
	var obs []reputation.Observation
	cursor := ""
	for {
		page, next, err := s.History(context.Background(), agent, store.MaxHistoryPage, cursor)
		if err != nil {
			t.Fatalf("History(%s): %v", agent, err)
		}
		for _, v := range page {
			obs = append(obs, v.Observation())
		}
		if next == "" {
			return reputation.Replay(obs), len(obs)
		}
		cursor = next
	}
}

func aggregateOf(t *testing.T, s store.Store, agent string) reputation.Aggregate {
	t.Helper()
	agg, ok, err := s.AgentAggregate(context.Background(), agent)
	if err != nil || !ok {
		t.Fatalf("AgentAggregate(%s) = ok %v, %v; want an aggregate", agent, ok, err)
	}
	return agg
}

func testAggregateMatchesHistory(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	if _, ok, err := s.AgentAggregate(ctx, "agent-nobody"); err != nil || ok {
		t.Fatalf("AgentAggregate of an unknown agent = ok %v, %v; want false, nil", ok, err)
	}
	if _, _, err := s.AgentAggregate(ctx, ""); err == nil {
		t.Errorf("AgentAggregate of an empty agent id: no error")
	}
	want := sampleHistory("agent-agg")
	recordShuffled(t, s, want)
	recordShuffled(t, s, sampleHistory("agent-agg-other"))
	recordShuffled(t, s, want) // every record again: nothing may count twice

	got := aggregateOf(t, s, "agent-agg")
	replayed, n := replayHistory(t, s, "agent-agg")
	if n != len(want) {
		t.Fatalf("history has %d records, want %d", n, len(want))
	}
	if err := reputation.Compare(got, replayed); err != nil {
		t.Fatalf("aggregate and history disagree: %v", err)
	}
	passed, paid := 0, 0
	for _, v := range want {
		if v.Result == "pass" {
			passed++
		}
		if v.Paid {
			paid++
		}
	}
	if got.Verifications != int64(len(want)) || got.Passed != int64(passed) || got.Paid != int64(paid) {
		t.Errorf("aggregate totals %d/%d passed/%d paid, want %d/%d/%d", got.Verifications, got.Passed, got.Paid, len(want), passed, paid)
	}
	if !got.FirstSeen.Equal(want[len(want)-1].VerifiedAt) || !got.LastSeen.Equal(want[0].VerifiedAt) {
		t.Errorf("aggregate seen %v to %v, want %v to %v", got.FirstSeen, got.LastSeen, want[len(want)-1].VerifiedAt, want[0].VerifiedAt)
	}
}

// Sizes of the concurrency test: writers record at once, for a few agents, with some retries.
const (
	concurrentWriters = 20
	concurrentWrites  = 1000
	concurrentAgents  = 4
)

// testAggregateConcurrent has 20 writers record 1,000 verifications at once, mixed: four agents,
// pass and fail, paid and free, dates over 90 days in no order, and one write in ten a retry of an
// earlier one. Afterwards each agent's aggregate must equal the replay of its history, and count
// every distinct verification exactly once.
func testAggregateConcurrent(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	base := clk.Now().UTC().Truncate(time.Second)
	perWriter := concurrentWrites / concurrentWriters
	distinct := make([]map[string]int, concurrentWriters) // per writer: agent -> distinct ids
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, concurrentWrites)
	for w := range concurrentWriters {
		distinct[w] = map[string]int{}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []store.Verification
			<-start
			for i := range perWriter {
				var v store.Verification
				if i%10 == 9 && len(mine) > 0 {
					v = mine[rng.IntN(len(mine))] // a retry: must change nothing
				} else {
					v = store.Verification{
						AgentID:        fmt.Sprintf("agent-conc-%d", rng.IntN(concurrentAgents)),
						VerificationID: fmt.Sprintf("w%02d-v%03d", w, i),
						TaskID:         fmt.Sprintf("task-%d", rng.IntN(30)),
						Result:         []string{"pass", "pass", "fail"}[rng.IntN(3)],
						OverallRatio:   float64(rng.IntN(1001)) / 1000,
						VerifiedAt:     base.Add(-time.Duration(rng.Int64N(int64(90 * 24 * time.Hour)))),
						Paid:           rng.IntN(2) == 0,
						CallerID:       fmt.Sprintf("%064x", rng.IntN(25)),
					}
					mine = append(mine, v)
					distinct[w][v.AgentID]++
				}
				if err := s.RecordVerification(ctx, v); err != nil {
					errs <- fmt.Errorf("writer %d: RecordVerification(%s): %w", w, v.VerificationID, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for a := range concurrentAgents {
		agent := fmt.Sprintf("agent-conc-%d", a)
		want := 0
		for w := range distinct {
			want += distinct[w][agent]
		}
		total += want
		got := aggregateOf(t, s, agent)
		replayed, n := replayHistory(t, s, agent)
		if n != want || got.Verifications != int64(want) {
			t.Errorf("%s: %d history records and %d counted in the aggregate, want %d distinct verifications", agent, n, got.Verifications, want)
		}
		if err := reputation.Compare(got, replayed); err != nil {
			t.Errorf("%s: aggregate and history disagree: %v", agent, err)
		}
	}
	if total != concurrentWrites-concurrentWriters*(perWriter/10) {
		t.Errorf("%d distinct verifications written, want %d", total, concurrentWrites-concurrentWriters*(perWriter/10))
	}
}

// Sizes of testOneAgentManyWriters: many writers, all for one agent, each record sent twice.
const (
	oneAgentWriters = 32
	oneAgentRecords = 8 // per writer
)

// testOneAgentManyWriters has 32 writers record for one agent at once, each verification twice
// (a retry straight after the first write): the history holds every verification exactly once and
// the aggregate counts each once, as the replay of the history does. Nothing is lost to the
// contention of writers on one agent, which is where a store that updates one aggregate item per
// record under optimistic concurrency fails.
func testOneAgentManyWriters(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const agent = "agent-one-hot"
	base := clk.Now().UTC().Truncate(time.Second)
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, oneAgentWriters)
	for w := range oneAgentWriters {
		wg.Go(func() {
			<-start
			for i := range oneAgentRecords {
				v := store.Verification{
					AgentID: agent, VerificationID: fmt.Sprintf("w%02d-v%02d", w, i), TaskID: fmt.Sprintf("task-%d", i),
					Result: []string{"pass", "fail"}[(w+i)%2], OverallRatio: float64(i) / oneAgentRecords,
					VerifiedAt: base.Add(-time.Duration(w*oneAgentRecords+i) * time.Minute), Paid: w%2 == 0,
					CallerID: fmt.Sprintf("%064x", w),
				}
				for range 2 {
					if err := s.RecordVerification(ctx, v); err != nil {
						errs <- fmt.Errorf("writer %d: RecordVerification(%s): %w", w, v.VerificationID, err)
						return
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const want = oneAgentWriters * oneAgentRecords
	got := aggregateOf(t, s, agent)
	replayed, n := replayHistory(t, s, agent)
	if n != want || got.Verifications != want || got.Passed != want/2 || got.Paid != want/2 {
		t.Errorf("%d history records; aggregate %d verifications, %d passed, %d paid; want %d, %d, %d, %d",
			n, got.Verifications, got.Passed, got.Paid, want, want, want/2, want/2)
	}
	if err := reputation.Compare(got, replayed); err != nil {
		t.Errorf("aggregate and history disagree: %v", err)
	}
}
