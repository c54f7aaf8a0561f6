package x402test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The Solana world: mainnet's network id and USDC mint, as the server's production requirements
// name them.
const (
	// SolanaNetwork is the CAIP-2 id of Solana mainnet, which the local node claims.
	SolanaNetwork = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	// SolanaUSDC is Solana mainnet USDC's mint address, where the local node places its test mint.
	SolanaUSDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
)

// Solana is one running local Solana payment world: svm-node.mjs (LiteSVM, the Solana runtime
// with the SPL Token program, behind the JSON-RPC methods x402 uses) holding a 6-decimal mint at
// the USDC address, a facilitator built from @x402/core and @x402/svm that co-signs and submits
// the payments as fee payer, and the real client @x402/fetch with @x402/svm's exact scheme.
// Addresses are base58; keys are 32-byte Ed25519 seeds in hex.
type Solana struct {
	// RPC is the node's JSON-RPC URL; Facilitator the facilitator's base URL.
	RPC, Facilitator string
	// Network is SolanaNetwork; Mint is SolanaUSDC.
	Network, Mint string
	// FeePayer is the facilitator's fee payer, which /supported names in extra.feePayer.
	FeePayer string
	// Payer holds Minted tokens in PayerTokenAccount; PayerKey is its seed.
	Payer, PayerKey, PayerTokenAccount string
	// Payee is the address to put in payTo; its token account starts empty.
	Payee, PayeeTokenAccount string
	// Unfunded has an empty token account: its transfers are well formed but cannot execute.
	Unfunded, UnfundedKey, UnfundedTokenAccount string
	// Minted is the payer's starting balance in atomic units (6 decimals).
	Minted *big.Int

	*harness
}

// StartSolana is Start's world on Solana: LiteSVM behind a local JSON-RPC (svm-node.mjs), a mint at
// Solana USDC's address, the facilitator with @x402/svm's exact scheme, and the same client. It
// runs svm-node.mjs and the facilitator on free 127.0.0.1 ports and waits until both answer; both
// are stopped by their process groups in t.Cleanup. Without `npm ci --prefix infra/x402`, or off
// linux/amd64 (the platform of the pinned LiteSVM build CI installs), the test is skipped, or
// failed when Required.
func StartSolana(t testing.TB) *Solana {
	t.Helper()
	h := newHarness(t, filepath.Join("node_modules", "litesvm", "package.json"), filepath.Join("node_modules", "@x402", "svm", "package.json"))
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		unavailable(t, "the Solana harness is exercised on linux/amd64 only")
	}
	node, line, err := startProcess(t, "svm-node", h.dir, h.node, func(l string) bool { return strings.HasPrefix(l, "{") },
		"svm-node.mjs", "--port", "0")
	if err != nil {
		t.Fatalf("x402test: %v", err)
	}
	t.Cleanup(node.stop)
	var s struct {
		RPC, Network, Mint, Minted, FeePayer, Payer, PayerKey, PayerTokenAccount string
		Payee, PayeeTokenAccount, Unfunded, UnfundedKey, UnfundedTokenAccount    string
	}
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		t.Fatalf("x402test: svm-node.mjs announced %q: %v", line, err)
	}
	minted, ok := new(big.Int).SetString(s.Minted, 10)
	if !ok || s.Network != SolanaNetwork || s.Mint != SolanaUSDC {
		t.Fatalf("x402test: svm-node.mjs announced %q", line)
	}
	if err := h.startFacilitator(t, SolanaNetwork, "--svm-rpc", s.RPC); err != nil {
		t.Fatalf("x402test: %v\nsvm-node log tail:\n%s", err, node.logTail())
	}
	return &Solana{
		RPC: s.RPC, Facilitator: h.facURL, Network: s.Network, Mint: s.Mint, FeePayer: s.FeePayer,
		Payer: s.Payer, PayerKey: s.PayerKey, PayerTokenAccount: s.PayerTokenAccount,
		Payee: s.Payee, PayeeTokenAccount: s.PayeeTokenAccount,
		Unfunded: s.Unfunded, UnfundedKey: s.UnfundedKey, UnfundedTokenAccount: s.UnfundedTokenAccount,
		Minted: minted, harness: h,
	}
}

// Pay is Chain.Pay on Solana: the real client signs a token transfer from the payer (PayerKey,
// unless WithKey gives another seed) for the first Solana requirement, and the facilitator
// co-signs and submits it. Tamper, KeepAccepted, BadSignature and Replay apply.
func (s *Solana) Pay(t testing.TB, url, method string, body []byte, opts ...PayOption) PayResult {
	t.Helper()
	cfg := newPayConfig(s.PayerKey, opts)
	return s.pay(t, []string{"PAY_SVM_KEY=" + cfg.key}, []string{"--svm-rpc", s.RPC}, url, method, body, cfg)
}

// SignPayment is Chain.SignPayment on Solana.
func (s *Solana) SignPayment(t testing.TB, paymentRequired []byte, opts ...PayOption) SignedPayment {
	t.Helper()
	cfg := newPayConfig(s.PayerKey, opts)
	return s.signPayment(t, []string{"PAY_SVM_KEY=" + cfg.key}, []string{"--svm-rpc", s.RPC}, paymentRequired, cfg)
}

// Balance returns the balance of a token account in atomic units, read with the node's
// getTokenAccountBalance.
func (s *Solana) Balance(t testing.TB, tokenAccount string) *big.Int {
	t.Helper()
	var out struct {
		Value struct {
			Amount string `json:"amount"`
		} `json:"value"`
	}
	if err := jsonRPC(s.RPC, "getTokenAccountBalance", []any{tokenAccount}, &out); err != nil {
		t.Fatalf("x402test: balance of %s: %v", tokenAccount, err)
	}
	v, ok := new(big.Int).SetString(out.Value.Amount, 10)
	if !ok {
		t.Fatalf("x402test: balance of %s: amount %q", tokenAccount, out.Value.Amount)
	}
	return v
}

// TransactionStatus reports whether the node executed the transaction with this signature, and
// its error ("" when it succeeded).
func (s *Solana) TransactionStatus(t testing.TB, signature string) (found bool, txErr string) {
	t.Helper()
	var out struct {
		Value []*struct {
			Err json.RawMessage `json:"err"`
		} `json:"value"`
	}
	if err := jsonRPC(s.RPC, "getSignatureStatuses", []any{[]string{signature}}, &out); err != nil {
		t.Fatalf("x402test: status of %s: %v", signature, err)
	}
	if len(out.Value) != 1 || out.Value[0] == nil {
		return false, ""
	}
	if e := out.Value[0].Err; len(e) > 0 && string(e) != "null" {
		return true, string(e)
	}
	return true, ""
}

// jsonRPC makes one JSON-RPC 2.0 call to url and decodes its result into result.
func jsonRPC(url, method string, params []any, result any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %d %s", method, r.Error.Code, r.Error.Message)
	}
	return json.Unmarshal(r.Result, result)
}
