package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/intoto"
	"github.com/agent-output-verifier/verifier/pkg/intoto/intototest"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// GET /verifications/{id}/attestation: not before the leaf is in the log (404, Retry-After 1);
// then a DSSE envelope that go-securesystemslib verifies under the receipt key and whose
// statement in-toto's Go package parses, stating the record's facts: the task id as subject
// only for a verification in a public history (verification:<id> for anonymous and test- ones),
// output_hash as digest, rules_hash as the policy's, the rules level only when enforced. The
// record shows the paid answer's settlement, null for free ones; an independent checker in
// Python accepts the envelope.
func TestAttestationRoute(t *testing.T) {
	e := newPayEnv(t, openBolt, 3, &fakePayer{valid: true, settleOK: true})
	base := e.srv.URL
	rules := `"rules":[{"type":"gte","field":"n","value":1}],"enforce_rules":true`
	calls := []struct {
		body           string
		paid           bool
		subject        string // "" : verification:<id>
		result, levels string
	}{
		{`{"task_id":"anon-task","expected_schema":{"type":"object"},"submitted_output":{"n":1}}`, false, "", "PASSED", "AOV_SCHEMA_V1"},
		{`{"task_id":"test-task","agent_id":"test-bot","expected_schema":{"type":"object"},"submitted_output":{"n":0},` + rules + `}`, false, "", "FAILED", "AOV_SCHEMA_V1,AOV_RULES_V1"},
		{`{"task_id":"invoice-7","agent_id":"acme-bot","expected_schema":{"type":"object"},"submitted_output":{"n":2},` + rules + `}`, false, "invoice-7", "PASSED", "AOV_SCHEMA_V1,AOV_RULES_V1"},
		{`{"task_id":"invoice-8","agent_id":"acme-bot","expected_schema":{"type":"object"},"submitted_output":{"n":3}}`, true, "invoice-8", "PASSED", "AOV_SCHEMA_V1"},
	}
	ids := make([]string, len(calls))
	answers := make([]map[string]any, len(calls))
	for i, c := range calls {
		var hdr []string
		if c.paid {
			hdr = []string{"PAYMENT-SIGNATURE", paymentHeader(t, testRequirement, 1)}
		}
		resp, b := testhttp.Do(t, "POST", base+"/verify/schema", []byte(c.body), hdr...)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("verification %d: %d %s", i, resp.StatusCode, b)
		}
		json.Unmarshal(b, &answers[i])
		ids[i] = answers[i]["verification_id"].(string)
	}
	resp, b := testhttp.Do(t, "GET", base+"/verifications/"+ids[0]+"/attestation", nil)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("attestation before sequencing: %d %s, Retry-After %q; want 404 with Retry-After 1", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if _, err := e.svc.Sequence(context.Background()); err != nil {
		t.Fatal(err)
	}
	key := testsvc.Key()
	for i, c := range calls {
		resp, rec := getRecord(t, base, ids[i])
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("record %d: %d", i, resp.StatusCode)
		}
		var extra struct {
			TaskID          *string         `json:"task_id"`
			EnforceRules    bool            `json:"enforce_rules"`
			VerifierVersion *string         `json:"verifier_version"`
			Settlement      json.RawMessage `json:"settlement"`
		}
		_, raw := testhttp.Do(t, "GET", base+"/verifications/"+ids[i], nil)
		json.Unmarshal(raw, &extra)
		if (extra.TaskID != nil) != (c.subject != "") || (extra.TaskID != nil && *extra.TaskID != c.subject) || extra.EnforceRules != strings.Contains(c.levels, "RULES") || extra.VerifierVersion == nil {
			t.Errorf("record %d: task_id %v, enforce_rules %v, verifier_version %v", i, extra.TaskID, extra.EnforceRules, extra.VerifierVersion)
		}
		if c.paid {
			var s struct {
				Success     bool   `json:"success"`
				Transaction string `json:"transaction"`
				Network     string `json:"network"`
				Payer       string `json:"payer"`
			}
			if err := json.Unmarshal(rec.Settlement, &s); err != nil || !s.Success || s.Transaction != "0xtx" || s.Network != "eip155:8453" || s.Payer != "0xpayer" {
				t.Errorf("record %d: settlement %s, want the paid answer's", i, rec.Settlement)
			}
		} else if string(rec.Settlement) != "null" {
			t.Errorf("record %d: settlement %s, want null for a free answer", i, rec.Settlement)
		}

		resp, env := testhttp.Do(t, "GET", base+"/verifications/"+ids[i]+"/attestation", nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("attestation %d: %d %s %s", i, resp.StatusCode, resp.Header.Get("Content-Type"), env)
		}
		st, summary, _ := intototest.Open(t, env, key.Version, key.Public().Key)
		subject := c.subject
		if subject == "" {
			subject = "verification:" + ids[i]
		}
		record := testsvc.BaseURL + "/verifications/" + ids[i]
		if got := st.GetSubject(); len(got) != 1 || got[0].GetName() != subject || got[0].GetDigest()["sha256"] != answers[i]["output_hash"] {
			t.Errorf("attestation %d: subject %v, want %s with output_hash %s", i, got, subject, answers[i]["output_hash"])
		}
		if st.GetPredicateType() != intoto.PredicateType || summary.GetVerificationResult() != c.result ||
			strings.Join(summary.GetVerifiedLevels(), ",") != c.levels || summary.GetVerifier().GetId() != testsvc.BaseURL ||
			summary.GetResourceUri() != record || summary.GetPolicy().GetUri() != record ||
			summary.GetPolicy().GetDigest()["sha256"] != answers[i]["rules_hash"] {
			t.Errorf("attestation %d: %v", i, summary)
		}
		if want, _ := time.Parse(time.RFC3339Nano, answers[i]["verified_at"].(string)); !summary.GetTimeVerified().AsTime().Equal(want) {
			t.Errorf("attestation %d: timeVerified %v, want %v", i, summary.GetTimeVerified().AsTime(), want)
		}
		if strings.Contains(string(env), "anon-task") || strings.Contains(string(env), "test-task") {
			t.Errorf("attestation %d names a task id the public record does not hold: %s", i, env)
		}
		// The same answer again, from the kept envelope.
		if _, again := testhttp.Do(t, "GET", base+"/verifications/"+ids[i]+"/attestation", nil); !bytes.Equal(again, env) {
			t.Errorf("attestation %d changed on a second GET", i)
		}
		if i == 2 {
			checkInPython(t, env, key)
		}
	}
	for _, bad := range []string{"/verifications/nope/attestation", "/verifications/a%2Fb/attestation", "/verifications//attestation"} {
		if resp, b := testhttp.Do(t, "GET", base+bad, nil); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("GET %s: %d %s, want 404 or 422", bad, resp.StatusCode, b)
		}
	}
}

