// Package testsvc builds whole services for tests: the dependencies a test names, and for every
// one it leaves out the part a deployment would have (an engine with the default limits, a test
// key, an in-memory store on a test clock, a generous free allowance). A test therefore never
// runs a service with parts missing, which no deployment does.
package testsvc

import (
	"bytes"
	"crypto/ed25519"
	"io"
	"log/slog"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/memstore"
	"github.com/agent-output-verifier/verifier/pkg/translog"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// BaseURL is the base URL of a service whose test names none.
const BaseURL = "http://127.0.0.1:8080"

// FreeCallsPerDay is the free allowance of a service whose test sets no pricing: more than any
// test makes, so that only the tests about the allowance meet its end.
const FreeCallsPerDay = 1 << 20

// Key is the signing key of a service whose test names none.
func Key() receipt.Key {
	return receipt.Key{Version: "test-v1", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))}
}

// Complete fills in what d leaves out; see the package comment.
func Complete(d service.Deps) service.Deps {
	if d.Engine == nil {
		d.Engine = engine.New(wire.Limits{})
	}
	if d.MaxBody == 0 {
		d.MaxBody = wire.DefaultLimits.MaxBody
	}
	if d.Keys.Current.Private == nil && !d.Keys.Current.IsRemote() {
		d.Keys.Current = Key()
	}
	if d.BaseURL == "" {
		d.BaseURL = BaseURL
	}
	if d.Now == nil {
		d.Now = testclock.New(testclock.Epochs()[0]).Now
	}
	if d.Store == nil {
		d.Store = memstore.New(d.Now)
	}
	if d.Pricing == (service.Pricing{}) {
		d.Pricing = service.Pricing{FreeCallsPerDay: FreeCallsPerDay, FreeMaxBody: d.MaxBody, PriceVerify: "0.02", PriceScore: "0.01"}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if rl, ok := d.Store.(service.ReceiptLog); ok && d.Receipts == nil {
		d.Receipts = rl
		d.LogKey = LogKey(d.BaseURL)
		if d.ReceiptsWithHistory == nil {
			d.ReceiptsWithHistory, _ = rl.(store.ReceiptWithHistory)
		}
	}
	if f, ok := d.Store.(service.Folder); ok && d.Folder == nil {
		d.Folder = f
	}
	return d
}

// LogKey is the receipt log's key of a service whose test names none, for the deployment at
// baseURL.
func LogKey(baseURL string) translog.LogKey {
	k := receipt.Key{Version: "log-test-v1", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))}
	lk, err := translog.NewLogKey(translog.Origin(baseURL), k)
	if err != nil {
		panic("testsvc: log key: " + err.Error())
	}
	return lk
}

// New builds the service of Complete(d), failing the test if it cannot be built.
func New(t testing.TB, d service.Deps) *service.Service {
	t.Helper()
	svc, err := service.New(Complete(d))
	if err != nil {
		t.Fatalf("build service: %v", err)
	}
	return svc
}
