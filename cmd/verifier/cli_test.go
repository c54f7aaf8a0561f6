package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every misuse names what is wrong on stderr under the one prefix "verifier ...:", exits 2 and
// writes nothing to stdout; -h on every command prints its usage on stdout and exits 0.
func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string // on stderr
	}{
		{nil, "verifier: missing command"},
		{[]string{"nope"}, `verifier: unknown command "nope"`},
		{[]string{"check", seedRequest}, "verifier check: --key is required"},
		{[]string{"check", "--unsigned"}, "verifier check: missing REQUEST.json (or --schema and --data)"},
		{[]string{"check", "--unsigned", "--schema", "s.json"}, "verifier check: --data is required with --schema"},
		{[]string{"check", "--unsigned", "--data", "d.json"}, "verifier check: --schema is required with --data"},
		{[]string{"check", "--unsigned", "--schema", "s", "--data", "d", seedRequest}, "verifier check: give REQUEST.json or --schema and --data, not both"},
		{[]string{"check", "--unsigned", "--output", "yaml", seedRequest}, "verifier check: --output must be json or text"},
		{[]string{"check", "--unsigned", "--nope", seedRequest}, "verifier check: flag provided but not defined: -nope"},
		{[]string{"receipt"}, "verifier receipt: missing subcommand"},
		{[]string{"receipt", "verify", "r.json"}, "verifier receipt verify: --key or --card is required"},
		{[]string{"receipt", "verify", "--key", "k"}, "verifier receipt verify: missing RECEIPT.json"},
		{[]string{"receipt", "verify", "--key", "k", "--context", "x", "r.json"}, "verifier receipt verify: --context must be verify, score or reputation"},
		{[]string{"keygen"}, "verifier keygen: --out or --secret is required"},
		{[]string{"keygen", "--secret", "s", "--kms-key-id", "k"}, "verifier keygen: --kms-key-id goes with --out"},
		{[]string{"remote"}, "verifier remote: missing call"},
		{[]string{"remote", "verify", "r.json"}, "verifier remote verify: --url is required"},
		{[]string{"remote", "score", "--url", "http://127.0.0.1:1"}, "verifier remote score: missing AGENT_ID"},
		{[]string{"remote", "reputation", "--url", "http://127.0.0.1:1", "--pay-key", "k", "a"}, "verifier remote reputation: flag provided but not defined: -pay-key"},
		{[]string{"serve", "extra"}, `verifier serve: unexpected argument "extra"`},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(t, "", c.args...)
		if code != exitInvalid || out != "" || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, stderr starting %q", c.args, code, out, errOut, c.want)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	cases := []struct {
		args          []string
		want, notWant []string
	}{
		{[]string{"--help"}, []string{"verifier check", "verifier version"}, nil},
		{[]string{"check", "-h"}, []string{"-key KEY", "-schema FILE", "-output", "-max-body BYTES", "-unsigned"}, []string{"-key verifier"}},
		{[]string{"receipt", "verify", "--help"}, []string{"-key KEY", "-card FILE_OR_URL"}, nil},
		{[]string{"receipt", "export", "--help"}, []string{"-format FORMAT", "-key KEY", "-out FILE"}, nil},
		{[]string{"keygen", "-h"}, []string{"-out FILE", "NAME.pub"}, nil},
		{[]string{"serve", "-h"}, []string{"-addr ADDRESS"}, nil},
		{[]string{"remote", "-h"}, []string{"verifier remote reputation"}, nil},
		{[]string{"remote", "verify", "-h"}, []string{"-pay-key FILE", "-max-price USD"}, []string{"-limit", "-cursor"}},
		{[]string{"remote", "reputation", "-h"}, []string{"-limit", "-cursor"}, []string{"-pay-key", "-max-price"}},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(t, "", c.args...)
		if code != exitOK || errOut != "" || !strings.HasPrefix(out, "usage:\n") {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want usage on stdout and exit 0", c.args, code, errOut, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: the usage lacks %q:\n%s", c.args, w, out)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(out, w) {
				t.Errorf("%q: the usage shows %q:\n%s", c.args, w, out)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "", "version")
	if code != exitOK || !strings.HasPrefix(out, "verifier ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: %d %q", code, out)
	}
}

