package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// topKeys returns the member names of a JSON object in the order they appear.
func topKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", b)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

// checkSigned verifies b under want and makes sure no other context accepts it.
func checkSigned(t *testing.T, svc *service.Service, b []byte, want string) {
	t.Helper()
	keys := []receipt.PublicKey{svc.Keys().Current.Public()}
	if err := receipt.VerifyAttestation(b, want, keys); err != nil {
		t.Errorf("does not verify under %s: %v", want, err)
	}
	for _, other := range []string{receipt.ContextVerify, receipt.ContextScore, receipt.ContextReputation} {
		if other != want && receipt.VerifyAttestation(b, other, keys) == nil {
			t.Errorf("also verifies under %s", other)
		}
	}
}

// recordN records n verifications of agent directly in the store, all dated at, passing and paid
// as given.
func recordN(t *testing.T, st store.Store, agent string, n int, passed, paid bool, at time.Time) {
	t.Helper()
	result := map[bool]string{true: "pass", false: "fail"}[passed]
	for i := range n {
		v := store.Verification{AgentID: agent, VerificationID: fmt.Sprintf("%s-%s-%v-%d", agent, result, paid, i), TaskID: fmt.Sprint("task-", i%3),
			Result: result, OverallRatio: 1, VerifiedAt: at, Paid: paid, CallerID: fmt.Sprint("caller-", i%2)}
		if err := st.RecordVerification(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
}

var scoreKeys = []string{"agent_id", "score", "confidence", "verifications", "last_30_days", "pass_rate", "mean_overall_ratio",
	"first_seen", "last_seen", "distinct_tasks", "distinct_callers", "method", "computed_at", "verify", "attestation"}

func TestScoreRoute(t *testing.T) {
	payer := &fakePayer{valid: true, settleOK: true}
	e := newPayEnv(t, openBolt, 0, payer)
	now := e.clock.Now()
	recordN(t, e.st, "seller-s", 10, true, true, now)

	// Unknown and test- ids: a free, signed no_data answer; the facilitator is never asked.
	for _, id := range []string{"seller-unknown", "test-seller", "test-"} {
		resp, b := testhttp.Do(t, "GET", e.srv.URL+"/score/"+id, nil)
		m := decode(t, b)
		if resp.StatusCode != 200 || m["score"] != nil || m["reason"] != "no_data" || m["agent_id"] != id || m["confidence"] != "low" || m["pass_rate"] != nil {
			t.Fatalf("%s: %d %s", id, resp.StatusCode, b)
		}
		want := slices.Insert(slices.Clone(scoreKeys), 2, "reason")
		if got := topKeys(t, b); !slices.Equal(got, want) {
			t.Errorf("%s: members %v, want %v", id, got, want)
		}
		checkSigned(t, e.svc, b, receipt.ContextScore)
	}

	// A known id costs PriceScore: 402 first, with the score's own resource URL.
	resp, b := testhttp.Do(t, "GET", e.srv.URL+"/score/seller-s", nil)
	pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	m := decode(t, b)
	if resp.StatusCode != 402 || err != nil || m["code"] != "payment_required" || m["charged"] != false || m["score"] != nil {
		t.Fatalf("unpaid: %d %v %s", resp.StatusCode, err, b)
	}
	if pr.Resource.URL != "http://127.0.0.1:8080/score/seller-s" || len(pr.Accepts) != 1 {
		t.Errorf("payment required = %+v", pr)
	}
	if payer.verifies.Load() != 0 {
		t.Fatalf("the facilitator was asked before any payment")
	}

	sig := paymentHeader(t, testRequirement, 41)
	resp, b = testhttp.Do(t, "GET", e.srv.URL+"/score/seller-s", nil, x402.HeaderPaymentSignature, sig)
	sr, err := x402.DecodeSettleResponse(resp.Header.Get(x402.HeaderPaymentResponse))
	if resp.StatusCode != 200 || err != nil || !sr.Success {
		t.Fatalf("paid: %d %v %s", resp.StatusCode, err, b)
	}
	if got := topKeys(t, b); !slices.Equal(got, scoreKeys) {
		t.Errorf("members %v, want %v", got, scoreKeys)
	}
	checkSigned(t, e.svc, b, receipt.ContextScore)
	var doc service.ScoreDocumentBody
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// Ten fresh paid passes: 10/(10+z²) = 0.722467 → 72.2, medium (see pkg/reputation's golden tests).
	if doc.Score == nil || *doc.Score != 72.2 || doc.Confidence != "medium" || doc.Method != reputation.Method {
		t.Errorf("score %v %s %s, want 72.2 medium %s", doc.Score, doc.Confidence, doc.Method, reputation.Method)
	}
	if doc.Verifications != (service.ScoreCounts{Total: 10, Passed: 10, Failed: 0, Paid: 10}) || doc.Last30Days != (service.WindowCounts{Total: 10, Passed: 10, Failed: 0}) ||
		*doc.PassRate != 1 || *doc.MeanOverallRatio != 1 || doc.DistinctTasks != 3 || doc.DistinctCallers != 2 {
		t.Errorf("document %+v", doc)
	}
	if doc.ComputedAt != "2026-11-30T23:59:00.000000+00:00" || *doc.LastSeen != doc.ComputedAt || *doc.FirstSeen != doc.ComputedAt {
		t.Errorf("times: computed %s, seen %s to %s", doc.ComputedAt, *doc.FirstSeen, *doc.LastSeen)
	}
	if ts := decode(t, b)["attestation"].(map[string]any)["timestamp"]; ts != doc.ComputedAt {
		t.Errorf("attestation timestamp %v, want computed_at %s", ts, doc.ComputedAt)
	}

	// The same payment again is refused before the facilitator; nothing settles twice.
	resp, b = testhttp.Do(t, "GET", e.srv.URL+"/score/seller-s", nil, x402.HeaderPaymentSignature, sig)
	if m := decode(t, b); resp.StatusCode != 402 || m["code"] != "payment_replayed" || payer.settles.Load() != 1 {
		t.Fatalf("replay: %d %s", resp.StatusCode, b)
	}
	if resp, b := testhttp.Do(t, "GET", e.srv.URL+"/score/seller-s", nil, x402.HeaderPaymentSignature, "%%%"); resp.StatusCode != 402 || decode(t, b)["code"] != "payment_invalid" {
		t.Errorf("undecodable payment: %d %s", resp.StatusCode, b)
	}
	// A failed settlement delivers no score.
	payer.settleOK = false
	resp, b = testhttp.Do(t, "GET", e.srv.URL+"/score/seller-s", nil, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 42))
	if m := decode(t, b); resp.StatusCode != 402 || m["code"] != "payment_settlement_failed" || m["score"] != nil {
		t.Errorf("settlement failed: %d %s", resp.StatusCode, b)
	}
	// A payment for an unknown agent is not taken: the no_data answer is free.
	payer.settleOK = true
	settles := payer.settles.Load()
	if resp, b := testhttp.Do(t, "GET", e.srv.URL+"/score/seller-unknown", nil, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 43)); resp.StatusCode != 200 || payer.settles.Load() != settles {
		t.Errorf("paid lookup of an unknown agent: %d %s, settles %d→%d", resp.StatusCode, b, settles, payer.settles.Load())
	}

	// HEAD answers no document, so a payment sent with it is refused and never verified or
	// settled; without one it answers the 402's headers.
	verifies, settles := payer.verifies.Load(), payer.settles.Load()
	resp, _ = testhttp.Do(t, "HEAD", e.srv.URL+"/score/seller-s", nil, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 44))
	if resp.StatusCode != 422 || payer.verifies.Load() != verifies || payer.settles.Load() != settles {
		t.Errorf("HEAD with a payment: %d, verifies %d→%d, settles %d→%d", resp.StatusCode, verifies, payer.verifies.Load(), settles, payer.settles.Load())
	}
	if resp, _ := testhttp.Do(t, "HEAD", e.srv.URL+"/score/seller-s", nil); resp.StatusCode != 402 || resp.Header.Get(x402.HeaderPaymentRequired) == "" {
		t.Errorf("HEAD without a payment: %d, PAYMENT-REQUIRED %q", resp.StatusCode, resp.Header.Get(x402.HeaderPaymentRequired))
	}

	// Without a payee the score is free (SPEC §8.6).
	e.rebuild(t, func(d *service.Deps) { d.Payer = nil })
	if resp, b := testhttp.Do(t, "GET", e.srv.URL+"/score/seller-s", nil); resp.StatusCode != 200 || decode(t, b)["score"] != 72.2 {
		t.Errorf("free-only deployment: %d %s", resp.StatusCode, b)
	}
}

