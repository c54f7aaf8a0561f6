package x402

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ExtPaymentIdentifier is the x402 payment-identifier extension's key (SPEC §16): a client puts
// an idempotency key in its PaymentPayload's extensions["payment-identifier"].info.id and sends
// the same one when it retries, so that a retry is answered once and paid for once.
const ExtPaymentIdentifier = "payment-identifier"

// The extension's id: 16 to 128 characters of [A-Za-z0-9_-], as the x402 specification gives it.
const (
	minPaymentIdentifier = 16
	maxPaymentIdentifier = 128
)

// PaymentIdentifierExtension is what a 402 answer, and /.well-known/x402, advertise under
// extensions["payment-identifier"]: empty info and the schema of the id, as the extension's
// specification writes it.
func PaymentIdentifierExtension() map[string]any {
	return map[string]any{
		"info": map[string]any{},
		"schema": map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type":    "object",
			"properties": map[string]any{
				"id": map[string]any{"type": "string", "minLength": minPaymentIdentifier, "maxLength": maxPaymentIdentifier,
					"pattern": "^[A-Za-z0-9_-]+$"},
			},
		},
	}
}

// PaymentIdentifier reads the payment-identifier extension's id from a payment: ok is false when
// the payment carries none. An id that is not 16 to 128 characters of [A-Za-z0-9_-] is an error
// wrapping ErrMalformedPayment (the caller answers payment_invalid); the error never repeats it.
func PaymentIdentifier(p PaymentPayload) (id string, ok bool, err error) {
	ext, present := p.Extensions[ExtPaymentIdentifier]
	if !present {
		return "", false, nil
	}
	e, _ := ext.(map[string]any)
	info, _ := e["info"].(map[string]any)
	raw, present := info["id"]
	if !present {
		return "", false, nil // the advertisement echoed without an id: no idempotency asked for
	}
	id, _ = raw.(string)
	if len(id) < minPaymentIdentifier || len(id) > maxPaymentIdentifier {
		return "", false, fmt.Errorf("%w: extensions.payment-identifier.info.id is not %d to %d characters", ErrMalformedPayment, minPaymentIdentifier, maxPaymentIdentifier)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", false, fmt.Errorf("%w: extensions.payment-identifier.info.id holds a character other than letters, digits, - and _", ErrMalformedPayment)
		}
	}
	return id, true, nil
}

// PayerOf is the payer a payment names, read from the payment itself without asking the
// facilitator: on EVM the EIP-3009 authorization's from (lower-case), on Solana the account
// whose signature the client put in the transaction (the signer in the first filled signature
// slot, in base58). A payment identifier's kept answer goes only to a payment that names the
// payer of the first (SPEC §16). A payload without its scheme's shape is an error wrapping
// ErrMalformedPayment.
func PayerOf(p PaymentPayload) (string, error) {
	if _, err := PaymentID(p); err != nil {
		return "", err
	}
	family, _, _ := strings.Cut(p.Accepted.Network, ":")
	if family == familyEVM {
		auth, _ := p.Payload["authorization"].(map[string]any)
		from, _ := auth["from"].(string)
		return strings.ToLower(from), nil // PaymentID checked it is an address
	}
	tx, _ := p.Payload["transaction"].(string)
	raw, _ := base64.StdEncoding.Strict().DecodeString(tx) // PaymentID checked it decodes
	signer, err := solanaSigner(raw)
	if err != nil {
		return "", fmt.Errorf("%w: payload.transaction %w", ErrMalformedPayment, err)
	}
	return signer, nil
}

// solanaSigner is the account key, in base58, of the first filled signature slot of a
// serialized transaction: signature i is account key i's.
func solanaSigner(tx []byte) (string, error) {
	msg, err := solanaMessage(tx)
	if err != nil {
		return "", err
	}
	n, size, _ := compactU16(tx)
	slot := -1
	for i := range n {
		if slices.ContainsFunc(tx[size+64*i:size+64*(i+1)], func(b byte) bool { return b != 0 }) {
			slot = i
			break
		}
	}
	if slot < 0 {
		return "", errors.New("has no signature")
	}
	if len(msg) > 0 && msg[0]&0x80 != 0 {
		msg = msg[1:] // a versioned message's prefix
	}
	if len(msg) < 3 {
		return "", errors.New("is truncated")
	}
	keys, ksize, err := compactU16(msg[3:])
	if err != nil {
		return "", err
	}
	start := 3 + ksize + 32*slot
	if slot >= keys || start+32 > len(msg) {
		return "", errors.New("has a signature without its account key")
	}
	return base58Encode(msg[start : start+32]), nil
}

// SettledBefore tells whether a failed settlement's reason says the payment had been settled
// already: the chain refuses the replay of an EIP-3009 authorization whose nonce was used
// (@x402/evm's invalid_exact_evm_nonce_already_used), and @x402/svm refuses a transaction it
// settled (duplicate_settlement). A payment identifier whose first settlement's outcome was lost
// is resolved by settling that payment again: this answer means it had been paid.
func SettledBefore(reason string) bool {
	return reason == "invalid_exact_evm_nonce_already_used" || reason == "duplicate_settlement"
}
