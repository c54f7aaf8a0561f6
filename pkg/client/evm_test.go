package client

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// eip712Vector is one case of testdata/eip712-vectors.json, recorded with viem by
// testdata/record-eip712.mjs.
type eip712Vector struct {
	Why        string `json:"why"`
	PrivateKey string `json:"privateKey"`
	Address    string `json:"address"`
	Domain     struct {
		Name              string `json:"name"`
		Version           string `json:"version"`
		ChainID           int64  `json:"chainId"`
		VerifyingContract string `json:"verifyingContract"`
	} `json:"domain"`
	Message struct {
		From, To, Value, ValidAfter, ValidBefore, Nonce string
	} `json:"message"`
	DomainSeparator string `json:"domainSeparator"`
	StructHash      string `json:"structHash"`
	Digest          string `json:"digest"`
	Signature       string `json:"signature"`
}

func readVectors(t *testing.T) []eip712Vector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "eip712-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		RecordedWith string         `json:"recordedWith"`
		Vectors      []eip712Vector `json:"vectors"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) == 0 || !strings.HasPrefix(f.RecordedWith, "viem@") {
		t.Fatalf("no vectors recorded with viem: %+v", f)
	}
	return f.Vectors
}

func bigInt(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad integer %q", s)
	}
	return n
}

// The EIP-712 encoding against viem's hashDomain, hashStruct and hashTypedData, and the
// signature against viem's signTypedData: both sign deterministically (RFC 6979), so the bytes
// must be equal.
func TestEIP712Vectors(t *testing.T) {
	for _, v := range readVectors(t) {
		t.Run(v.Why, func(t *testing.T) {
			p, err := NewEVMPayer(v.PrivateKey)
			if err != nil {
				t.Fatal(err)
			}
			if p.Address() != v.Address {
				t.Errorf("address = %s, want %s", p.Address(), v.Address)
			}
			var nonce [32]byte
			n, err := hex.DecodeString(strings.TrimPrefix(v.Message.Nonce, "0x"))
			if err != nil || len(n) != 32 {
				t.Fatalf("nonce %q", v.Message.Nonce)
			}
			copy(nonce[:], n)
			a := TransferAuthorization{
				TokenName: v.Domain.Name, TokenVersion: v.Domain.Version, ChainID: big.NewInt(v.Domain.ChainID),
				Token: v.Domain.VerifyingContract, From: v.Message.From, To: v.Message.To,
				Value: bigInt(t, v.Message.Value), ValidAfter: bigInt(t, v.Message.ValidAfter),
				ValidBefore: bigInt(t, v.Message.ValidBefore), Nonce: nonce,
			}
			for _, c := range []struct {
				name string
				f    func() ([32]byte, error)
				want string
			}{{"domain separator", a.DomainSeparator, v.DomainSeparator}, {"struct hash", a.StructHash, v.StructHash}, {"digest", a.Digest, v.Digest}} {
				got, err := c.f()
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if g := "0x" + hex.EncodeToString(got[:]); g != c.want {
					t.Errorf("%s = %s, want %s", c.name, g, c.want)
				}
			}
			sig, err := p.SignAuthorization(a)
			if err != nil {
				t.Fatal(err)
			}
			if sig != v.Signature {
				t.Errorf("signature = %s\nwant        %s", sig, v.Signature)
			}
		})
	}
}

// A signature recovers to the payer's address, as the token's ecrecover does.
func TestSignatureRecoversToPayer(t *testing.T) {
	v := readVectors(t)[0]
	p, err := NewEVMPayer(v.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return time.Unix(1_790_000_000, 0) }
	p.rand = bytes.NewReader(bytes.Repeat([]byte{7}, 32))
	r := x402.Requirements{Scheme: "exact", Network: "eip155:8453", Amount: "20000", Asset: strings.ToLower(v.Domain.VerifyingContract),
		PayTo: v.Message.To, MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}
	payload, err := p.Sign(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	auth := payload["authorization"].(map[string]any)
	want := map[string]any{"from": v.Address, "to": v.Message.To, "value": "20000", "validAfter": "0",
		"validBefore": "1790000060", "nonce": "0x" + strings.Repeat("07", 32)}
	for k, w := range want {
		if auth[k] != w {
			t.Errorf("authorization.%s = %v, want %v", k, auth[k], w)
		}
	}
	a, err := p.authorization(r, [32]byte(bytes.Repeat([]byte{7}, 32)), 1_790_000_000)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := a.Digest()
	sig, _ := hex.DecodeString(strings.TrimPrefix(payload["signature"].(string), "0x"))
	if len(sig) != 65 || (sig[64] != 27 && sig[64] != 28) {
		t.Fatalf("signature %x is not r||s||v with v 27 or 28", sig)
	}
	pub, _, err := ecdsa.RecoverCompact(append([]byte{sig[64]}, sig[:64]...), digest[:])
	if err != nil {
		t.Fatal(err)
	}
	h := x402.Keccak256(pub.SerializeUncompressed()[1:])
	if got, _ := x402.ChecksumAddress("0x" + hex.EncodeToString(h[12:])); got != v.Address {
		t.Errorf("recovered %s, want %s", got, v.Address)
	}
}

func TestEVMPayerSupports(t *testing.T) {
	p, err := NewEVMPayer(readVectors(t)[0].PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	good := x402.Requirements{Scheme: "exact", Network: "eip155:8453", Amount: "20000", Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
		PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}
	if !p.Supports(good) {
		t.Fatal("a Base USDC requirement is not supported")
	}
	for name, edit := range map[string]func(r *x402.Requirements){
		"scheme":           func(r *x402.Requirements) { r.Scheme = "upto" },
		"solana":           func(r *x402.Requirements) { r.Network = x402.NetworkSolana },
		"chain id":         func(r *x402.Requirements) { r.Network = "eip155:0x2105" },
		"no domain name":   func(r *x402.Requirements) { r.Extra = map[string]any{"version": "2"} },
		"permit2":          func(r *x402.Requirements) { r.Extra["assetTransferMethod"] = "permit2" },
		"bad asset":        func(r *x402.Requirements) { r.Asset = "0x1234" },
		"bad checksum":     func(r *x402.Requirements) { r.PayTo = "0x70997970c51812dc3A010C7d01b50e0d17dc79C8" },
		"amount":           func(r *x402.Requirements) { r.Amount = "0.02" },
		"zero amount":      func(r *x402.Requirements) { r.Amount = "0" },
		"huge amount":      func(r *x402.Requirements) { r.Amount = strings.Repeat("9", 80) },
		"no timeout":       func(r *x402.Requirements) { r.MaxTimeoutSeconds = 0 },
		"leading-0 chain":  func(r *x402.Requirements) { r.Network = "eip155:08453" },
		"negative timeout": func(r *x402.Requirements) { r.MaxTimeoutSeconds = -5 },
	} {
		r := good
		r.Extra = map[string]any{"name": "USD Coin", "version": "2"}
		edit(&r)
		if p.Supports(r) {
			t.Errorf("%s: supported", name)
		}
	}
	// A server asking for a long-lived authorization gets one that expires soon anyway.
	long := good
	long.MaxTimeoutSeconds = 86400
	a, err := p.authorization(long, [32]byte{}, 1000)
	if err != nil || a.ValidBefore.Int64() != 1000+maxAuthorizationSeconds {
		t.Fatalf("validBefore %v, %v", a.ValidBefore, err)
	}
}

func TestEVMPayerKeys(t *testing.T) {
	v := readVectors(t)[0]
	for _, bad := range []string{"", "0x", "zz", v.PrivateKey[:64], v.PrivateKey + "00",
		"0x" + strings.Repeat("0", 64), "0x" + strings.Repeat("f", 64)} {
		if _, err := NewEVMPayer(bad); err == nil {
			t.Errorf("NewEVMPayer(%q) accepted", bad)
		}
	}
	for _, good := range []string{v.PrivateKey, strings.TrimPrefix(v.PrivateKey, "0x"), "  " + v.PrivateKey + "\n"} {
		if p, err := NewEVMPayer(good); err != nil || p.Address() != v.Address {
			t.Errorf("NewEVMPayer(%q) = %v, %v", good, p, err)
		}
	}

	dir := t.TempDir()
	f := filepath.Join(dir, "pay.key")
	os.WriteFile(f, []byte(v.PrivateKey+"\n"), 0o600)
	p, err := LoadEVMPayer(f)
	if err != nil || p.Address() != v.Address {
		t.Fatalf("LoadEVMPayer: %v, %v", p, err)
	}
	os.Chmod(f, 0o644)
	if _, err := LoadEVMPayer(f); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable key file was accepted: %v", err)
	}
	t.Setenv("TEST_PAY_KEY", v.PrivateKey)
	if p, err := EVMPayerFromEnv("TEST_PAY_KEY"); err != nil || p.Address() != v.Address {
		t.Errorf("EVMPayerFromEnv: %v, %v", p, err)
	}
	if _, err := EVMPayerFromEnv("TEST_PAY_KEY_UNSET"); err == nil {
		t.Error("an unset variable was accepted")
	}

	// The key never shows in any format.
	secret := strings.TrimPrefix(v.PrivateKey, "0x")
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		if s := fmt.Sprintf(format, p); strings.Contains(strings.ToLower(s), secret) || !strings.Contains(s, v.Address) {
			t.Errorf("%s shows %q", format, s)
		}
	}
	//lint:ignore SA9005 the guard is that EVMPayer keeps no exported field and no marshaler: one added later must not show the key.
	if b, _ := json.Marshal(p); strings.Contains(string(b), secret) {
		t.Errorf("JSON shows the key: %s", b)
	}
}
