package discovery

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/verify"
)

// The worked examples are real answers of this build: the service's own engine and handlers run
// on the example requests, with a published example key, a fixed time and fixed ids, so the
// documents are the same bytes on every run and every receipt in them verifies. A live answer to
// the same request differs only in its id, time, key version and signature (a test checks this
// against the running server).
const (
	// ExampleKeyVersion names the key that signs the worked examples. It is not a key of any
	// deployment: its private half is derived from a public string.
	ExampleKeyVersion = "docs-example-v1"
	exampleKeySeed    = "agent-output-verifier documentation example key v1"
	// ExampleAgentUnknown is the agent id of the no_data trust-score example: no verification
	// names it, so every deployment answers it the same way.
	ExampleAgentUnknown = "example-unrecorded-agent"
)

// exampleTime is when the examples were "made": fixed, so that the documents never change
// between runs.
var exampleTime = time.Date(2026, time.January, 15, 9, 30, 0, 123456000, time.UTC)

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

// Example is one worked example: a request to a route and the service's answer.
type Example struct {
	ID       string // names the example's files in llms-full.txt: <ID>.request.json, <ID>.response.json
	Title    string
	Method   string
	Path     string
	Request  []byte // the body as sent; nil for a GET
	Status   int
	Response []byte // the answer's body, exactly as the service sends it
}

// Examples are the worked examples and the key that signed them.
type Examples struct {
	Key     receipt.PublicKey // the example key's public half
	Pass    Example           // a verification that passes
	Fail    Example           // one that fails, with hints
	Invalid Example           // a 422 naming the offending fields
	Score   Example           // the signed no_data answer of /score
}

// All lists the examples in the order the documents show them.
func (e *Examples) All() []Example { return []Example{e.Pass, e.Fail, e.Invalid, e.Score} }

// ExampleKey is the key that signs the worked examples. Its private half is derived from a
// published string, so it proves nothing about who made a receipt: it is for learning and
// testing receipt verification only.
func ExampleKey() receipt.Key {
	seed := sha256.Sum256([]byte(exampleKeySeed))
	return receipt.Key{Version: ExampleKeyVersion, Private: receipt.NewKeyFromSeed(seed[:])}
}

// exampleService is svc as far as answers go (engine limits, base URL, prices), signing with the
// example key at the example time and handing out the example ids. It has no store: nothing it
// does is recorded or counted.
func exampleService(svc *httpapi.Service) *httpapi.Service {
	engine := svc.Engine
	if engine == nil {
		engine = verify.NewEngine(verify.Limits{})
	}
	next := 0
	return &httpapi.Service{
		Engine:  verify.NewEngine(engine.Limits()),
		Keys:    receipt.KeyRing{Current: ExampleKey()},
		BaseURL: svc.BaseURL,
		Pricing: svc.Pricing,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:     func() time.Time { return exampleTime },
		NewID: func() string {
			id := exampleIDs[next%len(exampleIDs)]
			next++
			return id
		},
	}
}

// buildExamples runs the examples through the service's own code.
func buildExamples(svc *httpapi.Service) (*Examples, error) {
	ex := exampleService(svc)
	ctx := context.Background()
	out := &Examples{Key: ExampleKey().Public()}

	verification := func(id, title string, body []byte) (Example, error) {
		v, err := ex.RunVerification(ctx, body)
		if err != nil {
			return Example{}, fmt.Errorf("worked example %s: %w", id, err)
		}
		return Example{ID: id, Title: title, Method: http.MethodPost, Path: "/verify/schema", Request: body, Status: http.StatusOK, Response: v.Body}, nil
	}
	var err error
	if out.Pass, err = verification("pass", "A verification that passes", verify.ExampleRequestJSON()); err != nil {
		return nil, err
	}
	if out.Fail, err = verification("fail", "A verification that fails, with what to repair", []byte(failRequestJSON)); err != nil {
		return nil, err
	}

	_, decodeErr := ex.Decode(ctx, []byte(invalidRequestJSON))
	e, ok := apperr.As(decodeErr)
	if !ok {
		return nil, fmt.Errorf("worked example invalid: the request was not refused with an error envelope: %v", decodeErr)
	}
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("worked example invalid: %w", err)
	}
	out.Invalid = Example{ID: "invalid", Title: "An invalid request (422)", Method: http.MethodPost, Path: "/verify/schema",
		Request: []byte(invalidRequestJSON), Status: e.Status, Response: body}

	lookup, err := ex.LookupScore(ctx, ExampleAgentUnknown)
	if err != nil {
		return nil, fmt.Errorf("worked example score: %w", err)
	}
	score, err := lookup.Document()
	if err != nil {
		return nil, fmt.Errorf("worked example score: %w", err)
	}
	out.Score = Example{ID: "score-no-data", Title: "The trust score of an agent with no record", Method: http.MethodGet,
		Path: "/score/" + ExampleAgentUnknown, Status: http.StatusOK, Response: score}
	return out, nil
}
