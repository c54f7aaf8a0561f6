package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// The attestation contexts of SPEC §6. The context is signed but not sent: it keeps a signature made
// for one kind of response from being accepted as another (a trust score passed off as a
// verification). /verify/deliverable shares ContextVerify.
const (
	ContextVerify     = "json-schema-verifier/verify-schema-attestation/v1"
	ContextScore      = "json-schema-verifier/trust-score-attestation/v1"
	ContextReputation = "json-schema-verifier/reputation-attestation/v1"
)

// attestationName is the response member that carries the signature; it is not itself signed.
const attestationName = "attestation"

// Sign signs msg with the key: the one signing entry point for everything the service signs
// besides attestations (x402 offer and receipt JWS, DSSE envelopes), so that every signature
// comes from the same key source.
//
// A remote key signs with one call under the key's context (WithContext), with the errors of
// Attest: ErrSignerUnavailable for a failed call, ErrMessageTooLarge past its MaxMessage.
func (k Key) Sign(msg []byte) ([]byte, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	return k.signMessage(msg)
}

// Attest signs response and returns it with the attestation appended as its last member:
//
//	"attestation":{"algorithm":"Ed25519","key_version":v,"timestamp":ts,"signature":b64}
//
// response is a JSON object produced by this service, without "attestation", in any member order;
// its bytes are kept as they are. The signature is Ed25519 over the RFC 8785 bytes of
//
//	{"context":context,"algorithm":"Ed25519","key_version":v,"attested_at":timestamp,"response":response}
//
// which are assembled from canonical pieces in sorted key order around the response canonicalized
// once, rather than by building and re-canonicalizing a map. timestamp should equal the response's
// verified_at (SPEC §6).
//
// A remote key (RemoteKey) signs with one call under the key's context (WithContext): a failed
// call is an error wrapping ErrSignerUnavailable, and a message over its MaxMessage one wrapping
// ErrMessageTooLarge, made before any call.
func (k Key) Attest(context string, response []byte, timestamp string) ([]byte, error) {
	return k.attest(context, response, nil, timestamp, nil)
}

// AttestCanonical is Attest for a caller that already holds the response's RFC 8785 form:
// canonical must be exactly Canonicalize(response), and is what gets signed. When canonical is
// nil, the response is canonicalized here.
func (k Key) AttestCanonical(context string, response, canonical []byte, timestamp string) ([]byte, error) {
	return k.attest(context, response, canonical, timestamp, nil)
}

// AttestCanonicalHashed is AttestCanonical that also returns the SHA-256 of the signed
// response's RFC 8785 form (the receipt log's leaf, SPEC §15), hashed from the canonical form
// with the attestation's member in its sorted place, so that the log never parses the answer
// again. ok is false where that cannot be done without a parse (a top-level member name with
// escapes): the caller then hashes Canonicalize of the answer.
func (k Key) AttestCanonicalHashed(context string, response, canonical []byte, timestamp string) (_ []byte, receiptHash [sha256.Size]byte, ok bool, _ error) {
	out, err := k.attest(context, response, canonical, timestamp, &receiptHash)
	return out, receiptHash, err == nil && receiptHash != [sha256.Size]byte{}, err
}

