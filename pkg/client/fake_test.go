package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// fakeService is a hand-written stand-in for the routes whose behaviour a test needs to script:
// it signs documents with receipt.Key.Attest under whichever context the test chooses, and can
// answer errors and 402s on demand.
type fakeService struct {
	t    *testing.T
	key  receipt.Key
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newFake(t *testing.T, route func(f *fakeService, w http.ResponseWriter, r *http.Request, hit int)) *fakeService {
	t.Helper()
	f := &fakeService{t: t, hits: map[string]int{},
		key: receipt.Key{Version: "fake-v1", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits[r.URL.Path]++
		hit := f.hits[r.URL.Path]
		f.mu.Unlock()
		if r.URL.Path == routeAgentCard {
			w.Write(f.card())
			return
		}
		route(f, w, r, hit)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeService) card() []byte {
	b, _ := json.Marshal(map[string]any{
		"name": "fake", "capabilities": map[string]any{"extensions": []any{map[string]any{
			"uri": receipt.CardExtensionPrefix + "v1",
			"params": map[string]any{"publicKeys": []any{map[string]string{
				"keyVersion": f.key.Version, "algorithm": "Ed25519", "publicKey": base64.StdEncoding.EncodeToString(f.key.Public().Key)}}},
		}}},
	})
	return b
}

func (f *fakeService) hitCount(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// signed writes doc signed under context.
func (f *fakeService) signed(w http.ResponseWriter, context string, doc map[string]any) {
	f.t.Helper()
	const ts = "2026-11-30T12:00:00.000000+00:00"
	doc["verify"] = map[string]string{"key_version": f.key.Version}
	body, _ := json.Marshal(doc)
	out, err := f.key.Attest(context, body, ts)
	if err != nil {
		f.t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func envelopeBody(code apperr.Code, retryAfter int) []byte {
	e := apperr.New(code, "scripted")
	e.RetryAfter = retryAfter
	b, _ := json.Marshal(e)
	return b
}

func scoreDoc(agent string) map[string]any {
	return map[string]any{
		"agent_id": agent, "score": 87.5, "confidence": "medium",
		"verifications": map[string]int{"total": 40, "passed": 37, "failed": 3, "paid": 12},
		"last_30_days":  map[string]int{"total": 10, "passed": 10, "failed": 0},
		"pass_rate":     0.925, "mean_overall_ratio": 0.97, "first_seen": "2026-10-01T00:00:00Z", "last_seen": "2026-11-29T00:00:00Z",
		"distinct_tasks": 38, "distinct_callers": 4, "method": "wilson-lower-95-decay30-v1", "computed_at": "2026-11-30T12:00:00Z",
	}
}

func TestScoreAndReputationAgainstAFake(t *testing.T) {
	f := newFake(t, func(f *fakeService, w http.ResponseWriter, r *http.Request, hit int) {
		switch {
		case r.URL.Path == "/score/seller%2Fa b" || r.URL.Path == "/score/seller/a b":
			f.signed(w, receipt.ContextScore, scoreDoc("seller/a b"))
		case r.URL.Path == "/score/unknown":
			f.signed(w, receipt.ContextScore, map[string]any{"agent_id": "unknown", "score": nil, "reason": "no_data"})
		case r.URL.Path == "/score/wrong-context":
			f.signed(w, receipt.ContextVerify, scoreDoc("wrong-context"))
		case r.URL.Path == "/score/someone-else":
			f.signed(w, receipt.ContextScore, scoreDoc("another-agent"))
		case strings.HasPrefix(r.URL.Path, "/reputation/"):
			if got := r.URL.Query(); got.Get("limit") != "2" || got.Get("cursor") != "c1" {
				t.Errorf("reputation query: %v", got)
			}
			f.signed(w, receipt.ContextReputation, map[string]any{
				"agent_id": "seller-1", "totals": map[string]int{"verifications": 3, "passed": 2, "failed": 1, "paid": 1},
				"first_seen": "2026-11-01T00:00:00Z", "last_seen": "2026-11-29T00:00:00Z",
				"history": []any{map[string]any{"verification_id": "v3", "task_id": "t3", "result": "pass", "overall_ratio": 1, "verified_at": "2026-11-29T00:00:00Z", "paid": true},
					map[string]any{"verification_id": "v2", "task_id": "t2", "result": "fail", "overall_ratio": 0.5, "verified_at": "2026-11-28T00:00:00Z", "paid": false}},
				"next_cursor": "c2",
			})
		default:
			w.WriteHeader(404)
			w.Write(envelopeBody(apperr.NotFound, 0))
		}
	})
	ctx := context.Background()
	c, err := New(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Score(ctx, "seller/a b")
	if err != nil || s.Score == nil || *s.Score != 87.5 || s.Confidence != "medium" || s.Verifications.Paid != 12 || s.Last30Days.Total != 10 ||
		s.DistinctCallers != 4 || s.Attestation.KeyVersion != "fake-v1" || s.Payment != nil {
		t.Fatalf("score: %+v, %v", s, err)
	}
	if s, err := c.Score(ctx, "unknown"); err != nil || s.Score != nil || s.Reason != "no_data" {
		t.Fatalf("no_data score: %+v, %v", s, err)
	}
	// A verification's signature does not make a trust score: the context is part of what is signed.
	if _, err := c.Score(ctx, "wrong-context"); !errors.Is(err, ErrReceipt) || !errors.Is(err, receipt.ErrSignature) {
		t.Fatalf("score signed for another context: %v", err)
	}
	if _, err := c.Score(ctx, "someone-else"); !errors.Is(err, ErrAnswerMismatch) {
		t.Fatalf("score of another agent: %v", err)
	}
	r, err := c.Reputation(ctx, "seller-1", &Page{Limit: 2, Cursor: "c1"})
	if err != nil || r.Totals.Verifications != 3 || len(r.History) != 2 || r.History[0].VerificationID != "v3" || r.NextCursor != "c2" || !r.History[0].Paid {
		t.Fatalf("reputation: %+v, %v", r, err)
	}
	if _, err := c.Score(ctx, ""); err == nil {
		t.Error("an empty agent id was sent")
	}
	if _, err := c.Score(ctx, strings.Repeat("a", 201)); err == nil {
		t.Error("an over-long agent id was sent")
	}
	if n := f.hitCount(routeAgentCard); n != 1 {
		t.Errorf("card fetched %d times", n)
	}
}

// A paid score: 402, the payer signs, the paid request carries PAYMENT-SIGNATURE for exactly the
// offered requirement, and the settlement comes back on the answer.
func TestPaidScoreAgainstAFake(t *testing.T) {
	const payTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
	req := x402.Requirements{Scheme: "exact", Network: x402.NetworkBaseSepolia, Amount: "10000", Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		PayTo: payTo, MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USDC", "version": "2"}}
	pricey := req
	pricey.Network, pricey.Asset, pricey.Amount = x402.NetworkBase, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "50000"
	unknownAsset := req
	unknownAsset.Asset, unknownAsset.Amount = "0x000000000000000000000000000000000000dEaD", "1"
	pr := x402.PaymentRequired{X402Version: 2, Error: "pay", Resource: x402.Resource{URL: "http://x/score/seller-1"},
		Accepts: []x402.Requirements{pricey, unknownAsset, req}}
	var sent x402.PaymentPayload
	f := newFake(t, func(f *fakeService, w http.ResponseWriter, r *http.Request, hit int) {
		h := r.Header.Get(headerPaymentSignature)
		if h == "" {
			hdr, _ := x402.EncodeHeader(pr)
			w.Header().Set(headerPaymentRequired, hdr)
			w.WriteHeader(402)
			w.Write([]byte(`{"code":"payment_required","error":"pay","status":402}`))
			return
		}
		p, err := x402.DecodePaymentSignature(h)
		if err != nil {
			t.Error(err)
		}
		sent = p
		settle, _ := x402.EncodeHeader(x402.SettleResponse{Success: true, Transaction: "0xabc", Network: req.Network, Payer: "0xf39"})
		w.Header().Set(headerPaymentResponse, settle)
		f.signed(w, receipt.ContextScore, scoreDoc("seller-1"))
	})
	payer, err := NewEVMPayer(readVectors(t)[0].PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(f.srv.URL, WithPayer(payer), WithBudget("0.02"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Score(context.Background(), "seller-1")
	if err != nil {
		t.Fatal(err)
	}
	// The cheapest offer at a known USDC price was paid, never the unpriceable one.
	if s.Payment == nil || s.Payment.USD != "0.01" || s.Payment.Settlement == nil || s.Payment.Settlement.Transaction != "0xabc" ||
		s.Payment.Requirements.Network != x402.NetworkBaseSepolia || c.Spent() != "0.01" {
		t.Fatalf("payment: %+v, spent %s", s.Payment, c.Spent())
	}
	if sent.X402Version != 2 || sent.Accepted.Amount != "10000" || sent.Resource == nil || sent.Resource.URL != pr.Resource.URL {
		t.Errorf("payload: %+v", sent)
	}
	auth := sent.Payload["authorization"].(map[string]any)
	if auth["from"] != payer.Address() || auth["to"] != payTo || auth["value"] != "10000" {
		t.Errorf("authorization: %+v", auth)
	}
	// The budget has 0.01 left: one more paid score, then the cap.
	if _, err := c.Score(context.Background(), "seller-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Score(context.Background(), "seller-1"); !errors.Is(err, ErrSpendingCap) {
		t.Fatalf("over budget: %v", err)
	}
}

func TestRetriesOnlyWhatIsRetryable(t *testing.T) {
	f := newFake(t, func(f *fakeService, w http.ResponseWriter, r *http.Request, hit int) {
		switch r.URL.Path {
		case "/score/flaky": // two retryable failures, then the answer
			if hit <= 2 {
				w.WriteHeader(503)
				w.Write(envelopeBody(apperr.FacilitatorDown, 3))
				return
			}
			f.signed(w, receipt.ContextScore, scoreDoc("flaky"))
		case "/score/header-only": // Retry-After header, no retry_after member
			if hit == 1 {
				e := apperr.New(apperr.RateLimited, "slow down")
				b, _ := json.Marshal(e)
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(429)
				w.Write(b)
				return
			}
			f.signed(w, receipt.ContextScore, scoreDoc("header-only"))
		case "/score/down":
			w.WriteHeader(503)
			w.Write(envelopeBody(apperr.Unavailable, 1))
		case "/score/midnight":
			w.WriteHeader(429)
			w.Write(envelopeBody(apperr.RateLimited, 3600))
		case "/score/proxy-page": // not the service's envelope: not retried
			w.WriteHeader(502)
			w.Write([]byte("<html>bad gateway</html>"))
		default:
			w.WriteHeader(404)
			w.Write(envelopeBody(apperr.NotFound, 0))
		}
	})
	var mu sync.Mutex
	var waits []time.Duration
	newC := func(opts ...Option) *Client {
		c, err := New(f.srv.URL, opts...)
		if err != nil {
			t.Fatal(err)
		}
		c.sleep = func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, d)
			return nil
		}
		return c
	}
	take := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		w := waits
		waits = nil
		return w
	}
	ctx := context.Background()

	if s, err := newC().Score(ctx, "flaky"); err != nil || s.AgentID != "flaky" {
		t.Fatalf("flaky: %v", err)
	}
	if w := take(); len(w) != 2 || w[0] != 3*time.Second || w[1] != 3*time.Second || f.hitCount("/score/flaky") != 3 {
		t.Fatalf("flaky waits %v, hits %d", w, f.hitCount("/score/flaky"))
	}
	if _, err := newC().Score(ctx, "header-only"); err != nil {
		t.Fatal(err)
	}
	if w := take(); len(w) != 1 || w[0] != 7*time.Second {
		t.Fatalf("Retry-After waits %v", w)
	}

	// Out of retries: the last error, typed.
	_, err := newC(WithRetries(1, time.Minute)).Score(ctx, "down")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != apperr.Unavailable || !ae.Retryable || ae.RetryAfter != time.Second || f.hitCount("/score/down") != 2 {
		t.Fatalf("down: %v, hits %d", err, f.hitCount("/score/down"))
	}
	take()
	for _, path := range []string{"midnight", "proxy-page", "missing"} {
		_, err := newC().Score(ctx, path)
		if !errors.As(err, &ae) || f.hitCount("/score/"+path) != 1 || len(take()) != 0 {
			t.Errorf("%s: %v, %d hits: retried", path, err, f.hitCount("/score/"+path))
		}
	}
	if ae.Code != apperr.NotFound || ae.Status != 404 {
		t.Errorf("404: %+v", ae)
	}

	// A context that ends while waiting stops the retries.
	ctx2, cancel := context.WithCancel(ctx)
	c := newC()
	c.sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	if _, err := c.Score(ctx2, "down"); !errors.As(err, &ae) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
