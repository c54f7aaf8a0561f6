package x402

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
)

func TestBinding(t *testing.T) {
	evm := Requirements{Scheme: SchemeExact, Network: NetworkBase, Amount: "20000", Asset: usdcBase,
		PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}
	nonce := "0x" + string(bytes.Repeat([]byte("AB"), 32))
	from := "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	p := PaymentPayload{Accepted: evm, Payload: map[string]any{"authorization": map[string]any{"from": from, "nonce": nonce}}}

	// The facilitator names no payer: the signed authorization's from is the payer.
	got, err := Binding(p, evm, "")
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := RequirementsHash(evm)
	if got.Payer != from || got.Authorization != "0x"+string(bytes.Repeat([]byte("ab"), 32)) || got.RequirementsHash != hash ||
		got.Amount != "20000" || got.PayTo != evm.PayTo || got.Network != NetworkBase || got.Scheme != SchemeExact || got.Asset != usdcBase {
		t.Errorf("EVM binding %+v", got)
	}
	if got, _ := Binding(p, evm, "0xfacilitator"); got.Payer != "0xfacilitator" {
		t.Errorf("payer %q, want the facilitator's", got.Payer)
	}
	// The hash is of the server's requirement: another extra is another hash.
	other := evm
	other.Extra = map[string]any{"name": "USDC", "version": "2"}
	if h, _ := RequirementsHash(other); h == hash || len(h) != 64 {
		t.Errorf("requirements hash %q for other requirements, first %q", h, hash)
	}

	// Solana: the client's own signature, the first slot that is not empty (the fee payer's).
	sol := Requirements{Scheme: SchemeExact, Network: NetworkSolana, Amount: "20000", Asset: usdcSolana, PayTo: "x", MaxTimeoutSeconds: 60}
	clientSig := bytes.Repeat([]byte{9}, 64)
	tx := append([]byte{2}, make([]byte, 64)...)
	tx = append(append(tx, clientSig...), []byte("message")...)
	sp := PaymentPayload{Accepted: sol, Payload: map[string]any{"transaction": base64.StdEncoding.EncodeToString(tx)}}
	got, err = Binding(sp, sol, "payerAddress")
	if err != nil || got.Authorization != base58Encode(clientSig) || got.Payer != "payerAddress" {
		t.Errorf("Solana binding %+v %v", got, err)
	}
	// A transaction with only empty slots, and a payer nobody names, are malformed.
	tx = append(append([]byte{1}, make([]byte, 64)...), 'm')
	sp.Payload["transaction"] = base64.StdEncoding.EncodeToString(tx)
	if _, err := Binding(sp, sol, "payerAddress"); !errors.Is(err, ErrMalformedPayment) {
		t.Errorf("unsigned transaction: %v", err)
	}
	delete(p.Payload["authorization"].(map[string]any), "from")
	if got, err := Binding(p, evm, ""); err != nil || got.Payer != "" {
		t.Errorf("no payer named: %+v %v", got, err)
	}
}
