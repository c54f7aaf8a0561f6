package x402test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// price is what the toy server charges: $0.02 in USDC's 6 decimals.
const price = "20000"

// The wire types below are the toy server's own, written from the x402 v2 spec, so that this test
// proves the harness without depending on the project's pkg/x402.

type requirement struct {
	Scheme            string            `json:"scheme"`
	Network           string            `json:"network"`
	Amount            string            `json:"amount"`
	Asset             string            `json:"asset"`
	PayTo             string            `json:"payTo"`
	MaxTimeoutSeconds int               `json:"maxTimeoutSeconds"`
	Extra             map[string]string `json:"extra"`
}

type resource struct {
	URL         string `json:"url"`
	Description string `json:"description"`
	MimeType    string `json:"mimeType"`
}

type paymentRequired struct {
	X402Version int           `json:"x402Version"`
	Error       string        `json:"error,omitempty"`
	Resource    resource      `json:"resource"`
	Accepts     []requirement `json:"accepts"`
}

type paymentPayload struct {
	X402Version int             `json:"x402Version"`
	Resource    json.RawMessage `json:"resource,omitempty"`
	Accepted    requirement     `json:"accepted"`
	Payload     struct {
		Signature     string `json:"signature"`
		Authorization struct {
			From, To, Value, ValidAfter, ValidBefore, Nonce string
		} `json:"authorization"`
	} `json:"payload"`
	Extensions json.RawMessage `json:"extensions,omitempty"`
}

type verifyResponse struct {
	IsValid        bool   `json:"isValid"`
	InvalidReason  string `json:"invalidReason"`
	InvalidMessage string `json:"invalidMessage"`
	Payer          string `json:"payer"`
}

// facilitatorCall is one /verify or /settle the toy server made, for the test to inspect.
type facilitatorCall struct {
	path   string
	status int
	body   string
	took   time.Duration
}

// toyServer is the smallest honest x402 v2 resource server: 402 with PAYMENT-REQUIRED without a
// payment; with one, match `accepted` against its own requirement, verify, settle, and answer 200
// with PAYMENT-RESPONSE. It always sends its own requirement to the facilitator.
type toyServer struct {
	facilitator string
	req         requirement

	mu    sync.Mutex
	calls []facilitatorCall
}

func newToyServer(c *Chain) *toyServer {
	return &toyServer{
		facilitator: c.Facilitator,
		req: requirement{
			Scheme: "exact", Network: Network, Amount: price, Asset: USDC, PayTo: c.Payee,
			MaxTimeoutSeconds: 60, Extra: map[string]string{"name": EIP712Name, "version": EIP712Version},
		},
	}
}

