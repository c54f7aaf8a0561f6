package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// TestOfferReceipt: every 402 answer carries, in extensions["offer-receipt"] of its
// PAYMENT-REQUIRED header and body alike, a signed offer per accepted requirement, and a paid
// answer's PAYMENT-RESPONSE the signed receipt (SPEC §16): EdDSA JWS under the deployment's
// did:web kid, verifying with the service's current key, the receipt for the offers' resource.
func TestOfferReceipt(t *testing.T) {
	payer := &fakePayer{valid: true, settleOK: true}
	e := newPayEnv(t, openBolt, 0, payer)
	pub := e.svc.Keys().Current.Public()
	wantKid := "did:web:127.0.0.1%3A8080#" + pub.Version // testsvc's base URL is http://127.0.0.1:8080
	resource := e.svc.BaseURL() + "/verify/schema"

	resp, body := post(t, e.srv.URL+"/verify/schema", "")
	pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	if resp.StatusCode != 402 || err != nil {
		t.Fatalf("probe: %d %v", resp.StatusCode, err)
	}
	var offers struct {
		Info struct{ Offers []x402.SignedOffer } `json:"info"`
	}
	raw, _ := json.Marshal(pr.Extensions[x402.ExtOfferReceipt])
	if err := json.Unmarshal(raw, &offers); err != nil || len(offers.Info.Offers) != len(pr.Accepts) || len(pr.Accepts) == 0 {
		t.Fatalf("offers %s for %d requirements", raw, len(pr.Accepts))
	}
	bodyExt, _ := json.Marshal(body["extensions"].(map[string]any)[x402.ExtOfferReceipt])
	if string(bodyExt) != string(raw) {
		t.Errorf("the body's offers differ from the header's:\n%s\n%s", bodyExt, raw)
	}
	for i, off := range offers.Info.Offers {
		header, payload, err := x402.VerifyJWS(off.Signature, pub.Key)
		if err != nil || header.Kid != wantKid || off.Format != "jws" || off.AcceptIndex != i {
			t.Fatalf("offer %d: %+v %v (%+v)", i, header, err, off)
		}
		var got x402.OfferPayload
		json.Unmarshal(payload, &got)
		r := pr.Accepts[i]
		want := x402.OfferPayload{Version: 1, ResourceURL: resource, Scheme: r.Scheme, Network: r.Network, Asset: r.Asset,
			PayTo: r.PayTo, Amount: r.Amount, ValidUntil: e.clock.Now().Add(x402.OfferValidity).Unix()}
		if got != want {
			t.Errorf("offer %d\n got %+v\nwant %+v", i, got, want)
		}
	}

	resp, m := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 11))
	if resp.StatusCode != 200 {
		t.Fatalf("paid: %d %v", resp.StatusCode, m)
	}
	sr, err := x402.DecodeSettleResponse(resp.Header.Get(x402.HeaderPaymentResponse))
	if err != nil {
		t.Fatal(err)
	}
	got := receiptPayload(t, sr, pub.Key, wantKid)
	want := x402.ReceiptPayload{Version: 1, Network: testRequirement.Network, ResourceURL: resource, Payer: "0xpayer",
		IssuedAt: e.clock.Now().Unix(), Transaction: "0xtx"}
	if got != want {
		t.Errorf("receipt\n got %+v\nwant %+v", got, want)
	}

	// A failed settlement is no receipt: nothing was paid for.
	payer.settleOK = false
	resp, _ = post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 12))
	if sr, err := x402.DecodeSettleResponse(resp.Header.Get(x402.HeaderPaymentResponse)); resp.StatusCode != 402 || err != nil || sr.Extensions != nil {
		t.Errorf("failed settlement: %d %+v %v", resp.StatusCode, sr, err)
	}
}

// receiptPayload verifies a settlement's offer-receipt receipt with pub and returns its payload.
func receiptPayload(t *testing.T, sr x402.SettleResponse, pub []byte, kid string) x402.ReceiptPayload {
	t.Helper()
	var ext struct {
		Info struct{ Receipt x402.SignedReceipt } `json:"info"`
	}
	raw, _ := json.Marshal(sr.Extensions[x402.ExtOfferReceipt])
	if err := json.Unmarshal(raw, &ext); err != nil || ext.Info.Receipt.Format != "jws" {
		t.Fatalf("settlement extensions %s", raw)
	}
	header, payload, err := x402.VerifyJWS(ext.Info.Receipt.Signature, pub)
	if err != nil || header.Kid != kid {
		t.Fatalf("receipt: %+v %v", header, err)
	}
	var p x402.ReceiptPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}
