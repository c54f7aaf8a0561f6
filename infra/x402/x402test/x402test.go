// Package x402test runs a real, local x402 v2 payment world for tests: an anvil chain that claims
// Base mainnet's chain id (8453), an EIP-3009 test token at Base USDC's address with Base USDC's
// EIP-712 domain, a facilitator built from @x402/core and @x402/evm that settles on that chain, and
// the real client @x402/fetch to pay with. Everything is pinned by infra/x402/package-lock.json,
// binds 127.0.0.1 only and is stopped by process group when the test ends.
//
// A test calls Start, points the server under test at Chain.Facilitator, pays with Chain.Pay and
// checks the ledger with Chain.Balance:
//
//	chain := x402test.Start(t)
//	srv := httptest.NewServer(newServer(chain.Facilitator, chain.Payee))
//	res := chain.Pay(t, srv.URL+"/verify/schema", "POST", body)
//	// res.Status == 200, chain.Balance(t, chain.Payee) rose by the price
//
// StartSolana is the same world on Solana.
package x402test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// The chain the harness runs and the token it places there: exactly Base mainnet's USDC as the
// payment requirements name it, so a server's production requirements work unchanged.
const (
	// Network is the CAIP-2 id of Base mainnet, which the local chain claims.
	Network = "eip155:8453"
	// ChainID is Base mainnet's EVM chain id; anvil runs with it.
	ChainID = 8453
	// USDC is Base mainnet USDC's address, where the harness places the test token.
	USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	// EIP712Name and EIP712Version are Base USDC's EIP-712 domain, the `extra` of a requirement.
	EIP712Name    = "USD Coin"
	EIP712Version = "2"
)

// installHint is the fix for a missing harness, repeated wherever the tests stop for it.
const installHint = "the x402 harness is not installed: run `npm ci --prefix infra/x402` from the repository root"

// Timeouts, each generous because the machine may be busy with other tests.
const (
	// startTimeout bounds the wait for anvil and the facilitator to listen.
	startTimeout = 30 * time.Second
	// scriptTimeout bounds one run of a node script (chain setup, one payment).
	scriptTimeout = 90 * time.Second
	// stopGrace is how long a process may take to exit after SIGTERM before it gets SIGKILL.
	stopGrace = 5 * time.Second
	// rpcTimeout bounds one JSON-RPC or facilitator control call.
	rpcTimeout = 10 * time.Second
)

// Required reports whether a missing harness must fail the test instead of skipping it: on CI
// (CI=true) the payment tests must never be silently skipped.
func Required() bool {
	return os.Getenv("CI") == "true"
}

// Chain is one running local payment world. Its fields are plain strings so a test can hand them
// to the code under test as configuration.
type Chain struct {
	// RPC is anvil's JSON-RPC URL, http://127.0.0.1:<port>.
	RPC string
	// Facilitator is the facilitator's base URL (POST /verify, POST /settle, GET /supported).
	Facilitator string
	// Network is the CAIP-2 network id, "eip155:8453".
	Network string
	// Token is the test USDC's address, the Base USDC address.
	Token string
	// Payer holds Minted tokens; PayerKey is its private key (a public anvil test key).
	Payer, PayerKey string
	// Payer2 is a second funded payer, for tests that need two paying clients.
	Payer2, Payer2Key string
	// Payee is the address to put in payTo; it starts with no tokens.
	Payee string
	// Unfunded has no tokens: its signatures are valid but its payments cannot settle.
	Unfunded, UnfundedKey string
	// Settler is the facilitator's account, which submits settlements and pays their gas.
	Settler string
	// Minted is the token balance each payer starts with, in atomic units (6 decimals).
	Minted *big.Int

	*harness
}

// harness is what the payment worlds share: the scripts' directory, node, and the facilitator.
type harness struct {
	dir         string // infra/x402
	node        string
	facilitator *process
	facURL      string
}

// newHarness finds infra/x402 and node, and makes sure the npm packages are installed: files are
// paths under infra/x402 that must exist. Without them the test is skipped, or failed when
// Required.
func newHarness(t testing.TB, files ...string) *harness {
	t.Helper()
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatalf("x402test: %v", err)
	}
	dir := filepath.Join(root, "infra", "x402")
	for _, f := range append(files, filepath.Join("node_modules", "@x402", "fetch", "package.json")) {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			unavailable(t, installHint)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "node is not on PATH; the x402 harness needs Node.js 20 or later")
	}
	return &harness{dir: dir, node: node}
}

