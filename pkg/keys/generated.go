package keys

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// A generated secret is the signing key as the secret template.yaml creates by default holds it:
// {"kdf":"HKDF-SHA256","secret":"<letters and digits>"}. CloudFormation fills the secret at stack
// creation with Secrets Manager's GenerateSecretString, which writes a random string of chosen
// characters into one member of a JSON template and cannot write the base64 of 32 random bytes;
// so the value is that string, and the seed is derived from it: HKDF-SHA256 (RFC 5869) with the
// string as input keying material, no salt, generatedInfo as info, 32 bytes out. The derivation
// is fixed (a key must come out the same at every cold start of every function, for as long as
// its receipts are checked), so its parameters are constants and "kdf" names them.
const (
	// generatedKDF is the only derivation a generated secret may name.
	generatedKDF = "HKDF-SHA256"
	// generatedInfo is HKDF's info string: it ties the derived bytes to this one use, so the same
	// string used anywhere else yields unrelated key material.
	generatedInfo = "agent-output-verifier ed25519 seed v1"
	// minGeneratedChars is the shortest string taken: 43 characters from the 62 letters and digits
	// hold at least 256 bits if they are random (62^43 > 2^256). The template asks for 64.
	minGeneratedChars = 43
	// maxGeneratedChars is Secrets Manager's own limit on a generated string (PasswordLength).
	maxGeneratedChars = 4096
)

// stringMembers reads value as one JSON object whose members are all strings, each name once
// (jsontext refuses a repeated name), as a generated secret is. Its errors never quote the value.
func stringMembers(value []byte) (map[string]string, error) {
	errForm := errors.New("not a JSON object of string members, each named once")
	dec := jsontext.NewDecoder(bytes.NewReader(value))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, errForm
	}
	out := map[string]string{}
	for dec.PeekKind() != '}' {
		// A token is valid only until the next read, so the name is copied out first.
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, errForm
		}
		name := tok.String()
		v, err := dec.ReadToken()
		if err != nil || v.Kind() != '"' {
			return nil, errForm
		}
		out[name] = v.String()
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, errForm
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errForm
	}
	return out, nil
}

// isGeneratedSecret reports whether value, a JSON object, is a generated secret rather than a key
// file: it has a "kdf" member. Either form is then refused for anything else wrong with it.
func isGeneratedSecret(value []byte) bool {
	m, err := stringMembers(value)
	_, ok := m["kdf"]
	return err == nil && ok
}

// seedFromGenerated derives the 32-byte seed from a generated secret's JSON. Its errors never quote
// the value: they name the member and what is wrong with it.
func seedFromGenerated(value []byte) ([]byte, error) {
	m, err := stringMembers(value)
	if err != nil {
		return nil, fmt.Errorf("generated secret: %w", err)
	}
	// Members other than the two are refused: a value edited into something else by hand must not
	// be read as a key.
	if len(m) != 2 {
		return nil, errors.New("generated secret: want the members kdf and secret and no others")
	}
	secret, ok := m["secret"]
	if !ok {
		return nil, errors.New("generated secret: secret is missing")
	}
	if m["kdf"] != generatedKDF {
		return nil, fmt.Errorf("generated secret: kdf is not %q", generatedKDF)
	}
	if n := len(secret); n < minGeneratedChars || n > maxGeneratedChars {
		return nil, fmt.Errorf("generated secret: secret is %d characters, want %d to %d letters and digits", n, minGeneratedChars, maxGeneratedChars)
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return nil, errors.New("generated secret: secret holds a character other than an ASCII letter or digit")
		}
	}
	seed, err := hkdf.Key(sha256.New, []byte(secret), nil, generatedInfo, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("generated secret: derive the seed: %w", err)
	}
	return seed, nil
}
