package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"github.com/agent-output-verifier/verifier/pkg/store/memstore"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"
)

// update rewrites examples.json from the engine's answers instead of comparing them with it.
var update = flag.Bool("update", false, "rewrite examples.json with the worked examples as the engine answers them")

// exampleIDs are the verification ids of the examples, in the order they are made.
var exampleIDs = []string{
	"0b1e2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
	"1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
	"2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a",
}

// failRequestJSON is the README's request: an invoice whose line items do not add up to its
// total, with the rule enforced, so the answer fails and says what to repair.
const failRequestJSON = `{
  "task_id": "invoice-7731-draft",
  "agent_id": "seller-invoice-agent",
  "expected_schema": {"type": "object", "required": ["line_items", "total"],
                      "properties": {"line_items": {"type": "array"}, "total": {"type": "number"}}},
  "submitted_output": {"line_items": [{"line_total": 87.0}, {"line_total": 42.5}], "total": 135.0},
  "rules": [{"type": "sum_equals", "field": "line_items[].line_total", "equals_field": "total"}],
  "enforce_rules": true
}`

// invalidRequestJSON has a rule type that does not exist and a switch of the wrong type: mistakes
// the decoder refuses rather than let them weaken a check silently, naming both fields at once.
const invalidRequestJSON = `{
  "task_id": "invoice-7731-draft",
  "expected_schema": {"type": "object"},
  "submitted_output": {"total": 135.0},
  "rules": [{"type": "sum_equal", "field": "line_items[].line_total", "equals_field": "total"}],
  "enforce_rules": "yes"
}`

// exampleService is the service that makes the worked examples: the default engine, at
// exampleBaseURL, signing with the example key at the example time and handing out the example
// ids. Its store is its own, empty and in memory: nothing it does is recorded or counted
// elsewhere, and the score is no_data.
func exampleService() (*service.Service, error) {
	next := 0
	now := func() time.Time { return exampleTime }
	return service.New(service.Deps{
		Engine:  engine.New(wire.Limits{}),
		MaxBody: wire.DefaultLimits.MaxBody,
		Keys:    receipt.KeyRing{Current: ExampleKey()},
		BaseURL: exampleBaseURL,
		Store:   memstore.New(now),
		// Each example is a first call to the running server: free, within the free size.
		Pricing: service.Pricing{FreeCallsPerDay: 10, FreeMaxBody: wire.DefaultLimits.MaxBody},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:     now,
		NewID: func() string {
			id := exampleIDs[next%len(exampleIDs)]
			next++
			return id
		},
	})
}

// buildExamples runs the examples through the service's own code.
func buildExamples() (*Examples, error) {
	ex, err := exampleService()
	if err != nil {
		return nil, fmt.Errorf("worked examples: %w", err)
	}
	ctx := context.Background()
	out := &Examples{Key: ExampleKey().Public()}

	verification := func(id, title string, body []byte) (Example, error) {
		// The worked examples are free answers, as a first call to the running server is.
		o := ex.Verify(ctx, service.VerifyCall{Body: body, Caller: ex.CallerID("192.0.2.1"), Route: "/verify/schema"})
		if o.Kind != service.Answered {
			return Example{}, fmt.Errorf("worked example %s: %+v", id, o.Err)
		}
		return Example{ID: id, Title: title, Method: http.MethodPost, Path: "/verify/schema", Request: body, Status: http.StatusOK, Response: o.Body}, nil
	}
	if out.Pass, err = verification("pass", "A verification that passes", wire.ExampleRequestJSON()); err != nil {
		return nil, err
	}
	if out.Fail, err = verification("fail", "A verification that fails, with what to repair", []byte(failRequestJSON)); err != nil {
		return nil, err
	}

	refused := ex.Verify(ctx, service.VerifyCall{Body: []byte(invalidRequestJSON), Caller: ex.CallerID("192.0.2.1"), Route: "/verify/schema"})
	e := refused.Err
	if refused.Kind != service.Refused || e == nil {
		return nil, fmt.Errorf("worked example invalid: the request was not refused with an error envelope: %+v", refused)
	}
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("worked example invalid: %w", err)
	}
	out.Invalid = Example{ID: "invalid", Title: "An invalid request (422)", Method: http.MethodPost, Path: "/verify/schema",
		Request: []byte(invalidRequestJSON), Status: e.Status(), Response: body}

	scored := ex.Score(ctx, service.ScoreCall{AgentID: ExampleAgentUnknown, Route: "/score/" + ExampleAgentUnknown})
	if scored.Kind != service.Answered {
		return nil, fmt.Errorf("worked example score: %+v", scored.Err)
	}
	score := scored.Body
	out.Score = Example{ID: "score-no-data", Title: "The trust score of an agent with no record", Method: http.MethodGet,
		Path: "/score/" + ExampleAgentUnknown, Status: http.StatusOK, Response: score}
	return out, nil
}

