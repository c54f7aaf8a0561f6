package service_test

import (
	"context"
	"crypto/ed25519"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testclock"
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
		Client: "198.51.100.7", Words: &service.Words{}, Route: "/verify/schema"})
	if out.Kind != service.Refused || out.Err == nil || out.Err.Code != apperr.Internal {
		t.Fatalf("outcome %+v, want refused with %s", out, apperr.Internal)
	}
	if used, err := d.Store.AllowanceUsed(context.Background(), svc.CallerID("198.51.100.7"), testclock.Epochs()[0].Format("2006-01-02")); err != nil || used != 0 {
		t.Fatalf("allowance used %d (%v), want 0", used, err)
	}
}
