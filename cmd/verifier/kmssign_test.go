package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/kmstest"
	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/app/embedded"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
)

// kmsSignServer is the local server signing with VERIFIER_SIGNING_KEY=kms-sign: against a test
// KMS (internal/kmstest), the key inside it, with the embedded store in dir.
func kmsSignServer(t *testing.T, dir string, kms *kmstest.Server, extra map[string]string) *httptest.Server {
	t.Helper()
	env := map[string]string{"VERIFIER_SIGNING_KEY": "kms-sign:alias/verifier-receipts", "VERIFIER_KEY_VERSION": "v-kms"}
	for k, v := range extra {
		env[k] = v
	}
	srv, svc := awsKeyServer(t, dir, map[string]string{"AWS_ENDPOINT_URL_KMS": kms.URL}, env)
	if got := svc.Keys().Current.Public().Key; !got.Equal(kms.Public()) {
		t.Fatal("the service's public key is not the KMS key's")
	}
	return srv
}

// awsKeyServer is the local server with its signing key from an AWS key source (env's
// VERIFIER_SIGNING_KEY, read through app.NewAWS as the functions read it) served by the test
// servers whose endpoint variables endpoints sets, with the embedded store in dir.
func awsKeyServer(t *testing.T, dir string, endpoints, env map[string]string) (*httptest.Server, *service.Service) {
	t.Helper()
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDKMSSIGN")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	for _, k := range []string{"AWS_ENDPOINT_URL_KMS", "AWS_ENDPOINT_URL_SECRETS_MANAGER"} {
		t.Setenv(k, endpoints[k])
	}
	all := map[string]string{"VERIFIER_DATA_DIR": filepath.Join(dir, "data")}
	for k, v := range env {
		all[k] = v
	}
	cfg, err := config.Load(func(k string) string { return all[k] })
	if err != nil {
		t.Fatal(err)
	}
	aws, err := app.NewAWS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := app.MakeDataDir(cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	svc, closeStore, err := app.Build(context.Background(), cfg, app.Options{KeySource: aws.KeySource, Engine: engine.New,
		OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore() })
	srv := httptest.NewServer(httpapi.Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) }))
	t.Cleanup(srv.Close)
	return srv, svc
}

// manyFailures is a request whose output fails its schema n times: a full report of four lists
// of 50 entries (SPEC §4.6), about 40 KB to sign.
func manyFailures(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`"item %d"`, i)
	}
	return `{"task_id":"t-kms","agent_id":"seller-kms","expected_schema":{"type":"array","items":{"type":"integer"}},"submitted_output":[` +
		strings.Join(items, ",") + `]}`
}

