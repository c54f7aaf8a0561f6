package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agent-output-verifier/verifier/infra/mcp/mcptest"
	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// TestMCPAllowanceAndPaymentOnLocalChain drives the MCP server with the official TypeScript SDK
// client against the local chain: REST and MCP draw on one free allowance, the call past it gets
// the payment-required result (SPEC §8.4), a payment made by the real x402 client from that
// result's PaymentRequired and sent in _meta["x402/payment"] settles on chain with the settlement
// in _meta["x402/payment-response"], and the same payment again is refused.
func TestMCPAllowanceAndPaymentOnLocalChain(t *testing.T) {
	mcptest.Require(t)
	chain := x402test.Start(t)
	srv := startServer(t, map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "10",
		"X402_FACILITATOR_URL":        chain.Facilitator,
		"X402_PAY_TO_EVM":             chain.Payee,
		"X402_NETWORKS":               x402test.Network,
	})
	endpoint := srv.URL + mcpserver.Path
	body := []byte(`{"task_id":"mcp-paid-1","agent_id":"seller-mcp-e2e","expected_schema":{"type":"object","required":["total"]},"submitted_output":{"total":1}}`)
	verifyCall := mcptest.Call{Name: mcpserver.ToolVerify, Arguments: body}

	// One allowance of 10: 6 REST calls, 4 MCP calls, and the 5th MCP call is past it.
	for i := range 6 {
		if resp, m := post(t, srv.URL+"/verify/schema", body); resp.StatusCode != 200 {
			t.Fatalf("REST call %d: %d %v", i+1, resp.StatusCode, m)
		}
	}
	free := mcptest.Run(t, endpoint, verifyCall, verifyCall, verifyCall, verifyCall, verifyCall)
	for i, r := range free.Results[:4] {
		var doc map[string]any
		r.Decode(t, &doc)
		if r.Result.IsError || doc["result"] != "pass" {
			t.Fatalf("MCP call %d: %s", i+1, r.Result.StructuredContent)
		}
	}
	required := free.Results[4]
	var pr x402.PaymentRequired
	required.Decode(t, &pr)
	var ft map[string]any
	json.Unmarshal(required.Result.Meta["free_trial"], &ft)
	if !required.Result.IsError || pr.X402Version != 2 || pr.Resource.URL != "mcp://tool/verify_schema" || len(pr.Accepts) != 1 ||
		pr.Accepts[0].Amount != "20000" || pr.Accepts[0].PayTo != chain.Payee {
		t.Fatalf("the 11th call: %s", required.Result.StructuredContent)
	}
	if ft["code"] != "free_trial_exhausted" || ft["remaining_calls_today"] != float64(0) || string(required.Result.Meta["code"]) != `"free_trial_exhausted"` {
		t.Errorf("_meta: code %s, free_trial %v", required.Result.Meta["code"], ft)
	}
	if required.Text() != string(required.Result.StructuredContent) {
		var a, b any
		json.Unmarshal([]byte(required.Text()), &a)
		json.Unmarshal(required.Result.StructuredContent, &b)
		if !jsonEqual(a, b) {
			t.Errorf("the text copy differs from structuredContent")
		}
	}

	// The real x402 client signs for the PaymentRequired of the result; the MCP client sends the
	// PaymentPayload object in _meta, once and then again.
	ledger := x402test.NewLedger(t, chain.Balance, chain.Payer, chain.Payee)
	signed := chain.SignPayment(t, required.Result.StructuredContent)
	var payment map[string]any
	if err := json.Unmarshal(signed.Payment, &payment); err != nil {
		t.Fatal(err)
	}
	withPayment := verifyCall
	withPayment.Meta = map[string]any{x402.MetaPayment: payment}
	paid := mcptest.Run(t, endpoint, withPayment, withPayment)

	ok := paid.Results[0]
	var doc map[string]any
	ok.Decode(t, &doc)
	var settled x402.SettleResponse
	json.Unmarshal(ok.Result.Meta[x402.MetaPaymentResponse], &settled)
	if ok.Result.IsError || doc["result"] != "pass" || !settled.Success || settled.Transaction == "" || settled.Network != x402test.Network {
		t.Fatalf("paid call: %s, settlement %s", ok.Result.StructuredContent, ok.Result.Meta[x402.MetaPaymentResponse])
	}
	ledger.Moved(t, price)
	var auth struct {
		Payload struct {
			Authorization struct{ From, Nonce string }
		}
	}
	json.Unmarshal(signed.Payment, &auth)
	if !chain.AuthorizationUsed(t, auth.Payload.Authorization.From, auth.Payload.Authorization.Nonce) {
		t.Error("the paid call's authorization is not used on chain")
	}

	replay := paid.Results[1]
	var again map[string]any
	replay.Decode(t, &again)
	if !replay.Result.IsError || again["x402Version"] != float64(2) || again["result"] != nil || string(replay.Result.Meta["code"]) != `"payment_replayed"` {
		t.Fatalf("replayed payment: %s %v", replay.Result.StructuredContent, replay.Result.Meta)
	}
	ledger.Moved(t, price)

	// The paid call is in the agent's history as paid, once.
	resp, rep := get(t, srv.URL+"/reputation/seller-mcp-e2e")
	totals, _ := rep["totals"].(map[string]any)
	if resp.StatusCode != 200 || totals["paid"] != float64(1) || totals["verifications"] != float64(11) {
		t.Errorf("reputation: %d %v", resp.StatusCode, rep)
	}

	// get_verification_record: the agent has a score now, so it is paid ($0.01) the same way.
	record := mcptest.Call{Name: mcpserver.ToolRecord, Arguments: json.RawMessage(`{"agent_id":"seller-mcp-e2e"}`)}
	unpaid := mcptest.Run(t, endpoint, record).Results[0]
	var scorePR x402.PaymentRequired
	unpaid.Decode(t, &scorePR)
	if !unpaid.Result.IsError || scorePR.Resource.URL != "mcp://tool/get_verification_record" || len(scorePR.Accepts) != 1 || scorePR.Accepts[0].Amount != "10000" {
		t.Fatalf("unpaid score: %s", unpaid.Result.StructuredContent)
	}
	scorePayment := chain.SignPayment(t, unpaid.Result.StructuredContent)
	var sp map[string]any
	json.Unmarshal(scorePayment.Payment, &sp)
	record.Meta = map[string]any{x402.MetaPayment: sp}
	scored := mcptest.Run(t, endpoint, record).Results[0]
	var score map[string]any
	scored.Decode(t, &score)
	json.Unmarshal(scored.Result.Meta[x402.MetaPaymentResponse], &settled)
	if scored.Result.IsError || score["score"] == nil || score["agent_id"] != "seller-mcp-e2e" || !settled.Success {
		t.Fatalf("paid score: %s %v", scored.Result.StructuredContent, scored.Result.Meta)
	}
	ledger.Moved(t, price+price/2)
}

func get(t *testing.T, url string) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp, m
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