// Without --key, check writes no receipt unless --unsigned says so, and then stderr says it is
// none; --output text needs no key. Every run ends with the one-line summary on stderr.
func TestCheckUnsignedAndSummary(t *testing.T) {
	const wantSummary = "fail: schema 22/22, integrity 7/8; consistency:sum_equals at $.line_items[].line_total: values sum to 129.5, expected total (135.0)\n"
	code, out, errOut := runCLI(t, "", "check", "--unsigned", seedRequest)
	if code != exitFail || !strings.Contains(errOut, "unsigned") || !strings.HasSuffix(errOut, wantSummary) {
		t.Fatalf("--unsigned: exit %d, stderr %q", code, errOut)
	}
	var rep struct {
		Verify struct {
			KeyVersion string `json:"key_version"`
		}
		Attestation json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Verify.KeyVersion != unsignedKeyVersion || rep.Attestation != nil {
		t.Fatalf("--unsigned report: %v %+v", err, rep)
	}
	code, out, errOut = runCLI(t, "", "check", "--output", "text", seedRequest)
	if code != exitFail || errOut != wantSummary ||
		!strings.Contains(out, "result     fail\n") || !strings.Contains(out, "schema     22/22 passed\n") ||
		!strings.Contains(out, "error      consistency:sum_equals at $.line_items[].line_total: values sum to 129.5, expected total (135.0)\n") {
		t.Fatalf("--output text: exit %d, stderr %q\n%s", code, errOut, out)
	}
	// A compact report has no counts: the summary names what blocked.
	if _, _, errOut = runCLI(t, "", "check", "--unsigned", "--detail", "compact", seedRequest); !strings.HasSuffix(errOut, "fail: blocking consistency:sum_equals\n") {
		t.Fatalf("compact summary: %q", errOut)
	}
}

// check --schema --data --rules builds the same request as the whole body: the hashes of the
// receipt are the same, and so is the verdict.
func TestCheckFromFiles(t *testing.T) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(mustRead(t, seedRequest), &req); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schema := write("schema.json", req["expected_schema"])
	data := write("invoice-7731-draft.json", req["submitted_output"])
	if req["bounds"] != nil || string(req["enforce_rules"]) != "true" {
		t.Fatal("the seed request changed: this test splits its rules and enforce_rules")
	}
	rulesObj := write("rules.json", []byte(`{"rules": `+string(req["rules"])+`, "enforce_rules": true}`))
	hashes := func(out string) string {
		var r struct{ OutputHash, SchemaHash, RulesHash, Result, TaskID string }
		var m map[string]string
		json.Unmarshal([]byte(out), &m)
		r.OutputHash, r.SchemaHash, r.RulesHash, r.Result, r.TaskID = m["output_hash"], m["schema_hash"], m["rules_hash"], m["result"], m["task_id"]
		return strings.Join([]string{r.OutputHash, r.SchemaHash, r.RulesHash, r.Result, r.TaskID}, " ")
	}
	_, whole, _ := runCLI(t, "", "check", "--unsigned", "--detail", "compact", seedRequest)
	code, split, errOut := runCLI(t, "", "check", "--unsigned", "--detail", "compact", "--schema", schema, "--data", data, "--rules", rulesObj)
	if code != exitFail || hashes(split) != hashes(whole) || !strings.Contains(hashes(whole), " fail invoice-7731-draft") {
		t.Fatalf("from files: exit %d %s\n got  %s\n want %s", code, errOut, hashes(split), hashes(whole))
	}
	// A bare array of rules is the rules member; a typo in a rules object is the engine's 422.
	rulesArr := write("rules-array.json", req["rules"])
	if code, _, errOut := runCLI(t, "", "check", "--output", "text", "--schema", schema, "--data", data, "--rules", rulesArr); code != exitOK || !strings.HasPrefix(errOut, "pass: ") {
		t.Fatalf("rules array without enforce_rules: exit %d %s", code, errOut)
	}
	typo := write("typo.json", []byte(`{"enforce_rule": true}`))
	code, out, errOut := runCLI(t, "", "check", "--unsigned", "--schema", schema, "--data", data, "--rules", typo)
	if code != exitInvalid || !strings.Contains(out, `"field": "enforce_rule"`) || !strings.Contains(errOut, "enforce_rule") {
		t.Fatalf("typo: exit %d %s\n%s", code, errOut, out)
	}
	notJSON := write("broken.json", []byte(`{"type": `))
	if code, out, errOut := runCLI(t, "", "check", "--unsigned", "--schema", notJSON, "--data", data); code != exitInvalid || out != "" || !strings.Contains(errOut, "--schema: "+notJSON+" is not JSON") {
		t.Fatalf("broken schema: exit %d %q %q", code, out, errOut)
	}
}

