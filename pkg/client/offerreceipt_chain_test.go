package client_test

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/pkg/client"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// TestOfferReceiptOnLocalChain (SPEC §16): a call paid by the real x402 client (@x402/fetch) on
// the local chain, settled by the real facilitator; @x402/extensions' own verifiers then check
// what the server signed: every offer of the 402 answer (verifyOfferSignatureJWS) and the receipt
// of the settlement response (verifyReceiptSignatureJWS), with the server's key as a JWK and with
// the key their kid resolves to by did:web from the server's /.well-known/did.json; the receipt
// matches the offer paid for and the payer (verifyReceiptMatchesOffer), not another payer; a
// receipt changed to name another payer does not verify.
func TestOfferReceiptOnLocalChain(t *testing.T) {
	chain := x402test.Start(t)
	srv := startServer(t, map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "0",
		"X402_FACILITATOR_URL":        chain.Facilitator,
		"X402_PAY_TO_EVM":             chain.Payee,
		"X402_NETWORKS":               x402test.Network,
	})
	l := x402test.NewLedger(t, chain.Balance, chain.Payer, chain.Payee)
	body, _ := json.Marshal(passRequest("offer-receipt"))
	res := chain.Pay(t, srv.URL+client.RouteVerifySchema, "POST", body)
	if res.Status != 200 || res.Error != "" || res.Requests != 2 {
		t.Fatalf("paid call: %d %s %s", res.Status, res.Error, res.Body)
	}
	l.Moved(t, verifyPrice)
	sr, err := x402.DecodeSettleResponse(res.Header(x402.HeaderPaymentResponse))
	if err != nil || !sr.Success {
		t.Fatalf("settlement %+v: %v", sr, err)
	}

	key := srv.svc.Keys().Current.Public()
	got := chain.CheckOfferReceipt(t, x402test.OfferReceiptInput{
		PaymentRequired: res.PaymentRequired,
		PaymentResponse: res.Header(x402.HeaderPaymentResponse),
		Payer:           chain.Payer,
		JWK:             map[string]string{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(key.Key)},
	})
	if len(got.Errors) != 0 {
		t.Fatalf("@x402/extensions refused: %v", got.Errors)
	}
	u, _ := url.Parse(srv.URL)
	kid := "did:web:" + strings.ReplaceAll(u.Host, ":", "%3A") + "#" + key.Version
	resource := srv.URL + client.RouteVerifySchema

	if len(got.Offers) != 1 {
		t.Fatalf("%d offers for one requirement", len(got.Offers))
	}
	o := got.Offers[0]
	var offer x402.OfferPayload
	if err := json.Unmarshal(o.Payload, &offer); err != nil || string(o.PayloadByDid) != string(o.Payload) || o.Kid != kid || o.AcceptIndex != 0 {
		t.Fatalf("offer %+v: %v (kid want %s)", o, err, kid)
	}
	if offer.Version != 1 || offer.ResourceURL != resource || offer.Scheme != "exact" || offer.Network != x402test.Network ||
		offer.Amount != "20000" || !strings.EqualFold(offer.PayTo, chain.Payee) || offer.Asset != x402test.USDC || offer.ValidUntil == 0 {
		t.Errorf("offer payload %+v", offer)
	}
	if !o.MatchesReceipt || o.MatchesOtherPayer {
		t.Errorf("verifyReceiptMatchesOffer: payer %v, another payer %v", o.MatchesReceipt, o.MatchesOtherPayer)
	}

	var rc x402.ReceiptPayload
	if err := json.Unmarshal(got.Receipt.Payload, &rc); err != nil || string(got.Receipt.PayloadByDid) != string(got.Receipt.Payload) || got.Receipt.Kid != kid {
		t.Fatalf("receipt %+v: %v", got.Receipt, err)
	}
	if rc.Version != 1 || rc.Network != x402test.Network || rc.ResourceURL != resource || !strings.EqualFold(rc.Payer, chain.Payer) ||
		rc.Transaction != sr.Transaction || rc.Transaction == "" || rc.IssuedAt == 0 {
		t.Errorf("receipt payload %+v (settled %s)", rc, sr.Transaction)
	}
	if !got.TamperedReceiptRejected {
		t.Error("a receipt changed to name another payer verified")
	}
}
