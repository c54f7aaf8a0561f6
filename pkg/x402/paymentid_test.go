package x402

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// solanaTx builds a serialized Solana transaction with two signature slots (the fee payer's, then
// the client's), each filled with one repeated byte, followed by msg.
func solanaTx(feePayerSig, clientSig byte, msg []byte) []byte {
	tx := []byte{2}
	tx = append(tx, bytes.Repeat([]byte{feePayerSig}, 64)...)
	tx = append(tx, bytes.Repeat([]byte{clientSig}, 64)...)
	return append(tx, msg...)
}

func evmPayload(from, nonce string) PaymentPayload {
	return PaymentPayload{X402Version: 2,
		Accepted: Requirements{Scheme: "exact", Network: NetworkBase, Amount: "20000", Asset: usdcBase, PayTo: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", MaxTimeoutSeconds: 60},
		Payload: map[string]any{"signature": "0x" + strings.Repeat("ab", 65), "authorization": map[string]any{
			"from": from, "to": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", "value": "20000", "validAfter": "0", "validBefore": "9999999999", "nonce": nonce,
		}}}
}

func solanaPayload(tx string) PaymentPayload {
	return PaymentPayload{X402Version: 2,
		Accepted: Requirements{Scheme: "exact", Network: NetworkSolana, Amount: "20000", Asset: usdcSolana, PayTo: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", MaxTimeoutSeconds: 60},
		Payload:  map[string]any{"transaction": tx}}
}

func TestPaymentIDEVM(t *testing.T) {
	const from = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	nonce := "0x" + strings.Repeat("5A", 32)
	id, err := PaymentID(evmPayload(from, nonce))
	if err != nil {
		t.Fatal(err)
	}
	if want := "eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913/0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266/0x" + strings.Repeat("5a", 32); id != want {
		t.Errorf("got %s, want %s", id, want)
	}
	// The same authorization in another case or with another signature is the same payment.
	other := evmPayload(strings.ToLower(from), strings.ToLower(nonce))
	other.Payload["signature"] = "0x" + strings.Repeat("cd", 65)
	if id2, _ := PaymentID(other); id2 != id {
		t.Errorf("same authorization, different id: %s", id2)
	}
	// Another nonce or another payer is another payment.
	for _, p := range []PaymentPayload{evmPayload(from, "0x"+strings.Repeat("5b", 32)), evmPayload("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", nonce)} {
		if id2, _ := PaymentID(p); id2 == id {
			t.Errorf("different payment, same id %s", id2)
		}
	}
}

func TestPaymentIDSolana(t *testing.T) {
	msg := []byte("\x80\x01\x00\x03 a v0 transfer message")
	tx := base64.StdEncoding.EncodeToString(solanaTx(0, 7, msg))
	id, err := PaymentID(solanaPayload(tx))
	if err != nil {
		t.Fatal(err)
	}
	if want := NetworkSolana + "/"; !strings.HasPrefix(id, want) || len(id) != len(want)+64 {
		t.Errorf("got %s", id)
	}
	// Filling the fee payer's empty slot with other bytes does not make it another payment.
	if id2, _ := PaymentID(solanaPayload(base64.StdEncoding.EncodeToString(solanaTx(9, 7, msg)))); id2 != id {
		t.Errorf("fee payer slot changed the id: %s", id2)
	}
	// Another message is another payment.
	if id2, _ := PaymentID(solanaPayload(base64.StdEncoding.EncodeToString(solanaTx(0, 7, append(msg, 1))))); id2 == id {
		t.Error("a different message has the same id")
	}
}

func TestPaymentIDMalformed(t *testing.T) {
	good := evmPayload("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0x"+strings.Repeat("5a", 32))
	edit := func(f func(p *PaymentPayload)) PaymentPayload {
		p := evmPayload("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0x"+strings.Repeat("5a", 32))
		f(&p)
		return p
	}
	auth := func(p *PaymentPayload) map[string]any { return p.Payload["authorization"].(map[string]any) }
	long := solanaTx(0, 7, bytes.Repeat([]byte{1}, maxSolanaTransaction))
	for name, p := range map[string]PaymentPayload{
		"scheme upto":      edit(func(p *PaymentPayload) { p.Accepted.Scheme = "upto" }),
		"unknown family":   edit(func(p *PaymentPayload) { p.Accepted.Network = "cosmos:hub" }),
		"no authorization": edit(func(p *PaymentPayload) { delete(p.Payload, "authorization") }),
		"permit2 payload": edit(func(p *PaymentPayload) {
			p.Payload = map[string]any{"signature": "0x", "permit2Authorization": map[string]any{}}
		}),
		"authorization not an object": edit(func(p *PaymentPayload) { p.Payload["authorization"] = "x" }),
		"from missing":                edit(func(p *PaymentPayload) { delete(auth(p), "from") }),
		"from short":                  edit(func(p *PaymentPayload) { auth(p)["from"] = "0xf39f" }),
		"from not hex":                edit(func(p *PaymentPayload) { auth(p)["from"] = "0x" + strings.Repeat("zz", 20) }),
		"nonce a number":              edit(func(p *PaymentPayload) { auth(p)["nonce"] = 5 }),
		"nonce short":                 edit(func(p *PaymentPayload) { auth(p)["nonce"] = "0x1234" }),
		"nonce without 0x":            edit(func(p *PaymentPayload) { auth(p)["nonce"] = strings.Repeat("5a", 33) }),
		"no signature":                edit(func(p *PaymentPayload) { delete(p.Payload, "signature") }),
		"solana no transaction":       solanaPayload(""),
		"solana not base64":           solanaPayload("not base64!"),
		"solana no signatures":        solanaPayload(base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 3})),
		"solana truncated":            solanaPayload(base64.StdEncoding.EncodeToString(solanaTx(0, 7, nil))),
		"solana count truncated":      solanaPayload(base64.StdEncoding.EncodeToString([]byte{0x80})),
		"solana count overlong":       solanaPayload(base64.StdEncoding.EncodeToString([]byte{0x80, 0x80, 0x80, 0x01})),
		"solana count non-canonical":  solanaPayload(base64.StdEncoding.EncodeToString(append([]byte{0x81, 0x00}, make([]byte, 200)...))),
		"solana too large":            solanaPayload(base64.StdEncoding.EncodeToString(long)),
	} {
		if id, err := PaymentID(p); err == nil || !errors.Is(err, ErrMalformedPayment) {
			t.Errorf("%s: got %q, %v", name, id, err)
		}
	}
	if _, err := PaymentID(good); err != nil {
		t.Errorf("the unedited payload: %v", err)
	}
}
