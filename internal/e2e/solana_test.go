package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/infra/mcp/mcptest"
	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// TestPaidVerificationOnLocalSolana pays for a verification on Solana end to end: the server
// offers Solana mainnet USDC with the facilitator's fee payer, the real client signs a token
// transfer, the real facilitator co-signs and submits it, and the SPL Token program moves the
// tokens in LiteSVM. A replay, a payer without tokens, a bad signature and tampered requirements
// are refused with nothing moved.
func TestPaidVerificationOnLocalSolana(t *testing.T) {
	sol := x402test.StartSolana(t)
	srv := startServer(t, paidOnly(sol.Facilitator, "X402_PAY_TO_SOLANA", sol.Payee, x402test.SolanaNetwork))
	body := []byte(`{"task_id":"paid-sol-1","agent_id":"seller-e2e-sol","expected_schema":{"type":"object","required":["total"]},"submitted_output":{"total":1}}`)
	ledger := x402test.NewLedger(t, sol.Balance, sol.PayerTokenAccount, sol.PayeeTokenAccount)

	res := sol.Pay(t, srv.URL+"/verify/schema", "POST", body)
	if res.Status != 200 || res.PaymentResponse == nil || !res.PaymentResponse.Success || !strings.Contains(res.Body, `"result":"pass"`) {
		t.Fatalf("paid verify: %+v", res)
	}
	var required struct {
		Accepts []struct {
			Network, Asset, PayTo, Amount string
			Extra                         struct{ FeePayer string }
		}
	}
	if err := json.Unmarshal(res.PaymentRequired, &required); err != nil || len(required.Accepts) != 1 {
		t.Fatalf("PAYMENT-REQUIRED %s: %v", res.PaymentRequired, err)
	}
	if a := required.Accepts[0]; a.Network != x402test.SolanaNetwork || a.Asset != x402test.SolanaUSDC || a.PayTo != sol.Payee ||
		a.Amount != "20000" || a.Extra.FeePayer != sol.FeePayer {
		t.Fatalf("the Solana requirement is %+v; want USDC on %s to %s, fee payer %s", a, x402test.SolanaNetwork, sol.Payee, sol.FeePayer)
	}
	settled := res.PaymentResponse
	if settled.Network != x402test.SolanaNetwork || settled.Payer != sol.Payer {
		t.Errorf("PAYMENT-RESPONSE %+v: want network %s, payer %s", settled, x402test.SolanaNetwork, sol.Payer)
	}
	if found, txErr := sol.TransactionStatus(t, settled.Transaction); !found || txErr != "" {
		t.Fatalf("settlement transaction %s: found %v, error %q", settled.Transaction, found, txErr)
	}
	ledger.Moved(t, price)

	// The same payment again: refused before any work, nothing moves.
	resp, m := post(t, srv.URL+"/verify/schema", body, x402.HeaderPaymentSignature, res.PaymentSignature)
	if resp.StatusCode != 402 || m["code"] != "payment_replayed" || m["result"] != nil {
		t.Fatalf("replay: %d %v", resp.StatusCode, m)
	}
	// To a server whose store lost the reservation (the local server writes Solana reservations
	// before it settles, so only a lost disk does that): the node, like a cluster, answers the
	// transaction sent again with its signature and the first run's status, and what refuses the
	// replay is the facilitator's memory of what it settled.
	forgetful := startServer(t, paidOnly(sol.Facilitator, "X402_PAY_TO_SOLANA", sol.Payee, x402test.SolanaNetwork))
	resp, m = post(t, forgetful.URL+"/verify/schema", body, x402.HeaderPaymentSignature, res.PaymentSignature)
	if resp.StatusCode != 402 || m["result"] != nil || m["charged"] != false || m["code"] != "payment_settlement_failed" ||
		!strings.Contains(fmt.Sprint(m["error"]), "duplicate_settlement") {
		t.Fatalf("replay to a store without the reservation: %d %v", resp.StatusCode, m)
	}
	ledger.Moved(t, price)

	// A payer whose token account is empty, and a corrupted signature: refused, nothing moves.
	// The facilitator simulates the transfer, which the token program refuses.
	res = sol.Pay(t, srv.URL+"/verify/schema", "POST", body, x402test.WithKey(sol.UnfundedKey))
	if res.Status != 402 || !strings.Contains(res.Body, "payment_verification_failed") || !strings.Contains(res.Body, "simulation_failed") {
		t.Errorf("payer without tokens: %d %s %s", res.Status, res.Body, res.Error)
	}
	res = sol.Pay(t, srv.URL+"/verify/schema", "POST", body, x402test.BadSignature())
	if res.Status != 402 || !strings.Contains(res.Body, "payment_verification_failed") || !strings.Contains(res.Body, "signature_invalid") {
		t.Errorf("bad signature: %d %s %s", res.Status, res.Body, res.Error)
	}
	// Paying less or someone else is refused by the server's requirement matching.
	for _, tamper := range [][2]string{{"amount", "10000"}, {"payTo", sol.Unfunded}} {
		res := sol.Pay(t, srv.URL+"/verify/schema", "POST", body, x402test.Tamper(tamper[0], tamper[1]))
		if res.Status != 402 || !strings.Contains(res.Body, "payment_requirements_mismatch") {
			t.Errorf("wrong %s: %d %s %s", tamper[0], res.Status, res.Body, res.Error)
		}
	}
	ledger.Moved(t, price)
	if got := sol.Balance(t, sol.UnfundedTokenAccount); got.Sign() != 0 {
		t.Errorf("the unfunded account holds %s", got)
	}
}

