package receipt

import (
	"crypto/ed25519"
	"crypto/fips140"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// The signer's Ed25519 is curve25519-voi's, and the verifier's is crypto/ed25519's. Ed25519
// signing is deterministic (RFC 8032), so both give the same bytes for the same key and message;
// curve25519-voi's larger base-point table makes a signature about a third cheaper, and signing is
// most of a verification's cost. Receipts are checked with crypto/ed25519 (Check, VerifyAttestation),
// so signer and verifier never share one implementation, as they never share one canonicalizer.
// In FIPS 140-3 mode (GODEBUG=fips140=on) both halves use crypto/ed25519, the validated module.

// stdlibSigning is whether keys are derived and messages signed with crypto/ed25519.
var stdlibSigning = fips140.Enabled()

// sign is Ed25519 over msg with priv, a well-formed private key (see Key.check).
func sign(priv ed25519.PrivateKey, msg []byte) []byte {
	if stdlibSigning {
		return ed25519.Sign(priv, msg)
	}
	return voi.Sign(voi.PrivateKey(priv), msg)
}

// NewKeyFromSeed is the Ed25519 private key of a 32-byte seed (RFC 8032), as crypto/ed25519's
// NewKeyFromSeed computes it; it panics if the seed is not 32 bytes. Deriving with the signer's
// implementation spares a Lambda function's start the building of a second base-point table.
func NewKeyFromSeed(seed []byte) ed25519.PrivateKey {
	if stdlibSigning {
		return ed25519.NewKeyFromSeed(seed)
	}
	return ed25519.PrivateKey(voi.NewKeyFromSeed(seed))
}
