package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// Sizes of the crash tests: a few cycles of a few seconds each, so that they stay a small part of
// `make test`, with enough concurrent clients that every kill lands among answers in flight.
const (
	crashCycles  = 3
	crashClients = 16
	crashLoad    = 1500 * time.Millisecond // load before each kill -9
	// crashCatchUp bounds the wait for the sequencer to take in every recorded leaf after the
	// last restart.
	crashCatchUp = 30 * time.Second
)

// crashBaseURL is the public base URL every crash test instance names: the log's origin must not
// change with the port a restarted server happens to get (SPEC §15; issue 34 item 8).
const crashBaseURL = "http://verifier.test"

// sharedKeys makes one signing key and one log key for every instance of a test, and returns the
// environment that names them and the base URL: instances that share a store share one log
// identity.
func sharedKeys(t *testing.T, dir string) []string {
	t.Helper()
	signing, logKey := filepath.Join(dir, "signing.key.json"), filepath.Join(dir, "log.key.json")
	for file, version := range map[string]string{signing: "v-shared", logKey: "log-shared"} {
		if code, _, stderr := runCLI(t, "", "keygen", "--out", file, "--version", version); code != exitOK {
			t.Fatalf("keygen %s: %s", file, stderr)
		}
	}
	return []string{"VERIFIER_BASE_URL=" + crashBaseURL, "VERIFIER_SIGNING_KEY=file:" + signing, "VERIFIER_LOG_KEY=file:" + logKey}
}

// deliveries are the answers a load's clients received with status 200, by verification id.
type deliveries struct {
	mu      sync.Mutex
	answers map[string][]byte
}

// count is how many answers were delivered so far.
func (d *deliveries) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.answers)
}

