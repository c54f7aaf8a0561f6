package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/service"
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
			e.clock.Advance(time.Duration(service.DefaultRecordDays)*24*time.Hour + time.Hour) // the default PaidAnswerTTL: TestPaidAnswerTTLIsTheRecords
			resp, m = post(t, url, okBody, x402.HeaderPaymentSignature, paymentHeaderWithID(t, 5, id))
			if resp.StatusCode != 200 || m["verification_id"] == nil || payer.settles.Load() != 2 {
				t.Fatalf("after the TTL: %d %v, settles %d", resp.StatusCode, m, payer.settles.Load())
			}
		})
	}
}

// paymentWithID is a payment n from from (an EVM address) carrying payment identifier id; from ""
// is the one paymentHeader signs for.
func paymentWithID(t *testing.T, n int, id, from string) string {
	t.Helper()
	p, err := x402.DecodePaymentSignature(paymentHeader(t, testRequirement, n))
	if err != nil {
		t.Fatal(err)
	}
	if from != "" {
		p.Payload["authorization"].(map[string]any)["from"] = from
	}
	p.Extensions = map[string]any{x402.ExtPaymentIdentifier: map[string]any{"info": map[string]any{"id": id}}}
	h, err := x402.EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// nonceOf is paymentHeader's payment n's authorization nonce.
func nonceOf(n int) string { return fmt.Sprintf("0x%064x", n) }

// TestPaymentIdentifierAtMostOnce: what a payment identifier's claim does with each outcome of
// its first call (SPEC §16). A call that failed before settlement releases the identifier (the
// retry with a new payment is settled); a settlement that went unanswered, or was refused, keeps
// the identifier bound to its FIRST payment: a retry with a new payment asks the facilitator to
// settle the first one again, never the new one, and delivers the kept answer when that settles
// or is refused as settled already. A payment naming another payer, or one whose payer cannot
// be read, never gets the kept answer.
func TestPaymentIdentifierAtMostOnce(t *testing.T) {
	for name, open := range map[string]opener{"bolt": openBolt, "dynalite": openDynalite} {
		t.Run(name, func(t *testing.T) {
			payer := &fakePayer{valid: true, settleOK: true}
			e := newPayEnv(t, open, 0, payer)
			url := e.srv.URL + "/verify/schema"
			sig := x402.HeaderPaymentSignature

			// Failed before settlement (the facilitator's verify is down): released.
			const released = "pay_released_after_verify_1"
			payer.verifyErr = errors.New("down")
			if resp, m := post(t, url, okBody, sig, paymentWithID(t, 1, released, "")); resp.StatusCode != 503 || m["charged"] != false {
				t.Fatalf("verify down: %d %v", resp.StatusCode, m)
			}
			payer.verifyErr = nil
			if resp, m := post(t, url, okBody, sig, paymentWithID(t, 2, released, "")); resp.StatusCode != 200 || m["verification_id"] == nil {
				t.Fatalf("retry after a failure before settlement: %d %v", resp.StatusCode, m)
			}
			if got := payer.settledNonces(); !slices.Equal(got, []string{nonceOf(2)}) {
				t.Fatalf("settled %v, want the retry's payment alone", got)
			}

			// The settlement unanswered: 503 that says it may have been charged; the retry with a
			// new payment settles the first payment again, which now succeeds.
			const lost = "pay_lost_settlement_answer"
			payer.settleErr = errors.New("connection reset")
			resp, m := post(t, url, okBody, sig, paymentWithID(t, 3, lost, ""))
			if resp.StatusCode != 503 || m["charged"] != true || m["code"] != "facilitator_unavailable" || m["retryable"] != true {
				t.Fatalf("settlement unanswered: %d %v", resp.StatusCode, m)
			}
			payer.settleErr = nil
			first, firstBody := testhttp.Do(t, "POST", url, []byte(okBody), sig, paymentWithID(t, 4, lost, ""))
			if first.StatusCode != 200 {
				t.Fatalf("retry after an unanswered settlement: %d %s", first.StatusCode, firstBody)
			}
			if got := payer.settledNonces()[1:]; !slices.Equal(got, []string{nonceOf(3), nonceOf(3)}) {
				t.Fatalf("settled %v, want the first payment twice and the retry's never", got)
			}
			again, againBody := testhttp.Do(t, "POST", url, []byte(okBody), sig, paymentWithID(t, 5, lost, ""))
			if again.StatusCode != 200 || string(againBody) != string(firstBody) || len(payer.settledNonces()) != 3 {
				t.Fatalf("second retry: %d %s, settles %v", again.StatusCode, againBody, payer.settledNonces())
			}

			// Refused, then refused as settled already (the chain refusing the replay): the kept
			// answer, and the new payments never settled.
			const refused = "pay_refused_then_settled_1"
			payer.settleOK = false
			resp, m = post(t, url, okBody, sig, paymentWithID(t, 6, refused, ""))
			if resp.StatusCode != 402 || m["code"] != "payment_settlement_failed" {
				t.Fatalf("settlement refused: %d %v", resp.StatusCode, m)
			}
			resp, m = post(t, url, okBody, sig, paymentWithID(t, 7, refused, ""))
			if resp.StatusCode != 402 || m["code"] != "payment_settlement_failed" {
				t.Fatalf("retry, refused again: %d %v", resp.StatusCode, m)
			}
			payer.settleReason = "invalid_exact_evm_nonce_already_used"
			resp, m = post(t, url, okBody, sig, paymentWithID(t, 8, refused, ""))
			if resp.StatusCode != 200 || m["verification_id"] == nil {
				t.Fatalf("retry, settled already: %d %v", resp.StatusCode, m)
			}
			if got := payer.settledNonces()[3:]; !slices.Equal(got, []string{nonceOf(6), nonceOf(6), nonceOf(6)}) {
				t.Fatalf("settled %v, want the first payment alone", got)
			}
			payer.settleOK, payer.settleReason = true, ""

			// Another payer, or a payment whose payer cannot be read: never the kept answer.
			resp, m = post(t, url, okBody, sig, paymentWithID(t, 9, lost, "0x000000000000000000000000000000000000dEaD"))
			if resp.StatusCode != http.StatusConflict || m["code"] != "payment_identifier_conflict" || m["verification_id"] != nil {
				t.Fatalf("another payer: %d %v", resp.StatusCode, m)
			}
			resp, m = post(t, url, okBody, sig, paymentWithID(t, 10, lost, "not-an-address"))
			if resp.StatusCode != 402 || m["code"] != "payment_invalid" || m["verification_id"] != nil {
				t.Fatalf("unreadable payer: %d %v", resp.StatusCode, m)
			}
			if n := len(payer.settledNonces()); n != 6 {
				t.Fatalf("%d settlements asked for, want 6", n)
			}
		})
	}
}

// TestPaymentIdentifierConcurrent: a hundred calls under one payment identifier at once, each
// with its own payment, half with one body and half with others, settle exactly once; every
// answer delivered is that one call's, every other call a 409.
func TestPaymentIdentifierConcurrent(t *testing.T) {
	for name, open := range map[string]opener{"bolt": openBolt, "dynalite": openDynalite} {
		t.Run(name, func(t *testing.T) {
			payer := &fakePayer{valid: true, settleOK: true}
			e := newPayEnv(t, open, 0, payer)
			const id, n = "pay_concurrent_hundred_01", 100
			bodies := make([]string, n)
			headers := make([]string, n)
			for i := range n {
				bodies[i] = okBody
				if i%2 == 1 {
					bodies[i] = fmt.Sprintf(`{"task_id":"other-%d","expected_schema":{"type":"number"},"submitted_output":%d}`, i, i)
				}
				headers[i] = paymentWithID(t, 100+i, id, "")
			}
			type result struct {
				status int
				body   string
			}
			results := make([]result, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/verify/schema", strings.NewReader(bodies[i]))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set(x402.HeaderPaymentSignature, headers[i])
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					results[i] = result{resp.StatusCode, string(b)}
				})
			}
			wg.Wait()
			if got := payer.settledNonces(); len(got) != 1 {
				t.Fatalf("settled %d payments, want 1", len(got))
			}
			var answer string
			for i, r := range results {
				switch {
				case r.status == 200 && answer == "":
					answer = r.body
				case r.status == 200 && r.body != answer:
					t.Fatalf("call %d got another answer:\n%s\n%s", i, r.body, answer)
				case r.status != 200 && r.status != http.StatusConflict:
					t.Fatalf("call %d: %d %s", i, r.status, r.body)
				}
			}
			if answer == "" {
				t.Fatal("no call was answered")
			}
		})
	}
}

