package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store/memstore"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
)

// memRecorder keeps recorded verifications in a list, and can be made to fail its writes and
// probes; the rest of the store is an in-memory store's.
type memRecorder struct {
	mu   sync.Mutex
	recs []store.Verification
	fail error

	once sync.Once
	mem  *memstore.Store
}

func (m *memRecorder) store() *memstore.Store {
	m.once.Do(func() { m.mem = memstore.New(testclock.New(testclock.Epochs()[0]).Now) })
	return m.mem
}

func (m *memRecorder) ConsumeAllowance(ctx context.Context, client, day string, limit int, expires time.Time) (bool, int, error) {
	return m.store().ConsumeAllowance(ctx, client, day, limit, expires)
}

func (m *memRecorder) AllowanceUsed(ctx context.Context, client, day string) (int, error) {
	return m.store().AllowanceUsed(ctx, client, day)
}

func (m *memRecorder) ReservePayment(ctx context.Context, id string, expires time.Time) error {
	return m.store().ReservePayment(ctx, id, expires)
}

func (m *memRecorder) ReleasePayment(ctx context.Context, id string) error {
	return m.store().ReleasePayment(ctx, id)
}

func (m *memRecorder) PaymentReserved(ctx context.Context, id string) (bool, error) {
	return m.store().PaymentReserved(ctx, id)
}

func (m *memRecorder) ClaimPayment(ctx context.Context, id string, c store.PaymentClaim, expires time.Time) (store.PaymentClaim, bool, error) {
	return m.store().ClaimPayment(ctx, id, c, expires)
}

func (m *memRecorder) UpdatePaymentClaim(ctx context.Context, id, holder string, c store.PaymentClaim, expires time.Time) error {
	return m.store().UpdatePaymentClaim(ctx, id, holder, c, expires)
}

func (m *memRecorder) ReleasePaymentClaim(ctx context.Context, id, holder string) error {
	return m.store().ReleasePaymentClaim(ctx, id, holder)
}

func (m *memRecorder) History(ctx context.Context, agentID string, limit int, cursor string) ([]store.Verification, string, error) {
	return m.store().History(ctx, agentID, limit, cursor)
}

func (m *memRecorder) AgentAggregate(ctx context.Context, agentID string) (reputation.Aggregate, bool, error) {
	return m.store().AgentAggregate(ctx, agentID)
}

func (m *memRecorder) RecordVerification(_ context.Context, v store.Verification) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.recs = append(m.recs, v)
	return nil
}

func (m *memRecorder) Ping(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fail
}

func newTestService(t *testing.T, rec *memRecorder, logs io.Writer) (*service.Service, *httptest.Server) {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	return newTestServiceWith(t, rec, logs, nil)
}

// newTestServiceWith is newTestService with NewID as given (nil: random ids).
func newTestServiceWith(t *testing.T, rec *memRecorder, logs io.Writer, newID func() string) (*service.Service, *httptest.Server) {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	d := service.Deps{Log: slog.New(slog.NewJSONHandler(logs, nil)), NewID: newID}
	if rec != nil {
		d.Store = rec
	}
	svc := testsvc.New(t, d)
	srv := httptest.NewServer(Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) }))
	t.Cleanup(srv.Close)
	return svc, srv
}

