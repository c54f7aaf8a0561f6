package intoto_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vsa "github.com/in-toto/attestation/go/predicates/vsa/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agent-output-verifier/verifier/pkg/intoto"
	"github.com/agent-output-verifier/verifier/pkg/intoto/intototest"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

const base = "https://verifier.example"

func testKey() receipt.Key {
	return receipt.Key{Version: "v-dsse-1", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32))}
}

// seedVerification is the facts of the seed's draft invoice receipt (a fail, rules enforced).
func seedVerification(t *testing.T) intoto.Verification {
	t.Helper()
	b, err := os.ReadFile("../../testdata/seed/invoice-draft.response.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := intoto.FromReceipt(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The envelope verifies with go-securesystemslib's DSSE verifier, the statement parses and
// validates as in-toto's Statement v1, and its predicate as SLSA's VSA v1, with SPEC §16's fields.
func TestEnvelopeVerifiesWithDSSEAndParsesAsInToto(t *testing.T) {
	key := testKey()
	v := seedVerification(t)
	raw, err := intoto.Envelope(v, base, key, key.Version)
	if err != nil {
		t.Fatal(err)
	}
	st, summary, pred := intototest.Open(t, raw, key.Version, key.Public().Key)
	// Another key does not verify it.
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{6}, 32)).Public().(ed25519.PublicKey)
	if err := intototest.Verify(raw, key.Version, other); err == nil {
		t.Error("the envelope verifies under another key")
	}
	if len(st.GetSubject()) != 1 || st.GetSubject()[0].GetName() != v.TaskID || st.GetSubject()[0].GetDigest()["sha256"] != v.OutputHash ||
		st.GetPredicateType() != intoto.PredicateType {
		t.Fatalf("statement %v", st)
	}
	// in-toto's VSA v1 message has no verifier.version (SLSA's VSA v1 specification defines it,
	// a map of component to version), so that one member is read from the JSON; every other
	// member must parse with its type.
	var doc map[string]any
	json.Unmarshal(pred, &doc)
	delete(doc["verifier"].(map[string]any), "version")
	stripped, _ := json.Marshal(doc)
	if err := protojson.Unmarshal(stripped, new(vsa.VerificationSummary)); err != nil {
		t.Fatalf("the predicate has members VSA v1 does not define: %v", err)
	}
	if !bytes.Contains(pred, []byte(`"version":{"agent-output-verifier":"`+v.VerifierVersion+`"}`)) {
		t.Errorf("verifier.version missing: %s", pred)
	}
	record := base + "/verifications/" + v.VerificationID
	if summary.GetVerifier().GetId() != base || summary.GetVerificationResult() != "FAILED" || summary.GetResourceUri() != record ||
		summary.GetPolicy().GetUri() != record || summary.GetPolicy().GetDigest()["sha256"] != v.RulesHash ||
		strings.Join(summary.GetVerifiedLevels(), ",") != "AOV_SCHEMA_V1,AOV_RULES_V1" ||
		summary.GetTimeVerified().AsTime().Format(time.RFC3339Nano) == "" || len(summary.GetInputAttestations()) != 0 {
		t.Fatalf("VSA %v", &summary)
	}
	if want, _ := time.Parse(time.RFC3339Nano, v.VerifiedAt); !summary.GetTimeVerified().AsTime().Equal(want) {
		t.Errorf("timeVerified %v, want %v", summary.GetTimeVerified().AsTime(), want)
	}

	// A pass without enforced rules: PASSED, the schema level only.
	v.Result, v.EnforceRules = "pass", false
	s, err := intoto.Statement(v, base)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(s, []byte(`"verificationResult":"PASSED"`)) || !bytes.Contains(s, []byte(`"verifiedLevels":["AOV_SCHEMA_V1"]`)) {
		t.Errorf("pass statement %s", s)
	}
}

// The same envelope verifies with an independent checker in Python (cryptography, its own PAE),
// which refuses a tampered payload.
func TestEnvelopeVerifiesInPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	checker := filepath.Join("testdata", "check_dsse.py")
	if out, err := exec.Command(py, "-c", "import cryptography").CombinedOutput(); err != nil {
		t.Skipf("the cryptography package is missing: %s", out)
	}
	key := testKey()
	v := seedVerification(t)
	raw, err := intoto.Envelope(v, base, key, key.Version)
	if err != nil {
		t.Fatal(err)
	}
	run := func(env []byte) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, checker, base64.StdEncoding.EncodeToString(key.Public().Key), key.Version)
		cmd.Stdin = bytes.NewReader(env)
		out, err := cmd.Output()
		return string(out), err
	}
	out, err := run(raw)
	if err != nil || strings.TrimSpace(out) != intoto.PredicateType+" FAILED "+v.OutputHash {
		t.Fatalf("python: %q %v", out, err)
	}
	var env map[string]any
	json.Unmarshal(raw, &env)
	payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	env["payload"] = base64.StdEncoding.EncodeToString(bytes.Replace(payload, []byte("FAILED"), []byte("PASSED"), 1))
	tampered, _ := json.Marshal(env)
	if _, err := run(tampered); err == nil {
		t.Error("python accepted a tampered payload")
	}
}

// PAE is DSSE's encoding, as its specification's example gives it.
func TestPAE(t *testing.T) {
	got := string(intoto.PAE("http://example.com/HelloWorld", []byte("hello world")))
	if want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"; got != want {
		t.Errorf("PAE %q, want %q", got, want)
	}
}
