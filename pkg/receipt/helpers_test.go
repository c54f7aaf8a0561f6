package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// seedDir holds the seed's files, shared by the whole project.
var seedDir = filepath.Join("..", "..", "testdata", "seed")

// readFile returns a test file's bytes or stops the test.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readSeed reads one of the seed's files.
func readSeed(t testing.TB, name string) []byte {
	t.Helper()
	return readFile(t, filepath.Join(seedDir, name))
}

// seedKeys is the seed's published key, as the agent card lists it.
func seedKeys(t testing.TB) []PublicKey {
	t.Helper()
	var f struct{ KeyVersion, Algorithm, PublicKey string }
	if err := json.Unmarshal(readSeed(t, "public-key-v1-2026-09c.json"), &f); err != nil {
		t.Fatal(err)
	}
	p, err := ParsePublicKey(f.KeyVersion, f.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return []PublicKey{p}
}

// stripAttestation cuts the attestation member (and the comma before it) out of a signed response,
// keeping every other byte, which is the response as the service had it before signing.
func stripAttestation(t testing.TB, signed []byte) []byte {
	t.Helper()
	dec := jsontext.NewDecoder(bytes.NewReader(signed))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		t.Fatalf("not an object: %v", err)
	}
	first := true
	for dec.PeekKind() != '}' {
		start := dec.InputOffset()
		tok, err := dec.ReadToken()
		if err != nil {
			t.Fatal(err)
		}
		name := tok.String()
		if _, err := dec.ReadValue(); err != nil {
			t.Fatal(err)
		}
		if name == "attestation" {
			if first {
				t.Fatal("attestation is the first member; the helper handles it only after another one")
			}
			out := append([]byte{}, signed[:start]...)
			return append(out, signed[dec.InputOffset():]...)
		}
		first = false
	}
	t.Fatal("no attestation member")
	return nil
}

// testKey is a fixed signing key, so test receipts are reproducible.
func testKey(version string, seedByte byte) Key {
	seed := bytes.Repeat([]byte{seedByte}, 32)
	return Key{Version: version, Private: ed25519.NewKeyFromSeed(seed)}
}

// b64 is the standard base64 the card and the key file use.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
