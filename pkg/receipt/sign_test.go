package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/fips140"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// skipIfStdlib skips a test that compares the signer with crypto/ed25519 when they are the same.
func skipIfStdlib(t *testing.T) {
	t.Helper()
	if activeSigner.name == stdlibSigner.name {
		t.Skip("this build signs with crypto/ed25519 itself (not amd64, purego, or FIPS 140 mode)")
	}
}

// equalToStdlib fails t unless the signer's key derivation and signature equal crypto/ed25519's for
// seed and msg, and crypto/ed25519 accepts the signature.
func equalToStdlib(t *testing.T, seed, msg []byte) {
	t.Helper()
	want := ed25519.NewKeyFromSeed(seed)
	priv := NewKeyFromSeed(seed)
	if !bytes.Equal(priv, want) {
		t.Fatalf("seed %x: key %x, crypto/ed25519 derives %x", seed, priv, want)
	}
	sig := sign(priv, msg)
	if wantSig := ed25519.Sign(want, msg); !bytes.Equal(sig, wantSig) {
		t.Fatalf("seed %x, %d-byte message: signature %x, crypto/ed25519 signs %x", seed, len(msg), sig, wantSig)
	}
	if !ed25519.Verify(want.Public().(ed25519.PublicKey), msg, sig) {
		t.Fatalf("seed %x, %d-byte message: crypto/ed25519 refuses the signature", seed, len(msg))
	}
}

// TestSignMatchesStdlib: Ed25519 is deterministic, so the signer's implementation must give
// crypto/ed25519's bytes exactly: for RFC 8032's test vector 1, for random seeds and messages of
// every length around SHA-512's 128-byte blocks, and for envelopes of a receipt's size.
func TestSignMatchesStdlib(t *testing.T) {
	skipIfStdlib(t)
	// RFC 8032 §7.1, TEST 1: the empty message.
	seed := []byte{
		0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
		0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
	}
	wantSig := []byte{
		0xe5, 0x56, 0x43, 0x00, 0xc3, 0x60, 0xac, 0x72, 0x90, 0x86, 0xe2, 0xcc, 0x80, 0x6e, 0x82, 0x8a,
		0x84, 0x87, 0x7f, 0x1e, 0xb8, 0xe5, 0xd9, 0x74, 0xd8, 0x73, 0xe0, 0x65, 0x22, 0x49, 0x01, 0x55,
		0x5f, 0xb8, 0x82, 0x15, 0x90, 0xa3, 0x3b, 0xac, 0xc6, 0x1e, 0x39, 0x70, 0x1c, 0xf9, 0xb4, 0x6b,
		0xd2, 0x5b, 0xf5, 0xf0, 0x59, 0x5b, 0xbe, 0x24, 0x65, 0x51, 0x41, 0x43, 0x8e, 0x7a, 0x10, 0x0b,
	}
	if sig := sign(NewKeyFromSeed(seed), nil); !bytes.Equal(sig, wantSig) {
		t.Fatalf("RFC 8032 test 1: signature %x, want %x", sig, wantSig)
	}
	equalToStdlib(t, seed, nil)

	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for n := range 300 {
		equalToStdlib(t, random(ed25519.SeedSize), random(n))
	}
	for range 200 {
		equalToStdlib(t, random(ed25519.SeedSize), random(1000+rng.IntN(9000)))
	}
	// Constant seeds (hashed before clamping, so nothing special to the scalar; a cheap check of
	// the obvious byte patterns).
	for _, b := range []byte{0x00, 0xff, 0x80, 0x7f, 0x01} {
		equalToStdlib(t, bytes.Repeat([]byte{b}, ed25519.SeedSize), []byte("edge"))
	}
}

// TestAttestEqualAcrossSigners: a receipt signed by either implementation is the same receipt.
// (It swaps the package's signer, so it must not run in parallel with other tests.)
func TestAttestEqualAcrossSigners(t *testing.T) {
	skipIfStdlib(t)
	key := testKey("v1", 7)
	response := []byte(`{"task_id":"t-1","result":"pass","passed":true,"verified_at":"2026-11-30T00:00:00Z"}`)
	attest := func(s signer) []byte {
		t.Helper()
		saved := activeSigner
		activeSigner = s
		defer func() { activeSigner = saved }()
		out, err := key.Attest(ContextVerify, response, "2026-11-30T00:00:00Z")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if a, b := attest(activeSigner), attest(stdlibSigner); !bytes.Equal(a, b) {
		t.Fatalf("%s signs\n%s\ncrypto/ed25519 signs\n%s", activeSigner.name, a, b)
	}
}

// TestFIPSModeSignsWithStdlib: with GODEBUG=fips140=on the signer is crypto/ed25519, Go's FIPS
// 140-3 module; without it, curve25519-voi where this build has it (amd64 without purego). The
// FIPS half runs in a child test process, since the mode is fixed when a process starts.
func TestFIPSModeSignsWithStdlib(t *testing.T) {
	if os.Getenv("RECEIPT_TEST_FIPS_CHILD") == "1" {
		if !fips140.Enabled() || activeSigner.name != stdlibSigner.name {
			t.Fatalf("FIPS 140 mode is %v, and the signer is %s", fips140.Enabled(), activeSigner.name)
		}
		equalToStdlib(t, bytes.Repeat([]byte{3}, ed25519.SeedSize), []byte("fips"))
		return
	}
	if fips140.Enabled() {
		t.Skip("this test process runs in FIPS 140 mode already; the child would test nothing more")
	}
	want := stdlibSigner.name
	if fastSignerBuilt {
		want = "curve25519-voi"
	}
	if activeSigner.name != want {
		t.Fatalf("outside FIPS 140 mode the signer is %s, want %s", activeSigner.name, want)
	}
	if !fastSignerBuilt {
		return // crypto/ed25519 in every mode (and FIPS mode refuses the purego tag)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFIPSModeSignsWithStdlib$", "-test.v")
	cmd.Env = append(os.Environ(), "GODEBUG=fips140=on", "RECEIPT_TEST_FIPS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestFIPSModeSignsWithStdlib")) {
		t.Fatalf("the FIPS child failed: %v\n%s", err, out)
	}
}

// FuzzSignMatchesStdlib: for any seed and message, the signer's key and signature are
// crypto/ed25519's. The seed is the SHA-256 of the fuzzer's first input, so no input is wasted
// on a wrong length.
func FuzzSignMatchesStdlib(f *testing.F) {
	f.Add([]byte("key 7"), []byte(`{"algorithm":"Ed25519"}`))
	f.Add([]byte{}, []byte{})
	f.Add([]byte{0xff}, bytes.Repeat([]byte{0xaa}, 129))
	f.Fuzz(func(t *testing.T, key, msg []byte) {
		skipIfStdlib(t)
		seed := sha256.Sum256(key)
		equalToStdlib(t, seed[:], msg)
	})
}
