package x402

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	var cases []struct {
		Name     string            `json:"name"`
		Env      map[string]string `json:"env"`
		Want     *Config           `json:"want"`
		FreeOnly bool              `json:"freeOnly"`
		Error    string            `json:"error"`
		Secret   string            `json:"secret"` // a value the error must not repeat
	}
	readJSON(t, "config-cases.json", &cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := LoadConfig(func(k string) string { return c.Env[k] })
			if c.Error != "" {
				if err == nil || !strings.Contains(err.Error(), c.Error) {
					t.Fatalf("got %v, want an error containing %q", err, c.Error)
				}
				if c.Secret != "" && strings.Contains(err.Error(), c.Secret) {
					t.Errorf("the error repeats the value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, *c.Want) {
				t.Errorf("got  %+v\nwant %+v", got, *c.Want)
			}
			if got.FreeOnly() != c.FreeOnly {
				t.Errorf("FreeOnly = %v", got.FreeOnly())
			}
			// A loaded configuration is one New accepts.
			var f *Facilitator
			if !got.FreeOnly() {
				f = NewFacilitator(got)
			}
			if _, err := New(got, f, nil); err != nil {
				t.Errorf("New: %v", err)
			}
		})
	}
}

// EIP-55 checksums from the EIP's own examples and anvil's accounts.
func TestChecksumEVMAddress(t *testing.T) {
	for _, want := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
		"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
		"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
	} {
		for _, in := range []string{want, strings.ToLower(want), "0x" + strings.ToUpper(want[2:])} {
			if got, err := checksumEVMAddress(in); err != nil || got != want {
				t.Errorf("%s: got %s, %v; want %s", in, got, err, want)
			}
		}
	}
}

// Keccak-256 (not SHA3-256) vectors, computed with viem's keccak256; 135 and 136 bytes straddle
// the rate, 300 spans blocks.
func TestKeccak256(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
		"abc":                    "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45",
		"testing":                "5f16f4c7f149ac4f9510d9cf8cf384038ad348b3bcdc01915f95de12df9d1b02",
		strings.Repeat("a", 135): "34367dc248bbd832f4e3e69dfaac2f92638bd0bbd18f2912ba4ef454919cf446",
		strings.Repeat("a", 136): "a6c4d403279fe3e0af03729caada8374b5ca54d8065329a3ebcaeb4b60aa386e",
		strings.Repeat("a", 300): "5b7e0e47a96f32a88b4f14ca177982790807c40e1a105742ba0fc1babe1ef826",
	} {
		got := Keccak256([]byte(in))
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("Keccak256(%d bytes) = %x, want %s", len(in), got, want)
		}
	}
}

func TestUSDToAtomic(t *testing.T) {
	var cases []struct {
		USD    string `json:"usd"`
		Atomic string `json:"atomic"`
		Error  string `json:"error"`
	}
	readJSON(t, "usd-to-atomic.json", &cases)
	for _, c := range cases {
		got, err := USDToAtomic(c.USD)
		switch {
		case c.Error != "" && (err == nil || !strings.Contains(err.Error(), c.Error)):
			t.Errorf("%q: got %q, %v; want an error containing %q", c.USD, got, err, c.Error)
		case c.Error == "" && (err != nil || got != c.Atomic):
			t.Errorf("%q: got %q, %v; want %q", c.USD, got, err, c.Atomic)
		}
	}
}

func TestBase58Decode(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"1":               "00",
		"11":              "0000",
		"2":               "01",
		"z":               "39",
		"21":              "3a",
		"5Q":              "ff",
		"1112":            "00000001",
		"StV1DL6CwTryKyV": "68656c6c6f20776f726c64", // "hello world"
	} {
		got, err := base58Decode(in)
		if err != nil || hex.EncodeToString(got) != want {
			t.Errorf("%q: got %x, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "O", "I", "l", "+", "é"} {
		if _, err := base58Decode(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
