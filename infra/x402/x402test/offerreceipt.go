package x402test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// OfferReceiptInput is what CheckOfferReceipt hands offer-receipt.mjs: a paid call's decoded
// PAYMENT-REQUIRED, its PAYMENT-RESPONSE header as sent (base64), the paying address, and the
// server's current public key as a JWK ({"kty":"OKP","crv":"Ed25519","x":...}).
type OfferReceiptInput struct {
	PaymentRequired json.RawMessage   `json:"paymentRequired"`
	PaymentResponse string            `json:"paymentResponse"`
	Payer           string            `json:"payer"`
	JWK             map[string]string `json:"jwk"`
}

// OfferReceiptCheck is what @x402/extensions' own verifiers said of the offers and the receipt.
// A payload is set only when its signature verified: Payload with the JWK, PayloadByDid with the
// key its kid resolves to by did:web (the server's /.well-known/did.json).
type OfferReceiptCheck struct {
	Offers []struct {
		AcceptIndex       int             `json:"acceptIndex"`
		Kid               string          `json:"kid"`
		Payload           json.RawMessage `json:"payload"`
		PayloadByDid      json.RawMessage `json:"payloadByDid"`
		MatchesReceipt    bool            `json:"matchesReceipt"`
		MatchesOtherPayer bool            `json:"matchesOtherPayer"`
	} `json:"offers"`
	Receipt struct {
		Kid          string          `json:"kid"`
		Payload      json.RawMessage `json:"payload"`
		PayloadByDid json.RawMessage `json:"payloadByDid"`
	} `json:"receipt"`
	TamperedReceiptRejected bool     `json:"tamperedReceiptRejected"`
	Errors                  []string `json:"errors"`
}

// CheckOfferReceipt runs @x402/extensions' verifyOfferSignatureJWS, verifyReceiptSignatureJWS
// and verifyReceiptMatchesOffer (offer-receipt.mjs, one node process) on a paid call's offers and
// receipt. A check that failed is in OfferReceiptCheck.Errors; the test fails here only when the
// script could not run.
func (h *harness) CheckOfferReceipt(t testing.TB, in OfferReceiptInput) OfferReceiptCheck {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "offer-receipt.json")
	if err := os.WriteFile(f, raw, 0o600); err != nil {
		t.Fatalf("x402test: write offer-receipt input: %v", err)
	}
	out, err := h.runScript(t, nil, "offer-receipt.mjs", "--in", f)
	if err != nil {
		t.Fatalf("x402test: offer-receipt.mjs: %v", err)
	}
	var c OfferReceiptCheck
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("x402test: offer-receipt.mjs printed %q: %v", out, err)
	}
	return c
}
