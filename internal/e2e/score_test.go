package e2e

import (
	"encoding/json"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/x402"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

const scorePrice = 10000 // $0.01 in USDC atomic units

// TestPaidScoreOnLocalChain pays for GET /score/{agent_id} with the real x402 client on the local
// chain: unknown and test- ids cost nothing, a known id costs exactly $0.01, and the answer is a
// receipt that verifies under the trust-score context.
func TestPaidScoreOnLocalChain(t *testing.T) {
	chain := x402test.Start(t)
	srv := startServer(t, map[string]string{
		"X402_FACILITATOR_URL": chain.Facilitator,
		"X402_PAY_TO_EVM":      chain.Payee,
		"X402_NETWORKS":        x402test.Network,
	})
	keys := srv.Svc.Keys().PublicKeys()

	// Free verifications (within the allowance) give seller-score a record; test- ids get none.
	for _, agent := range []string{"seller-score", "seller-score", "test-seller-score"} {
		body := `{"task_id":"job","agent_id":"` + agent + `","expected_schema":{"type":"number"},"submitted_output":1}`
		if resp, m := post(t, srv.URL+"/verify/schema", []byte(body)); resp.StatusCode != 200 || m["result"] != "pass" {
			t.Fatalf("free verification of %s: %d %v", agent, resp.StatusCode, m)
		}
	}
	ledger := x402test.NewLedger(t, chain.Balance, chain.Payer, chain.Payee)

	// Unknown and test- ids: the client gets a signed no_data answer at once and pays nothing.
	for _, id := range []string{"seller-nobody", "test-seller-score"} {
		res := chain.Pay(t, srv.URL+"/score/"+id, "GET", nil)
		if res.Status != 200 || res.Requests != 1 || res.PaymentResponse != nil || !strings.Contains(res.Body, `"reason":"no_data"`) {
			t.Fatalf("score of %s: %+v", id, res)
		}
		if err := receipt.VerifyAttestation([]byte(res.Body), receipt.ContextScore, keys); err != nil {
			t.Errorf("no_data answer of %s does not verify: %v", id, err)
		}
	}
	ledger.Moved(t, 0)

	// A known id: a 402 for exactly 10000 atomic units, paid and settled, then the signed score.
	res := chain.Pay(t, srv.URL+"/score/seller-score", "GET", nil)
	if res.Status != 200 || res.Requests != 2 || res.PaymentResponse == nil || !res.PaymentResponse.Success {
		t.Fatalf("paid score: %+v", res)
	}
	var pr struct {
		Resource struct{ URL string }
		Accepts  []struct{ Amount, Network string }
	}
	if err := json.Unmarshal(res.PaymentRequired, &pr); err != nil || len(pr.Accepts) != 1 || pr.Accepts[0].Amount != "10000" ||
		pr.Resource.URL != srv.URL+"/score/seller-score" {
		t.Fatalf("payment required: %s (%v)", res.PaymentRequired, err)
	}
	ledger.Moved(t, scorePrice)
	if err := receipt.VerifyAttestation([]byte(res.Body), receipt.ContextScore, keys); err != nil {
		t.Fatalf("the paid score does not verify: %v", err)
	}
	if receipt.VerifyAttestation([]byte(res.Body), receipt.ContextReputation, keys) == nil {
		t.Fatal("the paid score verifies under the reputation context")
	}
	var doc service.ScoreDocumentBody
	if err := json.Unmarshal([]byte(res.Body), &doc); err != nil || doc.AgentID != "seller-score" || doc.Score == nil || doc.Verifications.Total != 2 {
		t.Fatalf("score document: %v %s", err, res.Body)
	}

	// The same payment again is refused before any work, and nothing moves.
	req, _ := http.NewRequest("GET", srv.URL+"/score/seller-score", nil)
	req.Header.Set(x402.HeaderPaymentSignature, res.PaymentSignature)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 402 || !strings.Contains(string(b), "payment_replayed") {
		t.Fatalf("replay: %d %s", resp.StatusCode, b)
	}
	ledger.Moved(t, scorePrice)

	// The history stays free and signs with its own context.
	resp, err = http.Get(srv.URL + "/reputation/seller-score")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || receipt.VerifyAttestation(b, receipt.ContextReputation, keys) != nil || !strings.Contains(string(b), `"verifications":2`) {
		t.Fatalf("reputation: %d %s", resp.StatusCode, b)
	}
	ledger.Moved(t, scorePrice)
}
