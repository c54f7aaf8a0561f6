package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store"
)

// scoreEnv is a service that takes payments, on a bolt store and one test clock, served over
// REST at srv.
type scoreEnv struct {
	svc   *service.Service
	deps  service.Deps
	st    store.Store
	srv   *httptest.Server
	clock *testclock.Clock
}

func newScoreEnv(t *testing.T, payer service.Payer) *scoreEnv {
	t.Helper()
	e := &scoreEnv{clock: testclock.New(time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC))}
	e.st = openBolt(t, e.clock.Now)
	e.deps = testsvc.Complete(service.Deps{Store: e.st, Now: e.clock.Now, Payer: payer,
		Pricing: service.Pricing{FreeCallsPerDay: 0, FreeMaxBody: 64 << 10, PriceVerify: "0.02", PriceScore: "0.01"}})
	e.svc = testsvc.New(t, e.deps)
	e.srv = httptest.NewServer(httpapi.Handler(e.svc))
	t.Cleanup(e.srv.Close)
	return e
}

// rebuild builds the service again from its dependencies as change leaves them, served at the
// same URL.
func (e *scoreEnv) rebuild(t *testing.T, change func(*service.Deps)) {
	t.Helper()
	change(&e.deps)
	e.svc = testsvc.New(t, e.deps)
	e.srv.Config.Handler = httpapi.Handler(e.svc)
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

// stripSignature removes the members that differ between two signings of one document.
func stripSignature(t *testing.T, b []byte) []byte {
	t.Helper()
	m := decode(t, b)
	delete(m, "attestation")
	delete(m, "computed_at")
	out, _ := json.Marshal(m)
	return out
}

// failingReputation is a store whose reputation reads fail.
type failingReputation struct{ store.Store }

func (failingReputation) History(context.Context, string, int, string) ([]store.Verification, string, error) {
	return nil, "", errors.New("store down")
}

func (failingReputation) AgentAggregate(context.Context, string) (reputation.Aggregate, bool, error) {
	return reputation.Aggregate{}, false, errors.New("store down")
}

// TestScoreAPIForMCP checks lookupScore, which Score (and so GET /score and the MCP tool
// get_verification_record) is built on.
func TestScoreAPIForMCP(t *testing.T) {
	e := newScoreEnv(t, &fakePayer{valid: true, settleOK: true})
	ctx := context.Background()
	recordN(t, e.st, "seller-m", 3, false, false, e.clock.Now())
	for id, want := range map[string]bool{"seller-m": true, "seller-unknown": false, "test-seller-m": false} {
		if l, err := service.LookupScore(e.svc, ctx, id); err != nil || service.Priced(l) != want {
			t.Errorf("LookupScore(%s): priced %v, %v; want %v", id, service.Priced(l), err, want)
		}
	}
	lookup, err := service.LookupScore(e.svc, ctx, "seller-m")
	if err != nil {
		t.Fatal(err)
	}
	// The document comes from the lookup's read: what is recorded after it changes neither the
	// price nor the document (an unknown agent looked up, then recorded, stays a free no_data).
	unknown, err := service.LookupScore(e.svc, ctx, "seller-late")
	if err != nil {
		t.Fatal(err)
	}
	recordN(t, e.st, "seller-late", 3, true, true, e.clock.Now())
	if late, err := service.Document(unknown, context.Background()); err != nil || service.Priced(unknown) || decode(t, late)["reason"] != "no_data" {
		t.Errorf("recorded after the lookup: priced %v, document %s, %v; want the free no_data answer", service.Priced(unknown), late, err)
	}
	doc, err := service.Document(lookup, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkSigned(t, e.svc, doc, receipt.ContextScore)
	// Three fresh free fails: p = 0 → 0, n = 1.5.
	if m := decode(t, doc); m["score"] != 0.0 || m["confidence"] != "low" || m["pass_rate"] != 0.0 {
		t.Errorf("document %s", doc)
	}
	// Over HTTP the same lookup answers the same document (but for the time it was computed at).
	e.rebuild(t, func(d *service.Deps) { d.Payer = nil })
	_, b := testhttp.Do(t, "GET", e.srv.URL+"/score/seller-m", nil)
	if !bytes.Equal(stripSignature(t, b), stripSignature(t, doc)) {
		t.Errorf("HTTP and LookupScore differ:\n%s\n%s", b, doc)
	}
	if l, err := service.LookupScore(e.svc, ctx, "seller-m"); err != nil || service.Priced(l) {
		t.Errorf("LookupScore without a payee: priced %v, %v; want false", service.Priced(l), err)
	}

	for _, id := range []string{"", strings.Repeat("é", 201), "a\x00b", "\xff"} {
		_, err := service.LookupScore(e.svc, ctx, id)
		ae, ok := apperr.As(err)
		if !ok || ae.Status() != 422 || len(ae.Fields) != 1 || ae.Fields[0].Field != "agent_id" {
			t.Errorf("agent id %q: %v, want a 422 naming agent_id", id, err)
		}
	}
	if _, err := service.LookupScore(e.svc, ctx, strings.Repeat("é", 200)); err != nil {
		t.Errorf("a 200-character id: %v", err)
	}

	e.rebuild(t, func(d *service.Deps) { d.Store = failingReputation{e.st} })
	if _, err := service.LookupScore(e.svc, ctx, "seller-m"); err == nil {
		t.Error("store down: no error")
	} else if ae, ok := apperr.As(err); !ok || ae.Status() != 503 || !ae.Retryable {
		t.Errorf("store down: %v, want a retryable 503", err)
	}
}