// startFacilitator starts facilitator.mjs with args and waits until it listens and lists exact on
// network in /supported.
func (h *harness) startFacilitator(t testing.TB, network string, args ...string) error {
	t.Helper()
	fac, line, err := startProcess(t, "facilitator", h.dir, h.node, func(l string) bool { return strings.HasPrefix(l, "{") },
		append([]string{"facilitator.mjs", "--port", "0"}, args...)...)
	if err != nil {
		return err
	}
	t.Cleanup(fac.stop)
	h.facilitator = fac
	var ready struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.URL == "" {
		return fmt.Errorf("facilitator announced %q: %v", line, err)
	}
	h.facURL = ready.URL
	if err := h.checkSupported(network); err != nil {
		return fmt.Errorf("%w\nfacilitator log tail:\n%s", err, fac.logTail())
	}
	return nil
}

// setupResult is the JSON line setup-chain.mjs prints.
type setupResult struct {
	Network     string `json:"network"`
	Token       string `json:"token"`
	Minted      string `json:"minted"`
	Facilitator string `json:"facilitator"`
	Payer       string `json:"payer"`
	PayerKey    string `json:"payerKey"`
	Payer2      string `json:"payer2"`
	Payer2Key   string `json:"payer2Key"`
	Payee       string `json:"payee"`
	Unfunded    string `json:"unfunded"`
	UnfundedKey string `json:"unfundedKey"`
}

// Start runs anvil (chain id 8453) on a free 127.0.0.1 port, places the test token and funds the
// payers, starts the facilitator on another free 127.0.0.1 port and waits until both answer. Every
// process is stopped by its process group in t.Cleanup. Without `npm ci --prefix infra/x402`, or
// off linux/amd64 (the only platform of the pinned anvil), the test is skipped, or failed when
// Required.
func Start(t testing.TB) *Chain {
	t.Helper()
	h := newHarness(t, filepath.Join("node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil"))
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		unavailable(t, "the pinned anvil (@foundry-rs/anvil-linux-amd64) runs on linux/amd64 only")
	}
	anvil := filepath.Join(h.dir, "node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil")

	c := &Chain{harness: h}
	// anvil prints its accounts, then "Listening on 127.0.0.1:<port>" once it serves; with
	// --port 0 the kernel picks the port, so no other process can take it first.
	anvilProc, line, err := startProcess(t, "anvil", h.dir, anvil, listeningRE.MatchString,
		"--host", "127.0.0.1", "--port", "0", "--chain-id", fmt.Sprint(ChainID))
	if err != nil {
		t.Fatalf("x402test: %v", err)
	}
	t.Cleanup(anvilProc.stop)
	c.RPC = "http://" + listeningRE.FindStringSubmatch(line)[1]

	// The facilitator needs nothing of the token to start, so it boots while the chain is set up.
	type result struct {
		out []byte
		err error
	}
	setup := make(chan result, 1)
	go func() {
		out, err := c.runScript(t, nil, "setup-chain.mjs", "--rpc", c.RPC)
		setup <- result{out, err}
	}()
	facErr := h.startFacilitator(t, Network, "--rpc", c.RPC)
	set := <-setup // before any Fatal: the goroutine may still log through t
	if set.err != nil {
		t.Fatalf("x402test: set up the chain: %v\nanvil log tail:\n%s", set.err, anvilProc.logTail())
	}
	if facErr != nil {
		t.Fatalf("x402test: %v", facErr)
	}
	var s setupResult
	if err := json.Unmarshal(set.out, &s); err != nil {
		t.Fatalf("x402test: read setup-chain.mjs output %q: %v", set.out, err)
	}
	minted, ok := new(big.Int).SetString(s.Minted, 10)
	if !ok {
		t.Fatalf("x402test: setup-chain.mjs minted %q", s.Minted)
	}
	c.Network, c.Token, c.Minted, c.Settler = s.Network, s.Token, minted, s.Facilitator
	c.Payer, c.PayerKey, c.Payer2, c.Payer2Key = s.Payer, s.PayerKey, s.Payer2, s.Payer2Key
	c.Payee, c.Unfunded, c.UnfundedKey = s.Payee, s.Unfunded, s.UnfundedKey
	c.Facilitator = h.facURL
	return c
}