// TestMCPPaymentOnLocalSolana pays an MCP tool call on Solana: the real x402 client signs a token
// transfer for the payment-required result's PaymentRequired, the official MCP client sends it in
// _meta["x402/payment"], it settles through the facilitator into LiteSVM, and the same payment
// again is refused.
func TestMCPPaymentOnLocalSolana(t *testing.T) {
	mcptest.Require(t)
	sol := x402test.StartSolana(t)
	srv := startServer(t, paidOnly(sol.Facilitator, "X402_PAY_TO_SOLANA", sol.Payee, x402test.SolanaNetwork))
	endpoint := srv.URL + mcpserver.Path
	call := mcptest.Call{Name: mcpserver.ToolVerify, Arguments: json.RawMessage(
		`{"task_id":"mcp-sol-1","agent_id":"seller-mcp-sol","expected_schema":{"type":"object"},"submitted_output":{}}`)}

	required := mcptest.Run(t, endpoint, call).Results[0]
	var pr x402.PaymentRequired
	required.Decode(t, &pr)
	if !required.Result.IsError || len(pr.Accepts) != 1 || pr.Accepts[0].Network != x402test.SolanaNetwork {
		t.Fatalf("unpaid call: %s", required.Result.StructuredContent)
	}
	signed := sol.SignPayment(t, required.Result.StructuredContent)
	var payment map[string]any
	if err := json.Unmarshal(signed.Payment, &payment); err != nil {
		t.Fatal(err)
	}
	call.Meta = map[string]any{x402.MetaPayment: payment}
	ledger := x402test.NewLedger(t, sol.Balance, sol.PayerTokenAccount, sol.PayeeTokenAccount)
	paid := mcptest.Run(t, endpoint, call, call)

	ok := paid.Results[0]
	var doc map[string]any
	ok.Decode(t, &doc)
	var settled x402.SettleResponse
	json.Unmarshal(ok.Result.Meta[x402.MetaPaymentResponse], &settled)
	if ok.Result.IsError || doc["result"] != "pass" || !settled.Success || settled.Network != x402test.SolanaNetwork {
		t.Fatalf("paid call: %s, settlement %s", ok.Result.StructuredContent, ok.Result.Meta[x402.MetaPaymentResponse])
	}
	if found, txErr := sol.TransactionStatus(t, settled.Transaction); !found || txErr != "" {
		t.Fatalf("settlement %s: found %v, error %q", settled.Transaction, found, txErr)
	}
	replay := paid.Results[1]
	if !replay.Result.IsError || string(replay.Result.Meta["code"]) != `"payment_replayed"` {
		t.Fatalf("replayed payment: %s %v", replay.Result.StructuredContent, replay.Result.Meta)
	}
	ledger.Moved(t, price)
}
