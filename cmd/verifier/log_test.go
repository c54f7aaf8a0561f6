package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// cli runs the command in-process and returns its exit code and its output, both streams.
func cli(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, errs := runCLI(t, "", args...)
	return code, out + errs
}

// verifyN sends n verifications to the server and writes each answer to dir/receipt-<i>.json.
func verifyN(t *testing.T, url, dir string, from, n int) []string {
	t.Helper()
	var files []string
	for i := from; i < from+n; i++ {
		body := fmt.Sprintf(`{"task_id":"log-%d","expected_schema":{"type":"integer"},"submitted_output":%d}`, i, i)
		resp, b := testhttp.Do(t, "POST", url+"/verify/schema", []byte(body))
		if resp.StatusCode != 200 {
			t.Fatalf("verify: %d %s", resp.StatusCode, b)
		}
		f := filepath.Join(dir, fmt.Sprintf("receipt-%d.json", i))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// The CLI against a running `verifier serve`: a receipt is verified in the log (its keys and the
// log key from the agent card), from the service and from a saved record; an audit recomputes
// the tree from the tiles and checks it against an earlier checkpoint; a tampered receipt or
// record and a forked checkpoint are refused with exit 1.
func TestLogCLI(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, dir)
	receipts := verifyN(t, srv.url, dir, 0, 5)

	code, out := cli(t, "receipt", "verify", "--log", srv.url, receipts[0])
	if code != exitOK || !strings.Contains(out, "in the log") {
		t.Fatalf("receipt verify --log: %d %s", code, out)
	}
	cp1 := filepath.Join(dir, "cp1")
	if code, out := cli(t, "log", "audit", "--save", cp1, srv.url); code != exitOK {
		t.Fatalf("log audit: %d %s", code, out)
	}
	verifyN(t, srv.url, dir, 5, 300) // across a full tile
	if code, out := cli(t, "receipt", "verify", "--log", srv.url, filepath.Join(dir, "receipt-304.json")); code != exitOK {
		t.Fatalf("receipt verify --log of the last: %d %s", code, out)
	}
	code, out = cli(t, "log", "audit", "--from", cp1, srv.url)
	if code != exitOK || !strings.Contains(out, "consistent with the earlier checkpoint") {
		t.Fatalf("log audit --from: %d %s", code, out)
	}

	// A record and the card saved, then checked without the service.
	var id struct {
		ID string `json:"verification_id"`
	}
	b, _ := os.ReadFile(receipts[1])
	json.Unmarshal(b, &id)
	_, rec := testhttp.Do(t, "GET", srv.url+"/verifications/"+id.ID, nil)
	_, card := testhttp.Do(t, "GET", srv.url+"/.well-known/agent-card.json", nil)
	recFile, cardFile := filepath.Join(dir, "record.json"), filepath.Join(dir, "card.json")
	os.WriteFile(recFile, rec, 0o644)
	os.WriteFile(cardFile, card, 0o644)
	if code, out := cli(t, "receipt", "verify", "--card", cardFile, "--proof", recFile, receipts[1]); code != exitOK {
		t.Fatalf("receipt verify --proof: %d %s", code, out)
	}
	// Tampering: the record's index, one proof hash, or the record of another receipt.
	var m map[string]any
	json.Unmarshal(rec, &m)
	lg := m["log"].(map[string]any)
	for name, change := range map[string]func(){
		"index": func() { lg["index"] = lg["index"].(float64) + 1 },
		"proof": func() { lg["inclusion_proof"].([]any)[0] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" },
	} {
		orig := slices.Clone(lg["inclusion_proof"].([]any))
		index := lg["index"]
		change()
		bad, _ := json.Marshal(m)
		lg["inclusion_proof"], lg["index"] = orig, index
		f := filepath.Join(dir, "bad-"+name+".json")
		os.WriteFile(f, bad, 0o644)
		if code, out := cli(t, "receipt", "verify", "--card", cardFile, "--proof", f, receipts[1]); code != exitFail {
			t.Errorf("a record with its %s changed: %d %s, want exit 1", name, code, out)
		}
	}
	if code, out := cli(t, "receipt", "verify", "--card", cardFile, "--proof", recFile, receipts[2]); code != exitFail {
		t.Errorf("another receipt with this record: %d %s, want exit 1", code, out)
	}

	// A fork: a checkpoint of the first tree's size with another root, signed with the real log
	// key (a log that rewrote its history), is refused by the audit.
	lk, err := keys.ReadFile(filepath.Join(dir, "data", "log-key.json"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(cp1)
	c1, err := translog.ParseCheckpoint(string(first[:bytes.Index(first, []byte("\n\n"))+1]))
	if err != nil {
		t.Fatal(err)
	}
	key, err := translog.NewLogKey(c1.Origin, lk)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := key.Sign(c1.Size, translog.RecordHash(translog.Hash{9}))
	if err != nil {
		t.Fatal(err)
	}
	forgedFile := filepath.Join(dir, "forged")
	os.WriteFile(forgedFile, forged, 0o644)
	if code, out := cli(t, "log", "audit", "--from", forgedFile, srv.url); code != exitFail || !strings.Contains(out, "fork") {
		t.Errorf("audit from a forked checkpoint: %d %s, want exit 1 naming a fork", code, out)
	}
}

// integrationRequests and integrationClients size the integration-delay measurement: enough
// answers for a p99, from as many clients as the load generator's realistic mix keeps busy.
const (
	integrationRequests = 400
	integrationClients  = 8
)

// The integration delay (SPEC §15: locally p99 ≤ 1 s): the time from an answer to the first
// checkpoint whose tree holds it, for answers sent by concurrent clients to `verifier serve`.
// One watcher polls the checkpoint every 5 ms and notes when each size first appeared.
func TestLogIntegrationDelay(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, dir)
	type seen struct {
		size int64
		at   time.Time
	}
	var mu sync.Mutex
	var sizes []seen
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			b, err := fetch(srv.url, "/log/checkpoint")
			if err != nil {
				continue
			}
			c, err := translog.ParseCheckpoint(string(b[:bytes.Index(b, []byte("\n\n"))+1]))
			if err != nil {
				continue
			}
			mu.Lock()
			if len(sizes) == 0 || sizes[len(sizes)-1].size < c.Size {
				sizes = append(sizes, seen{c.Size, time.Now()})
			}
			mu.Unlock()
		}
	}()
	type answer struct {
		id string
		at time.Time
	}
	answers := make(chan answer, integrationRequests)
	var wg sync.WaitGroup
	for c := range integrationClients {
		wg.Go(func() {
			for i := c; i < integrationRequests; i += integrationClients {
				body := fmt.Sprintf(`{"task_id":"delay-%d","agent_id":"seller-delay","expected_schema":{"type":"integer"},"submitted_output":%d}`, i, i)
				resp, b := testhttp.Do(t, "POST", srv.url+"/verify/schema", []byte(body))
				at := time.Now()
				if resp.StatusCode != 200 {
					t.Errorf("verify: %d %s", resp.StatusCode, b)
					return
				}
				var v struct {
					ID string `json:"verification_id"`
				}
				json.Unmarshal(b, &v)
				answers <- answer{v.ID, at}
			}
		})
	}
	wg.Wait()
	close(answers)
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	<-watched
	var delays []time.Duration
	for a := range answers {
		_, rec := testhttp.Do(t, "GET", srv.url+"/verifications/"+a.id, nil)
		var r logRecord
		json.Unmarshal(rec, &r)
		if r.Log.Status == "pending" {
			t.Fatalf("%s still pending 1.5 s after the last answer", a.id)
		}
		mu.Lock()
		i := slices.IndexFunc(sizes, func(s seen) bool { return s.size > r.Log.Index })
		var in time.Time
		if i >= 0 {
			in = sizes[i].at
		}
		mu.Unlock()
		if i < 0 {
			t.Fatalf("no checkpoint seen holds index %d", r.Log.Index)
		}
		delays = append(delays, max(in.Sub(a.at), 0))
	}
	slices.Sort(delays)
	p := func(q float64) time.Duration { return delays[int(q*float64(len(delays)-1))] }
	t.Logf("integration delay over %d answers from %d clients: p50 %v, p90 %v, p99 %v, max %v",
		len(delays), integrationClients, p(0.5), p(0.9), p(0.99), delays[len(delays)-1])
	if p(0.99) > time.Second {
		t.Errorf("integration delay p99 %v, want ≤ 1 s (SPEC §15)", p(0.99))
	}
}
