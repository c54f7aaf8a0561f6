// Package e2e runs the whole service against real peers: a local EVM chain (anvil) and a local
// Solana runtime (LiteSVM), the x402 facilitator built from the @x402 npm packages, and the real
// @x402/fetch client.
package e2e

import (
	"encoding/base64"
	"encoding/json"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/x402"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/internal/testserver"

	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
)

// startServer runs the local server with MCP mounted, as `verifier serve` does.
func startServer(t *testing.T, env map[string]string) *testserver.Server {
	return testserver.Start(t, env, func(svc *service.Service) http.Handler { return httpapi.Handler(svc, mcpserver.New(svc).Mount) })
}

const price = 20000 // $0.02 in USDC atomic units

// paidOnly is the environment of a server with no free calls that is paid through facilitator, to
// payee (under the payee variable of its network family) on network alone.
func paidOnly(facilitator, payeeVar, payee, network string) map[string]string {
	return map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "0",
		"X402_FACILITATOR_URL":        facilitator,
		payeeVar:                      payee,
		"X402_NETWORKS":               network,
	}
}

func TestPaidVerificationOnLocalChain(t *testing.T) {
	chain := x402test.Start(t)
	srv := startServer(t, paidOnly(chain.Facilitator, "X402_PAY_TO_EVM", chain.Payee, x402test.Network))
	body := []byte(`{"task_id":"paid-1","agent_id":"seller-e2e","expected_schema":{"type":"object","required":["total"]},"submitted_output":{"total":1}}`)
	ledger := x402test.NewLedger(t, chain.Balance, chain.Payer, chain.Payee)

	// The real client meets the 402, decodes PAYMENT-REQUIRED, pays, and gets the answer.
	res := chain.Pay(t, srv.URL+"/verify/schema", "POST", body)
	if res.Status != 200 || res.PaymentResponse == nil || !res.PaymentResponse.Success || !strings.Contains(res.Body, `"result":"pass"`) {
		t.Fatalf("paid verify: %+v", res)
	}
	if res.Requests < 2 || len(res.PaymentRequired) == 0 {
		t.Fatalf("the client did not go through a 402 first: %+v", res)
	}
	ledger.Moved(t, price)

	// The same payment again is refused before any work, and nothing moves.
	resp, m := post(t, srv.URL+"/verify/schema", body, x402.HeaderPaymentSignature, res.PaymentSignature)
	if resp.StatusCode != 402 || m["code"] != "payment_replayed" || m["result"] != nil {
		t.Fatalf("replay: %d %v", resp.StatusCode, m)
	}
	ledger.Moved(t, price)

	// A store that has lost the payment's reservation (the local server records it on disk just
	// after answering, so a crash can lose the last few): the chain still refuses the spent
	// authorization, so the replay is neither delivered nor charged. A second server with a fresh
	// store stands for the restarted one.
	forgetful := startServer(t, paidOnly(chain.Facilitator, "X402_PAY_TO_EVM", chain.Payee, x402test.Network))
	resp, m = post(t, forgetful.URL+"/verify/schema", body, x402.HeaderPaymentSignature, res.PaymentSignature)
	if resp.StatusCode != 402 || m["result"] != nil || m["charged"] != false ||
		(m["code"] != "payment_verification_failed" && m["code"] != "payment_settlement_failed") {
		t.Fatalf("replay to a store without the reservation: %d %v", resp.StatusCode, m)
	}
	t.Logf("replay to a store without the reservation: %v", m["code"])
	ledger.Moved(t, price)

	// Payments for the wrong amount, asset, payee or network are refused.
	for _, tamper := range [][2]string{{"amount", "10000"}, {"asset", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"},
		{"payTo", "0x000000000000000000000000000000000000dEaD"}, {"network", "eip155:84532"}} {
		res := chain.Pay(t, srv.URL+"/verify/schema", "POST", body, x402test.Tamper(tamper[0], tamper[1]))
		if res.Status != 402 || !strings.Contains(res.Body, "payment_requirements_mismatch") {
			t.Errorf("wrong %s: %d %s %s", tamper[0], res.Status, res.Body, res.Error)
		}
	}
	ledger.Moved(t, price)

	// A 422 request with a valid payment attached is neither verified nor settled.
	probe, _ := post(t, srv.URL+"/verify/schema", nil)
	prJSON, err := base64.StdEncoding.DecodeString(probe.Header.Get(x402.HeaderPaymentRequired))
	if probe.StatusCode != 402 || err != nil {
		t.Fatalf("probe: %d %v", probe.StatusCode, err)
	}
	signed := chain.SignPayment(t, prJSON)
	resp, m = post(t, srv.URL+"/verify/schema", []byte(`{"task_id":"bad","expected_schema":{},"submitted_output":1,"rules":[{"type":"nope","field":"a"}]}`),
		x402.HeaderPaymentSignature, signed.PaymentSignature)
	if resp.StatusCode != 422 || m["charged"] != false {
		t.Fatalf("422 with payment: %d %v", resp.StatusCode, m)
	}
	var payment struct {
		Payload struct {
			Authorization struct{ From, Nonce string }
		}
	}
	json.Unmarshal(signed.Payment, &payment)
	if chain.AuthorizationUsed(t, payment.Payload.Authorization.From, payment.Payload.Authorization.Nonce) {
		t.Fatal("the 422's payment was settled on chain")
	}
	ledger.Moved(t, price)

	// The facilitator down: 503, retryable, nothing charged.
	chain.StopFacilitator(t)
	res = chain.Pay(t, srv.URL+"/verify/schema", "POST", body)
	if res.Status != 503 || !strings.Contains(res.Body, "facilitator_unavailable") {
		t.Fatalf("facilitator down: %d %s %s", res.Status, res.Body, res.Error)
	}
	ledger.Moved(t, price)
}

func post(t *testing.T, url string, body []byte, hdr ...string) (*http.Response, map[string]any) {
	t.Helper()
	resp, b := testhttp.Do(t, http.MethodPost, url, body, hdr...)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp, m
}
