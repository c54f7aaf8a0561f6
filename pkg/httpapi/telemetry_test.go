package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testemf"
	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/telemetry"
	"github.com/agent-output-verifier/verifier/pkg/telemetry/prom"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// switchedAllowance is a store whose allowance writes fail while down is set.
type switchedAllowance struct {
	store.Store
	down *atomic.Bool
}

func (s switchedAllowance) ConsumeAllowance(ctx context.Context, c, d string, l int, e time.Time) (bool, int, error) {
	if s.down.Load() {
		return false, 0, errors.New("throttled")
	}
	return s.Store.ConsumeAllowance(ctx, c, d, l, e)
}

// lockedBuffer is a log or EMF stream written by concurrent requests.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestTelemetry drives free, paid, refused, invalid and error outcomes over REST and MCP and
// reads them back from the three places SPEC §17 names: the request lines (every field, nothing
// of the caller's), the EMF documents (valid against the EMF specification's JSON schema) and GET /metrics
// (parsed with the Prometheus text parser).
func TestTelemetry(t *testing.T) {
	clock := testclock.New(payStart)
	down := &atomic.Bool{}
	payer := &fakePayer{valid: true, settleOK: true}
	var logs, emfOut lockedBuffer
	deps := testsvc.Complete(service.Deps{
		Store:   switchedAllowance{openBolt(t, clock.Now), down},
		Payer:   payer,
		Pricing: service.Pricing{FreeCallsPerDay: 1, FreeMaxBody: 64 << 10, PriceVerify: "0.02", PriceScore: "0.01"},
		Now:     clock.Now,
		Log:     slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	svc := testsvc.New(t, deps)
	metrics := telemetry.NewMetrics()
	obs := telemetry.NewObserver(svc.Log(), metrics, telemetry.NewEMF(&emfOut, "", clock.Now))
	srv := httptest.NewServer(Handler(svc, func(rt *edge.Router) {
		rt.SetObserver(obs)
		rt.Handle("GET", "/metrics", prom.Handler(metrics).ServeHTTP)
	}, mcpserver.New(svc).Mount))
	t.Cleanup(srv.Close)

	const canary = "PAYLOAD-CANARY-7f3a"
	body := strings.Replace(okBody, `"task_id":"t"`, `"task_id":"`+canary+`"`, 1)
	mcpCall := func(args string) {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify_schema","arguments":%s}}`, args)
		if resp, b := testhttp.Do(t, "POST", srv.URL+"/mcp", []byte(msg), "Accept", "application/json, text/event-stream"); resp.StatusCode != 200 {
			t.Fatalf("mcp: %d %s", resp.StatusCode, b)
		}
	}
	sig := paymentHeader(t, testRequirement, 1)
	steps := []struct {
		name      string
		do        func()
		route     string
		outcome   string
		code      string
		verifyID  bool
		transport string
	}{
		{"free", func() { post(t, srv.URL+"/verify/schema", body) }, "/verify/schema", "free", "", true, "rest"},
		{"allowance spent", func() { post(t, srv.URL+"/verify/schema", body) }, "/verify/schema", "refused_payment", "free_trial_exhausted", false, "rest"},
		{"mcp allowance spent", func() { mcpCall(body) }, "/mcp verify_schema", "refused_payment", "free_trial_exhausted", false, "mcp"},
		{"mcp invalid", func() { mcpCall(`{"task_id":"` + canary + `"}`) }, "/mcp verify_schema", "invalid", "invalid_request", false, "mcp"},
		{"invalid", func() { post(t, srv.URL+"/verify/schema", `{"task_id":"`+canary+`"}`) }, "/verify/schema", "invalid", "invalid_request", false, "rest"},
		{"paid", func() { post(t, srv.URL+"/verify/schema", body, x402.HeaderPaymentSignature, sig) }, "/verify/schema", "paid", "", true, "rest"},
		{"unknown path", func() { testhttp.Do(t, "GET", srv.URL+"/verify/schema/"+canary, nil) }, "(no route)", "invalid", "not_found", false, "rest"},
		{"store down", func() {
			clock.Advance(24 * time.Hour) // a new day's allowance, so the store is asked
			down.Store(true)
			post(t, srv.URL+"/verify/schema", body)
			down.Store(false)
		}, "/verify/schema", "error", "service_unavailable", false, "rest"},
		{"facilitator down", func() {
			payer.verifyErr = x402.ErrFacilitatorUnavailable
			post(t, srv.URL+"/verify/schema", body, x402.HeaderPaymentSignature, paymentHeader(t, testRequirement, 2))
			payer.verifyErr = nil
		}, "/verify/schema", "error", "facilitator_unavailable", false, "rest"},
	}
	for i, s := range steps {
		s.do()
		lines := requestLines(t, logs.String())
		if len(lines) != i+1 {
			t.Fatalf("%s: %d request lines, want %d:\n%s", s.name, len(lines), i+1, logs.String())
		}
		got := lines[i]
		for _, k := range []string{"request_id", "transport", "method", "route", "status", "outcome", "code", "verification_id", "result", "duration_ms"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: no %q in %v", s.name, k, got)
			}
		}
		if got["route"] != s.route || got["outcome"] != s.outcome || got["code"] != s.code || got["transport"] != s.transport {
			t.Errorf("%s: logged %v, want route %q outcome %q code %q transport %q", s.name, got, s.route, s.outcome, s.code, s.transport)
		}
		if hasID := got["verification_id"] != ""; hasID != s.verifyID || (s.verifyID && got["result"] != "pass") {
			t.Errorf("%s: verification_id %q result %q", s.name, got["verification_id"], got["result"])
		}
	}
	for _, bad := range []string{canary, "127.0.0.1", "seller-9", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", sig[:40]} {
		if strings.Contains(logs.String(), bad) || strings.Contains(emfOut.String(), bad) {
			t.Errorf("telemetry contains %q", bad)
		}
	}

	// The request id is answered, and differs between requests.
	r1, _ := testhttp.Do(t, "GET", srv.URL+"/health", nil)
	r2, _ := testhttp.Do(t, "GET", srv.URL+"/health", nil, "X-Request-Id", "caller-chosen")
	if id1, id2 := r1.Header.Get("X-Request-Id"), r2.Header.Get("X-Request-Id"); id1 == "" || id1 == id2 || id2 == "caller-chosen" {
		t.Errorf("request ids %q, %q", id1, id2)
	}

	checkEMF(t, emfOut.String(), len(steps)+2)

	resp, b := testhttp.Do(t, "GET", srv.URL+"/metrics", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, b)
	}
	counter := func(name string, labels ...string) float64 {
		for _, m := range families[name].GetMetric() {
			if matches(m, labels) {
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return float64(m.Histogram.GetSampleCount())
			}
		}
		return -1
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{telemetry.MetricRequests, []string{"route", "/verify/schema", "outcome", "free"}, 1},
		{telemetry.MetricRequests, []string{"route", "/verify/schema", "outcome", "paid"}, 1},
		{telemetry.MetricRequests, []string{"route", "/verify/schema", "outcome", "refused_payment"}, 1},
		{telemetry.MetricRequests, []string{"route", "/verify/schema", "outcome", "invalid"}, 1},
		{telemetry.MetricRequests, []string{"route", "/verify/schema", "outcome", "error"}, 2},
		{telemetry.MetricRequests, []string{"route", "/mcp verify_schema", "outcome", "refused_payment"}, 1},
		{telemetry.MetricRequests, []string{"route", "/mcp verify_schema", "outcome", "invalid"}, 1},
		// The unknown path, and the two /health requests this router (without discovery) has no route for.
		{telemetry.MetricRequests, []string{"route", "(no route)", "outcome", "invalid"}, 3},
		{telemetry.MetricDuration, []string{"route", "/verify/schema"}, 6},
		{telemetry.MetricSettled, []string{"network", "eip155:8453"}, 20000},
		{telemetry.MetricStoreErrors, nil, 1},
		{telemetry.MetricFacilitatorErrors, nil, 1},
		{telemetry.MetricSettlementFailures, nil, 0},
	} {
		if got := counter(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// requestLines are the "request" lines of a JSON log.
func requestLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Bytes())
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// checkEMF holds each document to the Embedded Metric Format specification (testemf.Check: AWS's
// JSON schema and the reference rules around it), then to what this service writes: the clock's
// time in epoch milliseconds, the default namespace, a unit on every metric, the request metrics'
// service-wide totals (an empty dimension set, which the alarms watch), and exactly one document
// with a settled amount (dimension network).
func checkEMF(t *testing.T, stream string, want int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stream), "\n")
	if len(lines) != want {
		t.Fatalf("%d EMF documents, want %d", len(lines), want)
	}
	paid := 0
	for _, line := range lines {
		if err := testemf.Check([]byte(line)); err != nil {
			t.Errorf("not an EMF document: %v\n%s", err, line)
			continue
		}
		var doc map[string]any
		json.Unmarshal([]byte(line), &doc)
		aws, _ := doc["_aws"].(map[string]any)
		if ts, _ := aws["Timestamp"].(float64); int64(ts) != payStart.UnixMilli() && int64(ts) != payStart.Add(24*time.Hour).UnixMilli() {
			t.Errorf("Timestamp %v is not the clock's epoch milliseconds: %s", aws["Timestamp"], line)
		}
		for _, d := range aws["CloudWatchMetrics"].([]any) {
			d := d.(map[string]any)
			if d["Namespace"] != telemetry.DefaultNamespace {
				t.Errorf("namespace %v", d["Namespace"])
			}
			total := false
			for _, set := range d["Dimensions"].([]any) {
				switch s := set.([]any); {
				case len(s) == 0:
					total = true
				case s[0] == "network":
					paid++
				}
			}
			ms := d["Metrics"].([]any)
			if len(ms) == 0 {
				t.Errorf("directive without metrics: %s", line)
			}
			// The request directive also publishes service-wide totals, which the alarms watch.
			if !total && len(ms) > 0 && ms[0].(map[string]any)["Name"] == telemetry.MetricRequests {
				t.Errorf("the request metrics have no empty dimension set (no totals to alarm on): %s", line)
			}
			for _, m := range ms {
				if m.(map[string]any)["Unit"] == nil {
					t.Errorf("metric %v has no unit: %s", m, line)
				}
			}
		}
	}
	if paid != 1 {
		t.Errorf("%d documents carry a settlement, want 1", paid)
	}
}

var _ io.Writer = (*lockedBuffer)(nil)
