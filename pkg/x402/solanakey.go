package x402

import (
	"errors"
	"math/big"
)

// SolanaPublicKey decodes a base58 Solana address into its 32-byte Ed25519 public key.
func SolanaPublicKey(address string) ([32]byte, error) {
	var key [32]byte
	if err := checkSolanaAddress(address); err != nil {
		return key, errors.New("solana address " + err.Error())
	}
	b, _ := base58Decode(address)
	copy(key[:], b)
	return key, nil
}

// SolanaAddress is the base58 address of a 32-byte Solana public key (SolanaPublicKey's inverse).
func SolanaAddress(key [32]byte) string { return base58Encode(key[:]) }

// base58Encode is Solana's (Bitcoin's) base58 form of b: addresses and transaction signatures.
func base58Encode(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(b)
	var out []byte
	fifty8, mod := big.NewInt(58), new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, fifty8, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	for range zeros {
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}