func call(t *testing.T, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// listsShown is how many entries each of a report's four lists shows.
func listsShown(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, name := range []string{"errors", "errors_detail", "flags", "hints"} {
		list, _ := m[name].([]any)
		out[name] = len(list)
		if total, _ := m[name+"_total"].(float64); total != 200 || m[name+"_omitted"].(float64) != float64(200-len(list)) {
			t.Errorf("%s: total %v omitted %v with %d shown", name, m[name+"_total"], m[name+"_omitted"], len(list))
		}
	}
	return out
}

// Receipts signed through kms-sign: (KMS Sign, ED25519_SHA_512, RAW) verify with `verifier receipt
// verify` against the agent card and with the independent Python checker: a failing report of
// 200 errors, fitted under KMS's 4096 bytes (the test KMS refuses a longer message), while the
// same request signed with a local key keeps 50 entries per list; a score; a reputation page of
// 30 entries, which shows as many as fit and pages on with next_cursor.
func TestKMSSignReceiptsVerify(t *testing.T) {
	dir := t.TempDir()
	kms := kmstest.Start(t)
	srv := kmsSignServer(t, dir, kms, nil)

	resp, signed := call(t, "POST", srv.URL+"/verify/schema", manyFailures(200))
	if resp.StatusCode != 200 {
		t.Fatalf("verify: %d %s", resp.StatusCode, signed)
	}
	fitted := listsShown(t, signed)
	t.Logf("kms-sign: lists shown %v of 200 each", fitted)
	if fitted["errors"] == 0 || fitted["errors"] >= 50 || fitted["hints"] > fitted["errors"] {
		t.Errorf("kms-sign: lists %v, want them shortened to fit 4096 bytes, hints first", fitted)
	}
	if err := receipt.VerifyReceipt(signed, []receipt.PublicKey{{Version: "v-kms", Key: kms.Public()}}, []byte(manyFailures(200))); err != nil {
		t.Fatalf("the kms-sign receipt does not verify: %v", err)
	}

	// The same request, signed by a local key (the CLI's check with a key file).
	keyFile := filepath.Join(dir, "local.json")
	if code, _, stderr := runCLI(t, "", "keygen", "--out", keyFile, "--version", "v-local"); code != 0 {
		t.Fatal(stderr)
	}
	reqFile := filepath.Join(dir, "request.json")
	os.WriteFile(reqFile, []byte(manyFailures(200)), 0o644)
	_, localOut, _ := runCLI(t, "", "check", "--key", keyFile, reqFile)
	for name, n := range listsShown(t, []byte(localOut)) {
		if n != 50 {
			t.Errorf("local key: %s shows %d entries, want 50", name, n)
		}
	}

	for i := range 30 {
		body := fmt.Sprintf(`{"task_id":"task-%02d-%s","agent_id":"seller-kms","expected_schema":{"type":"number"},"submitted_output":%d}`, i, strings.Repeat("x", 60), i)
		if resp, b := call(t, "POST", srv.URL+"/verify/schema", body); resp.StatusCode != 200 {
			t.Fatalf("verify %d: %d %s", i, resp.StatusCode, b)
		}
	}
	files := map[string]string{}
	for name, path := range map[string]string{
		"card.json":       "/.well-known/agent-card.json",
		"verify.json":     "",
		"score.json":      "/score/seller-kms",
		"reputation.json": "/reputation/seller-kms?limit=100",
	} {
		b := signed
		if path != "" {
			var resp *http.Response
			if resp, b = call(t, "GET", srv.URL+path, ""); resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
			}
		}
		files[name] = filepath.Join(dir, name)
		if err := os.WriteFile(files[name], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var page struct {
		History    []any   `json:"history"`
		NextCursor *string `json:"next_cursor"`
	}
	json.Unmarshal(mustRead(t, files["reputation.json"]), &page)
	if len(page.History) == 0 || len(page.History) >= 31 || page.NextCursor == nil {
		t.Errorf("reputation page under kms-sign: %d entries, next_cursor %v; want the entries that fit and a cursor", len(page.History), page.NextCursor)
	}

	contexts := map[string]string{"verify.json": "verify", "score.json": "score", "reputation.json": "reputation"}
	for file, name := range contexts {
		if code, out, errOut := runCLI(t, "", "receipt", "verify", "--context", name, "--card", files["card.json"], files[file]); code != 0 {
			t.Errorf("receipt verify %s: %d %s%s", file, code, out, errOut)
		}
	}
	checker := "../../pkg/receipt/testdata/check_receipt.py"
	if err := exec.Command("python3", checker, "probe").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with the cryptography package is required: %v", err)
		}
		t.Skipf("python3 with cryptography not available: %v", err)
	}
	ctxs := map[string]string{"verify": receipt.ContextVerify, "score": receipt.ContextScore, "reputation": receipt.ContextReputation}
	pub := base64.StdEncoding.EncodeToString(kms.Public())
	for file, name := range contexts {
		res, err := exec.Command("python3", checker, "verify", "--context", ctxs[name], "--public-key", pub, files[file]).CombinedOutput()
		if err != nil || !bytes.HasPrefix(res, []byte("OK ")) {
			t.Errorf("Python checker, %s: %v %s", file, err, res)
		}
	}
}

// A KMS Sign call that fails answers a retryable 503 that charges nothing: the free allowance is
// not consumed and nothing is recorded; once KMS signs again, the same client is served.
func TestKMSSignFailureChargesNothing(t *testing.T) {
	kms := kmstest.Start(t)
	srv := kmsSignServer(t, t.TempDir(), kms, map[string]string{"VERIFIER_FREE_CALLS_PER_DAY": "1"})
	body := `{"task_id":"t-503","agent_id":"seller-503","expected_schema":{"type":"number"},"submitted_output":1}`

	kms.FailSign(true)
	resp, b := call(t, "POST", srv.URL+"/verify/schema", body)
	var e struct {
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
		Charged   bool   `json:"charged"`
	}
	json.Unmarshal(b, &e)
	if resp.StatusCode != 503 || e.Code != "service_unavailable" || !e.Retryable || e.Charged || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a failed KMS Sign: %d %s, want a retryable 503 that charged nothing", resp.StatusCode, b)
	}

	kms.FailSign(false)
	if resp, b := call(t, "GET", srv.URL+"/reputation/seller-503", ""); resp.StatusCode != 200 || !strings.Contains(string(b), `"reason":"no_data"`) {
		t.Errorf("after the failed sign, reputation: %d %s; want nothing recorded", resp.StatusCode, b)
	}
	signs := kms.Signs()
	resp, b = call(t, "POST", srv.URL+"/verify/schema", body)
	if resp.StatusCode != 200 || resp.Header.Get("Free-Allowance-Remaining") != "0" || kms.Signs() != signs+1 {
		t.Fatalf("once KMS signs again: %d (remaining %q) %s; want the one free call of the day, unconsumed by the failure",
			resp.StatusCode, resp.Header.Get("Free-Allowance-Remaining"), b)
	}
}
