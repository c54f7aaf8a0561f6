package x402

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestPaymentIdentifier(t *testing.T) {
	with := func(ext any) PaymentPayload {
		return PaymentPayload{Extensions: map[string]any{ExtPaymentIdentifier: ext}}
	}
	idExt := func(id any) any { return map[string]any{"info": map[string]any{"id": id}} }
	for _, tc := range []struct {
		name   string
		p      PaymentPayload
		want   string
		ok     bool
		malfmt bool
	}{
		{"no extensions", PaymentPayload{}, "", false, false},
		{"advertisement echoed without an id", with(PaymentIdentifierExtension()), "", false, false},
		{"the specification's example", with(idExt("pay_7d5d747be160e280504c099d984bcfe0")), "pay_7d5d747be160e280504c099d984bcfe0", true, false},
		{"16 characters", with(idExt(strings.Repeat("a", 16))), strings.Repeat("a", 16), true, false},
		{"128 characters", with(idExt(strings.Repeat("Z", 128))), strings.Repeat("Z", 128), true, false},
		{"15 characters", with(idExt(strings.Repeat("a", 15))), "", false, true},
		{"129 characters", with(idExt(strings.Repeat("a", 129))), "", false, true},
		{"a character outside the set", with(idExt("pay_7d5d747be160e2#0504c099")), "", false, true},
		{"not a string", with(idExt(12345678901234567)), "", false, true},
	} {
		id, ok, err := PaymentIdentifier(tc.p)
		if id != tc.want || ok != tc.ok || errors.Is(err, ErrMalformedPayment) != tc.malfmt {
			t.Errorf("%s: got %q %v %v", tc.name, id, ok, err)
		}
		if err != nil && strings.Contains(err.Error(), "#0504") {
			t.Errorf("%s: the error repeats the id: %v", tc.name, err)
		}
	}
}

// solanaTransfer is a serialized transaction with the given signature slots and, in its message, the
// given account keys; versioned puts the v0 prefix before the message header.
func solanaTransfer(sigs [][64]byte, keys [][32]byte, versioned bool) string {
	tx := []byte{byte(len(sigs))}
	for _, s := range sigs {
		tx = append(tx, s[:]...)
	}
	if versioned {
		tx = append(tx, 0x80)
	}
	tx = append(tx, byte(len(sigs)), 0, 1, byte(len(keys)))
	for _, k := range keys {
		tx = append(tx, k[:]...)
	}
	tx = append(tx, make([]byte, 32)...) // the blockhash, then no instructions
	tx = append(tx, 0)
	return base64.StdEncoding.EncodeToString(tx)
}

// TestPayerOf: the payer a payment names, which a payment identifier's kept answer is held to:
// an EVM authorization's from, lower-cased; a Solana transaction's signer of the first filled
// signature slot (the fee payer's slot is still empty when the client sends it), legacy or
// versioned; anything else malformed.
func TestPayerOf(t *testing.T) {
	feePayer, payer := [32]byte{1}, [32]byte{2, 3}
	var empty, signed [64]byte
	signed[5] = 9
	solana := func(tx string) PaymentPayload {
		return PaymentPayload{Accepted: Requirements{Scheme: SchemeExact, Network: NetworkSolana}, Payload: map[string]any{"transaction": tx}}
	}
	evm := func(from string) PaymentPayload {
		return PaymentPayload{Accepted: Requirements{Scheme: SchemeExact, Network: "eip155:8453", Asset: "0xa"}, Payload: map[string]any{
			"signature": "0x01", "authorization": map[string]any{"from": from, "nonce": "0x" + strings.Repeat("ab", 32)}}}
	}
	for _, tc := range []struct {
		name string
		p    PaymentPayload
		want string // "" for malformed
	}{
		{"evm", evm("0xF39Fd6e51aad88F6F4ce6aB8827279cffFb92266"), "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"},
		{"evm without from", evm(""), ""},
		{"solana, fee payer's slot empty", solana(solanaTransfer([][64]byte{empty, signed}, [][32]byte{feePayer, payer}, false)), base58Encode(payer[:])},
		{"solana, versioned", solana(solanaTransfer([][64]byte{empty, signed}, [][32]byte{feePayer, payer}, true)), base58Encode(payer[:])},
		{"solana, first slot signed", solana(solanaTransfer([][64]byte{signed, signed}, [][32]byte{feePayer, payer}, false)), base58Encode(feePayer[:])},
		{"solana, no signature", solana(solanaTransfer([][64]byte{empty, empty}, [][32]byte{feePayer, payer}, false)), ""},
		{"solana, signature without its key", solana(solanaTransfer([][64]byte{empty, signed}, [][32]byte{feePayer}, false)), ""},
		{"solana, not base64", solana("%%%"), ""},
	} {
		got, err := PayerOf(tc.p)
		switch {
		case tc.want == "" && (err == nil || !errors.Is(err, ErrMalformedPayment)):
			t.Errorf("%s: PayerOf = %q, %v; want a malformed payment", tc.name, got, err)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("%s: PayerOf = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestSettledBefore(t *testing.T) {
	for reason, want := range map[string]bool{
		"invalid_exact_evm_nonce_already_used": true, "duplicate_settlement": true,
		"insufficient_funds": false, "invalid_exact_evm_payload_authorization_valid_before": false, "": false,
	} {
		if got := SettledBefore(reason); got != want {
			t.Errorf("SettledBefore(%q) = %v, want %v", reason, got, want)
		}
	}
}
