package x402

import "golang.org/x/crypto/sha3"

// Keccak256 is the original Keccak-256 (padding 0x01, not SHA3-256's 0x06), Ethereum's hash: it
// makes EIP-55 address checksums here and, in pkg/client, EIP-712 digests and addresses. It is
// golang.org/x/crypto/sha3's legacy Keccak, the standard library having only SHA3; TestKeccak256
// holds it to viem's vectors, and the @x402/evm facilitator in the tests checks every payment
// pkg/client signs with it.
func Keccak256(data []byte) [32]byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(data)
	var out [32]byte
	h.Sum(out[:0])
	return out
}