// listeningRE finds the address in anvil's "Listening on 127.0.0.1:<port>" line.
var listeningRE = regexp.MustCompile(`Listening on (127\.0\.0\.1:\d+)`)

// checkSupported asks the facilitator which kinds it settles and makes sure exact on network is one.
func (h *harness) checkSupported(network string) error {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.facURL+"/supported", nil)
	if err != nil {
		return fmt.Errorf("facilitator /supported: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("facilitator /supported: %w", err)
	}
	defer resp.Body.Close()
	var sup struct {
		Kinds []struct {
			X402Version int    `json:"x402Version"`
			Scheme      string `json:"scheme"`
			Network     string `json:"network"`
		} `json:"kinds"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sup); err != nil {
		return fmt.Errorf("facilitator /supported: HTTP %d: %w", resp.StatusCode, err)
	}
	for _, k := range sup.Kinds {
		if k.X402Version == 2 && k.Scheme == "exact" && k.Network == network {
			return nil
		}
	}
	return fmt.Errorf("facilitator /supported lists no x402 v2 exact on %s: %+v", network, sup.Kinds)
}

// StopFacilitator stops the facilitator for good, so a test can see how the server under test
// handles a facilitator that is down: its URL then refuses connections.
func (h *harness) StopFacilitator(t testing.TB) {
	t.Helper()
	h.facilitator.stop()
}

// FacilitatorBehaviour makes the facilitator misbehave the way real ones may.
type FacilitatorBehaviour struct {
	// Delay holds every /verify and /settle answer back this long (a slow facilitator).
	Delay time.Duration
	// FailureStatus is the HTTP status of an invalid verify or a failed settle (the body stays a
	// valid VerifyResponse or SettleResponse); 0 means 200, the default.
	FailureStatus int
}

// ConfigureFacilitator changes how the running facilitator behaves, from the next request on.
func (h *harness) ConfigureFacilitator(t testing.TB, b FacilitatorBehaviour) {
	t.Helper()
	status := b.FailureStatus
	if status == 0 {
		status = http.StatusOK
	}
	body, _ := json.Marshal(map[string]int{"delayMs": int(b.Delay / time.Millisecond), "failureStatus": status})
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.facURL+"/_test/config", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("x402test: configure facilitator: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("x402test: configure facilitator: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("x402test: configure facilitator: HTTP %d", resp.StatusCode)
	}
}

// Balance returns addr's token balance in atomic units, read on chain with eth_call balanceOf.
func (c *Chain) Balance(t testing.TB, addr string) *big.Int {
	t.Helper()
	a, err := abiAddress(addr)
	if err != nil {
		t.Fatalf("x402test: balance: %v", err)
	}
	// 0x70a08231 is the selector of balanceOf(address).
	out, err := c.ethCall("0x70a08231" + a)
	if err != nil {
		t.Fatalf("x402test: balance of %s: %v", addr, err)
	}
	return out
}

// AuthorizationUsed reports whether the token has consumed the EIP-3009 authorization nonce
// (0x + 64 hex digits) of authorizer, read on chain with authorizationState: true once a payment
// carrying it has settled.
func (c *Chain) AuthorizationUsed(t testing.TB, authorizer, nonce string) bool {
	t.Helper()
	a, err := abiAddress(authorizer)
	if err != nil {
		t.Fatalf("x402test: authorization state: %v", err)
	}
	n := strings.TrimPrefix(strings.ToLower(nonce), "0x")
	if len(n) != 64 || strings.Trim(n, "0123456789abcdef") != "" {
		t.Fatalf("x402test: authorization state: nonce %q is not 32 bytes of hex", nonce)
	}
	// 0xe94a0102 is the selector of authorizationState(address,bytes32).
	out, err := c.ethCall("0xe94a0102" + a + n)
	if err != nil {
		t.Fatalf("x402test: authorization state of %s %s: %v", authorizer, nonce, err)
	}
	return out.Sign() != 0
}

// abiAddress ABI-encodes a 0x address as one 32-byte word in hex (no 0x).
func abiAddress(addr string) (string, error) {
	a := strings.TrimPrefix(strings.ToLower(addr), "0x")
	if len(a) != 40 || strings.Trim(a, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not an address", addr)
	}
	return strings.Repeat("0", 24) + a, nil
}

// ethCall runs eth_call against the token with the given calldata and decodes the one-word result.
func (c *Chain) ethCall(data string) (*big.Int, error) {
	var hexOut string
	if err := jsonRPC(c.RPC, "eth_call", []any{map[string]string{"to": c.Token, "data": data}, "latest"}, &hexOut); err != nil {
		return nil, err
	}
	v, ok := new(big.Int).SetString(strings.TrimPrefix(hexOut, "0x"), 16)
	if !ok {
		return nil, fmt.Errorf("eth_call returned %q", hexOut)
	}
	return v, nil
}

// PayOption changes how Pay (or SignPayment) pays.
type PayOption func(*payConfig)

type payConfig struct {
	key          string
	headers      []string
	tamper       []string
	keepAccepted bool
	badSignature bool
	replay       string
}

// WithKey pays from the account of this key instead of the world's PayerKey (a private key on the
// EVM chain, a seed in hex on Solana).
func WithKey(key string) PayOption { return func(p *payConfig) { p.key = key } }

// WithHeader adds a request header to every request of the payment (for example
// "X-Forwarded-For"); "Content-Type: application/json" is set already when there is a body.
func WithHeader(name, value string) PayOption {
	return func(p *payConfig) { p.headers = append(p.headers, name+": "+value) }
}

// Tamper changes one field of the requirement the client picked before the client signs it, so
// both the signed authorization and the payload's `accepted` carry the change: how a client would
// try to pay less, pay with another token, pay someone else or pay on another chain. Fields:
// amount, asset, payTo, network, scheme, maxTimeoutSeconds, extra.name, extra.version.
func Tamper(field, value string) PayOption {
	return func(p *payConfig) { p.tamper = append(p.tamper, field+"="+value) }
}

// KeepAccepted, with Tamper, puts the server's original requirement back into the payload's
// `accepted` after signing: the payload then matches the server's requirements and only the
// signature is wrong, which the facilitator's verify must catch.
func KeepAccepted() PayOption { return func(p *payConfig) { p.keepAccepted = true } }

// BadSignature corrupts the signature after signing.
func BadSignature() PayOption { return func(p *payConfig) { p.badSignature = true } }

// Replay sends exactly this PAYMENT-SIGNATURE header (say, PayResult.PaymentSignature of an earlier
// payment) with a plain request: no 402 round trip, no new signature.
func Replay(paymentSignature string) PayOption {
	return func(p *payConfig) { p.replay = paymentSignature }
}

// args turns the options into pay.mjs arguments.
func (p *payConfig) args() []string {
	var a []string
	for _, h := range p.headers {
		a = append(a, "--header", h)
	}
	for _, e := range p.tamper {
		a = append(a, "--tamper", e)
	}
	if p.keepAccepted {
		a = append(a, "--keep-accepted")
	}
	if p.badSignature {
		a = append(a, "--bad-signature")
	}
	if p.replay != "" {
		a = append(a, "--signature", p.replay)
	}
	return a
}

// Settlement is a decoded PAYMENT-RESPONSE, the facilitator's SettleResponse as the server passed
// it on.
type Settlement struct {
	Success      bool   `json:"success"`
	ErrorReason  string `json:"errorReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Payer        string `json:"payer,omitempty"`
	Transaction  string `json:"transaction"`
	Network      string `json:"network"`
	Amount       string `json:"amount,omitempty"`
}

// PayResult is what the x402 client saw.
type PayResult struct {
	// Status, Headers (lower-case names) and Body are the final answer's.
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	// PaymentSignature is the PAYMENT-SIGNATURE header the client sent, "" when it did not pay
	// (the first answer was not a 402); Payment is the PaymentPayload it encodes.
	PaymentSignature string          `json:"paymentSignature"`
	Payment          json.RawMessage `json:"payment,omitempty"`
	// PaymentRequired is the decoded PAYMENT-REQUIRED header of the first 402 answer.
	PaymentRequired json.RawMessage `json:"paymentRequired,omitempty"`
	// PaymentResponse is the decoded PAYMENT-RESPONSE header of the final answer, nil without one.
	PaymentResponse *Settlement `json:"paymentResponse,omitempty"`
	// Requests counts the HTTP requests the client made: 1 without payment, 2 with one.
	Requests int `json:"requests"`
	// Error is set when the client gave up (for example, it could not sign for the requirements);
	// the other fields then tell how far it got.
	Error string `json:"error,omitempty"`
}

// Header returns the final answer's header name (any case), "" when absent.
func (r PayResult) Header(name string) string { return r.Headers[strings.ToLower(name)] }

// Pay requests url with method and body (nil for none) through the real x402 client,
// @x402/fetch's wrapFetchWithPayment: on a 402 it signs an EIP-3009 authorization for the first
// requirement it supports and retries with PAYMENT-SIGNATURE. It pays from Chain.PayerKey unless
// WithKey says otherwise. A client-side failure is reported in PayResult.Error, not as a test
// failure; the test fails only when the client could not be run at all. Each call is its own node
// process (about a second), so concurrent calls from several goroutines are fine.
func (c *Chain) Pay(t testing.TB, url, method string, body []byte, opts ...PayOption) PayResult {
	t.Helper()
	cfg := newPayConfig(c.PayerKey, opts)
	return c.pay(t, []string{"PAY_KEY=" + cfg.key}, nil, url, method, body, cfg)
}

// SignedPayment is a PaymentPayload the real client made, as JSON and as the PAYMENT-SIGNATURE
// header value (base64 of that JSON).
type SignedPayment struct {
	Payment          json.RawMessage `json:"payment"`
	PaymentSignature string          `json:"paymentSignature"`
}

// SignPayment has the real x402 client (@x402/core's x402Client with @x402/evm's exact scheme) sign
// a payment for paymentRequired, a PaymentRequired JSON document (as a 402 header carries it, or as
// an MCP tool result's structuredContent), without sending anything: for transports other than
// plain HTTP (the MCP `_meta["x402/payment"]`) and for hand-made requests. WithKey, Tamper,
// KeepAccepted and BadSignature apply.
func (c *Chain) SignPayment(t testing.TB, paymentRequired []byte, opts ...PayOption) SignedPayment {
	t.Helper()
	cfg := newPayConfig(c.PayerKey, opts)
	return c.signPayment(t, []string{"PAY_KEY=" + cfg.key}, nil, paymentRequired, cfg)
}

func newPayConfig(key string, opts []PayOption) payConfig {
	cfg := payConfig{key: key}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// pay runs pay.mjs for one request with the payer's env and the world's extra arguments.
func (h *harness) pay(t testing.TB, env, extra []string, url, method string, body []byte, cfg payConfig) PayResult {
	t.Helper()
	args := append([]string{"pay.mjs", "--url", url, "--method", method}, extra...)
	if body != nil {
		f := filepath.Join(t.TempDir(), "body")
		if err := os.WriteFile(f, body, 0o600); err != nil {
			t.Fatalf("x402test: write request body: %v", err)
		}
		args = append(args, "--body-file", f)
	}
	args = append(args, cfg.args()...)
	out, err := h.runScript(t, env, args...)
	var res PayResult
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("x402test: pay %s %s: %v (output %q)", method, url, errors.Join(err, jerr), out)
	}
	return res
}

// signPayment runs pay.mjs --sign-required for paymentRequired.
func (h *harness) signPayment(t testing.TB, env, extra []string, paymentRequired []byte, cfg payConfig) SignedPayment {
	t.Helper()
	f := filepath.Join(t.TempDir(), "payment-required.json")
	if err := os.WriteFile(f, paymentRequired, 0o600); err != nil {
		t.Fatalf("x402test: write payment required: %v", err)
	}
	args := append(append([]string{"pay.mjs", "--sign-required", f}, extra...), cfg.args()...)
	out, err := h.runScript(t, env, args...)
	if err != nil {
		t.Fatalf("x402test: sign payment: %v", err)
	}
	var s SignedPayment
	if err := json.Unmarshal(out, &s); err != nil || s.PaymentSignature == "" {
		t.Fatalf("x402test: sign payment: output %q: %v", out, err)
	}
	return s
}

// runScript runs one node script in infra/x402 and returns its last stdout line (the scripts print
// exactly one JSON line). A non-zero exit is returned as an error together with that line, since
// pay.mjs reports client failures on stdout as well.
func (h *harness) runScript(t testing.TB, env []string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.node, args...)
	cmd.Dir = h.dir
	cmd.Env = append(childEnv(), env...)
	testproc.SetProcessGroup(cmd)
	cmd.Cancel = func() error { testproc.KillProcessGroup(cmd.Process.Pid, true); return nil }
	cmd.WaitDelay = stopGrace
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	last := lines[len(lines)-1]
	if err != nil {
		return last, fmt.Errorf("node %s: %w\nstderr:\n%s", args[0], err, tail(stderr.String(), 8<<10))
	}
	if testing.Verbose() && stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", args[0], tail(stderr.String(), 8<<10))
	}
	return last, nil
}

