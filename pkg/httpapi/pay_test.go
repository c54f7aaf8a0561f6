package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// fakePayer stands in for the facilitator in the unit tests of the payment flow; the real one
// (anvil, the @x402 facilitator and client) runs in the end-to-end test.
type fakePayer struct {
	verifies, settles atomic.Int32
	verifyErr         error
	valid             bool
	settleOK          bool
	settleErr         error
	settleReason      string // a failed settlement's reason; "" is insufficient_funds

	mu      sync.Mutex
	settled []string // the nonce of every payment Settle was asked for, in order
	// hold, when not nil, holds the next Settle (taken from it under mu) until it is closed, as
	// a settlement whose holder is gone does.
	hold chan struct{}
}

// settledNonces is what Settle was asked for so far.
func (f *fakePayer) settledNonces() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.settled)
}

var testRequirement = x402.Requirements{Scheme: "exact", Network: "eip155:8453", Amount: "20000",
	Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
	MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}

func (f *fakePayer) Requirements(context.Context, string) ([]x402.Requirements, error) {
	return []x402.Requirements{testRequirement}, nil
}

func (f *fakePayer) Verify(context.Context, x402.PaymentPayload, x402.Requirements) (x402.VerifyResponse, error) {
	f.verifies.Add(1)
	return x402.VerifyResponse{IsValid: f.valid, InvalidReason: "invalid_signature", Payer: "0xpayer"}, f.verifyErr
}

func (f *fakePayer) Settle(_ context.Context, p x402.PaymentPayload, _ x402.Requirements) (x402.SettleResponse, error) {
	f.settles.Add(1)
	auth, _ := p.Payload["authorization"].(map[string]any)
	nonce, _ := auth["nonce"].(string)
	f.mu.Lock()
	f.settled = append(f.settled, nonce)
	hold := f.hold
	f.hold = nil
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	reason := f.settleReason
	if reason == "" {
		reason = "insufficient_funds"
	}
	return x402.SettleResponse{Success: f.settleOK, ErrorReason: reason, Transaction: "0xtx", Network: "eip155:8453", Payer: "0xpayer"}, f.settleErr
}

