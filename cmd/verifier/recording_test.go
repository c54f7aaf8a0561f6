package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/internal/testproc"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// Sizes of TestServeInstancesShareDynamoDB: above those of the review that found 50 of 120 records
// kept with 24 clients over 4 instances.
const (
	shareInstances     = 3
	shareClients       = 24
	shareVerifications = 240
)

// TestServeInstancesShareDynamoDB runs several `verifier serve` processes on one DynamoDB table
// (dynalite), with many clients verifying for one agent at once over all of them. Once the servers
// have stopped gracefully, every answered verification must be in the agent's history exactly
// once and counted in its aggregate exactly once, and no server may have logged a lost record.
func TestServeInstancesShareDynamoDB(t *testing.T) {
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
	// One deployment: every instance has the same base URL, signing key and log key (one log
	// identity: an instance with another would refuse to start on the table).
	env := append(sharedKeys(t, dir), "VERIFIER_STORE=dynamodb", "VERIFIER_TABLE="+table, "AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "VERIFIER_FREE_CALLS_PER_DAY=100000")
	servers := make([]*served, shareInstances)
	for i := range servers {
		servers[i] = runServeProcess(t, bin, filepath.Join(dir, fmt.Sprintf("data-%d", i)), env...)
	}

	const agent = "seller-shared"
	var mu sync.Mutex
	var answered []string
	var wg sync.WaitGroup
	next := make(chan int)
	for range shareClients {
		wg.Go(func() {
			for n := range next {
				body := fmt.Sprintf(`{"task_id":"t-%d","agent_id":%q,"expected_schema":{"type":"integer"},"submitted_output":%d}`, n, agent, n)
				resp, b := testhttp.Do(t, http.MethodPost, servers[n%shareInstances].url+"/verify/schema", []byte(body))
				if resp.StatusCode != http.StatusOK {
					t.Errorf("verification %d: %d %s", n, resp.StatusCode, b)
					continue
				}
				id := verificationID(t, b)
				mu.Lock()
				answered = append(answered, id)
				mu.Unlock()
			}
		})
	}
	for n := range shareVerifications {
		next <- n
	}
	close(next)
	wg.Wait()

	// A graceful stop lands the queued writes and their folds before the process exits.
	for _, srv := range servers {
		testproc.KillProcessGroup(srv.pid, false)
	}
	for i, srv := range servers {
		select {
		case <-srv.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("server %d: no exit 30 s after SIGTERM", i)
		}
		if logs := srv.log.String(); strings.Contains(logs, "record verification") {
			t.Errorf("server %d logged a failed record:\n%s", i, logs)
		}
	}

	st := dynamo.New(client, table)
	var history []string
	var obs []reputation.Observation
	for cursor := ""; ; {
		page, next, err := st.History(context.Background(), agent, store.MaxHistoryPage, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page {
			history = append(history, v.VerificationID)
			obs = append(obs, v.Observation())
		}
		if next == "" {
			break
		}
		cursor = next
	}
	agg, _, err := st.AgentAggregate(context.Background(), agent)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(answered)
	slices.Sort(history)
	if len(answered) != shareVerifications || !slices.Equal(history, answered) {
		t.Errorf("%d verifications answered, %d in the history; want %d, the same ones", len(answered), len(history), shareVerifications)
	}
	if agg.Verifications != int64(len(answered)) {
		t.Errorf("the aggregate counts %d verifications, want %d", agg.Verifications, len(answered))
	}
	if err := reputation.Compare(agg, reputation.Replay(obs)); err != nil {
		t.Errorf("aggregate and history disagree: %v", err)
	}
}

// verificationID reads the verification_id of a verify answer.
func verificationID(t *testing.T, answer []byte) string {
	t.Helper()
	var doc struct {
		VerificationID string `json:"verification_id"`
	}
	if err := json.Unmarshal(answer, &doc); err != nil || doc.VerificationID == "" {
		t.Fatalf("no verification_id in the answer: %v", err)
	}
	return doc.VerificationID
}
