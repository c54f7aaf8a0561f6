package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/internal/testproc"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
)

const seedRequest = "../../testdata/seed/invoice-draft.request.json"

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.json")
	if code, _, stderr := runCLI(t, "", "keygen", "--out", keyFile, "--version", "v-test"); code != 0 {
		t.Fatalf("keygen: %d %s", code, stderr)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", st.Mode(), err)
	}
	if code, _, _ := runCLI(t, "", "keygen", "--out", keyFile); code == 0 {
		t.Fatal("keygen overwrote an existing key file")
	}

	// fail → 1, signed; the receipt verifies with --key and with --request.
	code, out, _ := runCLI(t, "", "check", "--key", keyFile, seedRequest)
	if code != 1 || !strings.Contains(out, `"result": "fail"`) {
		t.Fatalf("check draft: exit %d\n%s", code, out)
	}
	receiptFile := filepath.Join(dir, "receipt.json")
	os.WriteFile(receiptFile, []byte(out), 0o644)
	var kf struct{ PublicKey string }
	b, _ := os.ReadFile(keyFile)
	json.Unmarshal(b, &kf)
	if code, out, _ := runCLI(t, "", "receipt", "verify", "--key", kf.PublicKey, "--request", seedRequest, receiptFile); code != 0 || !strings.HasPrefix(out, "OK:") {
		t.Fatalf("receipt verify: %d %s", code, out)
	}
	// One changed byte fails with a one-line reason.
	bad := strings.Replace(string(mustRead(t, receiptFile)), `"passed": 22`, `"passed": 23`, 1)
	os.WriteFile(receiptFile, []byte(bad), 0o644)
	if code, out, _ := runCLI(t, "", "receipt", "verify", "--key", kf.PublicKey, receiptFile); code != 1 || !strings.HasPrefix(out, "FAIL:") || strings.Count(out, "\n") != 1 {
		t.Fatalf("tampered receipt: %d %q", code, out)
	}
	// Another request's hashes do not match.
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, bytes.Replace(mustRead(t, seedRequest), []byte("135.0"), []byte("129.5"), 1), 0o644)
	code, out, _ = runCLI(t, "", "check", "--key", keyFile, "--detail", "compact", other)
	if code != 0 || !strings.Contains(out, `"result": "pass"`) || strings.Contains(out, "request_hash") {
		t.Fatalf("check corrected (compact): exit %d\n%s", code, out)
	}
	os.WriteFile(receiptFile, []byte(out), 0o644)
	if code, out, _ := runCLI(t, "", "receipt", "verify", "--key", kf.PublicKey, "--request", seedRequest, receiptFile); code != 1 || !strings.Contains(out, "hash") {
		t.Fatalf("receipt against the wrong request: %d %s", code, out)
	}

	// invalid → 2 with the error envelope on stdout; stdin works.
	code, out, _ = runCLI(t, `{"task_id":"x","expected_schema":{},"submitted_output":1,"rules":[{"type":"nope","field":"a"}]}`, "check", "--unsigned", "-")
	if code != 2 || !strings.Contains(out, `"code": "invalid_request"`) || !strings.Contains(out, `"rules[0].type"`) {
		t.Fatalf("check invalid: exit %d\n%s", code, out)
	}
	// A schema too costly to evaluate is no verdict: 2 with the schema_too_complex envelope.
	var defs strings.Builder
	defs.WriteString(`"d0":{"type":"integer"}`)
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&defs, `,"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i-1, i-1)
	}
	code, out, _ = runCLI(t, `{"task_id":"x","expected_schema":{"$defs":{`+defs.String()+`},"$ref":"#/$defs/d16"},"submitted_output":1}`, "check", "--unsigned", "-")
	if code != 2 || !strings.Contains(out, `"code": "schema_too_complex"`) || !strings.Contains(out, `"field": "expected_schema"`) || strings.Contains(out, `"result"`) {
		t.Fatalf("check too complex: exit %d\n%s", code, out)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServeEndToEnd is what `make dev` gives a new user: the server on loopback, the README's
// curl, and `receipt verify --card` against the running server's agent card.
func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the server")
	}
	dir := t.TempDir()
	srv := startServe(t, dir)
	base, stderr := srv.url, srv.log
	if st, err := os.Stat(filepath.Join(dir, "data", "signing-key.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("dev key not created with mode 0600: %v", err)
	}

	body := `{"task_id":"demo-1","expected_schema":{"type":"object","required":["total"],"properties":{"total":{"type":"number"}}},"submitted_output":{"total":42}}`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/verify/schema", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(got, []byte(`"result":"pass"`)) || !bytes.Contains(got, []byte(base+"/.well-known/agent-card.json")) {
		t.Fatalf("verify: %d %s", resp.StatusCode, got)
	}
	receiptFile := filepath.Join(dir, "receipt.json")
	reqFile := filepath.Join(dir, "request.json")
	os.WriteFile(receiptFile, got, 0o644)
	os.WriteFile(reqFile, []byte(body), 0o644)
	if code, out, errOut := runCLI(t, "", "receipt", "verify", "--card", base+"/.well-known/agent-card.json", "--request", reqFile, receiptFile); code != 0 {
		t.Fatalf("receipt verify --card: %d %s %s", code, out, errOut)
	}
	// The MCP endpoint is served too, to a client that sends no Accept header (the README's curl).
	rpc := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify_schema","arguments":` + body + `}}`
	req, _ = http.NewRequestWithContext(ctx, "POST", base+"/mcp", strings.NewReader(rpc))
	req.Header.Set("Content-Type", "application/json")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(got, []byte(`"structuredContent":{"summary":{"result":"pass"`)) {
		t.Fatalf("MCP verify_schema: %d %s", resp.StatusCode, got)
	}
	// The server's own refusals come in the envelope: a header section over the limit is a 431
	// naming it.
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", strings.Repeat("a", 2*maxHeaderBytes))
	if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 431 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Contains(got, []byte(fmt.Sprintf(`"limit":%d`, maxHeaderBytes))) {
		t.Errorf("oversized headers: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}
	// The request's log line is written after its response: wait for it.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !strings.Contains(stderr.String(), `"route":"/verify/schema"`); {
		time.Sleep(20 * time.Millisecond)
	}
	if logs := stderr.String(); strings.Contains(logs, "demo-1") || !strings.Contains(logs, `"route":"/verify/schema"`) {
		t.Errorf("server log leaks request data or lacks the request line:\n%s", logs)
	}
}

