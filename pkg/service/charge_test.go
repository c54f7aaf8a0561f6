package service_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// fakePayer stands in for the facilitator in the tests of the payment flow: it accepts (valid)
// and settles (settleOK) what it is given, counting the settlements. The real one (anvil, the
// @x402 facilitator and client) runs in the end-to-end test.
type fakePayer struct {
	valid, settleOK bool
	settles         atomic.Int32
}

// testRequirement is the one requirement fakePayer asks for.
var testRequirement = x402.Requirements{Scheme: "exact", Network: "eip155:8453", Amount: "20000",
	Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
	MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}

func (f *fakePayer) Requirements(context.Context, string) ([]x402.Requirements, error) {
	return []x402.Requirements{testRequirement}, nil
}

func (f *fakePayer) Verify(context.Context, x402.PaymentPayload, x402.Requirements) (x402.VerifyResponse, error) {
	return x402.VerifyResponse{IsValid: f.valid, InvalidReason: "invalid_signature", Payer: "0xpayer"}, nil
}

func (f *fakePayer) Settle(context.Context, x402.PaymentPayload, x402.Requirements) (x402.SettleResponse, error) {
	f.settles.Add(1)
	return x402.SettleResponse{Success: f.settleOK, ErrorReason: "insufficient_funds", Transaction: "0xtx", Network: "eip155:8453", Payer: "0xpayer"}, nil
}

// payment is the n-th payment of testRequirement, as a client signs it.
func payment(n int) x402.PaymentPayload {
	return x402.PaymentPayload{X402Version: 2, Accepted: testRequirement, Payload: map[string]any{
		"signature": "0x" + fmt.Sprintf("%0130d", 1),
		"authorization": map[string]any{"from": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "to": testRequirement.PayTo, "value": testRequirement.Amount,
			"validAfter": "0", "validBefore": "9999999999", "nonce": fmt.Sprintf("0x%064x", n)},
	}}
}

// openBolt opens a bolt store that reads time from now.
func openBolt(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), bolt.WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// deadlinePayer is a fakePayer that keeps the deadline of the last settlement's context.
type deadlinePayer struct {
	*fakePayer
	settleBy time.Time
}

func (d *deadlinePayer) Settle(ctx context.Context, p x402.PaymentPayload, r x402.Requirements) (x402.SettleResponse, error) {
	d.settleBy, _ = ctx.Deadline()
	return d.fakePayer.Settle(ctx, p, r)
}

// TestPaymentNotSettledIsReleased: a paid request whose work failed, or that had too little of
// its deadline left to settle, settles nothing and releases the payment, so that the client can
// send the same payment again; settlement never runs past the request's deadline less the time
// the answer needs (a Lambda function stopped while settling would charge without answering).
func TestPaymentNotSettledIsReleased(t *testing.T) {
	payer := &deadlinePayer{fakePayer: &fakePayer{valid: true, settleOK: true}}
	clock := testclock.New(testclock.Epochs()[0])
	e := struct{ svc *service.Service }{testsvc.New(t, service.Deps{Store: openBolt(t, clock.Now), Now: clock.Now, Payer: payer})}
	ctx := context.Background()
	works := func(context.Context, receipt.Payment) error { return nil }

	// The work fails: an error, nothing settled, and the same payment is taken afterwards.
	failing := func(context.Context, receipt.Payment) error { return apperr.New(apperr.DeadlineExceeded, "too slow") }
	if sr, fail, err := service.Charge(e.svc, ctx, payment(1), testsvc.BaseURL+"/verify/schema", "0.02", failing); err == nil || sr != nil || fail != nil || payer.settles.Load() != 0 {
		t.Fatalf("failing work: %v %v %v, settles %d", sr, fail, err, payer.settles.Load())
	}
	if sr, fail, err := service.Charge(e.svc, ctx, payment(1), testsvc.BaseURL+"/verify/schema", "0.02", works); err != nil || fail != nil || sr == nil || payer.settles.Load() != 1 {
		t.Fatalf("the same payment after failed work: %v %v %v", sr, fail, err)
	}

	// Too little time left: a retryable error, nothing settled, the payment released.
	short, cancel := context.WithTimeout(ctx, service.AfterSettle+service.MinSettleTime-time.Second)
	defer cancel()
	_, _, err := service.Charge(e.svc, short, payment(2), testsvc.BaseURL+"/verify/schema", "0.02", works)
	if ae, ok := apperr.As(err); !ok || ae.Code != apperr.FacilitatorDown || !ae.Retryable || ae.Charged || payer.settles.Load() != 1 {
		t.Fatalf("too little time: %v, settles %d", err, payer.settles.Load())
	}
	// With time enough, settlement ends at the deadline less service.AfterSettle.
	deadline := time.Now().Add(service.AfterSettle + service.MinSettleTime + 2*time.Second)
	enough, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if sr, fail, err := service.Charge(e.svc, enough, payment(2), testsvc.BaseURL+"/verify/schema", "0.02", works); err != nil || fail != nil || sr == nil {
		t.Fatalf("the same payment with time enough: %v %v %v", sr, fail, err)
	}
	if want := deadline.Add(-service.AfterSettle); !payer.settleBy.Equal(want) {
		t.Errorf("settlement deadline %v, want the request's less %v (%v)", payer.settleBy, service.AfterSettle, want)
	}
	// The work's own deadline leaves settlement its time.
	var workBy time.Time
	if _, _, err := service.Charge(e.svc, enough, payment(4), testsvc.BaseURL+"/verify/schema", "0.02", func(ctx context.Context, _ receipt.Payment) error { workBy, _ = ctx.Deadline(); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := deadline.Add(-service.AfterSettle - service.MinSettleTime); !workBy.Equal(want) {
		t.Errorf("work deadline %v, want %v", workBy, want)
	}
	// Without a deadline (the local server), settlement has service.SettleTimeout.
	if sr, _, err := service.Charge(e.svc, ctx, payment(5), testsvc.BaseURL+"/verify/schema", "0.02", works); err != nil || sr == nil || time.Until(payer.settleBy) > service.SettleTimeout || time.Until(payer.settleBy) < service.SettleTimeout-time.Minute {
		t.Errorf("no deadline: %v, settlement deadline in %v, want about %v", err, time.Until(payer.settleBy), service.SettleTimeout)
	}
}
