package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// TestOfferReceipt: over MCP as over REST (SPEC §16), the payment-required result's
// structuredContent carries a signed offer per requirement for mcp://tool/verify_schema, and a
// paid result's _meta["x402/payment-response"] the signed receipt for the same resource.
func TestOfferReceipt(t *testing.T) {
	e := newEnv(t, withLimit(0), withPayer(&fakePayer{}), func(d *service.Deps) { d.BaseURL = "https://verifier.example.com" })
	pub := e.svc.Keys().Current.Public()
	kid := "did:web:verifier.example.com#" + pub.Version
	body := []byte(`{"task_id":"or","expected_schema":{"type":"number"},"submitted_output":1}`)

	pr := e.call(t, ToolVerify, body, nil)
	var got struct {
		Accepts    []x402.Requirements `json:"accepts"`
		Extensions map[string]struct {
			Info struct{ Offers []x402.SignedOffer } `json:"info"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(pr.StructuredContent, &got); err != nil || !pr.IsError {
		t.Fatalf("payment required: %s", pr.StructuredContent)
	}
	offers := got.Extensions[x402.ExtOfferReceipt].Info.Offers
	if len(offers) != 1 || len(got.Accepts) != 1 {
		t.Fatalf("offers %+v for %d requirements", offers, len(got.Accepts))
	}
	h, payload, err := x402.VerifyJWS(offers[0].Signature, pub.Key)
	var offer x402.OfferPayload
	json.Unmarshal(payload, &offer)
	if err != nil || h.Kid != kid || offer.ResourceURL != x402.MCPResourceURL(ToolVerify) || offer.Amount != got.Accepts[0].Amount || offer.PayTo != got.Accepts[0].PayTo {
		t.Fatalf("offer %+v %+v %v", h, offer, err)
	}

	paid := e.call(t, ToolVerify, body, map[string]any{x402.MetaPayment: payment("20000", 1)})
	if paid.IsError {
		t.Fatalf("paid: %s", paid.StructuredContent)
	}
	var sr struct {
		Extensions map[string]struct {
			Info struct{ Receipt x402.SignedReceipt } `json:"info"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(paid.Meta[x402.MetaPaymentResponse], &sr); err != nil {
		t.Fatal(err)
	}
	h, payload, err = x402.VerifyJWS(sr.Extensions[x402.ExtOfferReceipt].Info.Receipt.Signature, pub.Key)
	var rc x402.ReceiptPayload
	json.Unmarshal(payload, &rc)
	want := x402.ReceiptPayload{Version: 1, Network: offer.Network, ResourceURL: offer.ResourceURL, Payer: "0xpayer", IssuedAt: e.clock.Now().Unix(), Transaction: "0xtx"}
	if err != nil || h.Kid != kid || rc != want {
		t.Fatalf("receipt %+v %v\n got %+v\nwant %+v", h, err, rc, want)
	}
}
