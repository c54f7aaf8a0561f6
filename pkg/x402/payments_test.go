package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// supportedServer is a facilitator that only answers GET /supported, counting the calls; while
// down it answers 503.
type supportedServer struct {
	*httptest.Server
	calls    atomic.Int32
	down     atomic.Bool
	feePayer string
	delay    atomic.Int64 // nanoseconds before answering
}

func newSupportedServer(t *testing.T, feePayer string) *supportedServer {
	s := &supportedServer{feePayer: feePayer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		time.Sleep(time.Duration(s.delay.Load()))
		if r.Method != http.MethodGet || r.URL.Path != "/supported" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if s.down.Load() {
			http.Error(w, "upstream down", http.StatusServiceUnavailable)
			return
		}
		kinds := []map[string]any{{"x402Version": 2, "scheme": "exact", "network": NetworkBase}}
		if s.feePayer != "" {
			kinds = append(kinds,
				map[string]any{"x402Version": 1, "scheme": "exact", "network": "solana", "extra": map[string]any{"feePayer": "1nvalid"}},
				map[string]any{"x402Version": 2, "scheme": "exact", "network": NetworkSolana, "extra": map[string]any{"feePayer": s.feePayer}})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"kinds": kinds, "extensions": []string{"bazaar"}, "signers": map[string]any{"solana:*": []string{s.feePayer}}})
	}))
	t.Cleanup(s.Close)
	return s
}

