package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// Sizes of TestLambdaPathRecording, those of the review that found records lost: 8 function
// instances on one table, each answering one request at a time as a Lambda sandbox does, 20
// verifications each for one agent.
const (
	lambdaInstances = 8
	lambdaRequests  = 20 // per instance
)

// TestLambdaPathRecording runs the Lambda path (no background writers: each answer records before
// it goes out) on several service instances sharing one DynamoDB table, all verifying for one
// agent at once. Every verification answered must be in the history and counted in the totals,
// exactly. It reports the answers' latency with recording on beside the same run for a test-
// agent, which is never recorded; the numbers are in docs/RECORDING.md.
func TestLambdaPathRecording(t *testing.T) {
	client := dynalitetest.Client(dynalitetest.Start(t))
	table := dynalitetest.TableName(t)
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	instances := make([]*service.Service, lambdaInstances)
	for i := range instances {
		st := dynamo.New(client, table, dynamo.WithClock(clock))
		// Reputation reads go through the same store, as on Lambda.
		instances[i] = testsvc.New(t, service.Deps{
			Store:   st,
			Pricing: service.Pricing{FreeCallsPerDay: 1 << 20, FreeMaxBody: 64 << 10, PriceVerify: "0.02", PriceScore: "0.01"},
			Now:     clock,
		})
	}
	run := func(agent string) []time.Duration {
		var mu sync.Mutex
		var took []time.Duration
		var wg sync.WaitGroup
		for i, svc := range instances {
			h := httpapi.Handler(svc)
			wg.Go(func() {
				for r := range lambdaRequests {
					body := fmt.Sprintf(`{"task_id":"t-%d-%d","agent_id":%q,"expected_schema":{"type":"number"},"submitted_output":%d}`, i, r, agent, r)
					req := httptest.NewRequest(http.MethodPost, "/verify/schema", strings.NewReader(body))
					req.RemoteAddr = fmt.Sprintf("198.51.100.%d:4000", i+1)
					w := httptest.NewRecorder()
					start := time.Now()
					h.ServeHTTP(w, req)
					d := time.Since(start)
					if w.Code != http.StatusOK {
						t.Errorf("instance %d request %d: %d %s", i, r, w.Code, w.Body)
						return
					}
					mu.Lock()
					took = append(took, d)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return took
	}
	unrecorded := run("test-agent-latency")
	recorded := run("seller-lambda")
	for _, svc := range instances {
		service.WaitForFolds(svc)
	}

	const want = lambdaInstances * lambdaRequests
	reader := httpapi.Handler(instances[0])
	var ids []string
	var totals service.Totals
	for cursor := ""; ; {
		url := "/reputation/seller-lambda?limit=100"
		if cursor != "" {
			url += "&cursor=" + cursor
		}
		w := httptest.NewRecorder()
		reader.ServeHTTP(w, httptest.NewRequest(http.MethodGet, url, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, w.Code, w.Body)
		}
		var doc struct {
			Totals     service.Totals         `json:"totals"`
			History    []service.HistoryEntry `json:"history"`
			NextCursor *string                `json:"next_cursor"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		totals = doc.Totals
		for _, h := range doc.History {
			ids = append(ids, h.VerificationID)
		}
		if doc.NextCursor == nil {
			break
		}
		cursor = *doc.NextCursor
	}
	slices.Sort(ids)
	if len(ids) != want || len(slices.Compact(ids)) != want || totals.Verifications != want {
		t.Errorf("%d history records (%d distinct), totals count %d; want %d delivered verifications, each once", len(ids), len(slices.Compact(slices.Clone(ids))), totals.Verifications, want)
	}
	t.Logf("%d instances × %d answers each, one agent: answer latency recording on %s; a test- agent (not recorded) %s",
		lambdaInstances, lambdaRequests, percentiles(recorded), percentiles(unrecorded))
}

// percentiles is "p50 …, p90 …, max …" of durations.
func percentiles(d []time.Duration) string {
	if len(d) == 0 {
		return "no samples"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p int) time.Duration { return s[(len(s)-1)*p/100].Round(10 * time.Microsecond) }
	return fmt.Sprintf("p50 %v, p90 %v, max %v", at(50), at(90), s[len(s)-1].Round(10*time.Microsecond))
}