// attest is Attest, AttestCanonical and AttestCanonicalHashed: receiptHash, when not nil, is set
// to the signed response's receipt hash where it can be placed without a parse.
func (k Key) attest(context string, response, canonical []byte, timestamp string, receiptHash *[sha256.Size]byte) ([]byte, error) {
	if err := k.check(); err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	if context == "" || timestamp == "" {
		return nil, errors.New("attest: context and timestamp are required")
	}

	// Keys in RFC 8785 order (UTF-16 code units): algorithm < attested_at < context < key_version < response.
	// The message is needed only until it is signed, so its buffer is pooled.
	bufp := messagePool.Get().(*[]byte)
	defer func() {
		if cap(*bufp) <= maxPooledMessage {
			messagePool.Put(bufp)
		}
	}()
	msg := slices.Grow((*bufp)[:0], len(response)+2*(len(context)+len(timestamp)+len(k.Version))+96)
	defer func() { *bufp = msg }()
	msg = append(msg, `{"algorithm":"`+Algorithm+`","attested_at":`...)
	tsStart := len(msg)
	msg, err := appendString(msg, timestamp)
	if err != nil {
		return nil, fmt.Errorf("attest: timestamp: %w", err)
	}
	tsEnd := len(msg)
	msg = append(msg, `,"context":`...)
	if msg, err = appendString(msg, context); err != nil {
		return nil, fmt.Errorf("attest: context: %w", err)
	}
	msg = append(msg, `,"key_version":`...)
	versionStart := len(msg)
	if msg, err = appendString(msg, k.Version); err != nil {
		return nil, fmt.Errorf("attest: key version: %w", err)
	}
	versionEnd := len(msg)
	msg = append(msg, `,"response":`...)
	bodyStart := len(msg)
	if canonical != nil {
		msg = append(msg, canonical...)
	} else if msg, err = AppendCanonical(msg, response); err != nil {
		return nil, fmt.Errorf("attest: response: %w", err)
	}
	body := msg[bodyStart:]
	if body[0] != '{' {
		return nil, errors.New("attest: response is not a JSON object")
	}
	at, found, exact := topLevelPlace(body, attestationName)
	if found {
		return nil, errors.New("attest: response already has an attestation")
	}
	empty := len(body) == 2
	msg = append(msg, '}')

	sig, err := k.signMessage(msg)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}

	// The response is valid JSON, so its last non-space byte is the closing brace of the object.
	end := len(bytes.TrimRight(response, " \t\r\n")) - 1
	// 172 bytes of fixed text and signature, plus room for escapes in the two strings.
	out := make([]byte, 0, len(response)+2*(len(timestamp)+len(k.Version))+192)
	out = append(out, response[:end]...)
	if !empty {
		out = append(out, ',')
	}
	// The key version and timestamp are copied as the message quoted them, not quoted again.
	out = append(out, `"`+attestationName+`":{"algorithm":"`+Algorithm+`","key_version":`...)
	out = append(out, msg[versionStart:versionEnd]...)
	out = append(out, `,"timestamp":`...)
	out = append(out, msg[tsStart:tsEnd]...)
	out = append(out, `,"signature":"`...)
	out = base64.StdEncoding.AppendEncode(out, sig)
	out = append(out, `"}`...)
	out = append(out, response[end:]...)
	if receiptHash != nil && exact {
		// The signed document's canonical form is assembled in a pooled buffer only to be hashed.
		hp := messagePool.Get().(*[]byte)
		*hp = appendWithAttestation((*hp)[:0], body, at, k.Version, timestamp, sig)
		*receiptHash = sha256.Sum256(*hp)
		if cap(*hp) <= maxPooledMessage {
			messagePool.Put(hp)
		}
	}
	return out, nil
}

// messagePool holds the buffers Attest assembles the signed document in.
var messagePool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledMessage keeps one very large response from pinning its buffer in the pool for good.
const maxPooledMessage = 1 << 20

// appendString appends s as an RFC 8785 string (minimal escaping, UTF-8 kept literal).
func appendString(dst []byte, s string) ([]byte, error) {
	start := len(dst)
	out, err := jsontext.AppendQuote(dst, s)
	if err != nil {
		return out[:start], err
	}
	return out, nil
}

// topLevelPlace finds where a member called name stands, or would stand, among the members of
// the canonical object obj, where name is ASCII and needs no escaping: at is the offset of the
// first member whose name sorts after name (its opening quote), or of the closing brace when none
// does. found says obj has the member. exact is false when a member name with escapes came before
// the answer, whose order a byte comparison cannot tell. Canonical form has no whitespace and
// escapes only '"', '\\' and controls, so a byte scan that skips strings and tracks depth is exact.
func topLevelPlace(obj []byte, name string) (at int, found, exact bool) {
	depth := 0
	key := false
	exact = true
	for i := 0; i < len(obj); i++ {
		switch obj[i] {
		case '{':
			depth++
			key = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i, false, exact
			}
		case ',':
			key = depth == 1
		case '"':
			j := i + 1
			for ; j < len(obj) && obj[j] != '"'; j++ {
				if obj[j] == '\\' {
					j++
				}
			}
			if key {
				k := obj[i+1 : j]
				if string(k) == name {
					return i, true, exact
				}
				// Members come sorted by UTF-16 code units. Against an ASCII name, a member
				// name written without escapes compares the same way byte by byte (at the first
				// difference, a non-ASCII character is above every ASCII one in both orders), so
				// once one sorts after name, name cannot follow.
				if bytes.IndexByte(k, '\\') >= 0 {
					exact = false
				} else if bytes.Compare(k, []byte(name)) > 0 {
					return i, false, exact
				}
			}
			key = false
			i = j
		}
	}
	return len(obj), false, false
}

// appendWithAttestation appends to dst the canonical object obj with the attestation member
// added at offset at (topLevelPlace): the RFC 8785 form of the signed document, its members, like
// obj's, in sorted order. dst must not overlap obj.
func appendWithAttestation(dst, obj []byte, at int, version, timestamp string, sig []byte) []byte {
	dst = append(dst, obj[:at]...)
	if obj[at] == '}' && at > 1 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"`+attestationName+`":{"algorithm":"`+Algorithm+`","key_version":`...)
	dst, _ = appendString(dst, version) // checked by the caller
	dst = append(dst, `,"signature":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, sig)
	dst = append(dst, `","timestamp":`...)
	dst, _ = appendString(dst, timestamp)
	dst = append(dst, '}')
	if obj[at] != '}' {
		dst = append(dst, ',')
	}
	return append(dst, obj[at:]...)
}
