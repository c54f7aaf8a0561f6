package httpapi

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// paymentHeaderWithID is paymentHeader's payment n carrying the payment-identifier id.
func paymentHeaderWithID(t *testing.T, n int, id string) string {
	t.Helper()
	p, err := x402.DecodePaymentSignature(paymentHeader(t, testRequirement, n))
	if err != nil {
		t.Fatal(err)
	}
	p.Extensions = map[string]any{x402.ExtPaymentIdentifier: map[string]any{"info": map[string]any{"id": id}}}
	h, err := x402.EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPaymentIdentifier: the x402 payment-identifier extension over REST (SPEC §16). The same id
// with the same body is answered from the store, byte for byte, with the same settlement, and
// nothing is verified or settled again, whether the retry sends the same payment or a new one;
// another body (or route) under the id is 409 payment_identifier_conflict, also before the
// facilitator; the 402 answer advertises the extension; the answer is kept for PaidAnswerTTL.
func TestPaymentIdentifier(t *testing.T) {
	for name, open := range map[string]opener{"bolt": openBolt, "dynalite": openDynalite} {
		t.Run(name, func(t *testing.T) {
			payer := &fakePayer{valid: true, settleOK: true}
			e := newPayEnv(t, open, 0, payer)
			const id = "pay_7d5d747be160e280504c099d984bcfe0"
			url := e.srv.URL + "/verify/schema"

			// The 402 answer declares the extension, in the header and the body.
			resp, m := post(t, url, okBody)
			pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
			if resp.StatusCode != 402 || err != nil || pr.Extensions[x402.ExtPaymentIdentifier] == nil {
				t.Fatalf("402: %d %v %v", resp.StatusCode, err, pr.Extensions)
			}
			if ext, _ := m["extensions"].(map[string]any); ext[x402.ExtPaymentIdentifier] == nil {
				t.Errorf("the 402 body does not declare payment-identifier: %v", m["extensions"])
			}

			first, firstBody := testhttp.Do(t, "POST", url, []byte(okBody), x402.HeaderPaymentSignature, paymentHeaderWithID(t, 1, id))
			if first.StatusCode != 200 || payer.settles.Load() != 1 {
				t.Fatalf("first paid call: %d %s", first.StatusCode, firstBody)
			}
			for i, sig := range []string{paymentHeaderWithID(t, 1, id), paymentHeaderWithID(t, 2, id)} {
				again, againBody := testhttp.Do(t, "POST", url, []byte(okBody), x402.HeaderPaymentSignature, sig)
				if again.StatusCode != 200 || string(againBody) != string(firstBody) {
					t.Fatalf("retry %d: %d\n got  %s\n want %s", i, again.StatusCode, againBody, firstBody)
				}
				if got, want := again.Header.Get(x402.HeaderPaymentResponse), first.Header.Get(x402.HeaderPaymentResponse); got != want || got == "" {
					t.Errorf("retry %d: PAYMENT-RESPONSE %q, want the first %q", i, got, want)
				}
				if payer.verifies.Load() != 1 || payer.settles.Load() != 1 {
					t.Fatalf("retry %d verified or settled again: verifies %d, settles %d", i, payer.verifies.Load(), payer.settles.Load())
				}
			}

			// Another body, or the same body on another route, under the same id: 409.
			other := `{"task_id":"t2","expected_schema":{"type":"number"},"submitted_output":2}`
			for _, c := range []struct{ url, body string }{{url, other}, {e.srv.URL + "/verify/deliverable", okBody}} {
				resp, m = post(t, c.url, c.body, x402.HeaderPaymentSignature, paymentHeaderWithID(t, 3, id))
				if resp.StatusCode != http.StatusConflict || m["code"] != "payment_identifier_conflict" || m["charged"] != false ||
					payer.verifies.Load() != 1 {
					t.Fatalf("conflict on %s: %d %v, verifies %d", c.url, resp.StatusCode, m, payer.verifies.Load())
				}
				if fmt.Sprint(m["next_actions"]) != "[map[action:use_new_payment_identifier]]" {
					t.Errorf("conflict next_actions %v", m["next_actions"])
				}
			}

			// A malformed id is refused as a malformed payment, before the facilitator.
			resp, m = post(t, url, okBody, x402.HeaderPaymentSignature, paymentHeaderWithID(t, 4, "short"))
			if resp.StatusCode != 402 || m["code"] != "payment_invalid" || payer.verifies.Load() != 1 {
				t.Fatalf("malformed id: %d %v", resp.StatusCode, m)
			}

			// Past PaidAnswerTTL the id is free again: a new payment is verified and settled.
			e.clock.Advance(e.svc.PaidAnswerTTL() + time.Hour)
			resp, m = post(t, url, okBody, x402.HeaderPaymentSignature, paymentHeaderWithID(t, 5, id))
			if resp.StatusCode != 200 || m["verification_id"] == nil || payer.settles.Load() != 2 {
				t.Fatalf("after the TTL: %d %v, settles %d", resp.StatusCode, m, payer.settles.Load())
			}
		})
	}
}