// failingReputation is a store whose reputation reads fail.
type failingReputation struct{ store.Store }

func (failingReputation) History(context.Context, string, int, string) ([]store.Verification, string, error) {
	return nil, "", errors.New("store down")
}

func (failingReputation) AgentAggregate(context.Context, string) (reputation.Aggregate, bool, error) {
	return reputation.Aggregate{}, false, errors.New("store down")
}

var reputationKeys = []string{"agent_id", "totals", "first_seen", "last_seen", "history", "next_cursor", "verify", "attestation"}

func TestReputationRoute(t *testing.T) {
	payer := &fakePayer{valid: true, settleOK: true}
	e := newPayEnv(t, openBolt, 5, payer)
	body := func(agent, task, output string) string {
		return `{"task_id":"` + task + `","agent_id":"` + agent + `","expected_schema":{"type":"number"},"submitted_output":` + output + `}`
	}
	// Three free verifications (pass, fail, pass), a paid one, one whose settlement fails, and
	// test- and anonymous ones, each a second apart.
	steps := []struct {
		body string
		pay  int
		ok   bool
	}{
		{body("seller-r", "job-1", "1"), 0, true},
		{body("seller-r", "job-x", `"x"`), 0, true},
		{body("seller-r", "job-2", "2"), 0, true},
		{body("seller-r", "job-3", "3"), 1, true},
		{body("seller-r", "job-4", "4"), 2, false}, // settlement fails: not recorded
		{body("test-seller-r", "job-5", "5"), 0, true},
	}
	for i, st := range steps {
		at := time.Date(2026, 11, 30, 12, 0, i, 0, time.UTC)
		e.clock.Set(at)
		var hdr []string
		if st.pay > 0 {
			hdr = []string{x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 100+st.pay)}
		}
		payer.settleOK = st.ok
		if resp, m := post(t, e.srv.URL+"/verify/schema", st.body, hdr...); (resp.StatusCode == 200) != st.ok {
			t.Fatalf("step %d: %d %v", i, resp.StatusCode, m)
		}
	}

	resp, b := testhttp.Do(t, "GET", e.srv.URL+"/reputation/seller-r?limit=3", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("reputation: %d %s", resp.StatusCode, b)
	}
	if got := topKeys(t, b); !slices.Equal(got, reputationKeys) {
		t.Errorf("members %v, want %v", got, reputationKeys)
	}
	checkSigned(t, e.svc, b, receipt.ContextReputation)
	var doc service.ReputationDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Totals != (service.Totals{Verifications: 4, Passed: 3, Failed: 1, Paid: 1}) || doc.Reason != "" {
		t.Errorf("totals %+v reason %q, want 4 verifications, 3 passed, 1 failed, 1 paid", doc.Totals, doc.Reason)
	}
	if *doc.FirstSeen != "2026-11-30T12:00:00.000000+00:00" || *doc.LastSeen != "2026-11-30T12:00:03.000000+00:00" {
		t.Errorf("seen %s to %s", *doc.FirstSeen, *doc.LastSeen)
	}
	if len(doc.History) != 3 || doc.NextCursor == nil {
		t.Fatalf("first page: %d entries, next %v", len(doc.History), doc.NextCursor)
	}
	if h := doc.History[0]; h.TaskID != "job-3" || !h.Paid || h.Result != "pass" || h.OverallRatio != 1 || h.VerifiedAt != *doc.LastSeen {
		t.Errorf("newest entry %+v, want the paid job-3", h)
	}
	if h := doc.History[1]; h.TaskID != "job-2" || h.Paid {
		t.Errorf("second entry %+v, want the free job-2", h)
	}
	if h := doc.History[2]; h.Result != "fail" || h.TaskID != "job-x" || h.OverallRatio >= 1 {
		t.Errorf("third entry %+v, want the failed job", h)
	}
	if strings.Contains(string(b), "caller") {
		t.Errorf("the history shows caller ids: %s", b)
	}
	resp, b = testhttp.Do(t, "GET", e.srv.URL+"/reputation/seller-r?limit=3&cursor="+*doc.NextCursor, nil)
	var page2 service.ReputationDocument
	if json.Unmarshal(b, &page2); resp.StatusCode != 200 || len(page2.History) != 1 || page2.NextCursor != nil || page2.History[0].TaskID != "job-1" {
		t.Errorf("second page: %d %s", resp.StatusCode, b)
	}
	if _, b := testhttp.Do(t, "GET", e.srv.URL+"/reputation/seller-r", nil); len(decode(t, b)["history"].([]any)) != 4 {
		t.Errorf("default page: %s", b)
	}

	// Unknown and test- ids (never recorded): the same shape, empty, with reason no_data.
	for _, id := range []string{"seller-unknown", "test-seller-r"} {
		resp, b := testhttp.Do(t, "GET", e.srv.URL+"/reputation/"+id, nil)
		m := decode(t, b)
		if resp.StatusCode != 200 || m["reason"] != "no_data" || len(m["history"].([]any)) != 0 || m["next_cursor"] != nil || m["first_seen"] != nil {
			t.Errorf("%s: %d %s", id, resp.StatusCode, b)
		}
		if got, want := topKeys(t, b), slices.Insert(slices.Clone(reputationKeys), 1, "reason"); !slices.Equal(got, want) {
			t.Errorf("%s: members %v, want %v", id, got, want)
		}
		checkSigned(t, e.svc, b, receipt.ContextReputation)
	}
	if _, ok, _ := e.st.AgentAggregate(context.Background(), "test-seller-r"); ok {
		t.Error("a test- id was recorded")
	}
	// A percent-encoded id is one path segment, decoded.
	if resp, b := testhttp.Do(t, "GET", e.srv.URL+"/reputation/a%2Fb%20c", nil); resp.StatusCode != 200 || decode(t, b)["agent_id"] != "a/b c" {
		t.Errorf("encoded id: %d %s", resp.StatusCode, b)
	}
}