func paymentHeader(t *testing.T, req x402.Requirements, n int) string {
	nonce := fmt.Sprintf("0x%064x", n)
	t.Helper()
	h, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: map[string]any{
		"signature": "0x" + fmt.Sprintf("%0130d", 1),
		"authorization": map[string]any{"from": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "to": req.PayTo, "value": req.Amount,
			"validAfter": "0", "validBefore": "9999999999", "nonce": nonce},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type payEnv struct {
	svc   *service.Service
	deps  service.Deps // what svc was built from
	srv   *httptest.Server
	st    store.Store
	payer *fakePayer
	clock *testclock.Clock // the one clock of the service and its store
}

// opener opens a store that reads time from now, as every component of one test environment does.
type opener func(t testing.TB, now func() time.Time) store.Store

// payStart is the payment tests' default instant: a minute before a UTC midnight, so a test can
// cross into the next day. The tests whose outcome involves the day also run at testclock.Epochs.
var payStart = time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)

func newPayEnv(t testing.TB, open opener, limit int, payer *fakePayer) *payEnv {
	return newPayEnvAt(t, payStart, open, limit, payer)
}

// newPayEnvAt builds the service and its store on one test clock that reads at.
func newPayEnvAt(t testing.TB, at time.Time, open opener, limit int, payer *fakePayer) *payEnv {
	t.Helper()
	e := &payEnv{payer: payer, clock: testclock.New(at)}
	e.st = open(t, e.clock.Now)
	st := e.st
	e.deps = testsvc.Complete(service.Deps{
		Store:   st,
		Pricing: service.Pricing{FreeCallsPerDay: limit, FreeMaxBody: 64 << 10, PriceVerify: "0.02", PriceScore: "0.01"},
		Now:     e.clock.Now,
		Log:     slog.New(slog.NewJSONHandler(io.Discard, nil)),
		// A hundred concurrent callers under the race detector can keep a test store busy for
		// seconds; the default timeout is tested on its own.
		StoreTimeout: 30 * time.Second,
	})
	if payer != nil {
		e.deps.Payer = payer
	}
	e.svc = testsvc.New(t, e.deps)
	e.srv = httptest.NewServer(Handler(e.svc))
	t.Cleanup(e.srv.Close)
	return e
}

// rebuild builds the environment's service again from its dependencies as change leaves them,
// and serves it at the same URL.
func (e *payEnv) rebuild(t testing.TB, change func(*service.Deps)) {
	t.Helper()
	change(&e.deps)
	e.svc = testsvc.New(t, e.deps)
	e.srv.Config.Handler = Handler(e.svc)
}

func openBolt(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), bolt.WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openDynalite(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	client := dynalitetest.Client(dynalitetest.Start(t))
	table := dynalitetest.TableName(t)
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	return dynamo.New(client, table, dynamo.WithClock(now))
}

const okBody = `{"task_id":"t","agent_id":"seller-9","expected_schema":{"type":"number"},"submitted_output":1}`

func post(t *testing.T, url, body string, hdr ...string) (*http.Response, map[string]any) {
	t.Helper()
	resp, b := testhttp.Do(t, "POST", url, []byte(body), hdr...)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp, m
}

// midnightAfter is the UTC midnight that ends at's day, as the allowance headers write it.
func midnightAfter(at time.Time) string {
	y, m, d := at.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
}

// 100 concurrent free calls from one client with an allowance of 40: exactly 40 answers, and the
// next UTC day a fresh allowance; at every epoch, so the outcome never depends on the calendar.
func TestAllowanceUnderConcurrency(t *testing.T) {
	for name, open := range map[string]opener{"bolt": openBolt, "dynalite": openDynalite} {
		for _, at := range testclock.Epochs() {
			t.Run(name+"/"+at.Format("2006-01-02"), func(t *testing.T) {
				e := newPayEnvAt(t, at, open, 40, &fakePayer{})
				var ok, paid, other atomic.Int32
				var wg sync.WaitGroup
				for range 100 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resp, m := post(t, e.srv.URL+"/verify/schema", okBody)
						switch {
						case resp.StatusCode == 200:
							ok.Add(1)
						case resp.StatusCode == 402 && m["code"] == "free_trial_exhausted" && resp.Header.Get(x402.HeaderPaymentRequired) != "":
							paid.Add(1)
						default:
							t.Logf("unexpected answer %d %v", resp.StatusCode, m)
							other.Add(1)
						}
					}()
				}
				wg.Wait()
				if ok.Load() != 40 || paid.Load() != 60 || other.Load() != 0 {
					t.Fatalf("got %d answers, %d 402s, %d others; want 40, 60, 0", ok.Load(), paid.Load(), other.Load())
				}
				// A new UTC day resets the allowance.
				next := e.clock.Advance(2 * time.Minute)
				resp, _ := post(t, e.srv.URL+"/verify/schema", okBody)
				if resp.StatusCode != 200 || resp.Header.Get("Free-Allowance-Remaining") != "39" || resp.Header.Get("Free-Allowance-Limit") != "40" ||
					resp.Header.Get("Free-Allowance-Resets") != midnightAfter(next) {
					t.Fatalf("next day: %d, headers %v", resp.StatusCode, resp.Header)
				}
			})
		}
	}
}

func TestAllowanceEdges(t *testing.T) {
	for _, at := range testclock.Epochs() {
		t.Run(at.Format("2006-01-02"), func(t *testing.T) { testAllowanceEdges(t, at) })
	}
}