func seed(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/seed/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifyRoutesAreIdentical(t *testing.T) {
	svc, srv := newTestServiceWith(t, nil, nil, func() string { return "11111111-1111-4111-8111-111111111111" })
	var bodies [][]byte
	for _, p := range VerifyPaths {
		resp, b := testhttp.Do(t, "POST", srv.URL+p, seed(t, "invoice-draft.request.json"))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", p, resp.StatusCode, b)
		}
		if err := receipt.VerifyReceipt(b, svc.Keys().PublicKeys(), seed(t, "invoice-draft.request.json")); err != nil {
			t.Fatalf("%s: receipt: %v", p, err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		delete(m, "verified_at")
		delete(m, "attestation")
		nb, _ := json.Marshal(m)
		bodies = append(bodies, nb)
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Errorf("/verify/schema and /verify/deliverable differ:\n%s\n%s", bodies[0], bodies[1])
	}
}

func TestErrorsInEnvelope(t *testing.T) {
	_, srv := newTestService(t, nil, nil)
	cases := []struct {
		method, path string
		body         []byte
		status       int
		code         string
		allow        string
	}{
		{"GET", "/nope", nil, 404, "not_found", ""},
		{"GET", "/verify/schema", nil, 405, "method_not_allowed", "POST"},
		{"DELETE", "/health", nil, 405, "method_not_allowed", "GET"},
		{"POST", "/verify/schema", []byte(`{"task_id":"x"}`), 422, "invalid_request", ""},
		{"POST", "/verify/schema", bytes.Repeat([]byte("a"), 1<<20+1), 413, "payload_too_large", ""},
	}
	for _, c := range cases {
		resp, b := testhttp.Do(t, c.method, srv.URL+c.path, c.body)
		var e struct {
			Code      string `json:"code"`
			Status    int    `json:"status"`
			Charged   bool   `json:"charged"`
			Retryable bool   `json:"retryable"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s %s: not JSON: %s", c.method, c.path, b)
		}
		if resp.StatusCode != c.status || e.Status != c.status || e.Code != c.code || e.Charged {
			t.Errorf("%s %s: got %d %+v, want %d %s", c.method, c.path, resp.StatusCode, e, c.status, c.code)
		}
		if got := resp.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow = %q, want %q", c.method, c.path, got, c.allow)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: content-type %q", c.method, c.path, ct)
		}
	}
}

func TestRecordingRules(t *testing.T) {
	rec := &memRecorder{}
	_, srv := newTestService(t, rec, nil)
	body := func(agent string) []byte {
		return []byte(`{"task_id":"t","agent_id":` + agent + `,"expected_schema":{"type":"number"},"submitted_output":1}`)
	}
	for _, a := range []string{`"seller-1"`, `"test-seller"`, `null`} {
		if resp, b := testhttp.Do(t, "POST", srv.URL+"/verify/schema", body(a)); resp.StatusCode != 200 {
			t.Fatalf("agent %s: %d %s", a, resp.StatusCode, b)
		}
	}
	if len(rec.recs) != 1 || rec.recs[0].AgentID != "seller-1" || rec.recs[0].Result != "pass" || rec.recs[0].OverallRatio != 1 {
		t.Fatalf("recorded %+v, want exactly seller-1's pass", rec.recs)
	}
	if c := rec.recs[0].CallerID; len(c) != 64 || strings.Contains(c, "127.0.0.1") {
		t.Errorf("caller id %q is not a salted hash", c)
	}
	// A store outage never fails the answer.
	rec.fail = io.ErrUnexpectedEOF
	if resp, b := testhttp.Do(t, "POST", srv.URL+"/verify/schema", body(`"seller-1"`)); resp.StatusCode != 200 {
		t.Fatalf("with the store down: %d %s", resp.StatusCode, b)
	}
}

func TestLogsCarryNoPayloadOrIP(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	_, srv := newTestService(t, &memRecorder{fail: io.ErrUnexpectedEOF}, w)
	testhttp.Do(t, "POST", srv.URL+"/verify/schema", []byte(`{"task_id":"t","agent_id":"a-secret-agent","expected_schema":{},"submitted_output":"PAYLOAD-CANARY"}`))
	testhttp.Do(t, "GET", srv.URL+"/score/a-secret-agent", nil)
	mu.Lock()
	defer mu.Unlock()
	for _, bad := range []string{"PAYLOAD-CANARY", "127.0.0.1", "a-secret-agent"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("logs contain %q:\n%s", bad, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"route":"/verify/schema"`) {
		t.Errorf("no request log line:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestClientIdentity runs testdata/client_identity.json: every way of writing one address is one
// identity, an IPv6 /64 is one client, and what is not an address is service.UnknownClient.
func TestClientIdentity(t *testing.T) {
	var file struct {
		Cases []struct {
			Name, Remote, Want string
			XFF                []string
			Hops               int
		}
	}
	b, err := os.ReadFile("testdata/client_identity.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 30 {
		t.Fatalf("%d cases read, want the file's 30 or more", len(file.Cases))
	}
	for _, c := range file.Cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.Remote
		for _, v := range c.XFF {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := edge.ClientIdentity(r, c.Hops); got != c.Want {
			t.Errorf("%s: edge.ClientIdentity(%q, xff %q, hops %d) = %q, want %q", c.Name, c.Remote, c.XFF, c.Hops, got, c.Want)
		}
	}
}

// FuzzClientIdentity: any peer and forwarded text gives service.UnknownClient or an identity that is
// its own canonical form (an IPv4 address, or an IPv6 /64 prefix), so no two spellings of one
// client can be two identities.
func FuzzClientIdentity(f *testing.F) {
	for _, s := range []string{"10.0.0.1:5555", "2001:DB8::1", "[fe80::1%eth0]:80", "::ffff:9.9.9.5", "", "x"} {
		f.Add(s, s, 1)
	}
	f.Fuzz(func(t *testing.T, remote, xff string, hops int) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.Header.Set("X-Forwarded-For", xff)
		got := edge.ClientIdentity(r, hops%4)
		if got == service.UnknownClient {
			return
		}
		if p, err := netip.ParsePrefix(got); err == nil {
			if p.Addr().Is4() || p.Bits() != service.IPv6ClientPrefixBits || p.Masked() != p || p.String() != got {
				t.Fatalf("identity %q is not a canonical IPv6 /64", got)
			}
			return
		}
		a, err := netip.ParseAddr(got)
		if err != nil || !a.Is4() || a.String() != got {
			t.Fatalf("identity %q is neither an IPv4 address, an IPv6 /64 nor %q", got, service.UnknownClient)
		}
	})
}

func TestHealthIndexAndCard(t *testing.T) {
	rec := &memRecorder{}
	clk := testclock.New(testclock.Epochs()[0])
	svc := testsvc.New(t, service.Deps{Store: rec, Now: clk.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	srv := httptest.NewServer(Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) }))
	t.Cleanup(srv.Close)
	resp, b := testhttp.Do(t, "GET", srv.URL+"/health", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"key_version":"test-v1"`) {
		t.Errorf("health: %d %s", resp.StatusCode, b)
	}
	resp, b = testhttp.Do(t, "GET", srv.URL+"/", nil, "Accept", "application/json")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"/verify/schema"`) {
		t.Errorf("index json: %d %s", resp.StatusCode, b)
	}
	resp, b = testhttp.Do(t, "GET", srv.URL+"/", nil)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(b), "<h1>Agent Output Verifier</h1>") {
		t.Errorf("index html: %s", b)
	}
	for _, p := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		resp, b = testhttp.Do(t, "GET", srv.URL+p, nil)
		keys, err := receipt.CardKeys(b)
		if resp.StatusCode != 200 || err != nil || len(keys) != 1 || !keys[0].Key.Equal(svc.Keys().Current.Public().Key) {
			t.Errorf("%s: %d %v %s", p, resp.StatusCode, err, b)
		}
	}
	// A failing store probe degrades health without leaking the cause, once the last probe's
	// answer (kept a few seconds) has aged.
	rec.mu.Lock()
	rec.fail = io.ErrUnexpectedEOF
	rec.mu.Unlock()
	clk.Advance(time.Minute)
	resp, b = testhttp.Do(t, "GET", srv.URL+"/health", nil)
	if resp.StatusCode != 503 || strings.Contains(string(b), "EOF") {
		t.Errorf("degraded health: %d %s", resp.StatusCode, b)
	}
}

// With background recording, answers do not wait for the store, and stopping flushes every
// queued write.
func TestBackgroundRecording(t *testing.T) {
	rec := &memRecorder{}
	svc, srv := newTestService(t, rec, nil)
	stop := svc.StartRecording(2)
	for i := range 50 {
		body := fmt.Sprintf(`{"task_id":"t%d","agent_id":"seller-%d","expected_schema":{},"submitted_output":1}`, i, i%3)
		if resp, b := testhttp.Do(t, "POST", srv.URL+"/verify/schema", []byte(body)); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	stop()
	rec.mu.Lock()
	if len(rec.recs) != 50 {
		t.Fatalf("%d of 50 verifications recorded after stop", len(rec.recs))
	}
	rec.mu.Unlock()
	// A request still running after the writers stopped (a shutdown past its grace) records for
	// itself.
	if resp, b := testhttp.Do(t, "POST", srv.URL+"/verify/schema", []byte(`{"task_id":"late","agent_id":"seller-late","expected_schema":{},"submitted_output":1}`)); resp.StatusCode != 200 {
		t.Fatalf("after stop: %d %s", resp.StatusCode, b)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) != 51 {
		t.Fatalf("%d verifications recorded, want 51: the one after stop was lost", len(rec.recs))
	}
}
