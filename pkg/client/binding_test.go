package client

import (
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// A paid answer whose payment member differs from what the client signed in any field is
// refused; case differences in EVM addresses are not differences.
func TestCheckBinding(t *testing.T) {
	want := receipt.Payment{Scheme: "exact", Network: "eip155:8453", Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
		Amount: "20000", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", Payer: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
		RequirementsHash: strings.Repeat("ab", 32), Authorization: "0x" + strings.Repeat("01", 32)}
	p := &Payment{Binding: want}
	good := want
	good.PayTo, good.Payer, good.Asset = strings.ToLower(good.PayTo), strings.ToLower(good.Payer), strings.ToLower(good.Asset)
	if err := checkBinding(&good, p); err != nil {
		t.Fatalf("the matching member (lower-case addresses) is refused: %v", err)
	}
	for name, edit := range map[string]func(*receipt.Payment){
		"amount":            func(b *receipt.Payment) { b.Amount = "20001" },
		"pay_to":            func(b *receipt.Payment) { b.PayTo = "0x0000000000000000000000000000000000000001" },
		"network":           func(b *receipt.Payment) { b.Network = "eip155:84532" },
		"asset":             func(b *receipt.Payment) { b.Asset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" },
		"scheme":            func(b *receipt.Payment) { b.Scheme = "upto" },
		"authorization":     func(b *receipt.Payment) { b.Authorization = "0x" + strings.Repeat("02", 32) },
		"requirements_hash": func(b *receipt.Payment) { b.RequirementsHash = strings.Repeat("cd", 32) },
		"payer":             func(b *receipt.Payment) { b.Payer = "0x0000000000000000000000000000000000000002" },
		"free":              func(b *receipt.Payment) { *b = receipt.FreePayment },
	} {
		got := want
		edit(&got)
		if err := checkBinding(&got, p); err == nil {
			t.Errorf("%s changed: accepted", name)
		}
	}
	if err := checkBinding(nil, p); err == nil {
		t.Error("a paid answer without a payment member is accepted")
	}
	// A payer the client cannot know (Solana's, named by the facilitator) is not compared.
	unknown := &Payment{Binding: want}
	unknown.Binding.Payer = ""
	other := want
	other.Payer = "SomeSolanaAddress"
	if err := checkBinding(&other, unknown); err != nil {
		t.Errorf("an unknown payer was compared: %v", err)
	}
}
