//go:build amd64 && !purego

package receipt

import (
	"crypto/ed25519"
	"crypto/fips140"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// fastSignerBuilt tells the tests which signer this build chooses outside FIPS mode.
const fastSignerBuilt = true

// voiSigner is curve25519-voi, whose private keys have crypto/ed25519's layout (seed, then
// public key).
var voiSigner = signer{
	name: "curve25519-voi",
	sign: func(priv ed25519.PrivateKey, msg []byte) []byte { return voi.Sign(voi.PrivateKey(priv), msg) },
	newKey: func(seed []byte) ed25519.PrivateKey {
		return ed25519.PrivateKey(voi.NewKeyFromSeed(seed))
	},
}

func chooseSigner() signer {
	if fips140.Enabled() {
		return stdlibSigner
	}
	return voiSigner
}