func TestAgentRoutesRefuseBadInput(t *testing.T) {
	e := newPayEnv(t, openBolt, 5, nil)
	long := strings.Repeat("a", 201)
	cases := []struct {
		path  string
		field string
	}{
		{"/reputation/", "agent_id"},
		{"/score/", "agent_id"},
		{"/reputation/" + long, "agent_id"},
		{"/score/" + long, "agent_id"},
		{"/score/a%00b", "agent_id"},
		{"/reputation/%ff", "agent_id"},
		{"/reputation/seller?limit=0", "limit"},
		{"/reputation/seller?limit=101", "limit"},
		{"/reputation/seller?limit=ten", "limit"},
		{"/reputation/seller?limit=1&limit=2", "limit"},
		{"/reputation/seller?cursor=", "cursor"},
		{"/reputation/seller?cursor=%%%", "query"},
		{"/reputation/seller?cursor=bm90LWEtY3Vyc29y", "cursor"},
		{"/reputation/seller?cursor=" + strings.Repeat("A", 2000), "cursor"},
	}
	for _, c := range cases {
		resp, b := testhttp.Do(t, "GET", e.srv.URL+c.path, nil)
		m := decode(t, b)
		fields, _ := m["fields"].([]any)
		if resp.StatusCode != 422 || m["code"] != "invalid_request" || len(fields) != 1 || fields[0].(map[string]any)["field"] != c.field {
			t.Errorf("%s: %d %s, want a 422 naming %s", c.path, resp.StatusCode, b, c.field)
		}
		if strings.Contains(string(b), long) || strings.Contains(string(b), "bm90LWEtY3Vyc29y") {
			t.Errorf("%s: the error echoes the input", c.path)
		}
	}
	// More path segments are no route; other methods are 405 with Allow.
	if resp, _ := testhttp.Do(t, "GET", e.srv.URL+"/score/a/b", nil); resp.StatusCode != 404 {
		t.Errorf("/score/a/b: %d, want 404", resp.StatusCode)
	}
	for _, p := range []string{"/score/x", "/reputation/x"} {
		if resp, _ := testhttp.Do(t, "POST", e.srv.URL+p, nil); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
			t.Errorf("POST %s: %d Allow %q", p, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	// The store down: a retryable 503, never a 200 without data.
	e.rebuild(t, func(d *service.Deps) { d.Store = failingReputation{e.st} })
	for _, p := range []string{"/score/seller", "/reputation/seller"} {
		if resp, b := testhttp.Do(t, "GET", e.srv.URL+p, nil); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s with the store down: %d %s", p, resp.StatusCode, b)
		}
	}
}

// TestPaidVerificationRecordedAfterSettlement checks SPEC §9: a paid verification enters the
// history, marked paid, only once its settlement succeeded.
func TestPaidVerificationRecordedAfterSettlement(t *testing.T) {
	payer := &fakePayer{valid: true, settleOK: false}
	e := newPayEnv(t, openBolt, 0, payer)
	if resp, _ := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 7)); resp.StatusCode != 402 {
		t.Fatalf("failed settlement: %d", resp.StatusCode)
	}
	if page, _, _ := e.st.History(context.Background(), "seller-9", 10, ""); len(page) != 0 {
		t.Fatalf("a verification whose settlement failed was recorded: %+v", page)
	}
	payer.settleOK = true
	if resp, _ := post(t, e.srv.URL+"/verify/schema", okBody, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 8)); resp.StatusCode != 200 {
		t.Fatalf("settled: %d", resp.StatusCode)
	}
	page, _, _ := e.st.History(context.Background(), "seller-9", 10, "")
	if len(page) != 1 || !page[0].Paid {
		t.Fatalf("history after a settled payment = %+v, want one paid record", page)
	}
	agg, ok, _ := e.st.AgentAggregate(context.Background(), "seller-9")
	if !ok || agg.Paid != 1 {
		t.Errorf("aggregate = %+v, want one paid verification", agg)
	}
}

