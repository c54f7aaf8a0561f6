package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/client"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// recordingPayer passes through to a real payer and keeps what it signed.
type recordingPayer struct {
	client.Payer
	mu     sync.Mutex
	signed []map[string]any
}

func (p *recordingPayer) Sign(ctx context.Context, r x402.Requirements) (map[string]any, error) {
	payload, err := p.Payer.Sign(ctx, r)
	if err == nil {
		p.mu.Lock()
		p.signed = append(p.signed, payload)
		p.mu.Unlock()
	}
	return payload, err
}

func (p *recordingPayer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.signed)
}

const verifyPrice = 20000 // $0.02 in USDC atomic units

// The Go payer pays past the free allowance through the real @x402/evm facilitator: the
// facilitator accepting its EIP-712 signatures and settling them on chain is the independent
// check of the encoding.
func TestGoPayerOnLocalChain(t *testing.T) {
	chain := x402test.Start(t)
	srv := startServer(t, map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "1",
		"X402_FACILITATOR_URL":        chain.Facilitator,
		"X402_PAY_TO_EVM":             chain.Payee,
		"X402_NETWORKS":               x402test.Network,
	})
	ctx := context.Background()
	evm, err := client.NewEVMPayer(chain.PayerKey)
	if err != nil {
		t.Fatal(err)
	}
	if evm.Address() != chain.Payer {
		t.Fatalf("payer address %s, chain says %s", evm.Address(), chain.Payer)
	}
	payer := &recordingPayer{Payer: evm}
	c := newClient(t, srv.URL, client.WithPayer(payer))
	l := x402test.NewLedger(t, chain.Balance, chain.Payer, chain.Payee)

	// The one free call: nothing signed, nothing moves.
	v, err := c.VerifySchema(ctx, passRequest("chain-free"))
	if err != nil || v.Payment != nil || v.Allowance == nil || v.Allowance.Remaining != 0 || payer.count() != 0 {
		t.Fatalf("free call: %+v, %v", v, err)
	}
	l.Moved(t, 0)

	// The second is paid by the Go payer, settled on chain, and its receipt checked.
	v, err = c.VerifySchema(ctx, passRequest("chain-paid"))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Passed() || v.Payment == nil || v.Payment.USD != "0.02" || v.Payment.Settlement == nil || !v.Payment.Settlement.Success ||
		v.Payment.Settlement.Transaction == "" || v.Payment.Settlement.Network != x402test.Network || v.Payment.Requirements.Amount != "20000" {
		t.Fatalf("paid call: %+v payment %+v", v, v.Payment)
	}
	if payer.count() != 1 || c.Spent() != "0.02" {
		t.Fatalf("signed %d, spent %s", payer.count(), c.Spent())
	}
	l.Moved(t, verifyPrice)
	auth := payer.signed[0]["authorization"].(map[string]any)
	if !chain.AuthorizationUsed(t, chain.Payer, auth["nonce"].(string)) {
		t.Fatal("the authorization the Go payer signed is not spent on chain")
	}

	// The deliverable route is paid the same way (the allowance is shared).
	d, err := c.VerifyJSON(ctx, client.RouteVerifyDeliverable, seedRequest(t))
	if err != nil || d.Passed() || d.Payment == nil || !d.Payment.Settlement.Success {
		t.Fatalf("paid deliverable: %+v, %v", d, err)
	}
	l.Moved(t, 2*verifyPrice)

	// A cap below the price refuses without signing anything; nothing moves.
	capped := &recordingPayer{Payer: evm}
	_, err = newClient(t, srv.URL, client.WithPayer(capped), client.WithMaxPrice("0.019999")).VerifySchema(ctx, passRequest("chain-capped"))
	var ce *client.SpendingCapError
	if !errors.As(err, &ce) || ce.Scope != "call" || ce.Price != "0.02" || capped.count() != 0 {
		t.Fatalf("capped: %v, signed %d", err, capped.count())
	}
	// A budget of one and a half calls pays once, then refuses.
	budget := &recordingPayer{Payer: evm}
	bc := newClient(t, srv.URL, client.WithPayer(budget), client.WithBudget("0.03"))
	if _, err := bc.VerifySchema(ctx, passRequest("chain-budget-1")); err != nil {
		t.Fatal(err)
	}
	if _, err = bc.VerifySchema(ctx, passRequest("chain-budget-2")); !errors.As(err, &ce) || ce.Scope != "client" || ce.Cap != "0.01" || budget.count() != 1 {
		t.Fatalf("over budget: %v, signed %d", err, budget.count())
	}
	l.Moved(t, 3*verifyPrice)

	// A payer without funds signs a valid authorization that the facilitator refuses: the client
	// reports the refused payment, and nothing moves.
	broke, err := client.NewEVMPayer(chain.UnfundedKey)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newClient(t, srv.URL, client.WithPayer(broke)).VerifySchema(ctx, passRequest("chain-broke"))
	var pe *client.PaymentRequiredError
	if !errors.As(err, &pe) || !pe.Paid || pe.Code != apperr.PaymentVerifyFail {
		t.Fatalf("unfunded payer: %#v", err)
	}
	l.Moved(t, 3*verifyPrice)

	// A trust score: the agent above has a history now, so the score costs $0.01, paid the same
	// way and checked under the trust score context.
	s, err := c.Score(ctx, "seller-go-client")
	if err != nil {
		t.Fatal(err)
	}
	if s.Score == nil || s.Verifications.Total != 3 || s.Verifications.Paid != 2 || s.Payment == nil || s.Payment.USD != "0.01" || !s.Payment.Settlement.Success {
		t.Fatalf("paid score: %+v payment %+v", s, s.Payment)
	}
	l.Moved(t, 3*verifyPrice+10000)
}
