package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testserver"

	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
)

const remoteRequest = `{"task_id":"remote-1","agent_id":"seller-remote","expected_schema":{"type":"object","required":["total"]},"submitted_output":{"total":1}}`

func TestRemoteCommands(t *testing.T) {
	base := testserver.Start(t, nil, nil).URL
	dir := t.TempDir()
	reqFile := filepath.Join(dir, "request.json")
	os.WriteFile(reqFile, []byte(remoteRequest), 0o644)

	// pass → 0, the answer on stdout (a receipt that verifies offline), one line on stderr.
	code, out, errOut := runCLI(t, "", "remote", "verify", "--url", base, reqFile)
	if code != exitOK || !strings.Contains(out, `"result": "pass"`) || strings.Count(errOut, "\n") != 1 ||
		!strings.HasPrefix(errOut, "pass") || !strings.Contains(errOut, "receipt verified") || !strings.Contains(errOut, "free allowance 999/1000") {
		t.Fatalf("remote verify: %d\n%s\n%s", code, out, errOut)
	}
	receiptFile := filepath.Join(dir, "receipt.json")
	os.WriteFile(receiptFile, []byte(out), 0o644)
	if code, vout, _ := runCLI(t, "", "receipt", "verify", "--card", base+"/.well-known/agent-card.json", "--request", reqFile, receiptFile); code != 0 {
		t.Fatalf("the printed answer does not verify offline: %s", vout)
	}

	// fail → 1, through the deliverable route, the request from stdin.
	code, out, errOut = runCLI(t, string(mustRead(t, seedRequest)), "remote", "deliverable", "--url", base, "-")
	if code != exitFail || !strings.Contains(out, `"result": "fail"`) || !strings.HasPrefix(errOut, "fail: blocking consistency:sum_equals") {
		t.Fatalf("remote deliverable: %d\n%s", code, errOut)
	}

	// invalid → 2 with the envelope on stdout.
	code, out, errOut = runCLI(t, `{"task_id":"x","expected_schema":{},"submitted_output":1,"rules":[{"type":"nope","field":"a"}]}`, "remote", "verify", "--url", base, "-")
	if code != exitInvalid || !strings.Contains(out, `"code": "invalid_request"`) || !strings.Contains(out, `"rules[0].type"`) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("remote verify invalid: %d\n%s\n%s", code, out, errOut)
	}

	// reputation and score of the agent above (free without a payee).
	code, out, errOut = runCLI(t, "", "remote", "reputation", "--url", base, "--limit", "1", "seller-remote")
	if code != exitOK || !strings.Contains(out, `"agent_id": "seller-remote"`) || !strings.HasPrefix(errOut, "reputation: 1 verifications (1 passed") {
		t.Fatalf("remote reputation: %d\n%s\n%s", code, out, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep["attestation"] == nil {
		t.Fatalf("reputation JSON: %v", err)
	}
	code, _, errOut = runCLI(t, "", "remote", "score", "--url", base, "seller-remote")
	if code != exitOK || !strings.HasPrefix(errOut, "score ") || !strings.Contains(errOut, "receipt verified") {
		t.Fatalf("remote score: %d %s", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "remote", "score", "--url", base, "nobody")
	if code != exitOK || !strings.HasPrefix(errOut, "no score: no_data") {
		t.Fatalf("remote score no_data: %d %s", code, errOut)
	}

	// Usage errors → 2; an unreachable service → 3.
	for _, args := range [][]string{{"remote"}, {"remote", "verify", reqFile}, {"remote", "nope", "--url", base, reqFile},
		{"remote", "verify", "--url", "not a url", reqFile}, {"remote", "verify", "--url", base, "--max-price", "$1", reqFile},
		{"remote", "verify", "--url", base, "--pay-key", filepath.Join(dir, "missing.key"), reqFile}} {
		if code, _, _ := runCLI(t, "", args...); code != exitInvalid {
			t.Errorf("%v: exit %d, want %d", args, code, exitInvalid)
		}
	}
	// An answer that is not the service's envelope (a proxy's 502 page) → 3, printed with the
	// status it came with.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>bad gateway</html>")
	}))
	defer proxy.Close()
	if code, out, _ := runCLI(t, "", "remote", "verify", "--url", proxy.URL, reqFile); code != exitError || !strings.Contains(out, `"status": 502`) {
		t.Errorf("a proxy's 502: exit %d, %s; want 3 and the status it came with", code, out)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	if code, _, errOut := runCLI(t, "", "remote", "verify", "--url", dead, reqFile); code != exitError || !strings.HasPrefix(errOut, "verifier remote verify: POST /verify/schema: ") {
		t.Errorf("unreachable: %d %s", code, errOut)
	}
}

