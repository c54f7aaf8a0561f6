package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/client"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// passRequest is a small request that passes, with an agent so that it is recorded.
func passRequest(task string) client.Request {
	return client.Request{
		TaskID:          task,
		AgentID:         "seller-go-client",
		ExpectedSchema:  json.RawMessage(`{"type":"object","required":["total"],"properties":{"total":{"type":"number"}}}`),
		SubmittedOutput: json.RawMessage(`{"total": 1.50}`),
	}
}

func seedRequest(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/seed/invoice-draft.request.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newClient(t *testing.T, base string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(base, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTypedCallsAgainstLocalServer(t *testing.T) {
	srv := startServer(t, nil)
	c := newClient(t, srv.URL)
	ctx := context.Background()

	h, err := c.Health(ctx)
	if err != nil || h.Status != "ok" || h.Version == "" || h.KeyVersion == "" || h.Answer.Status != 200 {
		t.Fatalf("health: %+v, %v", h, err)
	}

	// A typed request: pass, full detail, every hash recomputed, the allowance exposed.
	v, err := c.VerifySchema(ctx, passRequest("go-client-1"))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Passed() || v.Summary.Result != "pass" || v.TaskID != "go-client-1" || v.AgentID == nil || *v.AgentID != "seller-go-client" {
		t.Errorf("verify: %+v", v)
	}
	if v.RequestHash == "" || v.Overall == nil || v.Overall.Ratio != 1 || v.Attestation.KeyVersion != h.KeyVersion || v.Verify.KeyVersion != h.KeyVersion {
		t.Errorf("verify fields: %+v", v)
	}
	if v.Allowance == nil || v.Allowance.Limit != 1000 || v.Allowance.Remaining != 999 || v.Allowance.Resets.IsZero() || v.Payment != nil {
		t.Errorf("allowance: %+v, payment %+v", v.Allowance, v.Payment)
	}
	// The body is the receipt exactly as signed, and verifies offline.
	card, err := c.AgentCard(ctx)
	if err != nil || len(card.Keys) == 0 || card.Name == "" {
		t.Fatalf("agent card: %+v, %v", card, err)
	}
	body, _ := json.Marshal(passRequest("go-client-1"))
	if err := receipt.VerifyReceipt(v.Body, card.Keys, body); err != nil {
		t.Errorf("the kept body does not verify offline: %v", err)
	}

	// The seed invoice draft as bytes, through the deliverable route: a fail verdict.
	d, err := c.VerifyJSON(ctx, client.RouteVerifyDeliverable, seedRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.Passed() || d.Result != "fail" || len(d.Summary.BlockingChecks) != 1 || d.Summary.BlockingChecks[0] != "consistency:sum_equals" ||
		d.SchemaCompliance == nil || d.SchemaCompliance.Passed != 22 || d.IntegrityChecks.Passed != 7 || len(d.Hints) != 1 {
		t.Errorf("deliverable: %+v", d)
	}
	if d.Allowance == nil || d.Allowance.Remaining != 998 {
		t.Errorf("allowance after two calls: %+v", d.Allowance)
	}

	// Compact detail: no request_hash, still checked (rules with exact decimals travel as sent).
	compact := passRequest("go-client-compact")
	compact.Detail = "compact"
	compact.SubmittedOutput = json.RawMessage(`{"items":[{"p":1000000000.10},{"p":0.20}],"total":1000000000.30}`)
	compact.ExpectedSchema = json.RawMessage(`{"type":"object"}`)
	compact.Rules = []client.Rule{{Type: "sum_equals", Field: "items[].p", EqualsField: "total", Tolerance: "0"}}
	compact.Bounds = map[string]client.Bound{"total": {Min: "0"}}
	compact.EnforceRules = true
	cv, err := c.VerifyDeliverable(ctx, compact)
	if err != nil || !cv.Passed() || cv.RequestHash != "" || len(cv.Hints) != 0 || !cv.EnforceRules {
		t.Fatalf("compact: %+v, %v", cv, err)
	}

	// An invalid request: the envelope, typed, and nothing consumed.
	_, err = c.VerifyJSON(ctx, client.RouteVerifySchema, []byte(`{"task_id":"bad","expected_schema":{},"submitted_output":1,"rules":[{"type":"nope","field":"a"}]}`))
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Code != apperr.InvalidRequest || ae.Status != 422 || ae.Retryable || ae.Charged ||
		len(ae.Fields) != 1 || ae.Fields[0].Field != "rules[0].type" || len(ae.NextActions) == 0 {
		t.Fatalf("422: %#v", err)
	}
	if e, ok := apperr.As(err); !ok || e.Code != apperr.InvalidRequest {
		t.Errorf("apperr.As: %v %v", e, ok)
	}
	v, err = c.VerifySchema(ctx, passRequest("go-client-after-422"))
	if err != nil || v.Allowance.Remaining != 996 {
		t.Fatalf("after the 422: %+v, %v", v, err)
	}

	// The card was fetched once for all the checks, and once more when asked for.
	if n := srv.cardFetches.Load(); n != 2 {
		t.Errorf("agent card fetched %d times, want 2 (one for the checks, one for AgentCard)", n)
	}
	if _, err := c.VerifyJSON(ctx, "/health", []byte(`{}`)); err == nil {
		t.Error("VerifyJSON accepted a route that is not a verify route")
	}
	if _, err := c.VerifyJSON(ctx, client.RouteVerifySchema, []byte(" ")); err == nil {
		t.Error("VerifyJSON sent an empty body (the discovery probe)")
	}
}

// flipVerificationID changes one byte of a verification answer, inside verification_id, so that
// the JSON stays valid and only the signature can tell.
func flipVerificationID(b []byte) []byte {
	i := bytes.Index(b, []byte(`"verification_id":"`))
	if i < 0 {
		return b
	}
	out := bytes.Clone(b)
	out[i+len(`"verification_id":"`)] ^= 0x01
	return out
}

func TestTamperedAnswersAreRefused(t *testing.T) {
	srv := startServer(t, nil)
	ctx := context.Background()
	body, _ := json.Marshal(passRequest("go-client-tamper"))

	cases := []struct {
		name         string
		editRequest  func([]byte) []byte
		editAnswer   func([]byte) []byte
		want         error
		requestBytes []byte
	}{
		{"one byte of the answer flipped", nil, flipVerificationID, receipt.ErrSignature, body},
		{"the answer is not JSON any more", nil, func(b []byte) []byte { c := bytes.Clone(b); c[0] = '['; return c }, receipt.ErrMalformed, body},
		{"the attestation removed", nil, func(b []byte) []byte {
			var m map[string]json.RawMessage
			json.Unmarshal(b, &m)
			delete(m, "attestation")
			out, _ := json.Marshal(m)
			return out
		}, receipt.ErrMalformed, body},
		{"the request changed on its way", func(b []byte) []byte { return bytes.Replace(b, []byte(`1.50`), []byte(`2.50`), 1) }, nil, receipt.ErrHashMismatch, body},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := proxy(t, srv.URL, tc.editRequest, tc.editAnswer)
			c := newClient(t, p.URL)
			v, err := c.VerifyJSON(ctx, client.RouteVerifySchema, tc.requestBytes)
			var re *client.ReceiptError
			if v != nil || !errors.As(err, &re) || !errors.Is(err, client.ErrReceipt) || !errors.Is(err, tc.want) || len(re.Body) == 0 {
				t.Fatalf("got %+v, %v; want a receipt error wrapping %v", v, err, tc.want)
			}
		})
	}

	// A validly signed answer to another request (same data, another task) is refused too. In
	// compact detail no request_hash binds the task, so the client compares what it asked for.
	first := passRequest("go-client-replay-a")
	first.Detail = "compact"
	c := newClient(t, srv.URL)
	a, err := c.VerifySchema(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	replay := proxy(t, srv.URL, nil, func([]byte) []byte { return a.Body })
	second := first
	second.TaskID = "go-client-replay-b"
	_, err = newClient(t, replay.URL).VerifySchema(ctx, second)
	if !errors.Is(err, client.ErrReceipt) || !errors.Is(err, client.ErrAnswerMismatch) {
		t.Fatalf("a replayed answer: %v", err)
	}
	// An answer with enforce_rules off passed off as the answer to a request that enforces them.
	enforced := first
	enforced.EnforceRules = true
	_, err = newClient(t, replay.URL).VerifySchema(ctx, enforced)
	if !errors.Is(err, client.ErrAnswerMismatch) {
		t.Fatalf("an answer with other switches: %v", err)
	}

	// Without checks (the unsafe switch) the flipped answer goes through: the checks are what
	// refused it above.
	p := proxy(t, srv.URL, nil, flipVerificationID)
	if _, err := newClient(t, p.URL, client.WithoutReceiptChecksUnsafe()).VerifyJSON(ctx, client.RouteVerifySchema, body); err != nil {
		t.Fatalf("unchecked: %v", err)
	}
}

func TestUnknownKeyVersionRefreshesTheCardOnce(t *testing.T) {
	srv := startServer(t, nil)
	ctx := context.Background()
	c := newClient(t, srv.URL)
	verify := func(task string) (*client.Verification, error) { return c.VerifySchema(ctx, passRequest(task)) }
	fetches := func(want int32) {
		t.Helper()
		if n := srv.cardFetches.Load(); n != want {
			t.Fatalf("agent card fetched %d times, want %d", n, want)
		}
	}

	if _, err := verify("rot-1"); err != nil {
		t.Fatal(err)
	}
	first, _ := c.AgentCard(ctx)
	fetches(2)
	if _, err := verify("rot-2"); err != nil {
		t.Fatal(err)
	}
	fetches(2)

	// The service rotates its key: the first answer under the new version costs one card fetch.
	srv.rotate(t, "v-rotated-2", 2)
	v, err := verify("rot-3")
	if err != nil || v.Attestation.KeyVersion != "v-rotated-2" {
		t.Fatalf("after rotation: %+v, %v", v, err)
	}
	fetches(3)
	for _, task := range []string{"rot-4", "rot-5"} {
		if _, err := verify(task); err != nil {
			t.Fatal(err)
		}
	}
	fetches(3)

	// A version the card does not list even after the refresh: one fetch, then a receipt error.
	srv.freezeCard(t)
	srv.rotate(t, "v-unpublished-3", 3)
	_, err = verify("rot-6")
	if !errors.Is(err, client.ErrReceipt) || !errors.Is(err, receipt.ErrUnknownKey) {
		t.Fatalf("unpublished key: %v", err)
	}
	fetches(4)

	// Pinned keys are never refreshed: the card is not fetched, and another version is refused.
	pinned := newClient(t, srv.URL, client.WithPublicKeys(first.Keys...))
	_, err = pinned.VerifySchema(ctx, passRequest("rot-7"))
	if !errors.Is(err, receipt.ErrUnknownKey) {
		t.Fatalf("pinned: %v", err)
	}
	fetches(4)
}

// countingPayer signs nothing real: it counts what it was asked to sign.
type countingPayer struct {
	mu       sync.Mutex
	signed   int
	supports bool
}

func (p *countingPayer) Supports(x402.Requirements) bool { return p.supports }

func (p *countingPayer) Sign(context.Context, x402.Requirements) (map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signed++
	return map[string]any{"signature": "0x00"}, nil
}

// Past the free allowance, without a chain: what a client without a payer, or with caps the
// price exceeds, gets back.
func TestPaymentRequiredAndCapsWithoutChain(t *testing.T) {
	srv := startServer(t, map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "1",
		// No facilitator is called before a payment arrives, and none arrives here.
		"X402_FACILITATOR_URL": "http://127.0.0.1:9",
		"X402_PAY_TO_EVM":      "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
		"X402_NETWORKS":        x402.NetworkBase,
	})
	ctx := context.Background()
	c := newClient(t, srv.URL)
	v, err := c.VerifySchema(ctx, passRequest("pr-1"))
	if err != nil || v.Allowance == nil || v.Allowance.Remaining != 0 || v.Allowance.Limit != 1 {
		t.Fatalf("free call: %+v, %v", v, err)
	}

	_, err = c.VerifySchema(ctx, passRequest("pr-2"))
	var pe *client.PaymentRequiredError
	if !errors.As(err, &pe) || !errors.Is(err, client.ErrPaymentRequired) || pe.Code != apperr.FreeTrialExhausted || pe.Paid || pe.Cause != nil {
		t.Fatalf("402: %#v", err)
	}
	if pe.FreeTrial == nil || pe.FreeTrial.Available || pe.FreeTrial.RemainingCallsToday != 0 || pe.FreeTrial.CallsPerClientPerDay != 1 || pe.FreeTrial.Code != "free_trial_exhausted" {
		t.Errorf("free_trial: %+v", pe.FreeTrial)
	}
	if len(pe.Required.Accepts) != 1 || pe.Required.Accepts[0].Amount != "20000" || pe.Required.Accepts[0].Network != x402.NetworkBase ||
		pe.Required.Resource.URL != srv.URL+"/verify/schema" {
		t.Errorf("PaymentRequired: %+v", pe.Required)
	}

	// Over the cap per call, over the budget, or nothing payable: nothing is signed.
	for _, tc := range []struct {
		name  string
		opts  []client.Option
		payer *countingPayer
		check func(error) bool
	}{
		{"cap per call", []client.Option{client.WithMaxPrice("0.01")}, &countingPayer{supports: true}, func(err error) bool {
			var ce *client.SpendingCapError
			return errors.As(err, &ce) && ce.Scope == "call" && ce.Price == "0.02" && ce.Cap == "0.01" && len(ce.Required.Accepts) == 1
		}},
		{"budget", []client.Option{client.WithBudget("0.019999")}, &countingPayer{supports: true}, func(err error) bool {
			var ce *client.SpendingCapError
			return errors.As(err, &ce) && ce.Scope == "client" && ce.Cap == "0.019999"
		}},
		{"zero cap", []client.Option{client.WithMaxPrice("0")}, &countingPayer{supports: true}, func(err error) bool {
			return errors.Is(err, client.ErrSpendingCap)
		}},
		{"nothing payable", nil, &countingPayer{supports: false}, func(err error) bool {
			return errors.As(err, &pe) && errors.Is(err, client.ErrNoPayableOffer) && pe.FreeTrial != nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc := newClient(t, srv.URL, append(tc.opts, client.WithPayer(tc.payer))...)
			_, err := pc.VerifySchema(ctx, passRequest("pr-cap"))
			if !tc.check(err) {
				t.Fatalf("got %#v", err)
			}
			if tc.payer.signed != 0 || pc.Spent() != "0" {
				t.Fatalf("signed %d payments, spent %s", tc.payer.signed, pc.Spent())
			}
		})
	}

	// A payment the service cannot use (this payer's signature is junk) is refused with 402
	// payment_invalid, and the signed amount counts against the budget all the same.
	junk := &countingPayer{supports: true}
	jc := newClient(t, srv.URL, client.WithPayer(junk))
	_, err = jc.VerifySchema(ctx, passRequest("pr-junk"))
	if !errors.As(err, &pe) || !pe.Paid || pe.Code != apperr.PaymentInvalid || junk.signed != 1 || jc.Spent() != "0.02" {
		t.Fatalf("junk payment: %#v, signed %d, spent %s", err, junk.signed, jc.Spent())
	}
}

// A free-only deployment answers 429 past the allowance with a retry_after until midnight,
// which is too long to wait for: the error comes back at once.
func TestFreeOnlyExhausted(t *testing.T) {
	srv := startServer(t, map[string]string{"VERIFIER_FREE_CALLS_PER_DAY": "1"})
	ctx := context.Background()
	c := newClient(t, srv.URL, client.WithRetries(2, time.Second))
	if _, err := c.VerifySchema(ctx, passRequest("fo-1")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := c.VerifySchema(ctx, passRequest("fo-2"))
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Code != apperr.FreeTrialExhausted || ae.Status != 429 || !ae.Retryable || ae.RetryAfter <= 0 {
		t.Fatalf("free-only: %#v", err)
	}
	if ae.RetryAfter > time.Second && time.Since(start) > 5*time.Second {
		t.Errorf("the client waited %s for a retry_after of %s", time.Since(start), ae.RetryAfter)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		base string
		opts []client.Option
	}{
		"relative URL":  {"verify.example.com", nil},
		"ftp":           {"ftp://verify.example.com", nil},
		"credentials":   {"https://user:pw@verify.example.com", nil},
		"query":         {"https://verify.example.com/?a=1", nil},
		"bad price":     {"https://verify.example.com", []client.Option{client.WithMaxPrice("$1")}},
		"bad budget":    {"https://verify.example.com", []client.Option{client.WithBudget("0.0000001")}},
		"retries":       {"https://verify.example.com", []client.Option{client.WithRetries(99, time.Second)}},
		"nil payer":     {"https://verify.example.com", []client.Option{client.WithPayer(nil)}},
		"no keys":       {"https://verify.example.com", []client.Option{client.WithPublicKeys()}},
		"user agent":    {"https://verify.example.com", []client.Option{client.WithUserAgent("a\r\nX-Evil: 1")}},
		"neg. timeout":  {"https://verify.example.com", []client.Option{client.WithTimeout(-time.Second)}},
		"nil http":      {"https://verify.example.com", []client.Option{client.WithHTTPClient(nil)}},
		"bad zero form": {"https://verify.example.com", []client.Option{client.WithMaxPrice("0.")}},
	} {
		if _, err := client.New(tc.base, tc.opts...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c, err := client.New("https://verify.example.com/prefix/", client.WithMaxPrice("0"), client.WithBudget("0.00"))
	if err != nil || c.BaseURL() != "https://verify.example.com/prefix" || c.Spent() != "0" {
		t.Fatalf("%v %v", c, err)
	}
}

// Concurrent calls share one agent card fetch.
func TestConcurrentCallsFetchTheCardOnce(t *testing.T) {
	srv := startServer(t, nil)
	c := newClient(t, srv.URL)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.VerifySchema(context.Background(), passRequest("conc-"+strings.Repeat("x", i+1))); err != nil {
				failed.Add(1)
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := srv.cardFetches.Load(); n != 1 || failed.Load() != 0 {
		t.Fatalf("card fetched %d times by 8 concurrent calls", n)
	}
}

func TestScoreAndReputationAgainstLocalServer(t *testing.T) {
	srv := startServer(t, nil) // no payee: /score is free (SPEC §8.6)
	ctx := context.Background()
	c := newClient(t, srv.URL)
	const agent = "team/seller one" // a '/' and a space travel percent-encoded
	for i, out := range []string{`{"total": 1}`, `{"total": 2}`, `{"total": "three"}`} {
		req := passRequest("rep-" + strings.Repeat("i", i+1))
		req.AgentID, req.SubmittedOutput = agent, json.RawMessage(out)
		if _, err := c.VerifySchema(ctx, req); err != nil {
			t.Fatal(err)
		}
	}

	r, err := c.Reputation(ctx, agent, &client.Page{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.AgentID != agent || r.Reason != "" || r.Totals.Verifications != 3 || r.Totals.Passed != 2 || r.Totals.Failed != 1 ||
		len(r.History) != 2 || r.History[0].TaskID != "rep-iii" || r.History[0].Result != "fail" || r.NextCursor == "" || r.FirstSeen == "" {
		t.Fatalf("reputation page 1: %+v", r)
	}
	r2, err := c.Reputation(ctx, agent, &client.Page{Limit: 2, Cursor: r.NextCursor})
	if err != nil || len(r2.History) != 1 || r2.History[0].TaskID != "rep-i" || r2.NextCursor != "" {
		t.Fatalf("reputation page 2: %+v, %v", r2, err)
	}
	if r, err := c.Reputation(ctx, "test-never-recorded", nil); err != nil || r.Reason != "no_data" || len(r.History) != 0 {
		t.Fatalf("test- agent: %+v, %v", r, err)
	}

	s, err := c.Score(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if s.AgentID != agent || s.Score == nil || *s.Score < 0 || *s.Score > 100 || s.Confidence == "" || s.Verifications == nil ||
		s.Verifications.Total != 3 || s.Verifications.Failed != 1 || s.Method == "" || s.ComputedAt == "" || s.Payment != nil || s.PassRate == nil {
		t.Fatalf("score: %+v", s)
	}
	if s, err := c.Score(ctx, "nobody-at-all"); err != nil || s.Score != nil || s.Reason != "no_data" {
		t.Fatalf("unknown agent: %+v, %v", s, err)
	}
	// An invalid page is the service's 422, typed.
	_, err = c.Reputation(ctx, agent, &client.Page{Limit: 1000})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 422 || len(ae.Fields) != 1 || ae.Fields[0].Field != "limit" {
		t.Fatalf("limit 1000: %v", err)
	}
	if n := srv.cardFetches.Load(); n != 1 {
		t.Errorf("agent card fetched %d times", n)
	}

	// A reputation answer is not a score: served at the score route it fails under the score
	// context, whatever its own signature.
	repBody := r.Body
	p := proxy(t, srv.URL, nil, func(b []byte) []byte { return repBody })
	if _, err := newClient(t, p.URL).Score(ctx, agent); !errors.Is(err, receipt.ErrSignature) {
		t.Fatalf("a reputation passed off as a score: %v", err)
	}
}