func b64JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (s *toyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	deny := func(reason string) {
		pr := paymentRequired{
			X402Version: 2, Error: reason,
			Resource: resource{URL: "http://" + r.Host + r.URL.Path, Description: "toy", MimeType: "application/json"},
			Accepts:  []requirement{s.req},
		}
		w.Header().Set("PAYMENT-REQUIRED", b64JSON(pr))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusPaymentRequired)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": reason})
	}
	sig := r.Header.Get("Payment-Signature")
	if sig == "" {
		deny("payment_required")
		return
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	var pp paymentPayload
	if err == nil {
		err = json.Unmarshal(raw, &pp)
	}
	if err != nil || pp.X402Version != 2 {
		deny("payment_invalid")
		return
	}
	a := pp.Accepted
	if a.Scheme != s.req.Scheme || a.Network != s.req.Network || a.Amount != s.req.Amount ||
		!strings.EqualFold(a.Asset, s.req.Asset) || !strings.EqualFold(a.PayTo, s.req.PayTo) {
		deny("payment_requirements_mismatch")
		return
	}
	body := map[string]any{"x402Version": 2, "paymentPayload": json.RawMessage(raw), "paymentRequirements": s.req}
	var vr verifyResponse
	if err := s.post(r.Context(), "/verify", body, &vr); err != nil {
		http.Error(w, "facilitator_unavailable", http.StatusServiceUnavailable)
		return
	}
	if !vr.IsValid {
		deny("payment_verification_failed: " + vr.InvalidReason)
		return
	}
	var sr Settlement
	if err := s.post(r.Context(), "/settle", body, &sr); err != nil {
		http.Error(w, "facilitator_unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("PAYMENT-RESPONSE", b64JSON(sr))
	if !sr.Success {
		deny("payment_settlement_failed: " + sr.ErrorReason)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"result": "paid", "payer": vr.Payer})
}

// post sends one facilitator request and decodes the answer whatever its status: a facilitator
// may answer an invalid payment with a non-2xx status and a valid body. Only transport failures
// and undecodable bodies are errors.
func (s *toyServer) post(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.facilitator+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	began := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	s.mu.Lock()
	s.calls = append(s.calls, facilitatorCall{path: path, status: resp.StatusCode, body: buf.String(), took: time.Since(began)})
	s.mu.Unlock()
	return json.Unmarshal(buf.Bytes(), out)
}

// takeCalls returns and forgets the facilitator calls made so far.
func (s *toyServer) takeCalls() []facilitatorCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

// ledger is the token balances a test watches.
type ledger struct{ payer, payee *big.Int }

func readLedger(t *testing.T, c *Chain, payer string) ledger {
	t.Helper()
	return ledger{payer: c.Balance(t, payer), payee: c.Balance(t, c.Payee)}
}

// moved returns how much left the payer and reached the payee between two readings.
func moved(before, after ledger) (paid, received *big.Int) {
	return new(big.Int).Sub(before.payer, after.payer), new(big.Int).Sub(after.payee, before.payee)
}

// TestHarness runs one chain through a paid call, its replay, the crafted bad payments, signing
// without sending, facilitator misbehaviour and a stopped facilitator, in that order (the state
// of each step is the next one's starting point).
func TestHarness(t *testing.T) {
	began := time.Now()
	c := Start(t)
	t.Logf("Start took %s (rpc %s, facilitator %s)", time.Since(began).Round(time.Millisecond), c.RPC, c.Facilitator)

	srv := newToyServer(c)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	url := hs.URL + "/paid"

	if got := c.Balance(t, c.Payer); got.Cmp(c.Minted) != 0 {
		t.Fatalf("payer starts with %s, want %s", got, c.Minted)
	}
	if got := c.Balance(t, c.Payee); got.Sign() != 0 {
		t.Fatalf("payee starts with %s, want 0", got)
	}

	var first PayResult
	t.Run("pay", func(t *testing.T) {
		before := readLedger(t, c, c.Payer)
		res := c.Pay(t, url, "POST", []byte(`{"hello":"world"}`))
		if res.Error != "" || res.Status != http.StatusOK {
			t.Fatalf("pay: status %d error %q body %s\nfacilitator: %+v", res.Status, res.Error, res.Body, srv.takeCalls())
		}
		first = res
		if res.Requests != 2 || res.PaymentSignature == "" {
			t.Errorf("requests %d, signature %q: want the 402 round trip and one paid retry", res.Requests, res.PaymentSignature)
		}
		var pr paymentRequired
		if err := json.Unmarshal(res.PaymentRequired, &pr); err != nil || len(pr.Accepts) != 1 || pr.Accepts[0].Amount != price {
			t.Errorf("client saw PAYMENT-REQUIRED %s (%v)", res.PaymentRequired, err)
		}
		s := res.PaymentResponse
		if s == nil || !s.Success || s.Network != Network || !strings.EqualFold(s.Payer, c.Payer) || len(s.Transaction) != 66 {
			t.Fatalf("PAYMENT-RESPONSE %+v (header %q)", s, res.Header("Payment-Response"))
		}
		after := readLedger(t, c, c.Payer)
		paid, received := moved(before, after)
		if paid.String() != price || received.String() != price {
			t.Errorf("payer paid %s and payee received %s, want %s each", paid, received, price)
		}
		var pp paymentPayload
		if err := json.Unmarshal(res.Payment, &pp); err != nil {
			t.Fatalf("decode the payment sent: %v", err)
		}
		if !c.AuthorizationUsed(t, c.Payer, pp.Payload.Authorization.Nonce) {
			t.Errorf("authorization nonce %s is not used on chain after settlement", pp.Payload.Authorization.Nonce)
		}
		calls := srv.takeCalls()
		if len(calls) != 2 || calls[0].path != "/verify" || calls[1].path != "/settle" {
			t.Errorf("facilitator calls %+v, want one verify and one settle", calls)
		}
		t.Logf("the client sent PAYMENT-SIGNATURE of %s", res.Payment)
	})

	t.Run("replay", func(t *testing.T) {
		if first.PaymentSignature == "" {
			t.Skip("no first payment")
		}
		before := readLedger(t, c, c.Payer)
		res := c.Pay(t, url, "POST", []byte(`{"hello":"again"}`), Replay(first.PaymentSignature))
		if res.Status != http.StatusPaymentRequired || res.Requests != 1 {
			t.Errorf("replay: status %d after %d requests, want 402 after 1", res.Status, res.Requests)
		}
		calls := srv.takeCalls()
		if len(calls) != 1 || calls[0].path != "/verify" {
			t.Fatalf("replay: facilitator calls %+v, want one refused verify", calls)
		}
		var vr verifyResponse
		if err := json.Unmarshal([]byte(calls[0].body), &vr); err != nil || vr.IsValid {
			t.Errorf("replay: verify said %s", calls[0].body)
		}
		t.Logf("facilitator /verify on replay: HTTP %d %s", calls[0].status, calls[0].body)

		// A server that skipped verify would reach settle: the facilitator re-verifies there, and
		// the chain would refuse the used nonce anyway.
		raw, _ := base64.StdEncoding.DecodeString(first.PaymentSignature)
		var sr Settlement
		body := map[string]any{"x402Version": 2, "paymentPayload": json.RawMessage(raw), "paymentRequirements": srv.req}
		if err := srv.post(context.Background(), "/settle", body, &sr); err != nil {
			t.Fatal(err)
		}
		if sr.Success {
			t.Errorf("replayed settle succeeded: %+v", sr)
		}
		t.Logf("facilitator /settle on replay: %+v", srv.takeCalls())
		if paid, received := moved(before, readLedger(t, c, c.Payer)); paid.Sign() != 0 || received.Sign() != 0 {
			t.Errorf("replay moved tokens: paid %s, received %s", paid, received)
		}
	})

	// Each crafted payment must be refused, by the server's requirement matching when `accepted`
	// shows the change, by the facilitator's verify when it does not; no token moves.
	other := "0x000000000000000000000000000000000000dEaD"
	cases := []struct {
		name   string
		opts   []PayOption
		key    string
		reject string // the toy server's error prefix
	}{
		{"amount", []PayOption{Tamper("amount", "1")}, "", "payment_requirements_mismatch"},
		{"amount signed only", []PayOption{Tamper("amount", "1"), KeepAccepted()}, "", "payment_verification_failed"},
		{"asset", []PayOption{Tamper("asset", other)}, "", "payment_requirements_mismatch"},
		{"payee", []PayOption{Tamper("payTo", other)}, "", "payment_requirements_mismatch"},
		{"payee signed only", []PayOption{Tamper("payTo", other), KeepAccepted()}, "", "payment_verification_failed"},
		{"network", []PayOption{Tamper("network", "eip155:84532")}, "", "payment_requirements_mismatch"},
		{"network signed only", []PayOption{Tamper("network", "eip155:84532"), KeepAccepted()}, "", "payment_verification_failed"},
		{"domain name signed only", []PayOption{Tamper("extra.name", "USDC"), KeepAccepted()}, "", "payment_verification_failed"},
		{"bad signature", []PayOption{BadSignature()}, "", "payment_verification_failed"},
		{"no funds", nil, c.UnfundedKey, "payment_verification_failed"},
	}
	for _, tc := range cases {
		t.Run("refuse "+tc.name, func(t *testing.T) {
			payer := c.Payer
			opts := tc.opts
			if tc.key != "" {
				payer = c.Unfunded
				opts = append(opts, WithKey(tc.key))
			}
			before := readLedger(t, c, payer)
			res := c.Pay(t, url, "POST", []byte(`{}`), opts...)
			if res.Status != http.StatusPaymentRequired {
				t.Fatalf("status %d (error %q, body %s), want 402", res.Status, res.Error, res.Body)
			}
			var pr paymentRequired
			raw, _ := base64.StdEncoding.DecodeString(res.Header("Payment-Required"))
			if err := json.Unmarshal(raw, &pr); err != nil || !strings.HasPrefix(pr.Error, tc.reject) {
				t.Errorf("refused with %q (%v), want %s", pr.Error, err, tc.reject)
			}
			t.Logf("refused: %s; facilitator: %+v", pr.Error, srv.takeCalls())
			if paid, received := moved(before, readLedger(t, c, payer)); paid.Sign() != 0 || received.Sign() != 0 {
				t.Errorf("tokens moved: paid %s, received %s", paid, received)
			}
		})
	}

	t.Run("sign without sending", func(t *testing.T) {
		pr, _ := json.Marshal(paymentRequired{X402Version: 2, Resource: resource{URL: "mcp://tool/verify_schema"}, Accepts: []requirement{srv.req}})
		sp := c.SignPayment(t, pr, WithKey(c.Payer2Key))
		var pp paymentPayload
		if err := json.Unmarshal(sp.Payment, &pp); err != nil || !strings.EqualFold(pp.Payload.Authorization.From, c.Payer2) {
			t.Fatalf("signed payment %s (%v), want one from payer2", sp.Payment, err)
		}
		before := readLedger(t, c, c.Payer2)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
		req.Header.Set("PAYMENT-SIGNATURE", sp.PaymentSignature)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
		if paid, received := moved(before, readLedger(t, c, c.Payer2)); paid.String() != price || received.String() != price {
			t.Errorf("payer2 paid %s and payee received %s, want %s each", paid, received, price)
		}
		srv.takeCalls()
	})

	// Settlements submitted at once from the facilitator's one account must not collide on the
	// transaction nonce.
	t.Run("concurrent payments", func(t *testing.T) {
		const n = 4
		payee := c.Balance(t, c.Payee)
		var wg sync.WaitGroup
		results := make([]PayResult, n)
		for i := range n {
			key := c.PayerKey
			if i%2 == 1 {
				key = c.Payer2Key
			}
			wg.Go(func() { results[i] = c.Pay(t, url, "POST", []byte(`{}`), WithKey(key)) })
		}
		wg.Wait()
		for i, res := range results {
			if res.Status != http.StatusOK || res.PaymentResponse == nil || !res.PaymentResponse.Success {
				t.Errorf("payment %d: status %d, error %q, settlement %+v", i, res.Status, res.Error, res.PaymentResponse)
			}
		}
		want := new(big.Int).Add(payee, big.NewInt(n*20000))
		if got := c.Balance(t, c.Payee); got.Cmp(want) != 0 {
			t.Errorf("payee holds %s after %d concurrent payments, want %s", got, n, want)
		}
		srv.takeCalls()
	})

	t.Run("facilitator failure status and delay", func(t *testing.T) {
		c.ConfigureFacilitator(t, FacilitatorBehaviour{Delay: 300 * time.Millisecond, FailureStatus: http.StatusBadRequest})
		defer c.ConfigureFacilitator(t, FacilitatorBehaviour{})
		res := c.Pay(t, url, "POST", []byte(`{}`), BadSignature())
		if res.Status != http.StatusPaymentRequired {
			t.Fatalf("status %d, want 402", res.Status)
		}
		calls := srv.takeCalls()
		if len(calls) != 1 || calls[0].status != http.StatusBadRequest || !strings.Contains(calls[0].body, `"isValid":false`) {
			t.Errorf("facilitator calls %+v, want one verify answered 400 with a VerifyResponse", calls)
		}
		if len(calls) == 1 && calls[0].took < 300*time.Millisecond {
			t.Errorf("verify took %s, want at least the 300ms delay", calls[0].took)
		}
	})

	t.Run("facilitator down", func(t *testing.T) {
		c.StopFacilitator(t)
		before := readLedger(t, c, c.Payer)
		res := c.Pay(t, url, "POST", []byte(`{}`))
		if res.Status != http.StatusServiceUnavailable {
			t.Errorf("status %d (error %q), want 503 from the toy server", res.Status, res.Error)
		}
		if paid, received := moved(before, readLedger(t, c, c.Payer)); paid.Sign() != 0 || received.Sign() != 0 {
			t.Errorf("tokens moved: paid %s, received %s", paid, received)
		}
	})
}

// TestArtifactMatchesSource proves the committed TestUSDC.json is what contracts/TestUSDC.sol
// compiles to with the pinned solc, so the harness never runs stale bytecode.
func TestArtifactMatchesSource(t *testing.T) {
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "infra", "x402")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "solc", "package.json")); err != nil {
		unavailable(t, installHint)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "node is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "compile.mjs", "--check")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s", out)
		}
		t.Fatal(fmt.Errorf("run compile.mjs --check: %w", err))
	}
}

