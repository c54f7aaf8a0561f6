package discovery

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// payee is the EVM payee of the test deployment.
const payee = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// fakePayer offers Base USDC at the asked price and refuses every payment; it names its
// configuration like x402.Payments does, so the documents can list the network.
type fakePayer struct{}

func (fakePayer) Requirements(_ context.Context, price string) ([]x402.Requirements, error) {
	amount, err := x402.USDToAtomic(price)
	if err != nil {
		return nil, err
	}
	return []x402.Requirements{{Scheme: "exact", Network: x402.NetworkBase, Amount: amount, Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
		PayTo: payee, MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}}, nil
}

func (fakePayer) Verify(context.Context, x402.PaymentPayload, x402.Requirements) (x402.VerifyResponse, error) {
	return x402.VerifyResponse{IsValid: false, InvalidReason: "invalid_signature"}, nil
}

func (fakePayer) Settle(context.Context, x402.PaymentPayload, x402.Requirements) (x402.SettleResponse, error) {
	return x402.SettleResponse{}, nil
}

func (fakePayer) Config() x402.Config {
	return x402.Config{PayToEVM: payee, Networks: []string{x402.NetworkBase}}
}

// testKey is a deterministic key of the test deployment, from its version and a seed byte.
func testKey(version string, b byte) receipt.Key {
	return receipt.Key{Version: version, Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))}
}

// env is a running test deployment: the local server's handler (every route but /mcp, whose
// package this one does not import) on a loopback listener, with a bolt store.
type env struct {
	t    *testing.T
	svc  *service.Service
	deps service.Deps // what svc was built from
	h    http.Handler
	srv  *httptest.Server
	base string
	mu   sync.RWMutex // held for reading while a request is served, for writing to change svc
}

// change rebuilds the service from its dependencies as f leaves them, with no request in flight,
// so a test can change the deployment between requests (the race detector does not see the
// ordering a loopback round trip gives).
func (e *env) change(f func(*service.Deps)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(&e.deps)
	e.build()
}

// build makes the service and the local server's handler (every route but /mcp) from e.deps.
func (e *env) build() {
	e.svc = testsvc.New(e.t, e.deps)
	e.h = httpapi.Handler(e.svc, New(e.svc).Mount)
}

type option func(*service.Deps)

func freeOnly(d *service.Deps) { d.Payer = nil }

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	// The service and its store read one test clock.
	clock := testclock.New(testclock.Epochs()[0])
	st, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), bolt.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	previous := testKey("v-previous", 2)
	e := &env{t: t, base: base, deps: service.Deps{
		Keys:       receipt.KeyRing{Current: testKey("v-current", 1), Previous: []receipt.PublicKey{previous.Public()}},
		BaseURL:    base,
		Store:      st,
		Payer:      fakePayer{},
		Pricing:    service.Pricing{FreeCallsPerDay: 7, FreeMaxBody: 12345, PriceVerify: "0.02", PriceScore: "0.01"},
		Now:        clock.Now,
		CallerSalt: []byte("salt"),
	}}
	for _, o := range opts {
		o(&e.deps)
	}
	e.build()
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.RLock()
		defer e.mu.RUnlock()
		e.h.ServeHTTP(w, r)
	}))
	e.srv.Listener.Close()
	e.srv.Listener = ln
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	return e
}

// do sends a request to path on the server and returns the answer with its body read.
func (e *env) do(t *testing.T, method, path string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return testhttp.Do(t, method, e.base+path, body, hdr...)
}

func (e *env) get(t *testing.T, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return e.do(t, http.MethodGet, path, nil, hdr...)
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, b)
	}
	return m
}

func seedFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seed", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// canonical re-encodes a JSON document with sorted keys, for comparisons that ignore order and
// whitespace.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// verifyReceipt checks a verification answer with one key and the request it answers.
func verifyReceipt(answer []byte, key receipt.PublicKey, request []byte) error {
	return receipt.VerifyReceipt(answer, []receipt.PublicKey{key}, request)
}

// verifyScore checks a trust-score answer with one key.
func verifyScore(answer []byte, key receipt.PublicKey) error {
	return receipt.VerifyAttestation(answer, receipt.ContextScore, []receipt.PublicKey{key})
}
