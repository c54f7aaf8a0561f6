package receipt

import "crypto/ed25519"

// The signer's Ed25519 on amd64 is curve25519-voi's: its AVX2 code makes a signature cheaper than
// crypto/ed25519's there, and signing is most of a verification's cost. On
// other processors (the arm64 Lambda functions), with the purego build tag, and in FIPS 140-3
// mode (GODEBUG=fips140=on), the signer is crypto/ed25519: curve25519-voi's portable code is no
// faster than it, and FIPS mode asks for Go's own module. Ed25519 signing is deterministic
// (RFC 8032), so both give the same bytes for the same key and message. Receipts are always
// checked with crypto/ed25519 (Check, VerifyAttestation), just as they are canonicalized with
// gowebpki/jcs, so outside FIPS mode signer and verifier share no implementation.

// signer is one Ed25519 implementation: key derivation from a seed and signing.
type signer struct {
	name   string
	sign   func(priv ed25519.PrivateKey, msg []byte) []byte
	newKey func(seed []byte) ed25519.PrivateKey
}

// stdlibSigner is crypto/ed25519.
var stdlibSigner = signer{name: "crypto/ed25519", sign: ed25519.Sign, newKey: ed25519.NewKeyFromSeed}

// activeSigner signs every attestation; chooseSigner is per platform (sign_voi.go, sign_stdlib.go).
var activeSigner = chooseSigner()

// sign is Ed25519 over msg with priv, a well-formed private key (see Key.check).
func sign(priv ed25519.PrivateKey, msg []byte) []byte { return activeSigner.sign(priv, msg) }

// NewKeyFromSeed is the Ed25519 private key of a 32-byte seed (RFC 8032), as crypto/ed25519's
// NewKeyFromSeed computes it; it panics if the seed is not 32 bytes. Deriving with the signer's
// implementation spares a Lambda function's start the building of a second base-point table.
func NewKeyFromSeed(seed []byte) ed25519.PrivateKey { return activeSigner.newKey(seed) }