// fixturePayments is the configuration of testdata/requirements.json against a facilitator
// that gives the fixture's fee payer.
func fixturePayments(t *testing.T) (*Payments, *supportedServer) {
	fx := loadFixture(t)
	srv := newSupportedServer(t, fx.Config.FeePayer)
	cfg := Config{FacilitatorURL: srv.URL, PayToEVM: fx.Config.PayToEVM, PayToSolana: fx.Config.PayToSolana, Networks: fx.Config.Networks}
	p, err := New(cfg, NewFacilitator(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, srv
}

// The requirements for the fixture's configuration are exactly the fixture's accepts.
func TestRequirementsFixture(t *testing.T) {
	fx := loadFixture(t)
	p, _ := fixturePayments(t)
	got, err := p.Requirements(context.Background(), fx.Config.PriceUSD)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(fx.PaymentRequired.Accepts) {
		t.Fatalf("got %d entries, want %d", len(got), len(fx.PaymentRequired.Accepts))
	}
	for i, want := range fx.PaymentRequired.Accepts {
		sameRequirements(t, want.Network, got[i], want)
	}
}

func TestRequirementsNetworks(t *testing.T) {
	const payTo = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
	srv := newSupportedServer(t, "2wmVCSfPxGPjrnMMn7rchp4uaeoTqN39mXFC2zhPdri9")
	cfg := Config{FacilitatorURL: srv.URL, PayToEVM: strings.ToLower(payTo), PayToSolana: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
		Networks: []string{NetworkBaseSepolia, NetworkSolanaDevnet, NetworkBase}}
	p, err := New(cfg, NewFacilitator(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Requirements(context.Background(), "0.02")
	if err != nil {
		t.Fatal(err)
	}
	// Devnet has no fee payer at this facilitator: left out. The order is the configuration's.
	want := []Requirements{
		{Scheme: "exact", Network: NetworkBaseSepolia, Amount: "20000", Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", PayTo: payTo, MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USDC", "version": "2"}},
		{Scheme: "exact", Network: NetworkBase, Amount: "20000", Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: payTo, MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %s", mustJSON(t, got))
	}
	for i := range want {
		sameRequirements(t, want[i].Network, got[i], want[i])
	}
	// Callers may change what they get without changing the next answer.
	got[0].Extra["name"] = "changed"
	again, _ := p.Requirements(context.Background(), "1")
	if again[0].Extra["name"] != "USDC" || again[0].Amount != "1000000" {
		t.Errorf("got %+v", again[0])
	}
	if _, err := p.Requirements(context.Background(), "0.0000001"); err == nil {
		t.Error("a price finer than USDC: want an error")
	}
}

// New makes no HTTP call; the fee payer is fetched on first need, then cached for an hour.
func TestFeePayerLazyAndCached(t *testing.T) {
	p, srv := fixturePayments(t)
	clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p.now = clock.Now
	if n := srv.calls.Load(); n != 0 {
		t.Fatalf("New made %d calls", n)
	}
	for i := 0; i < 3; i++ {
		reqs, err := p.Requirements(context.Background(), "0.02")
		if err != nil || len(reqs) != 2 || reqs[1].Extra["feePayer"] != "2wmVCSfPxGPjrnMMn7rchp4uaeoTqN39mXFC2zhPdri9" {
			t.Fatalf("got %s, %v", mustJSON(t, reqs), err)
		}
	}
	if n := srv.calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
	clock.Advance(59 * time.Minute)
	p.Requirements(context.Background(), "0.02")
	if n := srv.calls.Load(); n != 1 {
		t.Errorf("after 59 min: %d calls, want 1", n)
	}
	clock.Advance(2 * time.Minute)
	p.Requirements(context.Background(), "0.02")
	if n := srv.calls.Load(); n != 2 {
		t.Errorf("after 61 min: %d calls, want 2", n)
	}
}

// An EVM-only configuration never asks the facilitator anything to answer a 402.
func TestEVMOnlyNeedsNoSupported(t *testing.T) {
	srv := newSupportedServer(t, "")
	cfg := Config{FacilitatorURL: srv.URL, PayToEVM: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", Networks: []string{NetworkBase}}
	p, err := New(cfg, NewFacilitator(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reqs, err := p.Requirements(context.Background(), "0.01"); err != nil || len(reqs) != 1 || reqs[0].Amount != "10000" {
		t.Fatalf("got %v, %v", reqs, err)
	}
	if n := srv.calls.Load(); n != 0 {
		t.Errorf("%d calls", n)
	}
}

// While the facilitator is down Solana is left out (and the log says so, once per retry period);
// after it recovers, Solana is offered again.
func TestFeePayerOutageAndRecovery(t *testing.T) {
	fx := loadFixture(t)
	srv := newSupportedServer(t, fx.Config.FeePayer)
	srv.down.Store(true)
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	cfg := Config{FacilitatorURL: srv.URL, AuthHeader: "X-Api-Key: sekret-value", PayToEVM: fx.Config.PayToEVM, PayToSolana: fx.Config.PayToSolana, Networks: fx.Config.Networks}
	p, err := New(cfg, NewFacilitator(cfg), log)
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p.now = clock.Now
	networks := func() string {
		reqs, err := p.Requirements(context.Background(), "0.02")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range reqs {
			ids = append(ids, r.Network)
		}
		return strings.Join(ids, ",")
	}
	for i := 0; i < 5; i++ {
		if got := networks(); got != NetworkBase {
			t.Fatalf("while down: %s", got)
		}
	}
	if n := srv.calls.Load(); n != 1 {
		t.Errorf("while down, within 30 s: %d calls, want 1", n)
	}
	logMu.Lock()
	if c := strings.Count(logs.String(), "GET /supported failed"); c != 1 {
		t.Errorf("logged %d times, want once:\n%s", c, logs.String())
	}
	if strings.Contains(logs.String(), "sekret-value") {
		t.Error("the auth value was logged")
	}
	logMu.Unlock()

	clock.Advance(31 * time.Second)
	networks()
	if n := srv.calls.Load(); n != 2 {
		t.Errorf("after 31 s: %d calls, want 2", n)
	}
	srv.down.Store(false)
	if got := networks(); got != NetworkBase {
		t.Errorf("recovered but within the retry period: %s", got)
	}
	clock.Advance(31 * time.Second)
	if got := networks(); got != NetworkBase+","+NetworkSolana {
		t.Errorf("after recovery: %s", got)
	}
	logMu.Lock()
	if !strings.Contains(logs.String(), "available again") {
		t.Errorf("recovery not logged:\n%s", logs.String())
	}
	logMu.Unlock()
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// With Solana as the only network and no fee payer, nothing can be offered: a 503-class error.
func TestSolanaOnlyFacilitatorDown(t *testing.T) {
	srv := newSupportedServer(t, "2wmVCSfPxGPjrnMMn7rchp4uaeoTqN39mXFC2zhPdri9")
	srv.down.Store(true)
	cfg := Config{FacilitatorURL: srv.URL, PayToSolana: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", Networks: []string{NetworkSolana}}
	p, err := New(cfg, NewFacilitator(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Requirements(context.Background(), "0.02")
	if !errors.Is(err, ErrFacilitatorUnavailable) {
		t.Fatalf("got %v", err)
	}
	if e, ok := apperr.As(err); !ok || e.Code != apperr.FacilitatorDown || e.Status() != 503 {
		t.Errorf("got %v", err)
	}
}

// Concurrent first needs share one GET /supported.
func TestFeePayerSingleFetch(t *testing.T) {
	p, srv := fixturePayments(t)
	srv.delay.Store(int64(50 * time.Millisecond))
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if reqs, err := p.Requirements(context.Background(), "0.02"); err != nil || len(reqs) != 2 {
				t.Errorf("got %d, %v", len(reqs), err)
			}
		}()
	}
	wg.Wait()
	if n := srv.calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

// A caller that waits for another's fetch and whose request ends gets its context's error; the
// fetch itself is never cancelled by a caller hanging up, since its answer serves everyone.
func TestFeePayerCallerCancels(t *testing.T) {
	p, srv := fixturePayments(t)
	srv.delay.Store(int64(200 * time.Millisecond))
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if reqs, err := p.Requirements(ctx, "0.02"); err != nil || len(reqs) != 2 {
			t.Errorf("first caller, context already ended: %d, %v", len(reqs), err)
		}
	}()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Requirements(ctx, "0.02"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting caller: %v", err)
	}
	<-done
	if reqs, err := p.Requirements(context.Background(), "0.02"); err != nil || len(reqs) != 2 {
		t.Errorf("got %d, %v", len(reqs), err)
	}
	if n := srv.calls.Load(); n != 1 {
		t.Errorf("%d calls", n)
	}
}

func TestNewRejects(t *testing.T) {
	f := &Facilitator{URL: "http://127.0.0.1:1"}
	for name, c := range map[string]struct {
		cfg Config
		f   *Facilitator
	}{
		"unknown network":   {Config{PayToEVM: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", Networks: []string{"eip155:1"}}, f},
		"duplicate network": {Config{PayToEVM: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", Networks: []string{NetworkBase, NetworkBase}}, f},
		"no EVM payee":      {Config{PayToSolana: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", Networks: []string{NetworkBase}}, f},
		"no Solana payee":   {Config{PayToEVM: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", Networks: []string{NetworkSolana}}, f},
		"bad EVM payee":     {Config{PayToEVM: "0x3c44CdDdB6a900fa2b585dd299e03d12FA4293BC", Networks: []string{NetworkBase}}, f},
		"no facilitator":    {Config{PayToEVM: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", Networks: []string{NetworkBase}}, nil},
	} {
		if _, err := New(c.cfg, c.f, nil); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	// Free-only needs no facilitator and offers nothing.
	p, err := New(Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reqs, err := p.Requirements(context.Background(), "0.02"); err != nil || reqs == nil || len(reqs) != 0 {
		t.Errorf("free-only: %v, %v", reqs, err)
	}
	if _, err := p.Verify(context.Background(), PaymentPayload{}, Requirements{}); !errors.Is(err, ErrFacilitatorUnavailable) {
		t.Errorf("free-only verify: %v", err)
	}
}

func TestMatch(t *testing.T) {
	fx := loadFixture(t)
	reqs := fx.PaymentRequired.Accepts
	evm, sol := reqs[0], reqs[1]
	mutate := func(r Requirements, f func(*Requirements)) PaymentPayload {
		r.Extra = map[string]any{"name": "client's own extra"}
		r.MaxTimeoutSeconds = 9999
		f(&r)
		return PaymentPayload{X402Version: 2, Accepted: r}
	}
	for _, c := range []struct {
		name string
		p    PaymentPayload
		want *Requirements
	}{
		{"exact EVM", mutate(evm, func(*Requirements) {}), &evm},
		{"EVM addresses in another case", mutate(evm, func(r *Requirements) { r.PayTo, r.Asset = strings.ToLower(r.PayTo), strings.ToUpper(r.Asset) }), &evm},
		{"exact Solana", mutate(sol, func(*Requirements) {}), &sol},
		{"wrong amount", mutate(evm, func(r *Requirements) { r.Amount = "19999" }), nil},
		{"amount with a leading zero", mutate(evm, func(r *Requirements) { r.Amount = "020000" }), nil},
		{"wrong asset", mutate(evm, func(r *Requirements) { r.Asset = usdcBaseSepolia }), nil},
		{"wrong payTo", mutate(evm, func(r *Requirements) { r.PayTo = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" }), nil},
		{"wrong network", mutate(evm, func(r *Requirements) { r.Network = NetworkBaseSepolia }), nil},
		{"wrong scheme", mutate(evm, func(r *Requirements) { r.Scheme = "upto" }), nil},
		{"Solana payTo in another case", mutate(sol, func(r *Requirements) { r.PayTo = strings.ToLower(r.PayTo) }), nil},
		{"Solana asset of another network", mutate(sol, func(r *Requirements) { r.Asset = usdcSolanaDevnet }), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Match(c.p, reqs)
			if c.want == nil {
				e, ok := apperr.As(err)
				if !ok || e.Code != apperr.PaymentMismatch || e.Status() != 402 {
					t.Fatalf("got %+v, %v; want a payment_requirements_mismatch", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The server's copy, not the client's: its own extra and timeout.
			sameRequirements(t, "match", got, *c.want)
			got.Extra["x"] = 1
			if _, ok := c.want.Extra["x"]; ok {
				t.Error("the returned copy shares its extra with the server's list")
			}
		})
	}
}

func TestManifest(t *testing.T) {
	fx := loadFixture(t)
	p, _ := fixturePayments(t)
	free := map[string]any{"calls_per_client_per_day": 1000}
	m, err := p.Manifest(context.Background(), []ManifestItem{
		{Resource: "https://v.example/verify/schema", Method: "post", Description: "verify", PriceUSD: "0.02"},
		{Resource: "https://v.example/verify/deliverable", Method: "POST", Description: "verify", PriceUSD: "0.02"},
		{Resource: "https://v.example/score/{agent_id}", Method: "GET", Description: "score", PriceUSD: "0.01"},
	}, free, "Pay with x402.")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Version     int      `json:"version"`
		X402Version int      `json:"x402Version"`
		Resources   []string `json:"resources"`
		Items       []struct {
			Resource, Method, Description string
			Accepts                       []Requirements
		} `json:"items"`
		FreeAllowance map[string]any `json:"free_allowance"`
		Instructions  string         `json:"instructions"`
	}
	if err := json.Unmarshal([]byte(mustJSON(t, m)), &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.X402Version != 2 || len(got.Resources) != 3 || got.Instructions != "Pay with x402." || got.FreeAllowance["calls_per_client_per_day"] != float64(1000) {
		t.Errorf("got %s", mustJSON(t, m))
	}
	if got.Items[0].Method != "POST" || len(got.Items) != 3 {
		t.Fatalf("items %+v", got.Items)
	}
	for i, want := range fx.PaymentRequired.Accepts {
		sameRequirements(t, "manifest", got.Items[0].Accepts[i], want)
	}
	if a := got.Items[2].Accepts; len(a) != 2 || a[0].Amount != "10000" || a[1].Amount != "10000" {
		t.Errorf("score accepts %+v", a)
	}
}

// BazaarExtension produces the fixture's extension (the shape of @x402/extensions'
// declareDiscoveryExtension for a JSON body), and the query form for GET.
func TestBazaarExtension(t *testing.T) {
	fx := loadFixture(t)
	want := fx.PaymentRequired.Extensions["bazaar"].(map[string]any)
	body := want["info"].(map[string]any)["input"].(map[string]any)["body"]
	schema := want["schema"].(map[string]any)["properties"].(map[string]any)["input"].(map[string]any)["properties"].(map[string]any)["body"]
	if got := BazaarExtension("post", body, schema); !jsonEqual(t, got, want) {
		t.Errorf("got  %s\nwant %s", mustJSON(t, got), mustJSON(t, want))
	}
	get := BazaarExtensionWithOutput("GET", map[string]any{"agent_id": "a-1"}, map[string]any{"properties": map[string]any{"agent_id": map[string]any{"type": "string"}}}, map[string]any{"score": 0.9})
	wantGet := `{"info":{"input":{"method":"GET","queryParams":{"agent_id":"a-1"},"type":"http"},"output":{"example":{"score":0.9},"type":"json"}},` +
		`"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"input":{"additionalProperties":false,"properties":{"method":{"enum":["GET","HEAD","DELETE"],"type":"string"},` +
		`"queryParams":{"properties":{"agent_id":{"type":"string"}},"type":"object"},"type":{"const":"http","type":"string"}},"required":["type","method"],"type":"object"},` +
		`"output":{"properties":{"example":{},"type":{"type":"string"}},"required":["type"],"type":"object"}},"required":["input"],"type":"object"}}`
	if got := mustJSON(t, get); got != wantGet {
		t.Errorf("got  %s\nwant %s", got, wantGet)
	}
}