func testAllowanceEdges(t *testing.T, at time.Time) {
	e := newPayEnvAt(t, at, openBolt, 2, &fakePayer{})
	// A 422 consumes nothing.
	for range 3 {
		if resp, _ := post(t, e.srv.URL+"/verify/schema", `{"task_id":"t"}`); resp.StatusCode != 422 {
			t.Fatalf("invalid request: %d", resp.StatusCode)
		}
	}
	today := e.clock.Now().UTC().Format(time.DateOnly)
	if n, _ := e.st.AllowanceUsed(context.Background(), e.svc.CallerID("127.0.0.1"), today); n != 0 {
		t.Fatalf("422s consumed %d calls", n)
	}
	// The empty-body probe answers 402 with a header the codec decodes.
	resp, m := post(t, e.srv.URL+"/verify/schema", "")
	pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	if resp.StatusCode != 402 || err != nil || len(pr.Accepts) != 1 || pr.Accepts[0].Amount != "20000" || pr.Resource.URL != "http://127.0.0.1:8080/verify/schema" {
		t.Fatalf("probe: %d %v %+v", resp.StatusCode, err, pr)
	}
	ft, _ := m["free_trial"].(map[string]any)
	if ft["available"] != true || ft["remaining_calls_today"] != 2.0 || m["code"] != "payment_required" {
		t.Fatalf("probe body: %v", m)
	}
	if pr.Extensions["bazaar"] == nil {
		t.Errorf("no bazaar extension")
	}
	// A body over the free size goes to payment.
	big := `{"task_id":"t","expected_schema":{},"submitted_output":"` + string(bytes.Repeat([]byte("x"), 70<<10)) + `"}`
	if resp, m := post(t, e.srv.URL+"/verify/schema", big); resp.StatusCode != 402 || m["code"] != "payment_required" {
		t.Fatalf("large free body: %d %v", resp.StatusCode, m)
	}
	// So does one that does not even parse: the decoder, whose work the free allowance does
	// not cover either, never sees it.
	if resp, m := post(t, e.srv.URL+"/verify/schema", big[:len(big)-1]); resp.StatusCode != 402 || m["code"] != "payment_required" {
		t.Fatalf("large free body that does not parse: %d %v", resp.StatusCode, m)
	}
	// The exhausted state says so, with the seed's shape.
	post(t, e.srv.URL+"/verify/schema", okBody)
	post(t, e.srv.URL+"/verify/deliverable", okBody)
	resp, m = post(t, e.srv.URL+"/verify/schema", okBody)
	ft, _ = m["free_trial"].(map[string]any)
	if resp.StatusCode != 402 || ft["available"] != false || ft["code"] != "free_trial_exhausted" || ft["remaining_calls_today"] != 0.0 || ft["resets_at"] != midnightAfter(at) {
		t.Fatalf("exhausted: %d %v", resp.StatusCode, m)
	}
	for _, k := range []string{"available", "via", "transport", "url", "tool", "calls_per_client_per_day", "remaining_calls_today", "resets_at", "client", "rest_free", "message", "code"} {
		if _, ok := ft[k]; !ok {
			t.Errorf("free_trial lacks %s", k)
		}
	}
}

// The bazaar extensions, encoded once, put exactly the bytes in the PAYMENT-REQUIRED header and in
// the body that encoding the extension maps on every answer put there.
func TestBazaarExtensionsEncodedOnce(t *testing.T) {
	e := newPayEnv(t, openBolt, 0, &fakePayer{})
	ctx := context.Background()
	// The 402s of the discovery probe and of a priced score, as the routes ask the service for them.
	probe := e.svc.Verify(ctx, service.VerifyCall{Resource: e.svc.BaseURL() + "/verify/schema", Extensions: verifyExtensions(),
		Caller: e.svc.CallerID("127.0.0.1"), Route: "/verify/schema"})
	recordN(t, e.st, "seller-9", 1, true, false, e.clock.Now())
	priced := e.svc.Score(ctx, service.ScoreCall{AgentID: "seller-9", Resource: e.svc.BaseURL() + "/score/seller-9",
		Description: service.ScoreDescription, Extensions: scoreExtensions(), Route: "/score/seller-9"})
	if probe.Kind != service.PaymentRequired || priced.Kind != service.PaymentRequired {
		t.Fatalf("probe %+v, score %+v: want payment required", probe, priced)
	}
	verifyPR, scorePR := probe.PaymentRequired, priced.PaymentRequired
	for name, c := range map[string]struct {
		got  x402.PaymentRequired
		maps map[string]any
	}{
		"verify": {verifyPR, x402.BazaarExtension(http.MethodPost, wire.ExampleRequest(), wire.RequestSchema())},
		"score":  {scorePR, x402.BazaarExtension(http.MethodGet, nil, nil)},
	} {
		want := c.got
		// The signed offers are the answer's own (their tests are the offer-receipt ones).
		want.Extensions = map[string]any{"bazaar": c.maps, x402.ExtOfferReceipt: c.got.Extensions[x402.ExtOfferReceipt]}
		if pid, ok := c.got.Extensions[x402.ExtPaymentIdentifier]; ok {
			want.Extensions[x402.ExtPaymentIdentifier] = pid // the verify routes' own, not the route's
		}
		if want.Extensions[x402.ExtOfferReceipt] == nil {
			t.Errorf("%s: no signed offers", name)
		}
		gotHdr, err1 := x402.EncodeHeader(c.got)
		wantHdr, err2 := x402.EncodeHeader(want)
		if err1 != nil || err2 != nil || gotHdr != wantHdr {
			t.Errorf("%s: header differs (%v, %v):\n got %s\nwant %s", name, err1, err2, gotHdr, wantHdr)
		}
		gotBody, err1 := json.Marshal(map[string]any{"extensions": c.got.Extensions})
		wantBody, err2 := json.Marshal(map[string]any{"extensions": want.Extensions})
		if err1 != nil || err2 != nil || !bytes.Equal(gotBody, wantBody) {
			t.Errorf("%s: body differs (%v, %v):\n got %s\nwant %s", name, err1, err2, gotBody, wantBody)
		}
	}
}

