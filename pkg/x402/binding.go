package x402

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// Binding is the payment member of a paid answer (SPEC §16): the requirements the server accepted
// (its own copy, which Match returned), the payer and the payment's authorization. Every field is
// known once the facilitator verified the payment, before settlement, so the answer's signature
// covers it. payer is the facilitator's (VerifyResponse.Payer); when it names none, an EVM
// payment's signed authorization.from is used, and a Solana payment's payer stays empty.
//
// A client computes the binding it expects from what it signed and the requirement it paid, and
// holds the answer's payment member to it (pkg/client).
//
// authorization is the EIP-3009 nonce (lower-case hex) on EVM; on Solana it is the base58 first
// signature the client put in the transaction, its own (the fee payer's slot is still empty
// when the client sends it, and the transaction's id is the fee payer's signature, known only once
// the facilitator signs at settlement).
func Binding(p PaymentPayload, accepted Requirements, payer string) (receipt.Payment, error) {
	hash, err := RequirementsHash(accepted)
	if err != nil {
		return receipt.Payment{}, err
	}
	var auth string
	family, _, _ := strings.Cut(accepted.Network, ":")
	switch family {
	case familyEVM:
		a, _ := p.Payload["authorization"].(map[string]any)
		nonce, _ := a["nonce"].(string)
		if !isHex(nonce, 32) {
			return receipt.Payment{}, fmt.Errorf("%w: payload.authorization.nonce is not 32 bytes of hex", ErrMalformedPayment)
		}
		auth = strings.ToLower(nonce)
		if payer == "" {
			payer, _ = a["from"].(string)
		}
	case familySolana:
		tx, _ := p.Payload["transaction"].(string)
		raw, err := base64.StdEncoding.Strict().DecodeString(tx)
		if err != nil {
			return receipt.Payment{}, fmt.Errorf("%w: payload.transaction is not standard base64", ErrMalformedPayment)
		}
		if auth, err = clientSignature(raw); err != nil {
			return receipt.Payment{}, fmt.Errorf("%w: payload.transaction %w", ErrMalformedPayment, err)
		}
	default:
		return receipt.Payment{}, fmt.Errorf("%w: unsupported network family", ErrMalformedPayment)
	}
	return receipt.Payment{
		Scheme: accepted.Scheme, Network: accepted.Network, Asset: accepted.Asset, Amount: accepted.Amount,
		PayTo: accepted.PayTo, Payer: payer, RequirementsHash: hash, Authorization: auth,
	}, nil
}

// RequirementsHash is the lowercase hex SHA-256 of the RFC 8785 form of r: the requirements_hash
// of a payment binding, which a client recomputes from the requirement it paid.
func RequirementsHash(r Requirements) (string, error) {
	raw, err := EncodeJSON(r)
	if err != nil {
		return "", fmt.Errorf("encode requirements: %w", err)
	}
	canon, err := receipt.Canonicalize(raw)
	if err != nil {
		return "", fmt.Errorf("canonicalize requirements: %w", err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// clientSignature is the first signature of a serialized Solana transaction that is not the
// empty (all-zero) slot, in base58.
func clientSignature(tx []byte) (string, error) {
	if _, err := solanaMessage(tx); err != nil {
		return "", err
	}
	n, size, _ := compactU16(tx)
	for i := range n {
		sig := tx[size+64*i : size+64*(i+1)]
		for _, b := range sig {
			if b != 0 {
				return base58Encode(sig), nil
			}
		}
	}
	return "", errors.New("has no signature")
}