// The command pays past the free allowance on the local chain, within --max-price, and refuses
// above it without signing.
func TestRemotePaysOnLocalChain(t *testing.T) {
	chain := x402test.Start(t)
	base := testserver.Start(t, map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "1",
		"X402_FACILITATOR_URL":        chain.Facilitator,
		"X402_PAY_TO_EVM":             chain.Payee,
		"X402_NETWORKS":               x402test.Network,
	}, nil).URL
	dir := t.TempDir()
	reqFile := filepath.Join(dir, "request.json")
	os.WriteFile(reqFile, []byte(remoteRequest), 0o644)
	keyFile := filepath.Join(dir, "pay.key")
	os.WriteFile(keyFile, []byte(chain.PayerKey+"\n"), 0o600)
	ledger := x402test.NewLedger(t, chain.Balance, chain.Payer, chain.Payee)

	if code, _, errOut := runCLI(t, "", "remote", "verify", "--url", base, "--pay-key", keyFile, reqFile); code != exitOK || strings.Contains(errOut, "paid") {
		t.Fatalf("free call: %d %s", code, errOut)
	}
	ledger.Moved(t, 0)

	// Without a key: 402, the PaymentRequired and free_trial on stdout, exit 3.
	code, out, errOut := runCLI(t, "", "remote", "verify", "--url", base, reqFile)
	if code != exitError || !strings.Contains(out, `"free_trial"`) || !strings.Contains(out, `"free_trial_exhausted"`) || !strings.Contains(errOut, "payment required") {
		t.Fatalf("unpaid: %d\n%s\n%s", code, out, errOut)
	}
	// Over --max-price: refused before signing, nothing moves.
	code, out, errOut = runCLI(t, "", "remote", "verify", "--url", base, "--pay-key", keyFile, "--max-price", "0.01", reqFile)
	if code != exitError || !strings.Contains(out, `"spending_cap"`) || !strings.Contains(errOut, "nothing was signed") {
		t.Fatalf("over the cap: %d\n%s\n%s", code, out, errOut)
	}
	ledger.Moved(t, 0)

	// Paid with the key file, then with the key in the environment.
	code, out, errOut = runCLI(t, "", "remote", "verify", "--url", base, "--pay-key", keyFile, "--max-price", "0.02", reqFile)
	if code != exitOK || !strings.Contains(out, `"result": "pass"`) || !strings.Contains(errOut, "paid 0.02 USD (transaction 0x") {
		t.Fatalf("paid: %d\n%s", code, errOut)
	}
	ledger.Moved(t, 20000)
	t.Setenv(envPayKey, chain.PayerKey)
	if code, _, errOut := runCLI(t, "", "remote", "deliverable", "--url", base, reqFile); code != exitOK || !strings.Contains(errOut, "paid 0.02 USD") {
		t.Fatalf("paid from the environment: %d %s", code, errOut)
	}
	ledger.Moved(t, 40000)

	// The agent now has a paid history, so its score costs $0.01.
	code, _, errOut = runCLI(t, "", "remote", "score", "--url", base, "seller-remote")
	if code != exitOK || !strings.Contains(errOut, "paid 0.01 USD") {
		t.Fatalf("paid score: %d %s", code, errOut)
	}
	ledger.Moved(t, 50000)
}

// The command pays on Solana with --pay-solana-key and --solana-rpc, or the same from the
// environment, and needs the RPC URL to have a Solana key at all.
func TestRemotePaysOnLocalSolana(t *testing.T) {
	sol := x402test.StartSolana(t)
	base := testserver.Start(t, map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "0",
		"X402_FACILITATOR_URL":        sol.Facilitator,
		"X402_PAY_TO_SOLANA":          sol.Payee,
		"X402_NETWORKS":               x402test.SolanaNetwork,
	}, nil).URL
	dir := t.TempDir()
	reqFile := filepath.Join(dir, "request.json")
	os.WriteFile(reqFile, []byte(remoteRequest), 0o644)
	keyFile := filepath.Join(dir, "solana.key")
	os.WriteFile(keyFile, []byte(sol.PayerKey+"\n"), 0o600)
	ledger := x402test.NewLedger(t, sol.Balance, sol.PayerTokenAccount, sol.PayeeTokenAccount)

	code, out, errOut := runCLI(t, "", "remote", "verify", "--url", base, "--pay-solana-key", keyFile, "--solana-rpc", sol.RPC, reqFile)
	if code != exitOK || !strings.Contains(out, `"result": "pass"`) || !strings.Contains(errOut, "paid 0.02 USD") || !strings.Contains(errOut, x402test.SolanaNetwork) {
		t.Fatalf("paid: %d\n%s", code, errOut)
	}
	// A Solana key without the RPC URL is a usage error, before anything is sent.
	if code, _, errOut := runCLI(t, "", "remote", "verify", "--url", base, "--pay-solana-key", keyFile, reqFile); code != exitInvalid || !strings.Contains(errOut, "JSON-RPC URL") {
		t.Fatalf("no RPC URL: %d %s", code, errOut)
	}
	t.Setenv(envPaySolanaKey, sol.PayerKey)
	t.Setenv(envSolanaRPC, sol.RPC)
	if code, _, errOut := runCLI(t, "", "remote", "deliverable", "--url", base, reqFile); code != exitOK || !strings.Contains(errOut, "paid 0.02 USD") {
		t.Fatalf("paid from the environment: %d %s", code, errOut)
	}
	ledger.Moved(t, 40000)
}
