package receipt

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// checker is testdata/check_receipt.py, a third implementation (Python json, hand-written RFC 8785,
// the cryptography package) that shares no code with the signer or the Go verifier.
var checker = filepath.Join("testdata", "check_receipt.py")

// pythonProbe finds python3 and checks, once per test binary, that it can import cryptography.
var pythonProbe = sync.OnceValues(func() (string, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("python3 not found: %w", err)
	}
	if out, err := exec.Command(py, checker, "probe").CombinedOutput(); err != nil {
		return "", fmt.Errorf("the cryptography package is missing (%v): %s", err, out)
	}
	return py, nil
})

// python runs the checker with args and stdin, and skips the test when python3 or the
// cryptography package is not installed.
func python(t *testing.T, stdin []byte, args ...string) (stdout string, err error) {
	t.Helper()
	py, perr := pythonProbe()
	if perr != nil {
		t.Skipf("skipping the Python cross-check: %v", perr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, py, append([]string{checker}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if errb.Len() > 0 {
		t.Logf("check_receipt.py stderr: %s", errb.String())
	}
	return out.String(), err
}

// TestPythonChecksAttest signs responses with Attest and has the Python checker verify each; it
// must also refuse a tampered receipt and a wrong context.
func TestPythonChecksAttest(t *testing.T) {
	k := testKey("v-py-1", 11)
	responses := []string{
		string(stripAttestation(t, readSeed(t, "invoice-draft.response.json"))),
		string(stripAttestation(t, readSeed(t, "invoice-final.response.json"))),
		`{"numbers":[1e21,1e-7,10.0,-0,-0.0,0.000001,5e-324,1.7976931348623157e308,123456789012345678901234567890,9007199254740993,333333333.33333329,4.50,2e-3,1E30]}`,
		`{"text":"café ✓ \u00e9 \ud83d\ude00 \u0000\u001f\u007f\u2028 \"q\" \\ \/ \b\f\n\r\t","\ufb33":1,"😀":2,"\u20ac":3,"\r":4,"1":5,"\u0080":6,"\u00f6":7}`,
		`{"deep":{"b":[{"z":1,"y":[[],{}],"x":{"w":null}}],"a":{"c":true,"b":false}},"empty":{},"list":[]}`,
		`{}`,
		"{\n  \"pretty\": [\n    1.0\n  ]\n}\n",
	}
	dir := t.TempDir()
	var files []string
	for i, resp := range responses {
		signed, err := k.Attest(ContextVerify, []byte(resp), testTimestamp)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if err := VerifyAttestation(signed, ContextVerify, []PublicKey{k.Public()}); err != nil {
			t.Fatalf("response %d: Go verifier: %v", i, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("receipt-%d.json", i))
		if err := os.WriteFile(path, signed, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	pub := b64(k.Public().Key)
	out, err := python(t, nil, append([]string{"verify", "--context", ContextVerify, "--public-key", pub, "--key-version", k.Version}, files...)...)
	if err != nil || strings.Count(out, "OK ") != len(files) {
		t.Fatalf("python checker refused our receipts (%v):\n%s", err, out)
	}

	// The seed's receipts pass the same checker with the seed's key.
	seed := seedKeys(t)[0]
	out, err = python(t, nil, "verify", "--context", ContextVerify, "--public-key", b64(seed.Key),
		filepath.Join(seedDir, "invoice-draft.response.json"), filepath.Join(seedDir, "invoice-final.response.json"))
	if err != nil {
		t.Fatalf("python checker refused the seed's receipts (%v):\n%s", err, out)
	}

	// Tampered receipts fail: one altered value, one altered number, and the right receipt under
	// the wrong context.
	signed := readFile(t, files[0])
	tampered := map[string][]byte{
		"value":  bytes.Replace(signed, []byte(`"result": "fail"`), []byte(`"result": "pass"`), 1),
		"number": bytes.Replace(readFile(t, files[2]), []byte(`10.0`), []byte(`10.5`), 1),
		"escape": bytes.Replace(readFile(t, files[3]), []byte(`\u00e9`), []byte(`\u00ea`), 1),
	}
	for name, doc := range tampered {
		if bytes.Equal(doc, signed) || bytes.Equal(doc, readFile(t, files[2])) || bytes.Equal(doc, readFile(t, files[3])) {
			t.Fatalf("%s: test bug: nothing was altered", name)
		}
		path := filepath.Join(dir, "tampered-"+name+".json")
		if err := os.WriteFile(path, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := python(t, nil, "verify", "--context", ContextVerify, "--public-key", pub, path)
		if err == nil || !strings.Contains(out, "FAIL") {
			t.Errorf("%s: python checker accepted a tampered receipt:\n%s", name, out)
		}
		if VerifyAttestation(doc, ContextVerify, []PublicKey{k.Public()}) == nil {
			t.Errorf("%s: Go verifier accepted a tampered receipt", name)
		}
	}
	out, err = python(t, nil, "verify", "--context", ContextScore, "--public-key", pub, files[0])
	if err == nil || !strings.Contains(out, "FAIL") {
		t.Errorf("python checker accepted a receipt under the wrong context:\n%s", out)
	}
}

// TestPythonCanonicalAgrees makes the Python canonicalizer a third party to the canonical table:
// the same form for every case, and a refusal for every document the Go canonicalizers refuse.
func TestPythonCanonicalAgrees(t *testing.T) {
	cases := canonicalCases(t)
	var inputs []string
	for _, c := range cases {
		inputs = append(inputs, base64.StdEncoding.EncodeToString([]byte(c.Input)))
	}
	for _, c := range rejectedInputs {
		inputs = append(inputs, base64.StdEncoding.EncodeToString([]byte(c.input)))
	}
	stdin, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := python(t, stdin, "canonicalize-each")
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	var got []*string
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != len(inputs) {
		t.Fatalf("python output (%v): %s", err, out)
	}
	for i, c := range cases {
		if got[i] == nil || *got[i] != c.Want {
			t.Errorf("%s: python gave %v, want %s", c.Name, deref(got[i]), c.Want)
		}
	}
	for i, c := range rejectedInputs {
		if g := got[len(cases)+i]; g != nil {
			t.Errorf("%s: python accepted %q as %s", c.name, c.input, *g)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<refused>"
	}
	return *s
}