// BenchmarkPaymentRequired is one whole 402 answer of POST /verify/schema past the allowance.
func BenchmarkPaymentRequired(b *testing.B) {
	h := Handler(newPayEnv(b, openBolt, 0, &fakePayer{}).svc)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/verify/schema", strings.NewReader(okBody)))
		if w.Code != http.StatusPaymentRequired {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

func TestFreeOnly(t *testing.T) {
	e := newPayEnv(t, openBolt, 1, nil)
	post(t, e.srv.URL+"/verify/schema", okBody)
	resp, m := post(t, e.srv.URL+"/verify/schema", okBody)
	if resp.StatusCode != 429 || m["code"] != "free_trial_exhausted" || m["retryable"] != true || resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("free-only exhausted: %d %v %v", resp.StatusCode, m, resp.Header)
	}
	// Nothing can be paid here: the answer says to wait, not to pay.
	if msg, _ := m["message"].(string); strings.Contains(msg, "x402") || fmt.Sprint(m["next_actions"]) != "[map[action:retry_later]]" {
		t.Errorf("free-only exhausted: message %q, next_actions %v; want no payment offered and retry_later", msg, m["next_actions"])
	}
	// The discovery probe's free_trial says the same: nothing to pay, wait.
	_, m = post(t, e.srv.URL+"/verify/schema", "")
	ft, _ := m["free_trial"].(map[string]any)
	if msg, _ := ft["message"].(string); ft["code"] != "free_trial_exhausted" || !strings.Contains(msg, "takes no payments") || strings.Contains(msg, "Payment applies") {
		t.Errorf("free-only probe's free_trial: %v", ft)
	}
}

// failingAllowance is a store whose allowance writes fail.
type failingAllowance struct{ store.Store }

func (failingAllowance) ConsumeAllowance(context.Context, string, string, int, time.Time) (bool, int, error) {
	return false, 0, errors.New("throttled")
}

func TestAllowanceStoreDownIsRetryable(t *testing.T) {
	e := newPayEnv(t, func(t testing.TB, now func() time.Time) store.Store { return failingAllowance{openBolt(t, now)} }, 5, &fakePayer{})
	resp, m := post(t, e.srv.URL+"/verify/schema", okBody)
	if resp.StatusCode != 503 || m["retryable"] != true || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("store down: %d %v", resp.StatusCode, m)
	}
}

// slowAllowance is a store whose allowance writes hang until the caller gives up.
type slowAllowance struct{ store.Store }

func (slowAllowance) ConsumeAllowance(ctx context.Context, _, _ string, _ int, _ time.Time) (bool, int, error) {
	<-ctx.Done()
	return false, 0, ctx.Err()
}

func TestSlowAllowanceStoreIsRetryable(t *testing.T) {
	e := newPayEnv(t, func(t testing.TB, now func() time.Time) store.Store { return slowAllowance{openBolt(t, now)} }, 5, &fakePayer{})
	e.rebuild(t, func(d *service.Deps) { d.StoreTimeout = 0 }) // the default
	resp, m := post(t, e.srv.URL+"/verify/schema", okBody)
	if resp.StatusCode != 503 || m["retryable"] != true || m["code"] != "service_unavailable" {
		t.Fatalf("slow store: %d %v", resp.StatusCode, m)
	}
}