// generate is examples.json as the engine answers the examples now: each signed answer without
// its attestation, which the documents make again.
func generate(t *testing.T, ex *Examples) []byte {
	t.Helper()
	g := generatedExamples{BaseURL: exampleBaseURL, Version: wire.Version}
	for _, e := range ex.All() {
		x := generatedExample{ID: e.ID, Title: e.Title, Method: e.Method, Path: e.Path, Request: string(e.Request), Status: e.Status, Response: string(e.Response)}
		switch {
		case e.Path == "/verify/schema" && e.Status == http.StatusOK:
			x.Context = receipt.ContextVerify
		case e.Method == http.MethodGet:
			x.Context = receipt.ContextScore
		}
		if x.Context != "" {
			// The attestation is the answer's last member (receipt.Key.Attest).
			i := bytes.LastIndex(e.Response, []byte(`,"attestation":`))
			if i < 0 {
				t.Fatalf("worked example %s is not signed", e.ID)
			}
			x.Response = string(e.Response[:i]) + "}"
		}
		g.Examples = append(g.Examples, x)
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// The checked-in worked examples are what the engine answers now: regenerated with the real engine
// and handlers, examples.json must be the same bytes (run with -update to rewrite it), and the
// documents' examples, signed again at the generated base URL, must be byte for byte the answers
// the service signed.
func TestWorkedExamplesAreCurrent(t *testing.T) {
	ex, err := buildExamples()
	if err != nil {
		t.Fatal(err)
	}
	want := generate(t, ex)
	if *update {
		if err := os.WriteFile("examples.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(generatedExamplesJSON, want) {
		t.Fatalf("examples.json is not what the engine answers now; run: go test ./pkg/discovery -run TestWorkedExamplesAreCurrent -update\n got  %s\n want %s", generatedExamplesJSON, want)
	}
	loaded, err := loadExamples(exampleBaseURL)
	if err != nil {
		t.Fatal(err)
	}
	got := loaded.All()
	for i, e := range ex.All() {
		if !bytes.Equal(got[i].Response, e.Response) || !bytes.Equal(got[i].Request, e.Request) || got[i].Status != e.Status || got[i].Path != e.Path {
			t.Errorf("worked example %s as the documents make it differs from the service's answer:\n got  %s\n want %s", e.ID, got[i].Response, e.Response)
		}
	}
	if loaded.Key.String() != ex.Key.String() {
		t.Errorf("the documents publish key %s, the examples are signed with %s", loaded.Key, ex.Key)
	}
}

// At another base URL the signed examples name that URL and still verify with the example key.
func TestWorkedExamplesNameTheDeployment(t *testing.T) {
	const base = "https://other.example:8443"
	ex, err := loadExamples(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Example{ex.Pass, ex.Fail, ex.Score} {
		if bytes.Contains(e.Response, []byte(exampleBaseURL)) || !bytes.Contains(e.Response, []byte(`"public_key_url":"`+base+`/.well-known/agent-card.json"`)) {
			t.Errorf("%s does not name the deployment: %s", e.ID, e.Response)
		}
	}
	for _, e := range []Example{ex.Pass, ex.Fail} {
		if err := verifyReceipt(e.Response, ex.Key, e.Request); err != nil {
			t.Errorf("%s: %v", e.ID, err)
		}
	}
	if err := verifyScore(ex.Score.Response, ex.Key); err != nil {
		t.Errorf("score: %v", err)
	}
}