// Offline, check has no body ceiling but memory; --max-body sets one, and the error says so.
func TestCheckMaxBody(t *testing.T) {
	big := `{"task_id":"big","expected_schema":{"type":"array"},"submitted_output":["` + strings.Repeat("x", 2<<20) + `"]}`
	if code, _, errOut := runCLI(t, big, "check", "--output", "text", "-"); code != exitOK {
		t.Fatalf("2 MiB offline: exit %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, big, "check", "--output", "text", "--max-body", "1048576", "-")
	if code != exitInvalid || !strings.Contains(out, `"limit": 1048576`) || !strings.Contains(errOut, "over --max-body 1048576") {
		t.Fatalf("over --max-body: exit %d %s\n%s", code, errOut, out)
	}
}

// keygen writes NAME.pub beside the key file; receipt verify takes that file, the key file or
// the base64 key itself; check takes the key file or (with a warning) the base64 seed.
func TestKeyArguments(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "demo.key.json")
	if code, out, errOut := runCLI(t, "", "keygen", "--out", keyFile, "--version", "v-args"); code != exitOK || !strings.Contains(out, "demo.pub") {
		t.Fatalf("keygen: %d %s %s", code, out, errOut)
	}
	pubFile := filepath.Join(dir, "demo.pub")
	var kf struct{ PublicKey, Seed string }
	json.Unmarshal(mustRead(t, keyFile), &kf)
	if got := strings.TrimSpace(string(mustRead(t, pubFile))); got != kf.PublicKey {
		t.Fatalf("demo.pub holds %q, want the key file's public key %q", got, kf.PublicKey)
	}
	receiptFile := filepath.Join(dir, "receipt.json")
	_, out, _ := runCLI(t, "", "check", "--key", keyFile, seedRequest)
	os.WriteFile(receiptFile, []byte(out), 0o644)
	for _, key := range []string{pubFile, keyFile, kf.PublicKey} {
		if code, out, errOut := runCLI(t, "", "receipt", "verify", "--key", key, receiptFile); code != exitOK || out != "OK: signature valid (key v-args)\n" {
			t.Errorf("receipt verify --key %s: %d %q %s", key, code, out, errOut)
		}
	}
	code, out, errOut := runCLI(t, "", "check", "--key", kf.Seed, "--key-version", "v-args", seedRequest)
	if code != exitFail || !strings.Contains(errOut, "warning: a seed given on the command line") || strings.Contains(errOut, kf.Seed) {
		t.Fatalf("check with a base64 seed: %d %s", code, errOut)
	}
	os.WriteFile(receiptFile, []byte(out), 0o644)
	if code, _, _ := runCLI(t, "", "receipt", "verify", "--key", pubFile, receiptFile); code != exitOK {
		t.Fatal("a receipt signed from the base64 seed does not verify with the .pub")
	}
	if code, _, errOut := runCLI(t, "", "check", "--key", kf.Seed, seedRequest); code != exitInvalid || !strings.Contains(errOut, "--key-version") || strings.Contains(errOut, kf.Seed) {
		t.Fatalf("seed without --key-version: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "check", "--key", filepath.Join(dir, "missing.key.json"), seedRequest); code != exitInvalid || !strings.Contains(errOut, "no such key file") {
		t.Fatalf("missing key file: %d %s", code, errOut)
	}
	// An existing .pub stops keygen before it writes anything.
	other := filepath.Join(dir, "demo.json")
	if code, _, errOut := runCLI(t, "", "keygen", "--out", other); code != exitError || !strings.Contains(errOut, "demo.pub exists") {
		t.Fatalf("keygen over an existing .pub: %d %s", code, errOut)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("keygen left %s behind: %v", other, err)
	}
	if publicKeyPath("a/b.key.json") != "a/b.pub" || publicKeyPath("key.json") != "key.pub" || publicKeyPath("k") != "k.pub" {
		t.Fatal("publicKeyPath")
	}
}
