package main

import (
	"context"
	"encoding/base64"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/app/embedded"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// TestScoreAndReputationReceipts checks that the signed answers of GET /score and GET /reputation
// verify offline, each under its own context and under no other, with `verifier receipt verify
// --context` and with the independent Python checker.
func TestScoreAndReputationReceipts(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"VERIFIER_DATA_DIR": filepath.Join(dir, "data")}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	svc, closeStore, err := app.Build(context.Background(), cfg, app.Options{CreateDevKey: true, Engine: engine.New, OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore() })
	srv := httptest.NewServer(httpapi.Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) }))
	t.Cleanup(srv.Close)

	get := func(method, path, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return b
	}
	for _, out := range []string{"1", `"x"`, "2"} {
		get("POST", "/verify/schema", `{"task_id":"t","agent_id":"seller-cli","expected_schema":{"type":"number"},"submitted_output":`+out+`}`)
	}
	// The card is read from a file: this deployment's base URL is not the test server's.
	card := filepath.Join(dir, "card.json")
	files := map[string]string{ // file -> the context it was signed for
		"score.json":              "score",
		"score-no-data.json":      "score",
		"reputation.json":         "reputation",
		"reputation-no-data.json": "reputation",
	}
	for name, path := range map[string]string{
		card:                                          "/.well-known/agent-card.json",
		filepath.Join(dir, "score.json"):              "/score/seller-cli",
		filepath.Join(dir, "score-no-data.json"):      "/score/test-cli",
		filepath.Join(dir, "reputation.json"):         "/reputation/seller-cli?limit=2",
		filepath.Join(dir, "reputation-no-data.json"): "/reputation/seller-unknown",
	} {
		if err := os.WriteFile(name, get("GET", path, ""), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(string(mustRead(t, filepath.Join(dir, "score.json"))), `"score":`) {
		t.Fatalf("score answer: %s", mustRead(t, filepath.Join(dir, "score.json")))
	}

	contexts := map[string]string{"score": receipt.ContextScore, "reputation": receipt.ContextReputation, "verify": receipt.ContextVerify}
	for file, signedFor := range files {
		path := filepath.Join(dir, file)
		for name := range contexts {
			code, out, errOut := runCLI(t, "", "receipt", "verify", "--context", name, "--card", card, path)
			want := 1
			if name == signedFor {
				want = 0
			}
			if code != want {
				t.Errorf("receipt verify --context %s %s = %d (%s%s), want %d", name, file, code, out, errOut, want)
			}
		}
	}

	checker := "../../pkg/receipt/testdata/check_receipt.py"
	if err := exec.Command("python3", checker, "probe").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with the cryptography package is required: %v", err)
		}
		t.Skipf("python3 with cryptography not available: %v", err)
	}
	pub := base64.StdEncoding.EncodeToString(svc.Keys().Current.Public().Key)
	for file, signedFor := range files {
		path := filepath.Join(dir, file)
		for name, ctx := range contexts {
			res, err := exec.Command("python3", checker, "verify", "--context", ctx, "--public-key", pub, path).CombinedOutput()
			if name == signedFor && (err != nil || !strings.HasPrefix(string(res), "OK ")) {
				t.Errorf("Python checker, %s under %s: %v %s", file, name, err, res)
			}
			if name != signedFor && (err == nil || !strings.HasPrefix(string(res), "FAIL ")) {
				t.Errorf("Python checker accepts %s under %s: %s", file, name, res)
			}
		}
	}
}