// checkInPython verifies env with pkg/intoto's independent Python checker (its own PAE, the
// cryptography package's Ed25519), which must accept it and refuse it tampered.
func checkInPython(t *testing.T, env []byte, key receipt.Key) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	if out, err := exec.Command(py, "-c", "import cryptography").CombinedOutput(); err != nil {
		t.Skipf("the cryptography package is missing: %s", out)
	}
	run := func(env []byte) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, filepath.Join("..", "intoto", "testdata", "check_dsse.py"), base64.StdEncoding.EncodeToString(key.Public().Key), key.Version)
		cmd.Stdin = bytes.NewReader(env)
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	out, err := run(env)
	if err != nil || !strings.HasPrefix(out, intoto.PredicateType+" PASSED ") {
		t.Fatalf("python: %q %v", out, err)
	}
	var m map[string]any
	json.Unmarshal(env, &m)
	payload, _ := base64.StdEncoding.DecodeString(m["payload"].(string))
	m["payload"] = base64.StdEncoding.EncodeToString(bytes.Replace(payload, []byte("PASSED"), []byte("FAILED"), 1))
	tampered, _ := json.Marshal(m)
	if out, err := run(tampered); err == nil {
		t.Errorf("python accepted a tampered payload: %s", fmt.Sprint(out))
	}
}
