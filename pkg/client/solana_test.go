package client

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Token account addresses as @solana-program/token 0.9.0's findAssociatedTokenPda derives them for
// the Solana USDC mint (the x402 harness's node reports them for its accounts).
var ataVectors = []struct{ owner, account string }{
	{"9hSR6S7WPtxmTojgo6GG3k4yDPecgJY292j7xrsUGWBu", "ASZ2TDDNJG2n42TxAezqNNzwWipykHrENDKMCoLKgzup"},
	{"GyGKxMyg1p9SsHfm15MkNUu1u9TN2JtTspcdmrtGUdse", "DNDTCnZkNk358qDFZd9unHtnrc73SsXcpVWtwJJMrR4B"},
	{"EdmxWPmx2WH6WgFfTdu9xfkYf3k1g5wD1zccTVySEEh1", "FHPASu6WrzXmbm5NbAQy9BxwX5naUHKn5z8ycurGoSX"},
}

func solanaUSDC() string {
	usdc, _ := x402.USDC(x402.NetworkSolana)
	return usdc
}

func TestAssociatedTokenAccount(t *testing.T) {
	mint := mustSolanaKey(solanaUSDC())
	for _, v := range ataVectors {
		got, err := associatedTokenAccount(mustSolanaKey(v.owner), mint)
		if err != nil || x402.SolanaAddress(got) != v.account {
			t.Errorf("token account of %s = %s, %v; want %s", v.owner, x402.SolanaAddress(got), err, v.account)
		}
	}
	// A derived address is off the curve; a public key is on it.
	for _, v := range ataVectors {
		if !onEd25519Curve(mustSolanaKey(v.owner)) || onEd25519Curve(mustSolanaKey(v.account)) {
			t.Errorf("%s should be on the curve and %s off it", v.owner, v.account)
		}
	}
}

// The harness's payer: seed 0x02 × 32 is 9hSR... (@solana/kit's createKeyPairSignerFromPrivateKeyBytes).
const testSolanaSeed = "0202020202020202020202020202020202020202020202020202020202020202"

func TestSolanaPayerKeyForms(t *testing.T) {
	p, err := NewSolanaPayer(testSolanaSeed, "http://127.0.0.1:1")
	if err != nil || p.Address() != ataVectors[0].owner {
		t.Fatalf("hex seed: %v, %v; want %s", p, err, ataVectors[0].owner)
	}
	// solana-keygen's form: the 64 bytes of seed and public key as a JSON array.
	keypair := append(append([]byte{}, p.key.Seed()...), p.key[32:]...)
	nums := make([]int, len(keypair))
	for i, b := range keypair {
		nums[i] = int(b)
	}
	text, _ := json.Marshal(nums)
	q, err := NewSolanaPayer(string(text), "http://127.0.0.1:1")
	if err != nil || q.Address() != p.Address() {
		t.Fatalf("keypair array: %v, %v", q, err)
	}
	nums[40] ^= 1
	bad, _ := json.Marshal(nums)
	for name, key := range map[string]string{
		"mismatched keypair": string(bad), "short hex": testSolanaSeed[:62], "not hex": strings.Repeat("zz", 32),
		"33 bytes": testSolanaSeed + "00", "array of 32": "[" + strings.TrimSuffix(strings.Repeat("1,", 32), ",") + "]",
		"byte out of range": strings.Replace(string(text), "[", "[256,", 1),
	} {
		if _, err := NewSolanaPayer(key, "http://127.0.0.1:1"); err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), testSolanaSeed[:16]) {
			t.Errorf("%s: the error quotes the key: %v", name, err)
		}
	}
	if _, err := NewSolanaPayer(testSolanaSeed, ""); err == nil {
		t.Error("no RPC URL: no error")
	}
	// The key never shows.
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%v %+v %#v %s", p, p, p, p)} {
		if strings.Contains(s, "0202") || !strings.Contains(s, p.Address()) {
			t.Errorf("formatted payer %q", s)
		}
	}

	dir := t.TempDir()
	f := filepath.Join(dir, "key")
	if err := os.WriteFile(f, []byte(testSolanaSeed+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSolanaPayer(f, "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key file: %v", err)
	}
	if err := os.Chmod(f, 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := LoadSolanaPayer(f, "http://127.0.0.1:1"); err != nil || l.Address() != p.Address() {
		t.Errorf("key file: %v, %v", l, err)
	}
	t.Setenv("TEST_SOLANA_KEY", string(text))
	if e, err := SolanaPayerFromEnv("TEST_SOLANA_KEY", "http://127.0.0.1:1"); err != nil || e.Address() != p.Address() {
		t.Errorf("environment: %v, %v", e, err)
	}
}

func TestSolanaPayerSupports(t *testing.T) {
	p, err := NewSolanaPayer(testSolanaSeed, "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	good := x402.Requirements{Scheme: x402.SchemeExact, Network: x402.NetworkSolana, Amount: "20000", Asset: solanaUSDC(),
		PayTo: ataVectors[1].owner, MaxTimeoutSeconds: 60, Extra: map[string]any{"feePayer": ataVectors[2].owner}}
	if !p.Supports(good) {
		t.Fatalf("does not support %+v: %v", good, func() error { _, err := p.transfer(good); return err }())
	}
	for name, edit := range map[string]func(*x402.Requirements){
		"another scheme":         func(r *x402.Requirements) { r.Scheme = "upto" },
		"an EVM network":         func(r *x402.Requirements) { r.Network = "eip155:8453" },
		"an unknown network":     func(r *x402.Requirements) { r.Network = "solana:unknown" },
		"another asset":          func(r *x402.Requirements) { r.Asset = ataVectors[0].account },
		"no fee payer":           func(r *x402.Requirements) { r.Extra = nil },
		"the payer as fee payer": func(r *x402.Requirements) { r.Extra = map[string]any{"feePayer": p.Address()} },
		"the payer as payee":     func(r *x402.Requirements) { r.PayTo = p.Address() },
		"a bad payee":            func(r *x402.Requirements) { r.PayTo = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" },
		"a zero amount":          func(r *x402.Requirements) { r.Amount = "0" },
		"a leading zero":         func(r *x402.Requirements) { r.Amount = "020000" },
		"over 64 bits":           func(r *x402.Requirements) { r.Amount = "18446744073709551616" },
		"a negative amount":      func(r *x402.Requirements) { r.Amount = "-1" },
	} {
		r := good
		edit(&r)
		if p.Supports(r) {
			t.Errorf("%s: supported", name)
		}
	}
	// Sign refuses the same without asking the cluster (nothing listens on port 1).
	bad := good
	bad.Extra = nil
	if _, err := p.Sign(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "feePayer") {
		t.Errorf("Sign without a fee payer: %v", err)
	}
}

func TestAppendShortVec(t *testing.T) {
	for n, want := range map[int][]byte{0: {0}, 5: {5}, 127: {0x7f}, 128: {0x80, 1}, 300: {0xac, 2}, 16384: {0x80, 0x80, 1}} {
		if got := appendShortVec(nil, n); string(got) != string(want) {
			t.Errorf("shortvec(%d) = %x, want %x", n, got, want)
		}
	}
}
