package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/intoto/intototest"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// TestReceiptExportInToto: `receipt export --format in-toto` turns a receipt `check` signed into
// a DSSE envelope that go-securesystemslib verifies under the key version and whose payload is an
// in-toto Statement v1 naming the task and output_hash, with the VSA verdict and the receipt's
// base URL; to stdout or --out. A receipt that does not hold is FAIL (exit 1) and nothing is
// written; a receipt signed by another key holds with --card listing it.
func TestReceiptExportInToto(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.json")
	if code, _, stderr := runCLI(t, "", "keygen", "--out", keyFile, "--version", "v-export"); code != 0 {
		t.Fatalf("keygen: %d %s", code, stderr)
	}
	key, err := keys.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	code, signed, _ := runCLI(t, "", "check", "--key", keyFile, "--base-url", "https://verifier.example.com", seedRequest)
	if code != 1 { // the seed's draft fails its rules
		t.Fatalf("check: %d", code)
	}
	receiptFile := filepath.Join(dir, "receipt.json")
	os.WriteFile(receiptFile, []byte(signed), 0o644)
	var r struct {
		VerificationID string `json:"verification_id"`
		TaskID         string `json:"task_id"`
		OutputHash     string `json:"output_hash"`
		RulesHash      string `json:"rules_hash"`
	}
	json.Unmarshal([]byte(signed), &r)

	code, out, stderr := runCLI(t, "", "receipt", "export", "--format", "in-toto", "--key", keyFile, receiptFile)
	if code != 0 || stderr != "" {
		t.Fatalf("export: %d %s", code, stderr)
	}
	outFile := filepath.Join(dir, "receipt.intoto.json")
	if code, stdout, _ := runCLI(t, "", "receipt", "export", "--format", "in-toto", "--key", keyFile, "--out", outFile, receiptFile); code != 0 || stdout != "" {
		t.Fatalf("export --out: %d %q", code, stdout)
	}
	if string(mustRead(t, outFile)) != out {
		t.Error("--out wrote other bytes than stdout")
	}

	st, _, pred := intototest.Open(t, []byte(out), "v-export", key.Public().Key)
	record := "https://verifier.example.com/verifications/" + r.VerificationID
	if s := st.GetSubject(); len(s) != 1 || s[0].GetName() != r.TaskID || s[0].GetDigest()["sha256"] != r.OutputHash ||
		st.GetPredicateType() != "https://slsa.dev/verification_summary/v1" ||
		!strings.Contains(string(pred), `"verificationResult":"FAILED"`) || !strings.Contains(string(pred), `"uri":"`+record+`"`) ||
		!strings.Contains(string(pred), `"sha256":"`+r.RulesHash+`"`) {
		t.Errorf("statement %v / predicate %s", st, pred)
	}

	// A receipt that does not hold is not exported.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(strings.Replace(signed, `"result": "fail"`, `"result": "pass"`, 1)), 0o644)
	badOut := filepath.Join(dir, "bad.intoto.json")
	if code, stdout, _ := runCLI(t, "", "receipt", "export", "--format", "in-toto", "--key", keyFile, "--out", badOut, bad); code != exitFail || !strings.HasPrefix(stdout, "FAIL:") {
		t.Fatalf("tampered receipt: %d %q", code, stdout)
	}
	if _, err := os.Stat(badOut); err == nil {
		t.Error("a tampered receipt was exported")
	}

	// A receipt signed by an earlier key: FAIL with the new key alone, exported with --card.
	newKey := filepath.Join(dir, "new.json")
	runCLI(t, "", "keygen", "--out", newKey, "--version", "v-new")
	if code, stdout, _ := runCLI(t, "", "receipt", "export", "--format", "in-toto", "--key", newKey, receiptFile); code != exitFail || !strings.HasPrefix(stdout, "FAIL:") {
		t.Fatalf("another key, no card: %d %q", code, stdout)
	}
	card := filepath.Join(dir, "card.json")
	os.WriteFile(card, agentCardWith(t, key.Public()), 0o644)
	if code, stdout, stderr := runCLI(t, "", "receipt", "export", "--format", "in-toto", "--key", newKey, "--card", card, receiptFile); code != 0 || !strings.Contains(stdout, `"keyid":"v-new"`) {
		t.Fatalf("another key with the card: %d %q %s", code, stdout, stderr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"receipt", "export", "--key", keyFile, receiptFile}, "verifier receipt export: --format in-toto is required"},
		{[]string{"receipt", "export", "--format", "spdx", "--key", keyFile, receiptFile}, "verifier receipt export: --format in-toto is required"},
		{[]string{"receipt", "export", "--format", "in-toto", receiptFile}, "verifier receipt export: --key is required"},
		{[]string{"receipt", "export", "--format", "in-toto", "--key", keyFile}, "verifier receipt export: one RECEIPT.json is required"},
	} {
		if code, stdout, stderr := runCLI(t, "", c.args...); code != exitInvalid || stdout != "" || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%q: %d %q %q", c.args, code, stdout, stderr)
		}
	}
}

// agentCardWith is the part of an agent card that lists public keys (receipt.CardKeys reads it),
// listing k.
func agentCardWith(t *testing.T, k receipt.PublicKey) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"capabilities": map[string]any{"extensions": []any{map[string]any{
		"uri": receipt.CardExtensionPrefix + "v1",
		"params": map[string]any{"publicKeys": []any{map[string]any{
			"keyVersion": k.Version, "algorithm": receipt.Algorithm, "publicKey": base64.StdEncoding.EncodeToString(k.Key),
		}}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
