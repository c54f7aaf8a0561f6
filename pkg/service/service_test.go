package service_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store/memstore"
)

func testDeps() service.Deps {
	clk := testclock.New(testclock.Epochs()[0])
	return service.Deps{
		Keys:    receipt.KeyRing{Current: receipt.Key{Version: "v-test", Private: ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))}},
		BaseURL: "https://verifier.example",
		Store:   memstore.New(clk.Now),
		Now:     clk.Now,
		MaxBody: 1 << 20,
		Pricing: service.Pricing{FreeCallsPerDay: 5, FreeMaxBody: 64 << 10},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// New refuses a missing dependency at construction, naming it, rather than leaving a branch in a
// request's path.
func TestNewRefusesMissingDependencies(t *testing.T) {
	for name, c := range map[string]struct {
		change func(*service.Deps)
		want   string
	}{
		"store":    {func(d *service.Deps) { d.Store = nil }, "no store"},
		"clock":    {func(d *service.Deps) { d.Now = nil }, "no clock"},
		"base URL": {func(d *service.Deps) { d.BaseURL = "" }, "no base URL"},
		"body cap": {func(d *service.Deps) { d.MaxBody = 0 }, "no body limit"},
		"key ring": {func(d *service.Deps) { d.Keys = receipt.KeyRing{} }, "key ring"},
	} {
		d := testDeps()
		c.change(&d)
		if _, err := service.New(d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s missing: err = %v, want one saying %q", name, err, c.want)
		}
	}
	if _, err := service.New(testDeps()); err != nil {
		t.Fatalf("complete dependencies: %v", err)
	}
}

// A service built without an engine (the score and discovery functions) answers a verification,
// which only a wiring mistake could send it, with a retryable internal error that consumes
// nothing of the allowance.
func TestVerifyWithoutEngineIsAnInternalError(t *testing.T) {
	d := testDeps()
	svc, err := service.New(d)
	if err != nil {
		t.Fatal(err)
	}
	out := svc.Verify(context.Background(), service.VerifyCall{Body: []byte(`{"task_id":"t","expected_schema":{},"submitted_output":1}`),
		Caller: svc.CallerID("198.51.100.7"), Route: "/verify/schema"})
	if out.Kind != service.Refused || out.Err == nil || out.Err.Code != apperr.Internal {
		t.Fatalf("outcome %+v, want refused with %s", out, apperr.Internal)
	}
	if used, err := d.Store.AllowanceUsed(context.Background(), svc.CallerID("198.51.100.7"), testclock.Epochs()[0].Format("2006-01-02")); err != nil || used != 0 {
		t.Fatalf("allowance used %d (%v), want 0", used, err)
	}
}

// pingCounter is a store whose Ping answers down while down is set, counting the probes.
type pingCounter struct {
	service.Store
	pings atomic.Int32
	down  atomic.Bool
}

func (p *pingCounter) Ping(ctx context.Context) error {
	p.pings.Add(1)
	if p.down.Load() {
		return errors.New("store unreachable")
	}
	return p.Store.Ping(ctx)
}

// Health probes the store and the signing key at most once per few seconds of the service's
// clock, and says which part did not answer.
func TestHealthProbesStoreAndKeyCached(t *testing.T) {
	d := testDeps()
	clk := testclock.New(testclock.Epochs()[0])
	d.Now = clk.Now
	st := &pingCounter{Store: d.Store}
	d.Store = st
	svc, err := service.New(d)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if h := svc.Health(ctx); !h.OK() || !h.Store || !h.Key {
		t.Fatalf("healthy service: %+v", h)
	}
	st.down.Store(true)
	for range 10 {
		if h := svc.Health(ctx); !h.OK() {
			t.Fatalf("within the cache a probe ran again: %+v", h)
		}
	}
	if n := st.pings.Load(); n != 1 {
		t.Fatalf("%d store probes within the cache, want 1", n)
	}
	clk.Advance(6 * time.Second)
	if h := svc.Health(ctx); h.OK() || h.Store || !h.Key {
		t.Fatalf("store down after the cache: %+v, want store false, key true", h)
	}
}

// A paid answer is kept under its payment identifier as long as the stored record it answers for
// (SPEC §16: bounded by the record's TTL), VERIFIER_RECORD_DAYS or its default.
func TestPaidAnswerTTLIsTheRecords(t *testing.T) {
	for days, want := range map[int]time.Duration{0: service.DefaultRecordDays * 24 * time.Hour, 3: 72 * time.Hour, 400: 400 * 24 * time.Hour} {
		svc := testsvc.New(t, service.Deps{RecordDays: days})
		if got := service.PaidAnswerTTL(svc); got != want {
			t.Errorf("RecordDays %d: paid answers kept %v, want %v", days, got, want)
		}
	}
}
