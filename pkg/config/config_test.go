package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != "bolt" || c.DataDir != ".data" || c.SigningKey != "file:.data/signing-key.json" || c.FreeCallsPerDay != 1000 ||
		c.MaxBody != 1<<20 || c.FreeMaxBody != 65536 || c.PriceVerify != "0.02" || c.PriceScore != "0.01" || c.BaseURL != "http://127.0.0.1:8080" {
		t.Errorf("defaults: %+v", c)
	}
}

func TestLoadInvalid(t *testing.T) {
	cases := map[string]map[string]string{
		"VERIFIER_BASE_URL":           {"VERIFIER_BASE_URL": "ftp://x"},
		"VERIFIER_STORE":              {"VERIFIER_STORE": "redis"},
		"VERIFIER_TABLE":              {"VERIFIER_STORE": "dynamodb"},
		"VERIFIER_SIGNING_KEY":        {"VERIFIER_SIGNING_KEY": "vault:secret-value-123"},
		"VERIFIER_KEY_VERSION":        {"VERIFIER_SIGNING_KEY": "kms:AAAA"},
		"VERIFIER_PREVIOUS_KEYS":      {"VERIFIER_PREVIOUS_KEYS": "{"},
		"VERIFIER_FREE_CALLS_PER_DAY": {"VERIFIER_FREE_CALLS_PER_DAY": "-1"},
		"VERIFIER_MAX_BODY":           {"VERIFIER_MAX_BODY": "99999999"},
		"VERIFIER_FREE_MAX_BODY":      {"VERIFIER_MAX_BODY": "2048", "VERIFIER_FREE_MAX_BODY": "4096"},
		"VERIFIER_TRUSTED_PROXY_HOPS": {"VERIFIER_TRUSTED_PROXY_HOPS": "x"},
		"VERIFIER_PRICE_VERIFY":       {"VERIFIER_PRICE_VERIFY": "free"},
		"VERIFIER_LOG_KEY":            {"VERIFIER_LOG_KEY": "vault:secret-value-123"},
		"VERIFIER_LOG_KEY_VERSION":    {"VERIFIER_LOG_KEY": "kms-sign:alias/log"},
	}
	for name, m := range cases {
		_, err := Load(env(m))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v, want an error naming it", name, err)
			continue
		}
		if v := m["VERIFIER_SIGNING_KEY"]; v != "" && strings.Contains(err.Error(), v) {
			t.Errorf("%s: the error echoes the key source: %v", name, err)
		}
	}
}

// The log key takes every source the signing key does (SPEC §15), each needing its version
// except a file.
func TestLogKeySourcesAreTheSigningKeys(t *testing.T) {
	for _, source := range []string{"file:k.json", "secretsmanager:log-key", "kms:AAAA", "kms-sign:alias/log"} {
		for _, key := range [][2]string{{"VERIFIER_SIGNING_KEY", "VERIFIER_KEY_VERSION"}, {"VERIFIER_LOG_KEY", "VERIFIER_LOG_KEY_VERSION"}} {
			c, err := Load(env(map[string]string{key[0]: source, key[1]: "v1"}))
			if err != nil {
				t.Errorf("%s=%s: %v", key[0], source, err)
				continue
			}
			if got := map[string]string{"VERIFIER_SIGNING_KEY": c.SigningKey, "VERIFIER_LOG_KEY": c.LogKey}[key[0]]; got != source {
				t.Errorf("%s=%s: loaded %q", key[0], source, got)
			}
		}
	}
}

// VERIFIER_MAX_BODY goes past 1 MiB up to MaxConfigurableBody, and the error for a larger value
// says where the ceiling is.
func TestMaxBodyPastOneMiB(t *testing.T) {
	c, err := Load(env(map[string]string{"VERIFIER_MAX_BODY": "8388608"}))
	if err != nil || c.MaxBody != 8<<20 {
		t.Fatalf("8 MiB: %d, %v", c.MaxBody, err)
	}
	if c, err = Load(env(map[string]string{"VERIFIER_MAX_BODY": fmt.Sprint(MaxConfigurableBody)})); err != nil || c.MaxBody != MaxConfigurableBody {
		t.Fatalf("the ceiling itself: %d, %v", c.MaxBody, err)
	}
	_, err = Load(env(map[string]string{"VERIFIER_MAX_BODY": fmt.Sprint(MaxConfigurableBody + 1)}))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxConfigurableBody)) {
		t.Fatalf("past the ceiling: %v, want an error naming %d", err, MaxConfigurableBody)
	}
}

// The configuration page's table documents every variable the service reads.
func TestDocsListEveryVariable(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Variables {
		if !strings.Contains(string(b), "| `"+v.Name+"` |") {
			t.Errorf("docs/configuration.md lacks a configuration row for %s", v.Name)
		}
	}
}

// Settings that would start a service in a state it cannot serve from: a base URL that cannot
// stand in signed documents, and a free-only deployment that could answer nothing.
func TestLoadRefusesUnservable(t *testing.T) {
	cases := []struct {
		name, want string
		env        map[string]string
	}{
		{"credentials in the base URL", "VERIFIER_BASE_URL", map[string]string{"VERIFIER_BASE_URL": "https://user:secret@verifier.example"}},
		{"a query", "VERIFIER_BASE_URL", map[string]string{"VERIFIER_BASE_URL": "https://verifier.example/?a=1"}},
		{"a fragment", "VERIFIER_BASE_URL", map[string]string{"VERIFIER_BASE_URL": "https://verifier.example#x"}},
		{"no host name", "VERIFIER_BASE_URL", map[string]string{"VERIFIER_BASE_URL": "http://:8080"}},
		{"0.0.0.0", "VERIFIER_BASE_URL", map[string]string{"VERIFIER_BASE_URL": "http://0.0.0.0:8080"}},
		{"::", "VERIFIER_BASE_URL", map[string]string{"VERIFIER_BASE_URL": "http://[::]:8080"}},
		{"free-only without free calls", "VERIFIER_FREE_CALLS_PER_DAY", map[string]string{"VERIFIER_FREE_CALLS_PER_DAY": "0"}},
		{"free-only without a free body size", "VERIFIER_FREE_MAX_BODY", map[string]string{"VERIFIER_FREE_MAX_BODY": "0"}},
	}
	for _, c := range cases {
		if _, err := Load(env(c.env)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %s", c.name, err, c.want)
		}
	}
	if strings.Contains(fmt.Sprint(Load(env(cases[0].env))), "secret") {
		t.Error("the error echoes the base URL's password")
	}
	// A deployment that takes payments may give nothing away.
	paying := map[string]string{"VERIFIER_FREE_CALLS_PER_DAY": "0", "VERIFIER_FREE_MAX_BODY": "0",
		"X402_PAY_TO_EVM": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "X402_FACILITATOR_URL": "https://facilitator.example"}
	if _, err := Load(env(paying)); err != nil {
		t.Errorf("a paying deployment without free calls: %v", err)
	}
	for _, ok := range []string{"https://verifier.example", "https://verifier.example/base", "http://127.0.0.1:8080", "http://[::1]:8080"} {
		if _, err := Load(env(map[string]string{"VERIFIER_BASE_URL": ok})); err != nil {
			t.Errorf("base URL %s: %v", ok, err)
		}
	}
}
