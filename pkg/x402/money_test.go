package x402

import (
	"strings"
	"testing"
)

func TestAtomicToUSD(t *testing.T) {
	for in, want := range map[string]string{
		"20000": "0.02", "10000": "0.01", "1000000": "1", "1500000": "1.5", "12345678": "12.345678",
		"1": "0.000001", "0": "0", "000020000": "0.02", "1000000000000000": "1000000000",
	} {
		if got, err := AtomicToUSD(in); err != nil || got != want {
			t.Errorf("AtomicToUSD(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5", "0x10", " 1", strings.Repeat("9", maxPriceLen+1)} {
		if got, err := AtomicToUSD(in); err == nil {
			t.Errorf("AtomicToUSD(%q) = %q; want an error", in, got)
		}
	}
	// Every valid case of the USDToAtomic table comes back to the same amount.
	var cases []struct {
		USD    string `json:"usd"`
		Atomic string `json:"atomic"`
	}
	readJSON(t, "usd-to-atomic.json", &cases)
	for _, c := range cases {
		if c.Atomic == "" {
			continue
		}
		usd, err := AtomicToUSD(c.Atomic)
		if err != nil {
			t.Fatalf("AtomicToUSD(%q): %v", c.Atomic, err)
		}
		if back, err := USDToAtomic(usd); err != nil || back != c.Atomic {
			t.Errorf("%q -> %q -> %q, %v", c.Atomic, usd, back, err)
		}
	}
}

func TestUSDCAndChecksumAddress(t *testing.T) {
	for _, n := range knownNetworks {
		if got, ok := USDC(n.id); !ok || got != n.asset {
			t.Errorf("USDC(%s) = %s, %v; want %s", n.id, got, ok, n.asset)
		}
	}
	if _, ok := USDC("eip155:1"); ok {
		t.Error("USDC knows a network the service does not offer")
	}
	if got, err := ChecksumAddress(strings.ToLower(usdcBase)); err != nil || got != usdcBase {
		t.Errorf("ChecksumAddress: %s, %v", got, err)
	}
	if _, err := ChecksumAddress(strings.Replace(usdcBase, "fCD6", "fcD6", 1)); err == nil {
		t.Error("ChecksumAddress accepted a broken checksum")
	}
}
