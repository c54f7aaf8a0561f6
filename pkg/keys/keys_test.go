package keys

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// fixedRand is a deterministic source of key bytes.
func fixedRand(b byte) *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{b}, 64)) }

// TestGenerate checks that the key comes from the reader it is given, and that it signs.
func TestGenerate(t *testing.T) {
	k, err := Generate("v1", fixedRand(7))
	if err != nil {
		t.Fatal(err)
	}
	if want := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)); !k.Private.Equal(want) || k.Version != "v1" {
		t.Error("key is not derived from the reader's 32 bytes")
	}
	signed, err := k.Attest(receipt.ContextVerify, []byte(`{"a":1}`), "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := receipt.VerifyAttestation(signed, receipt.ContextVerify, []receipt.PublicKey{k.Public()}); err != nil {
		t.Error(err)
	}
	if _, err := Generate("v1", bytes.NewReader(make([]byte, 10))); err == nil {
		t.Error("short reader: no error")
	}
	if _, err := Generate("", fixedRand(1)); err == nil {
		t.Error("empty version: no error")
	}
	a, _ := Generate("a", nil)
	b, _ := Generate("b", nil)
	if a.Private.Equal(b.Private) {
		t.Error("two keys from crypto/rand are equal")
	}
}

// TestFileRoundTrip writes a key file and reads it back: same key, mode 0600, and a second write
// to the same path is refused and leaves the first key in place.
func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signing-key.json")
	k, err := Generate("v1-2026-11a", fixedRand(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, k); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode %v, want 0600", got)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != k.Version || !got.Private.Equal(k.Private) {
		t.Error("read back a different key")
	}

	var f File
	if err := json.Unmarshal(readFile(t, path), &f); err != nil {
		t.Fatal(err)
	}
	if f.Algorithm != "Ed25519" || f.KeyVersion != k.Version || f.PublicKey != b64(k.Public().Key) || f.Seed != b64(k.Private.Seed()) {
		t.Errorf("file contents %+v", f)
	}

	// A key file others may read or write is refused, naming the mode but not the seed.
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), b64(k.Private.Seed())) {
			t.Errorf("mode %04o: %v, want a refusal that says chmod 600", mode, err)
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}

	other, _ := Generate("v2", fixedRand(4))
	err = WriteFile(path, other)
	if err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("overwrite: got %v", err)
	}
	if again, err := ReadFile(path); err != nil || !again.Private.Equal(k.Private) {
		t.Errorf("the first key was replaced (%v)", err)
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir", "k.json"), k); err == nil || !strings.Contains(err.Error(), "write key file") {
		t.Errorf("missing directory: got %v", err)
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "k.json"), receipt.Key{Version: "v"}); err == nil {
		t.Error("malformed key written")
	}
}

// TestReadFileRejects checks every way a key file can be wrong, and that no error message carries
// the seed, whole or in part.
func TestReadFileRejects(t *testing.T) {
	k, _ := Generate("v1", fixedRand(9))
	other, _ := Generate("v1", fixedRand(10))
	seed := b64(k.Private.Seed())
	pub := b64(k.Public().Key)
	file := func(version, alg, pub, seed string) string {
		b, _ := json.Marshal(File{KeyVersion: version, Algorithm: alg, PublicKey: pub, Seed: seed})
		return string(b)
	}
	cases := map[string]string{
		"mismatched public key": file("v1", "Ed25519", b64(other.Public().Key), seed),
		"wrong algorithm":       file("v1", "ECDSA", pub, seed),
		"no version":            file("", "Ed25519", pub, seed),
		"short seed":            file("v1", "Ed25519", pub, seed[:20]),
		"long seed":             file("v1", "Ed25519", pub, b64(append(k.Private.Seed(), 1, 2, 3))),
		"seed not base64":       file("v1", "Ed25519", pub, "!"+seed[1:]),
		"seed padding bits":     file("v1", "Ed25519", pub, seed[:42]+"B="),
		"short public key":      file("v1", "Ed25519", pub[:20], seed),
		"no public key":         file("v1", "Ed25519", "", seed),
		"unknown member":        strings.Replace(file("v1", "Ed25519", pub, seed), `{`, `{"extra":1,`, 1),
		"truncated":             file("v1", "Ed25519", pub, seed)[:60],
		"seed breaks JSON":      `{"keyVersion":"v1","algorithm":"Ed25519","publicKey":"` + pub + `","seed":"` + seed[:10] + "\x01" + seed[10:] + `"}`,
		"trailing data":         file("v1", "Ed25519", pub, seed) + `{}`,
		"seed as number":        `{"keyVersion":"v1","algorithm":"Ed25519","publicKey":"` + pub + `","seed":12345}`,
		"empty":                 ``,
		"huge":                  strings.Repeat(" ", maxFileSize+1),
	}
	dir := t.TempDir()
	for name, contents := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(path)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, path) {
			t.Errorf("%s: error does not name the file: %s", name, msg)
		}
		for i := 0; i+8 <= len(seed); i++ {
			if strings.Contains(msg, seed[i:i+8]) {
				t.Errorf("%s: error contains part of the seed: %s", name, msg)
				break
			}
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// TestFromSeed checks the Secrets Manager / KMS path.
func TestFromSeed(t *testing.T) {
	seed := bytes.Repeat([]byte{5}, 32)
	k, err := FromSeed("v1", seed)
	if err != nil || !k.Private.Equal(ed25519.NewKeyFromSeed(seed)) {
		t.Fatalf("got %v, %v", k, err)
	}
	for _, bad := range [][]byte{nil, seed[:31], append(seed, 1)} {
		if _, err := FromSeed("v1", bad); err == nil {
			t.Errorf("%d-byte seed accepted", len(bad))
		}
	}
	if _, err := FromSeed("", seed); err == nil {
		t.Error("empty version accepted")
	}
}

// TestParsePublicKey checks the published key form: strict base64 of exactly 32 bytes.
func TestParsePublicKey(t *testing.T) {
	k, _ := Generate("v1", fixedRand(2))
	p, err := ParsePublicKey("v1", b64(k.Public().Key))
	if err != nil || !p.Key.Equal(k.Public().Key) || p.Version != "v1" {
		t.Fatalf("got %v, %v", p, err)
	}
	seedKey, err := ParsePublicKey("v1-2026-09c", "d2IHH0/Xduci/5J8IewYmauUvgqf+gFIeCEXDwjHUhw=")
	if err != nil || len(seedKey.Key) != 32 {
		t.Errorf("seed key: %v", err)
	}
	for name, bad := range map[string][2]string{
		"empty version": {"", b64(k.Public().Key)},
		"31 bytes":      {"v", b64(k.Public().Key[:31])},
		"33 bytes":      {"v", b64(append(k.Public().Key, 0))},
		"URL alphabet":  {"v", base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 32))},
		"no padding":    {"v", strings.TrimRight(b64(k.Public().Key), "=")},
		"padding bits":  {"v", "d2IHH0/Xduci/5J8IewYmauUvgqf+gFIeCEXDwjHUhx="},
	} {
		if _, err := ParsePublicKey(bad[0], bad[1]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