// served is a running `verifier serve`.
type served struct {
	url   string
	log   *testproc.TailBuffer
	pid   int
	done  chan struct{}    // closed when the process has exited
	state *os.ProcessState // set before done is closed
}

// startServe builds the command and runs `verifier serve` on a free loopback port with its data
// under dir, as `make dev` does. The server is stopped when the test ends.
func startServe(t *testing.T, dir string) *served {
	t.Helper()
	return runServeProcess(t, buildVerifier(t, dir), filepath.Join(dir, "data"))
}

// buildVerifier builds the command into dir and returns its path.
func buildVerifier(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "verifier")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// runServeProcess runs bin's `verifier serve` on a free loopback port with its data in data and
// env added to the environment, and stops it when the test ends.
func runServeProcess(t *testing.T, bin, data string, env ...string) *served {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data)
	cmd.Env = append(append(os.Environ(), "VERIFIER_BASE_URL=", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"), env...)
	testproc.SetProcessGroup(cmd)
	stdout, _ := cmd.StdoutPipe()
	s := &served{log: &testproc.TailBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.pid = cmd.Process.Pid
	go func() {
		cmd.Wait()
		s.state = cmd.ProcessState
		close(s.done)
	}()
	t.Cleanup(func() {
		testproc.KillProcessGroup(s.pid, false)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			testproc.KillProcessGroup(s.pid, true)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no start line: %v\n%s", err, s.log.String())
	}
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q", line)
	}
	s.url = m[1]
	return s
}

// A stop signal ends `verifier serve` gracefully: exit status 0, and what it answered is in the
// store (the queued history write landed before the store closed).
func TestServeStopsGracefully(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, dir)
	body := `{"task_id":"t-stop","agent_id":"seller-stop","expected_schema":{"type":"integer"},"submitted_output":1}`
	if resp, b := testhttp.Do(t, "POST", srv.url+"/verify/schema", []byte(body)); resp.StatusCode != 200 {
		t.Fatalf("verify: %d %s", resp.StatusCode, b)
	}
	testproc.KillProcessGroup(srv.pid, false)
	select {
	case <-srv.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("no exit 10 s after SIGTERM\n%s", srv.log.String())
	}
	if code := srv.state.ExitCode(); code != exitOK {
		t.Fatalf("exit status %d after SIGTERM, want %d\n%s", code, exitOK, srv.log.String())
	}
	st, err := bolt.Open(filepath.Join(dir, "data", bolt.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if page, _, err := st.History(context.Background(), "seller-stop", 10, ""); err != nil || len(page) != 1 {
		t.Errorf("history after the stop: %d records, %v; want the one verification", len(page), err)
	}
}

// A receipt from `verifier check` verifies with the independent Python checker (RFC 8785 and
// Ed25519 written from the RFCs, sharing no code with the signer), and a tampered one does not.
func TestCheckReceiptWithPython(t *testing.T) {
	checker := "../../pkg/receipt/testdata/check_receipt.py"
	if err := exec.Command("python3", checker, "probe").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with the cryptography package is required: %v", err)
		}
		t.Skipf("python3 with cryptography not available: %v", err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.json")
	if code, _, stderr := runCLI(t, "", "keygen", "--out", keyFile, "--version", "v-py"); code != 0 {
		t.Fatal(stderr)
	}
	var kf struct{ PublicKey string }
	json.Unmarshal(mustRead(t, keyFile), &kf)
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	_, out, _ := runCLI(t, "", "check", "--key", keyFile, seedRequest)
	os.WriteFile(good, []byte(out), 0o644)
	os.WriteFile(bad, []byte(strings.Replace(out, `"fail"`, `"pass"`, 1)), 0o644)
	res, err := exec.Command("python3", checker, "verify", "--context", "json-schema-verifier/verify-schema-attestation/v1",
		"--public-key", kf.PublicKey, good, bad).CombinedOutput()
	if err == nil || !strings.Contains(string(res), "OK "+good) || !strings.Contains(string(res), "FAIL "+bad) {
		t.Fatalf("python checker: %v\n%s", err, res)
	}
}
