package httpapi

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// TestPaymentBinding: a paid answer's signed response names the requirement the server accepted,
// the payer and the authorization the client signed (SPEC §16); a free one says it was the free
// allowance; both verify under the service's key, so the binding is inside the signature.
func TestPaymentBinding(t *testing.T) {
	payer := &fakePayer{valid: true, settleOK: true}
	e := newPayEnv(t, openBolt, 1, payer)
	keys := e.svc.Keys().PublicKeys()

	resp, m := post(t, e.srv.URL+"/verify/schema", okBody)
	if resp.StatusCode != 200 {
		t.Fatalf("free: %d %v", resp.StatusCode, m)
	}
	if got, want := fmt.Sprint(m["payment"]), fmt.Sprint(map[string]any{"free_allowance": true}); got != want {
		t.Errorf("free payment member %s, want %s", got, want)
	}
	checkSigned(t, e.svc, mustJSON(t, m), receipt.ContextVerify)

	resp, m = post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 7))
	if resp.StatusCode != 200 {
		t.Fatalf("paid: %d %v", resp.StatusCode, m)
	}
	hash, err := x402.RequirementsHash(testRequirement)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"scheme": "exact", "network": testRequirement.Network, "asset": testRequirement.Asset,
		"amount": testRequirement.Amount, "pay_to": testRequirement.PayTo,
		"payer":             "0xpayer", // the facilitator's, which fakePayer names
		"requirements_hash": hash, "authorization": fmt.Sprintf("0x%064x", 7),
	}
	if got := fmt.Sprint(m["payment"]); got != fmt.Sprint(want) {
		t.Errorf("paid payment member\n got %s\nwant %s", got, fmt.Sprint(want))
	}
	checkSigned(t, e.svc, mustJSON(t, m), receipt.ContextVerify)

	// Changing the binding breaks the signature: it is signed, not decoration.
	m["payment"].(map[string]any)["amount"] = "1"
	if err := receipt.VerifyAttestation(mustJSON(t, m), receipt.ContextVerify, keys); err == nil {
		t.Error("an answer whose payment amount was changed still verifies")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
