package receipt

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Algorithm is the only signature algorithm the service uses; receipts and agent cards name it.
const Algorithm = "Ed25519"

// PublicKey is a published verification key. Version is what a receipt's attestation.key_version
// names, so a verifier can pick the right key after the signing key has been rotated.
type PublicKey struct {
	Version string
	Key     ed25519.PublicKey
}

// ParsePublicKey decodes a published key: version plus the base64 of the raw 32-byte Ed25519
// public key, the form the agent card and the key file use. Decoding is strict (standard alphabet,
// canonical padding) so that one key has exactly one spelling.
func ParsePublicKey(version, b64 string) (PublicKey, error) {
	if version == "" {
		return PublicKey{}, errors.New("parse public key: empty key version")
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return PublicKey{}, fmt.Errorf("parse public key %q: not base64: %w", version, err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return PublicKey{}, fmt.Errorf("parse public key %q: %d bytes, want %d", version, len(raw), ed25519.PublicKeySize)
	}
	return PublicKey{Version: version, Key: ed25519.PublicKey(raw)}, nil
}

// String shows the key the way the agent card publishes it, for logs and error messages.
func (p PublicKey) String() string {
	return p.Version + ":" + base64.StdEncoding.EncodeToString(p.Key)
}

// Key is the current signing key. Its private half must never reach a log, an error or a response,
// so it formats and marshals as its public half only.
//
// A key is either local (Private, the 32-byte seed's key) or remote (RemoteKey: the private key
// stays in a signing service, KMS, and each signature is one call to it, which may fail and which
// signs messages up to a size; see Signer).
type Key struct {
	Version string
	Private ed25519.PrivateKey

	remote    Signer            // signs in place of Private, which is then nil
	remotePub ed25519.PublicKey // the remote key's public half
	ctx       context.Context   // the request a remote signature is made for (WithContext)
}

// Signer is an Ed25519 key held outside the process, whose every signature is a call: pure
// Ed25519 (RFC 8032), so its signatures are byte-identical to a local key's over the same bytes.
type Signer interface {
	// Sign signs msg (which it must not keep past the call). It must return an Ed25519 signature
	// of msg under the key's public half, or an error.
	Sign(ctx context.Context, msg []byte) ([]byte, error)
	// MaxMessage is the largest message Sign takes, in bytes; 0 means no limit.
	MaxMessage() int
}

// RemoteKey is the key version whose public half is pub and whose signatures s makes.
func RemoteKey(version string, pub ed25519.PublicKey, s Signer) Key {
	return Key{Version: version, remote: s, remotePub: pub}
}

// IsRemote tells whether the key signs through a Signer (RemoteKey).
func (k Key) IsRemote() bool { return k.remote != nil }

// MaxMessage is the largest message the key signs (see Signer); 0, a local key's, means any.
func (k Key) MaxMessage() int {
	if k.remote == nil {
		return 0
	}
	return k.remote.MaxMessage()
}

// WithContext is the key with the context its remote signatures are made under: a request's, so
// that a signing call ends with the request's deadline. A local key does not use it. Without it a
// remote signature is made under context.Background.
func (k Key) WithContext(ctx context.Context) Key {
	k.ctx = ctx
	return k
}

// Public is the key a verifier needs for receipts this key signs.
func (k Key) Public() PublicKey {
	if k.remote != nil {
		return PublicKey{Version: k.Version, Key: k.remotePub}
	}
	if len(k.Private) != ed25519.PrivateKeySize {
		return PublicKey{Version: k.Version}
	}
	return PublicKey{Version: k.Version, Key: k.Private.Public().(ed25519.PublicKey)}
}

// ErrSignerUnavailable is wrapped by every failure of a remote key's signing call: the message
// was not signed, and the same call may succeed later.
var ErrSignerUnavailable = errors.New("the signing service did not sign")

// ErrMessageTooLarge is what a *MessageTooLargeError is (errors.Is): a message longer than the
// key's MaxMessage, refused before any call; the document must be made smaller to be signed.
var ErrMessageTooLarge = errors.New("the message to sign is over the signing key's limit")

// MessageTooLargeError says how large the signed message was and the key's limit, so that a
// caller can tell how much to leave out: the message is the response's canonical form plus a
// fixed overhead (context, algorithm, key version, timestamp) of Size minus its length.
type MessageTooLargeError struct{ Size, Max int }

func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("%v (%d bytes, the limit is %d)", ErrMessageTooLarge, e.Size, e.Max)
}

