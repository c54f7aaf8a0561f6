package x402

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrMalformedPayment is wrapped by PaymentID's errors: the payload is not a well-formed exact
// payment, and the caller answers payment_invalid.
var ErrMalformedPayment = errors.New("malformed payment payload")

// PaymentID is the replay key of a payment, reserved in the store before any work is done so
// that one payment buys one call.
//
// EVM exact (EIP-3009): network/asset/from/nonce, lower-cased. The token contract itself refuses
// a second use of (from, nonce), so this is exactly the chain's own notion of "the same payment",
// whatever signature encoding the client chose.
//
// Solana exact: network/<hex SHA-256 of the transaction's message>, the message being the part
// the client signs.
// The signature slots are left out on purpose: the fee payer's slot is still empty when the
// client sends the transaction, and filling it with other bytes would not invalidate the
// client's signature, so hashing the whole transaction would let one payment pass under many ids.
//
// A payload that does not have its scheme's shape is an error wrapping ErrMalformedPayment.
func PaymentID(p PaymentPayload) (string, error) {
	if p.Accepted.Scheme != SchemeExact {
		return "", fmt.Errorf("%w: scheme is not %q", ErrMalformedPayment, SchemeExact)
	}
	family, _, _ := strings.Cut(p.Accepted.Network, ":")
	switch family {
	case familyEVM:
		return evmPaymentID(p)
	case familySolana:
		return solanaPaymentID(p)
	}
	return "", fmt.Errorf("%w: unsupported network family", ErrMalformedPayment)
}

func evmPaymentID(p PaymentPayload) (string, error) {
	auth, ok := p.Payload["authorization"].(map[string]any)
	if !ok {
		return "", fmt.Errorf("%w: payload.authorization is missing (only EIP-3009 payments are accepted)", ErrMalformedPayment)
	}
	from, _ := auth["from"].(string)
	nonce, _ := auth["nonce"].(string)
	if !isHex(from, 20) {
		return "", fmt.Errorf("%w: payload.authorization.from is not an address", ErrMalformedPayment)
	}
	if !isHex(nonce, 32) {
		return "", fmt.Errorf("%w: payload.authorization.nonce is not 32 bytes of hex", ErrMalformedPayment)
	}
	if _, ok := p.Payload["signature"].(string); !ok {
		return "", fmt.Errorf("%w: payload.signature is missing", ErrMalformedPayment)
	}
	return strings.ToLower(p.Accepted.Network + "/" + p.Accepted.Asset + "/" + from + "/" + nonce), nil
}

func solanaPaymentID(p PaymentPayload) (string, error) {
	tx, ok := p.Payload["transaction"].(string)
	if !ok || tx == "" {
		return "", fmt.Errorf("%w: payload.transaction is missing", ErrMalformedPayment)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(tx)
	if err != nil {
		return "", fmt.Errorf("%w: payload.transaction is not standard base64", ErrMalformedPayment)
	}
	msg, err := solanaMessage(raw)
	if err != nil {
		return "", fmt.Errorf("%w: payload.transaction %w", ErrMalformedPayment, err)
	}
	sum := sha256.Sum256(msg)
	return p.Accepted.Network + "/" + hex.EncodeToString(sum[:]), nil
}

// solanaMessage returns the signed message of a serialized Solana transaction: a compact-u16
// count of signatures, that many 64-byte signatures, then the message.
func solanaMessage(tx []byte) ([]byte, error) {
	if len(tx) > maxSolanaTransaction {
		return nil, fmt.Errorf("is larger than %d bytes", maxSolanaTransaction)
	}
	n, size, err := compactU16(tx)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("has no signatures")
	}
	start := size + 64*n
	if start >= len(tx) {
		return nil, errors.New("is truncated")
	}
	return tx[start:], nil
}

// compactU16 reads Solana's shortvec length: 7 bits per byte, at most 3 bytes.
func compactU16(b []byte) (value, size int, err error) {
	for i := 0; i < 3; i++ {
		if i >= len(b) {
			return 0, 0, errors.New("is truncated")
		}
		value |= int(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if i > 0 && b[i] == 0 {
				return 0, 0, errors.New("has a non-canonical length")
			}
			return value, i + 1, nil
		}
	}
	return 0, 0, errors.New("has an overlong length")
}

// isHex tells whether s is 0x followed by exactly n bytes of hex.
func isHex(s string, n int) bool {
	if len(s) != 2+2*n || (s[:2] != "0x" && s[:2] != "0X") {
		return false
	}
	_, err := hex.DecodeString(s[2:])
	return err == nil
}
