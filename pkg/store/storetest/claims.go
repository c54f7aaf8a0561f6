package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/store"
)

// The contract of payment identifier claims (SPEC §16): an identifier is claimed by one call at
// most, whatever the concurrency; only its holder changes it; a working claim whose lease ran out
// may be claimed again, a settling one never; a released or expired claim is gone.

// claimOf is holder's working claim n, with its lease lasting lease from now (whole
// milliseconds, as the stores keep it).
func claimOf(clk *testclock.Clock, n int, holder string, lease time.Duration) store.PaymentClaim {
	return store.PaymentClaim{
		RequestHash: fmt.Sprintf("%064x", n),
		Payer:       fmt.Sprintf("0x%040x", n),
		Holder:      holder,
		State:       store.ClaimWorking,
		LeaseUntil:  clk.Now().Add(lease).Truncate(time.Millisecond),
	}
}

// settling is c as its holder keeps it once the answer is signed, before settling.
func settling(c store.PaymentClaim, n int) store.PaymentClaim {
	c.State = store.ClaimSettling
	c.Payment = []byte(fmt.Sprintf(`{"payload":{"nonce":"0x%064x"}}`, n))
	c.Response = []byte(fmt.Sprintf(`{"result":"pass","n":%d,"text":"\u00e9 \"quoted\""}`, n))
	return c
}

func sameClaim(a, b store.PaymentClaim) bool {
	return a.RequestHash == b.RequestHash && a.Payer == b.Payer && a.Holder == b.Holder && a.State == b.State &&
		a.LeaseUntil.Equal(b.LeaseUntil) && string(a.Payment) == string(b.Payment) &&
		string(a.Response) == string(b.Response) && string(a.Settlement) == string(b.Settlement)
}

func mustClaim(t *testing.T, s store.Store, id string, c store.PaymentClaim, expires time.Time) {
	t.Helper()
	if held, claimed, err := s.ClaimPayment(context.Background(), id, c, expires); err != nil || !claimed {
		t.Fatalf("ClaimPayment(%s) = %+v, %v, %v; want claimed", id, held, claimed, err)
	}
}

func wantClaim(t *testing.T, s store.Store, id string, want store.PaymentClaim) {
	t.Helper()
	got, ok, err := s.PaymentClaim(context.Background(), id)
	if err != nil || !ok || !sameClaim(got, want) {
		t.Fatalf("PaymentClaim(%s) = %+v, %v, %v\nwant %+v", id, got, ok, err, want)
	}
}

func wantNoClaim(t *testing.T, s store.Store, id string) {
	t.Helper()
	if got, ok, err := s.PaymentClaim(context.Background(), id); err != nil || ok {
		t.Fatalf("PaymentClaim(%s) = %+v, %v, %v; want none", id, got, ok, err)
	}
}

// A claim is made once: a second claim of the id gets the first back and changes nothing; the
// claim reads back field for field; malformed claims are refused.
func testClaimOnce(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const id = "pay_7d5d747be160e280504c099d984bcfe0"
	wantNoClaim(t, s, id)
	first := claimOf(clk, 1, "holder-1", time.Minute)
	mustClaim(t, s, id, first, future(clk))
	held, claimed, err := s.ClaimPayment(ctx, id, claimOf(clk, 2, "holder-2", time.Minute), future(clk))
	if err != nil || claimed || !sameClaim(held, first) {
		t.Fatalf("second ClaimPayment = %+v, %v, %v; want the first claim, not claimed", held, claimed, err)
	}
	wantClaim(t, s, id, first)
	wantNoClaim(t, s, id+"x")

	for name, c := range map[string]store.PaymentClaim{
		"no request hash": {Payer: "0x1", Holder: "h", State: store.ClaimWorking},
		"no payer":        {RequestHash: "r", Holder: "h", State: store.ClaimWorking},
		"no holder":       {RequestHash: "r", Payer: "0x1", State: store.ClaimWorking},
		"not working":     settling(claimOf(clk, 3, "h", time.Minute), 3),
		"unknown state":   {RequestHash: "r", Payer: "0x1", Holder: "h", State: "paid"},
	} {
		if _, claimed, err := s.ClaimPayment(ctx, "pay_malformed_claim_0001", c, future(clk)); err == nil || claimed {
			t.Errorf("ClaimPayment of a claim with %s = %v, %v; want an error", name, claimed, err)
		}
	}
	if _, _, err := s.ClaimPayment(ctx, "", first, future(clk)); err == nil {
		t.Error("ClaimPayment with an empty id succeeded")
	}
	big := settling(first, 4)
	big.Response = make([]byte, store.MaxPaidAnswer)
	if err := s.UpdatePaymentClaim(ctx, id, first.Holder, big, future(clk)); err == nil || errors.Is(err, store.ErrClaimLost) {
		t.Errorf("UpdatePaymentClaim over MaxPaidAnswer = %v, want an error", err)
	}
	wantClaim(t, s, id, first)
}