func TestPaidPath(t *testing.T) {
	payer := &fakePayer{valid: true, settleOK: true}
	e := newPayEnv(t, openBolt, 0, payer)
	sig := paymentHeader(t, testRequirement, 1)

	resp, m := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, sig)
	sr, err := x402.DecodeSettleResponse(resp.Header.Get(x402.HeaderPaymentResponse))
	if resp.StatusCode != 200 || m["result"] != "pass" || err != nil || !sr.Success || sr.Transaction != "0xtx" {
		t.Fatalf("paid: %d %v %+v %v", resp.StatusCode, m, sr, err)
	}
	// The same payment again is refused before the facilitator, the work or settlement.
	resp, m = post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, sig)
	if resp.StatusCode != 402 || m["code"] != "payment_replayed" || payer.settles.Load() != 1 || payer.verifies.Load() != 1 {
		t.Fatalf("replay: %d %v verifies %d settles %d", resp.StatusCode, m, payer.verifies.Load(), payer.settles.Load())
	}
	// A 422 with a valid payment attached is neither verified nor settled.
	before := payer.verifies.Load()
	if resp, _ := post(t, e.srv.URL+"/verify/schema", `{"task_id":"x"}`, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 2)); resp.StatusCode != 422 || payer.verifies.Load() != before {
		t.Fatalf("422 with payment: %d, verifies %d→%d", resp.StatusCode, before, payer.verifies.Load())
	}
	// Mismatched requirements never reach the facilitator.
	for name, mutate := range map[string]func(*x402.Requirements){
		"amount": func(r *x402.Requirements) { r.Amount = "1" }, "asset": func(r *x402.Requirements) { r.Asset = "0x0000000000000000000000000000000000000001" },
		"payTo": func(r *x402.Requirements) { r.PayTo = "0x0000000000000000000000000000000000000002" }, "network": func(r *x402.Requirements) { r.Network = "eip155:84532" },
	} {
		req := testRequirement
		mutate(&req)
		resp, m := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, req, 3))
		if resp.StatusCode != 402 || m["code"] != "payment_requirements_mismatch" || payer.verifies.Load() != before {
			t.Errorf("wrong %s: %d %v", name, resp.StatusCode, m)
		}
	}
	if resp, m := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, "%%%not-base64"); resp.StatusCode != 402 || m["code"] != "payment_invalid" {
		t.Errorf("undecodable: %d %v", resp.StatusCode, m)
	}
	// Facilitator down: 503, nothing settled.
	payer.verifyErr = x402.ErrFacilitatorUnavailable
	settles := payer.settles.Load()
	resp, m = post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 4))
	if resp.StatusCode != 503 || m["code"] != "facilitator_unavailable" || payer.settles.Load() != settles {
		t.Errorf("facilitator down: %d %v", resp.StatusCode, m)
	}
	payer.verifyErr = nil
	// Verification refused.
	payer.valid = false
	if resp, m := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 5)); resp.StatusCode != 402 || m["code"] != "payment_verification_failed" {
		t.Errorf("invalid payment: %d %v", resp.StatusCode, m)
	}
	payer.valid = true
	// The facilitator fails between verify and settle: 503, no result delivered, nothing settled.
	// The settlement may have gone through, so the answer says the payment may have been charged
	// and is not retryable (a client would pay again), and the payment stays spent.
	payer.settleErr = x402.ErrFacilitatorUnavailable
	resp, m = post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 7))
	if resp.StatusCode != 503 || m["code"] != "facilitator_unavailable" || m["result"] != nil || resp.Header.Get(x402.HeaderPaymentResponse) != "" ||
		m["retryable"] != false || m["charged"] != true || resp.Header.Get("Retry-After") != "" {
		t.Errorf("settle unreachable: %d %v", resp.StatusCode, m)
	}
	payer.settleErr = nil
	if resp, m := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 7)); resp.StatusCode != 402 || m["code"] != "payment_replayed" {
		t.Errorf("the payment whose settlement went unanswered, sent again: %d %v", resp.StatusCode, m)
	}
	// Settlement fails: 402 with PAYMENT-RESPONSE success:false and no result.
	payer.settleOK = false
	resp, m = post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 6))
	sr, _ = x402.DecodeSettleResponse(resp.Header.Get(x402.HeaderPaymentResponse))
	if resp.StatusCode != 402 || m["code"] != "payment_settlement_failed" || m["result"] != nil || sr.Success {
		t.Errorf("settle failed: %d %v %+v", resp.StatusCode, m, sr)
	}
}