// childEnv is the environment of every helper process: the test's, with loopback exempt from any
// proxy so that nothing local is ever sent elsewhere.
func childEnv() []string {
	return append(os.Environ(), "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
}

// process is one long-running helper (anvil, the facilitator) in its own process group.
type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *testproc.TailBuffer
	once   sync.Once
}

// startProcess starts a helper and waits for the first stdout line that ready accepts, which it
// returns. The rest of stdout and all of stderr go to a bounded log kept for failure messages.
func startProcess(t testing.TB, name, dir, bin string, ready func(string) bool, args ...string) (*process, string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	testproc.SetProcessGroup(cmd)
	// An os.Pipe rather than cmd.StdoutPipe: Wait runs concurrently with the reader below, and
	// Wait closes a StdoutPipe under the reader's feet.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, "", fmt.Errorf("%s: pipe stdout: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{}), log: &testproc.TailBuffer{Max: 64 << 10}}
	cmd.Stdout = w
	cmd.Stderr = p.log
	err = cmd.Start()
	_ = w.Close() // the child holds its own copy
	if err != nil {
		_ = stdout.Close()
		return nil, "", fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	found := make(chan string, 1)
	go func() {
		defer stdout.Close()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.log.Write([]byte(line + "\n"))
			if !sent && ready(line) {
				found <- line
				sent = true
			}
		}
		_, _ = io.Copy(p.log, stdout)
	}()
	select {
	case line := <-found:
		return p, line, nil
	case <-p.exited:
		return nil, "", fmt.Errorf("%s exited before it was ready: %s\n%s", name, cmd.ProcessState, p.logTail())
	case <-time.After(startTimeout):
		p.stop()
		return nil, "", fmt.Errorf("%s was not ready within %s:\n%s", name, startTimeout, p.logTail())
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after stopGrace. It is safe to call twice.
func (p *process) stop() {
	p.once.Do(func() {
		testproc.KillProcessGroup(p.cmd.Process.Pid, false)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			testproc.KillProcessGroup(p.cmd.Process.Pid, true)
			<-p.exited
		}
	})
}

// logTail returns the end of the process's output, for failure messages.
func (p *process) logTail() string { return tail(p.log.String(), 8<<10) }

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func unavailable(t testing.TB, msg string) {
	t.Helper()
	if Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Ledger watches a payer's and a payee's token balances from when it is made, on either world:
// NewLedger(t, chain.Balance, chain.Payer, chain.Payee) or NewLedger(t, sol.Balance,
// sol.PayerTokenAccount, sol.PayeeTokenAccount).
type Ledger struct {
	balance        func(testing.TB, string) *big.Int
	payer, payee   string
	payer0, payee0 *big.Int
}

// NewLedger reads both balances now, with balance.
func NewLedger(t testing.TB, balance func(testing.TB, string) *big.Int, payer, payee string) *Ledger {
	t.Helper()
	return &Ledger{balance: balance, payer: payer, payee: payee, payer0: balance(t, payer), payee0: balance(t, payee)}
}

// Moved fails the test unless the payer has lost exactly want and the payee gained exactly want
// since NewLedger.
func (l *Ledger) Moved(t testing.TB, want int64) {
	t.Helper()
	paid := new(big.Int).Sub(l.payer0, l.balance(t, l.payer))
	received := new(big.Int).Sub(l.balance(t, l.payee), l.payee0)
	if paid.Cmp(big.NewInt(want)) != 0 || received.Cmp(big.NewInt(want)) != 0 {
		t.Fatalf("balances moved by payer -%s, payee +%s; want -%d, +%d", paid, received, want, want)
	}
}