// A claim goes working → settling → settled under its holder; nobody else can change it; a
// working claim whose lease ran out may be claimed by another call, a settling one may not, and
// is taken over by its holder's token only.
func testClaimLifecycle(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const id = "pay_claim_lifecycle_000001"
	c := claimOf(clk, 1, "holder-1", time.Minute)
	mustClaim(t, s, id, c, future(clk))

	// Only the holder updates; the holder's update keeps every byte.
	if err := s.UpdatePaymentClaim(ctx, id, "holder-2", settling(c, 1), future(clk)); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("UpdatePaymentClaim by another holder = %v, want ErrClaimLost", err)
	}
	wantClaim(t, s, id, c)
	set := settling(c, 1)
	set.LeaseUntil = clk.Now().Add(30 * time.Second).Truncate(time.Millisecond)
	if err := s.UpdatePaymentClaim(ctx, id, c.Holder, set, future(clk)); err != nil {
		t.Fatalf("UpdatePaymentClaim to settling: %v", err)
	}
	wantClaim(t, s, id, set)

	// A settling claim is never released, nor claimed again, even once its lease ran out.
	if err := s.ReleasePaymentClaim(ctx, id, c.Holder); err != nil {
		t.Fatalf("ReleasePaymentClaim of a settling claim: %v", err)
	}
	wantClaim(t, s, id, set)
	clk.Advance(time.Minute)
	if held, claimed, err := s.ClaimPayment(ctx, id, claimOf(clk, 2, "holder-2", time.Minute), future(clk)); err != nil || claimed || !sameClaim(held, set) {
		t.Fatalf("ClaimPayment over a settling claim past its lease = %+v, %v, %v; want the settling claim", held, claimed, err)
	}

	// A take-over names a new holder: the old one has lost the claim.
	taken := set
	taken.Holder, taken.LeaseUntil = "holder-3", clk.Now().Add(time.Minute).Truncate(time.Millisecond)
	if err := s.UpdatePaymentClaim(ctx, id, set.Holder, taken, future(clk)); err != nil {
		t.Fatalf("take-over: %v", err)
	}
	done := taken
	done.State, done.Settlement = store.ClaimSettled, []byte(`{"success":true,"transaction":"0x01"}`)
	if err := s.UpdatePaymentClaim(ctx, id, set.Holder, done, future(clk)); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("UpdatePaymentClaim by the holder taken over = %v, want ErrClaimLost", err)
	}
	if err := s.UpdatePaymentClaim(ctx, id, taken.Holder, done, future(clk)); err != nil {
		t.Fatalf("UpdatePaymentClaim to settled: %v", err)
	}
	wantClaim(t, s, id, done)

	// A working claim whose lease ran out is abandoned: another call claims the id.
	const id2 = "pay_claim_abandoned_00001"
	mustClaim(t, s, id2, claimOf(clk, 5, "holder-5", time.Second), future(clk))
	if _, claimed, err := s.ClaimPayment(ctx, id2, claimOf(clk, 6, "holder-6", time.Minute), future(clk)); err != nil || claimed {
		t.Fatalf("ClaimPayment within the lease = %v, %v; want not claimed", claimed, err)
	}
	clk.Advance(2 * time.Second)
	next := claimOf(clk, 6, "holder-6", time.Minute)
	mustClaim(t, s, id2, next, future(clk))
	wantClaim(t, s, id2, next)
	if err := s.UpdatePaymentClaim(ctx, id2, "holder-5", settling(next, 5), future(clk)); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("UpdatePaymentClaim by the abandoned holder = %v, want ErrClaimLost", err)
	}
}