// Is makes errors.Is(err, ErrMessageTooLarge) hold.
func (e *MessageTooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }

// signMessage signs msg with the key: locally, or with one call to its remote signer, whose
// answer is checked against the public half before it is used.
func (k Key) signMessage(msg []byte) ([]byte, error) {
	if k.remote == nil {
		return sign(k.Private, msg), nil
	}
	if max := k.remote.MaxMessage(); max > 0 && len(msg) > max {
		return nil, &MessageTooLargeError{Size: len(msg), Max: max}
	}
	ctx := k.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	sig, err := k.remote.Sign(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSignerUnavailable, err)
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(k.remotePub, msg, sig) {
		return nil, fmt.Errorf("%w: the signature does not verify under the key's public half", ErrSignerUnavailable)
	}
	return sig, nil
}

// check tells whether the key can sign; ed25519.Sign panics on a malformed key.
func (k Key) check() error {
	if k.Version == "" {
		return errors.New("signing key has no version")
	}
	if k.remote != nil {
		if len(k.remotePub) != ed25519.PublicKeySize {
			return fmt.Errorf("signing key %q: the remote key's public half is malformed", k.Version)
		}
		return nil
	}
	if len(k.Private) != ed25519.PrivateKeySize {
		return fmt.Errorf("signing key %q is malformed (%d bytes, want %d)", k.Version, len(k.Private), ed25519.PrivateKeySize)
	}
	return nil
}

// String hides the private key: a Key printed by accident shows only its version and public half.
func (k Key) String() string { return "signing key " + k.Public().String() }

// GoString hides the private key from %#v as well.
func (k Key) GoString() string { return "receipt.Key{" + k.Public().String() + "}" }

// Format hides the private key from every fmt verb, not just %v and %s.
func (k Key) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(k.GoString()))
		return
	}
	_, _ = f.Write([]byte(k.String()))
}

// MarshalJSON hides the private key from encoding/json (and so from structured loggers that use it):
// only the version and public key are written.
func (k Key) MarshalJSON() ([]byte, error) {
	p := k.Public()
	return json.Marshal(struct {
		KeyVersion string `json:"keyVersion"`
		Algorithm  string `json:"algorithm"`
		PublicKey  []byte `json:"publicKey"`
	}{p.Version, Algorithm, p.Key})
}

// KeyRing is what the service signs and publishes with: the current key, plus every earlier public
// key so that receipts signed before a rotation stay verifiable from the agent card.
type KeyRing struct {
	Current  Key
	Previous []PublicKey
}

// PublicKeys lists the keys to publish, current first, then the previous ones in order, each
// version once (the first occurrence wins; Validate reports a version bound to two keys).
func (r KeyRing) PublicKeys() []PublicKey {
	out := make([]PublicKey, 0, 1+len(r.Previous))
	seen := make(map[string]bool, 1+len(r.Previous))
	add := func(p PublicKey) {
		if p.Version == "" || seen[p.Version] {
			return
		}
		seen[p.Version] = true
		out = append(out, p)
	}
	if r.Current.Version != "" {
		add(r.Current.Public())
	}
	for _, p := range r.Previous {
		add(p)
	}
	return out
}

// Lookup finds the public key of a version, as a verifier does with attestation.key_version.
func (r KeyRing) Lookup(version string) (PublicKey, bool) {
	return lookup(r.PublicKeys(), version)
}

// Validate reports a ring that would produce unverifiable receipts: a malformed current key, a
// malformed previous key, or one version bound to two different keys. Call it at startup.
func (r KeyRing) Validate() error {
	if err := r.Current.check(); err != nil {
		return fmt.Errorf("key ring: %w", err)
	}
	byVersion := map[string]ed25519.PublicKey{r.Current.Version: r.Current.Public().Key}
	for i, p := range r.Previous {
		if p.Version == "" || len(p.Key) != ed25519.PublicKeySize {
			return fmt.Errorf("key ring: previous key %d (%q) is malformed", i, p.Version)
		}
		if k, ok := byVersion[p.Version]; ok && !k.Equal(p.Key) {
			return fmt.Errorf("key ring: key version %q is bound to two different keys", p.Version)
		}
		byVersion[p.Version] = p.Key
	}
	return nil
}

// lookup is the one place a key version is matched, shared by the ring and the verifier.
func lookup(keys []PublicKey, version string) (PublicKey, bool) {
	for _, p := range keys {
		if p.Version == version {
			return p, true
		}
	}
	return PublicKey{}, false
}