// TestScoreRequirementsHeader checks the 402 of /score decodes as x402 v2 with the score's price
// passed to the payment side.
func TestScoreRequirementsHeader(t *testing.T) {
	var asked []string
	e := newPayEnv(t, openBolt, 0, nil)
	e.rebuild(t, func(d *service.Deps) { d.Payer = priceRecorder{fakePayer: &fakePayer{}, asked: &asked} })
	recordN(t, e.st, "seller-p", 1, true, false, e.clock.Now())
	resp, _ := testhttp.Do(t, "GET", e.srv.URL+"/score/seller-p", nil)
	raw, err := base64.StdEncoding.DecodeString(resp.Header.Get(x402.HeaderPaymentRequired))
	if resp.StatusCode != 402 || err != nil || !json.Valid(raw) {
		t.Fatalf("402: %d %v", resp.StatusCode, err)
	}
	if !slices.Equal(asked, []string{"0.01"}) {
		t.Errorf("requirements asked for prices %v, want [0.01]", asked)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
}

type priceRecorder struct {
	*fakePayer
	asked *[]string
}

func (p priceRecorder) Requirements(ctx context.Context, price string) ([]x402.Requirements, error) {
	*p.asked = append(*p.asked, price)
	return p.fakePayer.Requirements(ctx, price)
}