func (d *deliveries) add(answer []byte) error {
	var v struct {
		ID string `json:"verification_id"`
	}
	if err := json.Unmarshal(answer, &v); err != nil || v.ID == "" {
		return fmt.Errorf("a 200 answer without a verification_id: %.200s", answer)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.answers == nil {
		d.answers = map[string][]byte{}
	}
	d.answers[v.ID] = answer
	return nil
}

// load runs crashClients clients verifying for agent until stop is closed, client i against
// target(i, n) for its n-th request, and keeps every 200 answer in got. Requests that fail (a
// server killed under them) are not answers and are left out.
func load(t *testing.T, got *deliveries, agent string, target func(client, n int) string, stop <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 5 * time.Second}
	for c := range crashClients {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"task_id":"t-%d-%d","agent_id":%q,"expected_schema":{"type":"object","required":["n"]},"submitted_output":{"n":%d}}`, c, n, agent, n)
				resp, err := hc.Post(target(c, n), "application/json", strings.NewReader(body))
				if err != nil {
					time.Sleep(10 * time.Millisecond) // the server is down: wait for the next one
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					continue // not delivered
				}
				if err := got.add(b); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	return &wg
}

// killNow ends srv with SIGKILL and waits for it to be gone.
func killNow(t *testing.T, srv *served) {
	t.Helper()
	testproc.KillProcessGroup(srv.pid, true)
	select {
	case <-srv.done:
	case <-time.After(10 * time.Second):
		t.Fatal("no exit 10 s after SIGKILL")
	}
}

// waitForTree waits until the log at base holds at least n leaves (the delivered answers; a
// receipt recorded for an answer the kill cut off is a leaf too).
func waitForTree(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(crashCatchUp)
	for {
		cp, err := fetch(base, "/log/checkpoint")
		if err == nil {
			var size int
			if lines := strings.Split(string(cp), "\n"); len(lines) > 1 {
				fmt.Sscan(lines[1], &size)
			}
			if size >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			// checkAllProvable then names the receipts that are missing.
			t.Errorf("the log at %s does not reach %d leaves within %v (%v)", base, n, crashCatchUp, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkAllProvable checks every delivered answer the way `verifier receipt verify --log` does:
// its signature under the agent card's keys, then its inclusion in the log under a checkpoint
// signed by the card's log key. The command itself runs on a few of them; the rest go through
// its own functions with the card read once.
func checkAllProvable(t *testing.T, base string, got *deliveries) {
	t.Helper()
	card, err := fetch(base, "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := receipt.CardKeys(card)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := logOfCard(card)
	if err != nil {
		t.Fatal(err)
	}
	if lg.Origin != "verifier.test/log" {
		t.Errorf("the card's log origin is %q, want verifier.test/log", lg.Origin)
	}
	dir := t.TempDir()
	work := make(chan []byte)
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	n := 0
	for range 8 {
		wg.Go(func() {
			for signed := range work {
				err := receipt.VerifyReceipt(signed, pubs, nil)
				if err == nil {
					_, _, err = verifyInLog(signed, base, "", lg.VerifierKey)
				}
				if err != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%.60s…: %v", signed, err))
					mu.Unlock()
				}
			}
		})
	}
	for _, signed := range got.answers {
		if n < 3 {
			file := filepath.Join(dir, fmt.Sprintf("r%d.json", n))
			if err := os.WriteFile(file, signed, 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if code := run([]string{"receipt", "verify", "--log", base, file}, nil, &out, &errb); code != exitOK || !strings.HasPrefix(out.String(), "OK: ") {
				t.Errorf("verifier receipt verify --log: exit %d: %s%s", code, out.String(), errb.String())
			}
		}
		n++
		work <- signed
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d delivered receipts are not provable in the log, e.g. %s", len(failed), len(got.answers), failed[0])
	}
}

// checkAllInHistory wants every delivered answer in agent's public history, once: on the local
// server the history record is written with the receipt, before the answer (docs/RECORDING.md).
func checkAllInHistory(t *testing.T, base, agent string, got *deliveries) {
	t.Helper()
	seen := map[string]int{}
	var total int64
	for cursor := ""; ; {
		path := "/reputation/" + agent + "?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		b, err := fetch(base, path)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Totals struct {
				Verifications int64 `json:"verifications"`
			} `json:"totals"`
			History []struct {
				ID string `json:"verification_id"`
			} `json:"history"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatal(err)
		}
		total = page.Totals.Verifications
		for _, h := range page.History {
			seen[h.ID]++
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	missing := 0
	for id := range got.answers {
		if seen[id] != 1 {
			missing++
		}
	}
	if missing > 0 || total < int64(len(got.answers)) {
		t.Errorf("%d of %d delivered answers are not in the history once; totals count %d", missing, len(got.answers), total)
	}
}