// TestPaymentIdentifierHolderGone: the call holding a payment identifier stops answering while
// its settlement is under way (a process killed, or stuck, after asking to settle). Until its
// lease runs out, another call with the id waits and gets a retryable 409; once it has run out,
// a call on another instance over the same store takes the claim over and settles the FIRST
// payment again (the chain would execute it once), never its own, and delivers the kept answer.
// The holder, when its settlement finally returns, can no longer change the claim, and delivers
// the same answer.
func TestPaymentIdentifierHolderGone(t *testing.T) {
	if testing.Short() {
		t.Skip("waits service.ClaimWait")
	}
	for name, open := range map[string]opener{"bolt": openBolt, "dynalite": openDynalite} {
		t.Run(name, func(t *testing.T) {
			payer := &fakePayer{valid: true, settleOK: true}
			e := newPayEnv(t, open, 0, payer)
			url := e.srv.URL + "/verify/schema"
			sig := x402.HeaderPaymentSignature
			const id = "pay_holder_gone_mid_settle"
			hold := make(chan struct{})
			payer.mu.Lock()
			payer.hold = hold
			payer.mu.Unlock()

			type result struct {
				status int
				body   []byte
			}
			held := make(chan result, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(okBody))
				req.Header.Set(sig, paymentWithID(t, 1, id, ""))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					held <- result{}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				held <- result{resp.StatusCode, b}
			}()
			for len(payer.settledNonces()) == 0 {
				time.Sleep(10 * time.Millisecond)
			}

			// Within the holder's lease: the retry waits, then a retryable 409, nothing settled.
			// (The wait is the real ClaimWait; the test clock does not move the lease.)
			resp, m := post(t, url, okBody, sig, paymentWithID(t, 2, id, ""))
			if resp.StatusCode != http.StatusConflict || m["code"] != "payment_identifier_conflict" || m["retryable"] != true || len(payer.settledNonces()) != 1 {
				t.Fatalf("within the lease: %d %v, settled %v", resp.StatusCode, m, payer.settledNonces())
			}

			// Past the lease, on another instance over the same store: resolved with the first payment.
			e.clock.Advance(service.SettleTimeout + time.Minute)
			e.rebuild(t, func(*service.Deps) {})
			got, gotBody := testhttp.Do(t, "POST", url, []byte(okBody), sig, paymentWithID(t, 3, id, ""))
			if got.StatusCode != 200 {
				t.Fatalf("resolution: %d %s", got.StatusCode, gotBody)
			}
			if n := payer.settledNonces(); !slices.Equal(n, []string{nonceOf(1), nonceOf(1)}) {
				t.Fatalf("settled %v, want the first payment twice, never the others", n)
			}

			close(hold)
			first := <-held
			if first.status != 200 || string(first.body) != string(gotBody) {
				t.Fatalf("the holder delivered %d %s, want the kept answer %s", first.status, first.body, gotBody)
			}
			again, againBody := testhttp.Do(t, "POST", url, []byte(okBody), sig, paymentWithID(t, 4, id, ""))
			if again.StatusCode != 200 || string(againBody) != string(gotBody) || len(payer.settledNonces()) != 2 {
				t.Fatalf("after both: %d %s, settled %v", again.StatusCode, againBody, payer.settledNonces())
			}
		})
	}
}
