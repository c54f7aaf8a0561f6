package x402

import (
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