// A working claim released by its holder is gone and the id may be claimed again; a release by
// another holder changes nothing.
func testClaimReleased(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const id = "pay_claim_released_000001"
	c := claimOf(clk, 1, "holder-1", time.Minute)
	mustClaim(t, s, id, c, future(clk))
	if err := s.ReleasePaymentClaim(ctx, id, "holder-2"); err != nil {
		t.Fatalf("ReleasePaymentClaim by another holder: %v", err)
	}
	wantClaim(t, s, id, c)
	if err := s.ReleasePaymentClaim(ctx, id, c.Holder); err != nil {
		t.Fatalf("ReleasePaymentClaim: %v", err)
	}
	wantNoClaim(t, s, id)
	if err := s.UpdatePaymentClaim(ctx, id, c.Holder, settling(c, 1), future(clk)); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("UpdatePaymentClaim of a released claim = %v, want ErrClaimLost", err)
	}
	if err := s.ReleasePaymentClaim(ctx, "pay_never_claimed_0000001", "h"); err != nil {
		t.Fatalf("ReleasePaymentClaim of no claim: %v", err)
	}
	again := claimOf(clk, 2, "holder-2", time.Minute)
	mustClaim(t, s, id, again, future(clk))
	wantClaim(t, s, id, again)
}

// An expired claim is gone for readers, may be claimed again, and its holder cannot revive it.
func testClaimExpires(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const id = "pay_expiring_claim_000001"
	c := claimOf(clk, 1, "holder-1", 24*time.Hour)
	mustClaim(t, s, id, c, clk.Now().Add(time.Hour))
	set := settling(c, 1)
	if err := s.UpdatePaymentClaim(ctx, id, c.Holder, set, clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	wantNoClaim(t, s, id)
	if err := s.UpdatePaymentClaim(ctx, id, c.Holder, set, future(clk)); !errors.Is(err, store.ErrClaimLost) {
		t.Fatalf("UpdatePaymentClaim of an expired claim = %v, want ErrClaimLost", err)
	}
	next := claimOf(clk, 2, "holder-2", time.Minute)
	mustClaim(t, s, id, next, future(clk))
	wantClaim(t, s, id, next)
}

// Of concurrent claims of one id exactly one succeeds, and every other gets that one back.
func testClaimConcurrent(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const id, n = "pay_concurrent_claim_0001", 50
	type result struct {
		held    store.PaymentClaim
		claimed bool
		err     error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := &results[i]
			r.held, r.claimed, r.err = s.ClaimPayment(ctx, id, claimOf(clk, i, fmt.Sprintf("holder-%d", i), time.Minute), future(clk))
		})
	}
	wg.Wait()
	winner := -1
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Fatalf("claim %d: %v", i, r.err)
		case r.claimed && winner >= 0:
			t.Fatalf("claims %d and %d both succeeded", winner, i)
		case r.claimed:
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no claim succeeded")
	}
	want := claimOf(clk, winner, fmt.Sprintf("holder-%d", winner), time.Minute)
	for i, r := range results {
		if !r.claimed && !sameClaim(r.held, want) {
			t.Fatalf("claim %d got %+v back, want claim %d's", i, r.held, winner)
		}
	}
	wantClaim(t, s, id, want)
}

// Of concurrent take-overs of one claim from the same holder exactly one succeeds.
func testClaimConcurrentTakeOver(t *testing.T, s store.Store, clk *testclock.Clock) {
	ctx := context.Background()
	const id, n = "pay_concurrent_takeover_1", 20
	c := claimOf(clk, 1, "holder-0", time.Minute)
	mustClaim(t, s, id, c, future(clk))
	set := settling(c, 1)
	if err := s.UpdatePaymentClaim(ctx, id, c.Holder, set, future(clk)); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			next := set
			next.Holder = fmt.Sprintf("resolver-%d", i)
			errs[i] = s.UpdatePaymentClaim(ctx, id, set.Holder, next, future(clk))
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("take-overs %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrClaimLost):
			t.Fatalf("take-over %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no take-over succeeded")
	}
	want := set
	want.Holder = fmt.Sprintf("resolver-%d", winner)
	wantClaim(t, s, id, want)
}
