// Package receipt makes and checks the service's receipts: the SHA-256 hashes of the exact data a
// verification saw, and the Ed25519 attestation that binds a response to them (SPEC §5 and §6).
// It is pure: bytes in, bytes out, no I/O, no clock and no randomness of its own.
package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// canonicalOptions are the jsontext options of RFC 8785, held in one slice so that passing them
// does not allocate. Duplicate names and invalid UTF-8 are rejected by jsontext's defaults.
var canonicalOptions = []jsontext.Options{
	jsontext.CanonicalizeRawInts(true),
	jsontext.CanonicalizeRawFloats(true),
	jsontext.ReorderRawObjects(true),
}

// saturated is how jsontext prints a number beyond the float64 range: it clamps instead of failing,
// so its presence in the output is the cue to look for an out-of-range literal in the input.
var saturated = []byte("1.7976931348623157e+308")

// ErrNumberRange reports a JSON number beyond the float64 range (like 1e400). RFC 8785 cannot
// represent it, and silently clamping it would let two different documents share a hash.
var ErrNumberRange = errors.New("number outside the IEEE-754 double range")

// Canonicalize returns the RFC 8785 (JCS) form of one JSON value. It is the fast, strict path used
// for every hash and signature the service makes: it rejects duplicate object names, invalid UTF-8,
// lone surrogates, trailing data and numbers beyond the float64 range, and allocates once for the
// result. raw is never modified.
//
// Two canonicalizers live here on purpose. The signer (Canonicalize, AppendCanonical, Key.Attest)
// uses jsontext, the Go team's JSON v2 tokenizer, because it is fast and allocates once. The
// verifier (VerifyAttestation, VerifyReceipt, RequestHashes) uses encoding/json and
// gowebpki/jcs, an unrelated implementation of RFC 8785, so that a bug in one canonicalizer cannot
// make a bad receipt look good: tests and a fuzz target keep the two byte-equal.
func Canonicalize(raw []byte) ([]byte, error) {
	return AppendCanonical(nil, raw)
}

// AppendCanonical appends the canonical form of raw to dst, so that larger canonical documents (the
// request_hash form, the signed envelope) can be assembled from canonical pieces without copying
// them again. On error dst is returned unchanged in length.
func AppendCanonical(dst, raw []byte) ([]byte, error) {
	start := len(dst)
	out, err := jsontext.AppendFormat(dst, raw, canonicalOptions...)
	if err != nil {
		return out[:start], fmt.Errorf("canonicalize JSON: %w", err)
	}
	if bytes.Contains(out[start:], saturated) {
		if err := checkNumberRange(raw); err != nil {
			return out[:start], fmt.Errorf("canonicalize JSON: %w", err)
		}
	}
	return out, nil
}

// checkNumberRange walks raw (already known to be valid JSON) and fails on the first number that
// does not fit a float64. It runs only when the canonical output shows a saturated number, so the
// common path pays nothing for it.
func checkNumberRange(raw []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if tok.Kind() != '0' {
			continue
		}
		if _, err := strconv.ParseFloat(tok.String(), 64); err != nil {
			return ErrNumberRange
		}
	}
}

// Digest is the hash every receipt field carries: lowercase hex SHA-256 of canonical bytes.
func Digest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	// Encoded on the stack: hex.EncodeToString allocates twice, and every verification makes
	// three or four digests.
	var buf [2 * sha256.Size]byte
	hex.Encode(buf[:], sum[:])
	return string(buf[:])
}

// Hashes are the four receipt hashes of SPEC §5, each a Digest. They tie a receipt to the exact
// output, schema, rules and request that were verified; Request is empty where not computed.
type Hashes struct{ Output, Schema, Rules, Request string }