// TestSolanaHarness checks the Solana world against what the tests rely on: the facilitator names
// the node's fee payer, the payer starts with Minted and the payee with nothing, and the real
// client signs a transaction whose first signature slot (the fee payer's) is left empty and whose
// second is the payer's, which is where BadSignature corrupts it.
func TestSolanaHarness(t *testing.T) {
	sol := StartSolana(t)
	resp, err := http.Get(sol.Facilitator + "/supported")
	if err != nil {
		t.Fatal(err)
	}
	var sup struct {
		Kinds []struct {
			Network string            `json:"network"`
			Extra   map[string]string `json:"extra"`
		} `json:"kinds"`
	}
	err = json.NewDecoder(resp.Body).Decode(&sup)
	resp.Body.Close()
	if err != nil || len(sup.Kinds) != 1 || sup.Kinds[0].Network != SolanaNetwork || sup.Kinds[0].Extra["feePayer"] != sol.FeePayer {
		t.Fatalf("/supported = %+v, %v; want exact on %s with fee payer %s", sup, err, SolanaNetwork, sol.FeePayer)
	}
	if got := sol.Balance(t, sol.PayerTokenAccount); got.Cmp(sol.Minted) != 0 || sol.Minted.Sign() <= 0 {
		t.Errorf("payer holds %s, want %s", got, sol.Minted)
	}
	if got := sol.Balance(t, sol.PayeeTokenAccount); got.Sign() != 0 {
		t.Errorf("payee holds %s, want 0", got)
	}

	pr, _ := json.Marshal(paymentRequired{X402Version: 2, Resource: resource{URL: "http://127.0.0.1/paid"}, Accepts: []requirement{{
		Scheme: "exact", Network: SolanaNetwork, Amount: price, Asset: sol.Mint, PayTo: sol.Payee, MaxTimeoutSeconds: 60,
		Extra: map[string]string{"feePayer": sol.FeePayer},
	}}})
	for _, bad := range []bool{false, true} {
		var opts []PayOption
		if bad {
			opts = append(opts, BadSignature())
		}
		signed := sol.SignPayment(t, pr, opts...)
		var p struct {
			Payload struct{ Transaction string } `json:"payload"`
		}
		if err := json.Unmarshal(signed.Payment, &p); err != nil {
			t.Fatal(err)
		}
		tx, err := base64.StdEncoding.DecodeString(p.Payload.Transaction)
		if err != nil || len(tx) < 1+2*64 || tx[0] != 2 {
			t.Fatalf("transaction %q: %v; want two signature slots", p.Payload.Transaction, err)
		}
		if !bytes.Equal(tx[1:65], make([]byte, 64)) {
			t.Error("the fee payer's signature slot is not empty")
		}
		// The payer's signature over the message verifies, unless BadSignature corrupted it.
		seed, err := hex.DecodeString(sol.PayerKey)
		if err != nil || len(seed) != ed25519.SeedSize {
			t.Fatalf("payer key %q: %v", sol.PayerKey, err)
		}
		pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		if ok := ed25519.Verify(pub, tx[1+2*64:], tx[65:129]); ok == bad {
			t.Errorf("BadSignature %v: the payer's signature verifies: %v", bad, ok)
		}
	}
}
