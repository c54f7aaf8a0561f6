package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/client"
)

// The Go Solana payer pays past the free allowance through the real @x402/svm facilitator, which
// checks the transaction's layout and the payer's signature, co-signs it and submits it to
// LiteSVM, where the token program moves the tokens: the independent check of the transaction
// the Go payer builds.
func TestGoSolanaPayerOnLocalSolana(t *testing.T) {
	sol := x402test.StartSolana(t)
	srv := startServer(t, map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "1",
		"X402_FACILITATOR_URL":        sol.Facilitator,
		"X402_PAY_TO_SOLANA":          sol.Payee,
		"X402_NETWORKS":               x402test.SolanaNetwork,
	})
	ctx := context.Background()
	payer, err := client.NewSolanaPayer(sol.PayerKey, sol.RPC)
	if err != nil {
		t.Fatal(err)
	}
	if payer.Address() != sol.Payer {
		t.Fatalf("payer address %s, the node says %s", payer.Address(), sol.Payer)
	}
	ledger := x402test.NewLedger(t, sol.Balance, sol.PayerTokenAccount, sol.PayeeTokenAccount)
	rec := &recordingPayer{Payer: payer}
	c := newClient(t, srv.URL, client.WithPayer(rec))
	if _, err := c.VerifySchema(ctx, passRequest("sol-free")); err != nil || rec.count() != 0 {
		t.Fatalf("free call: %v, signed %d", err, rec.count())
	}
	for i, id := range []string{"sol-paid-1", "sol-paid-2"} {
		v, err := c.VerifySchema(ctx, passRequest(id))
		if err != nil {
			t.Fatal(err)
		}
		if !v.Passed() || v.Payment == nil || v.Payment.Settlement == nil || !v.Payment.Settlement.Success ||
			v.Payment.Settlement.Network != x402test.SolanaNetwork || v.Payment.Settlement.Payer != sol.Payer {
			t.Fatalf("paid call %s: %+v payment %+v", id, v, v.Payment)
		}
		if found, txErr := sol.TransactionStatus(t, v.Payment.Settlement.Transaction); !found || txErr != "" {
			t.Fatalf("settlement %s: found %v, error %q", v.Payment.Settlement.Transaction, found, txErr)
		}
		ledger.Moved(t, int64(i+1)*verifyPrice)
	}
	if rec.count() != 2 || rec.signed[0]["transaction"] == rec.signed[1]["transaction"] {
		t.Fatalf("signed %d transactions, distinct: %v", rec.count(), rec.count() == 2 && rec.signed[0]["transaction"] != rec.signed[1]["transaction"])
	}

	// A payer with an empty token account signs a well-formed transfer that the facilitator's
	// simulation refuses: the client reports the refused payment, and nothing moves.
	broke, err := client.NewSolanaPayer(sol.UnfundedKey, sol.RPC)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newClient(t, srv.URL, client.WithPayer(broke)).VerifySchema(ctx, passRequest("sol-broke"))
	var pe *client.PaymentRequiredError
	if !errors.As(err, &pe) || !pe.Paid || pe.Code != apperr.PaymentVerifyFail {
		t.Fatalf("unfunded payer: %#v", err)
	}
	ledger.Moved(t, 2*verifyPrice)
}