// refusedStart runs `verifier serve` with env and wants it to refuse to start with an error
// naming the log it found.
func refusedStart(t *testing.T, bin, data, why string, env ...string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data)
	cmd.Env = append(append(os.Environ(), "VERIFIER_BASE_URL=", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"), env...)
	testproc.SetProcessGroup(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(out.String(), "the store holds another log") || !strings.Contains(out.String(), "verifier.test/log") {
			t.Errorf("%s: serve exited with %v, want a start-up error naming the log's origin:\n%s", why, err, out.String())
		}
	case <-time.After(20 * time.Second):
		testproc.KillProcessGroup(cmd.Process.Pid, true)
		<-done
		t.Errorf("%s: serve started on a log of another identity:\n%s", why, out.String())
	}
}

// TestServeKilledUnderLoadKeepsReceipts kills `verifier serve` (the embedded store) with SIGKILL
// under load, again and again, restarting it on the same data each time; once the last start has
// sequenced what was recorded, every answer a client received with status 200 is provable in the
// log. A server started on that data with another base URL or another log key refuses to start.
func TestServeKilledUnderLoadKeepsReceipts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the server")
	}
	dir := t.TempDir()
	bin := buildVerifier(t, dir)
	data := filepath.Join(dir, "data")
	env := append(sharedKeys(t, dir), "VERIFIER_FREE_CALLS_PER_DAY=1000000")
	var got deliveries
	for cycle := range crashCycles {
		srv := runServeProcess(t, bin, data, env...)
		stop := make(chan struct{})
		clients := load(t, &got, "seller-crash", func(int, int) string { return srv.url + "/verify/schema" }, stop)
		time.Sleep(crashLoad)
		before := got.count()
		killNow(t, srv) // the clients are still sending
		close(stop)
		clients.Wait()
		t.Logf("cycle %d: %d answers delivered so far (%d before the kill)", cycle, len(got.answers), before)
	}
	if len(got.answers) < crashCycles*crashClients {
		t.Fatalf("only %d answers delivered over %d cycles: the load did not run", len(got.answers), crashCycles)
	}
	srv := runServeProcess(t, bin, data, env...)
	waitForTree(t, srv.url, len(got.answers))
	checkAllProvable(t, srv.url, &got)
	checkAllInHistory(t, srv.url, "seller-crash", &got)

	testproc.KillProcessGroup(srv.pid, false)
	<-srv.done
	refusedStart(t, bin, data, "another base URL", append(env, "VERIFIER_BASE_URL=http://elsewhere.test")...)
	otherKey := filepath.Join(dir, "other-log.key.json")
	if code, _, stderr := runCLI(t, "", "keygen", "--out", otherKey, "--version", "log-other"); code != exitOK {
		t.Fatal(stderr)
	}
	refusedStart(t, bin, data, "another log key", append(env, "VERIFIER_LOG_KEY=file:"+otherKey)...)
}

// TestServeInstanceKilledOnDynamoDB runs two `verifier serve` instances on one DynamoDB table
// (dynalite) with one log identity, kills one with SIGKILL under load while the other goes on,
// and checks, once the survivor's sequencer has caught up, that every answer either delivered is
// provable in the log. A third instance with another log key, or another base URL, refuses to
// start on that table.
func TestServeInstanceKilledOnDynamoDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the server")
	}
	endpoint := dynalitetest.Start(t)
	client := dynalitetest.Client(endpoint)
	table := dynalitetest.TableName(t)
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := buildVerifier(t, dir)
	env := append(sharedKeys(t, dir), "VERIFIER_STORE=dynamodb", "VERIFIER_TABLE="+table, "AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "VERIFIER_FREE_CALLS_PER_DAY=1000000")
	victim := runServeProcess(t, bin, filepath.Join(dir, "data-0"), env...)
	survivor := runServeProcess(t, bin, filepath.Join(dir, "data-1"), env...)
	var got deliveries
	stop := make(chan struct{})
	clients := load(t, &got, "seller-crash", func(c, n int) string {
		if (c+n)%2 == 0 {
			return victim.url + "/verify/schema"
		}
		return survivor.url + "/verify/schema"
	}, stop)
	time.Sleep(crashLoad)
	killNow(t, victim)
	atKill := got.count()
	time.Sleep(crashLoad / 3) // the survivor goes on answering
	close(stop)
	clients.Wait()
	t.Logf("%d answers delivered, %d of them before the kill", len(got.answers), atKill)
	if atKill < crashClients {
		t.Fatalf("only %d answers delivered before the kill: the load did not run", atKill)
	}
	waitForTree(t, survivor.url, len(got.answers))
	checkAllProvable(t, survivor.url, &got)

	refusedStart(t, bin, filepath.Join(dir, "data-2"), "another base URL", append(env, "VERIFIER_BASE_URL=http://elsewhere.test")...)
	otherKey := filepath.Join(dir, "other-log.key.json")
	if code, _, stderr := runCLI(t, "", "keygen", "--out", otherKey, "--version", "log-other"); code != exitOK {
		t.Fatal(stderr)
	}
	refusedStart(t, bin, filepath.Join(dir, "data-3"), "another log key", append(env, "VERIFIER_LOG_KEY=file:"+otherKey)...)
}
