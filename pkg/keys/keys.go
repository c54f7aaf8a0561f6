// Package keys is where signing keys come from and go to: generation, the local key file that
// `verifier keygen` writes (and `make dev` creates on first run), a bare seed, and the AWS sources
// (Secrets Manager, KMS). The private seed never appears in an error message: errors name the
// source and what was wrong, never the bytes.
package keys

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// maxFileSize bounds what ReadFile reads: a key file is about 200 bytes, so anything much larger is
// the wrong file, and reading it whole would waste memory.
const maxFileSize = 64 << 10

// fileMode keeps the key file readable by its owner only, as ssh does for private keys.
const fileMode = 0o600

// File is the JSON form of a key file. PublicKey is redundant with Seed on purpose: it lets a person
// see which key a file holds, and lets ReadFile detect a file whose halves were mixed up.
type File struct {
	KeyVersion string `json:"keyVersion"`
	Algorithm  string `json:"algorithm"`
	PublicKey  string `json:"publicKey"`
	Seed       string `json:"seed"`
}

// Generate makes a new signing key called version from 32 bytes read from rand (crypto/rand when
// nil). Taking the randomness as a parameter keeps tests deterministic.
func Generate(version string, rand io.Reader) (receipt.Key, error) {
	if version == "" {
		return receipt.Key{}, errors.New("generate key: empty key version")
	}
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return receipt.Key{}, fmt.Errorf("generate key %q: %w", version, err)
	}
	return receipt.Key{Version: version, Private: priv}, nil
}

// WriteFile writes k to a new key file at path with mode 0600. It refuses to overwrite an existing
// file, because replacing a signing key by accident would orphan every receipt signed with it.
func WriteFile(path string, k receipt.Key) error {
	if k.Version == "" || len(k.Private) != ed25519.PrivateKeySize {
		return fmt.Errorf("write key file %s: the key is malformed", path)
	}
	data, err := json.MarshalIndent(File{
		KeyVersion: k.Version,
		Algorithm:  receipt.Algorithm,
		PublicKey:  base64.StdEncoding.EncodeToString(k.Public().Key),
		Seed:       base64.StdEncoding.EncodeToString(k.Private.Seed()),
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("write key file %s: %w", path, err)
	}
	data = append(data, '\n')

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("write key file %s: the file exists; refusing to overwrite a signing key", path)
		}
		return fmt.Errorf("write key file: %w", err)
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("write key file: %w", err)
	}
	return nil
}

// ReadFile loads a key file written by WriteFile. It checks the algorithm, the sizes, and that
// publicKey is the public half of seed, so a damaged or hand-edited file fails at startup instead of
// producing receipts nobody can verify.
func ReadFile(path string) (receipt.Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return receipt.Key{}, fmt.Errorf("read key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return receipt.Key{}, fmt.Errorf("read key file: %w", err)
	}
	// As ssh does with its keys: a seed others could read may already be someone else's.
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return receipt.Key{}, fmt.Errorf("read key file %s: others may read or change it (mode %04o); chmod 600 it", path, perm)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return receipt.Key{}, fmt.Errorf("read key file: %w", err)
	}
	if len(data) > maxFileSize {
		return receipt.Key{}, fmt.Errorf("read key file %s: larger than %d bytes, not a key file", path, maxFileSize)
	}
	k, err := Parse(data)
	if err != nil {
		return receipt.Key{}, fmt.Errorf("read key file %s: %w", path, err)
	}
	return k, nil
}

// Parse decodes the contents of a key file (the same checks as ReadFile), for key files that arrive
// by other means than a path. Its errors never quote the input.
func Parse(data []byte) (receipt.Key, error) {
	var kf File
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		// encoding/json's messages can quote a character of the input, which could be the seed's.
		return receipt.Key{}, errors.New("not a key file: malformed JSON or unknown members (want keyVersion, algorithm, publicKey, seed)")
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return receipt.Key{}, errors.New("not a key file: data after the JSON object")
	}
	if kf.KeyVersion == "" {
		return receipt.Key{}, errors.New("keyVersion is missing")
	}
	if kf.Algorithm != receipt.Algorithm {
		return receipt.Key{}, fmt.Errorf("algorithm is %q, want %q", kf.Algorithm, receipt.Algorithm)
	}
	seed, err := base64.StdEncoding.Strict().DecodeString(kf.Seed)
	if err != nil || len(seed) != ed25519.SeedSize {
		return receipt.Key{}, fmt.Errorf("seed is not the base64 of %d bytes", ed25519.SeedSize)
	}
	pub, err := ParsePublicKey(kf.KeyVersion, kf.PublicKey)
	if err != nil {
		return receipt.Key{}, err
	}
	k, err := FromSeed(kf.KeyVersion, seed)
	if err != nil {
		return receipt.Key{}, err
	}
	if !k.Public().Key.Equal(pub.Key) {
		return receipt.Key{}, fmt.Errorf("publicKey of %q does not match its seed", kf.KeyVersion)
	}
	return k, nil
}

// FromSeed makes the signing key version from its 32-byte Ed25519 seed, the form Secrets Manager
// holds (base64-decoded) and a KMS decryption yields. The error never contains the seed.
func FromSeed(version string, seed []byte) (receipt.Key, error) {
	if version == "" {
		return receipt.Key{}, errors.New("key from seed: empty key version")
	}
	if len(seed) != ed25519.SeedSize {
		return receipt.Key{}, fmt.Errorf("key from seed %q: seed is %d bytes, want %d", version, len(seed), ed25519.SeedSize)
	}
	return receipt.Key{Version: version, Private: receipt.NewKeyFromSeed(seed)}, nil
}

// ParsePublicKey decodes a published key (base64 of the raw 32 bytes) under version, as configured
// for a previous key of the ring or listed in an agent card.
func ParsePublicKey(version, b64 string) (receipt.PublicKey, error) {
	return receipt.ParsePublicKey(version, b64)
}
