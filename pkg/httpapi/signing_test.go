package httpapi

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// failingSigner is a remote key (as kms-sign: is) whose signing calls fail while fail is set.
type failingSigner struct {
	priv  ed25519.PrivateKey
	fail  atomic.Bool
	calls atomic.Int32
}

func (s *failingSigner) Sign(_ context.Context, msg []byte) ([]byte, error) {
	s.calls.Add(1)
	if s.fail.Load() {
		return nil, errors.New("KMSInternalException: the signing service failed")
	}
	return ed25519.Sign(s.priv, msg), nil
}

func (s *failingSigner) MaxMessage() int { return 4096 }

// A signing call that fails, on the free path and the paid one alike, answers a retryable 503
// that charged nothing: the free allowance is not consumed (the report is signed before it is),
// the payment is released unsettled (the signature is part of the work settlement waits for) and
// buys the next answer, and nothing enters the agent's history.
func TestSigningFailureIsNotChargedOrRecorded(t *testing.T) {
	payer := &fakePayer{valid: true, settleOK: true}
	e := newPayEnv(t, openBolt, 1, payer)
	local := testsvc.Key()
	signer := &failingSigner{priv: local.Private}
	e.rebuild(t, func(d *service.Deps) {
		d.Keys = receipt.KeyRing{Current: receipt.RemoteKey(local.Version, local.Public().Key, signer)}
	})
	const agent = "seller-9"
	check := func(what string, status int, m map[string]any) {
		t.Helper()
		if status != 503 || m["code"] != "service_unavailable" || m["charged"] != false || m["retryable"] != true || m["result"] != nil {
			t.Fatalf("%s: %d %v, want a retryable 503 that charged nothing", what, status, m)
		}
	}
	signer.fail.Store(true)
	resp, m := post(t, e.srv.URL+"/verify/schema", okBody)
	check("free call", resp.StatusCode, m)
	if used, err := e.st.AllowanceUsed(context.Background(), e.svc.CallerID("127.0.0.1"), e.clock.Now().Format("2006-01-02")); err != nil || used != 0 {
		t.Fatalf("allowance used %d, %v after the failed signature; want 0", used, err)
	}
	sig := paymentHeader(t, testRequirement, 1)
	resp, m = post(t, e.srv.URL+"/verify/deliverable", okBody, x402.HeaderPaymentSignature, sig)
	check("paid call", resp.StatusCode, m)
	if payer.settles.Load() != 0 || resp.Header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("paid call: %d settlements, PAYMENT-RESPONSE %q", payer.settles.Load(), resp.Header.Get(x402.HeaderPaymentResponse))
	}
	if signer.calls.Load() != 2 {
		t.Errorf("%d signing calls, want one per request", signer.calls.Load())
	}

	signer.fail.Store(false)
	if resp, m := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, sig); resp.StatusCode != 200 || m["result"] != "pass" || payer.settles.Load() != 1 {
		t.Fatalf("the same payment afterwards: %d %v", resp.StatusCode, m)
	}
	if resp, m := post(t, e.srv.URL+"/verify/schema", okBody); resp.StatusCode != 200 || resp.Header.Get("Free-Allowance-Remaining") != "0" {
		t.Fatalf("free call afterwards: %d %v, remaining %q; want the day's one free call", resp.StatusCode, m["code"], resp.Header.Get("Free-Allowance-Remaining"))
	}
	page, _, err := e.st.History(context.Background(), agent, 10, "")
	if err != nil || len(page) != 2 {
		t.Fatalf("history: %d entries, %v; want only the 2 delivered answers", len(page), err)
	}
}
