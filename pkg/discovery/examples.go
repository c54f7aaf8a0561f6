package discovery

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// The worked examples are real answers of this code: the service's own engine and handlers ran
// on the example requests, with a published example key, a fixed time and fixed ids, so the
// documents are the same bytes on every run and every receipt in them verifies. A live answer to
// the same request differs only in its id, time, key version and signature (a test checks this
// against the running server).
//
// The engine does not run in the function that serves the documents: that would link the JSON
// Schema library into it, whose package initialization was most of the function's. The answers
// are generated ahead into examples.json (`go test ./pkg/discovery -run TestWorkedExamples
// -update`), made at exampleBaseURL by a build of the version they record; a test in `make test`
// regenerates them with the real engine and fails when the checked-in file differs. When the
// documents are built, each signed answer gets the deployment's base URL in its verify block and
// this build's version, and is signed again with the example key: what the engine decided (the
// result, the checks, the hashes) is the generated one, everything that names the deployment is
// the live one.
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

//go:embed examples.json
var generatedExamplesJSON []byte

// generatedExamples is examples.json: the worked examples as the engine answered them at
// exampleBaseURL, signed answers without their attestation.
type generatedExamples struct {
	BaseURL  string             `json:"base_url"`
	Version  string             `json:"verifier_version"`
	Examples []generatedExample `json:"examples"`
}

// generatedExample is one worked example; Context is the attestation context it is signed under,
// empty for an unsigned answer (an error).
type generatedExample struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Method   string `json:"method"`
	Path     string `json:"path"`
	Request  string `json:"request,omitempty"`
	Status   int    `json:"status"`
	Context  string `json:"context,omitempty"`
	Response string `json:"response"`
}

// exampleBaseURL is the base URL the examples are generated at; the documents replace it with
// the deployment's own.
const exampleBaseURL = "https://verifier.example"

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

// loadExamples makes the worked examples of a deployment at baseURL from examples.json: each
// signed answer gets baseURL in its verify block and this build's version, and is signed with the
// example key at the example time. It fails when the file does not hold the four examples or an
// answer does not hold exactly one of what is replaced, so a change of the answers' shape cannot
// leave the generated URL or version in a document unnoticed.
func loadExamples(baseURL string) (*Examples, error) {
	var g generatedExamples
	if err := json.Unmarshal(generatedExamplesJSON, &g); err != nil {
		return nil, fmt.Errorf("worked examples: %w", err)
	}
	key := ExampleKey()
	from, to, err := verifyBlocks(g.BaseURL, baseURL)
	if err != nil {
		return nil, err
	}
	fromVersion, _ := json.Marshal(g.Version)
	toVersion, _ := json.Marshal(wire.Version)
	byID := map[string]Example{}
	for _, x := range g.Examples {
		e := Example{ID: x.ID, Title: x.Title, Method: x.Method, Path: x.Path, Status: x.Status, Response: []byte(x.Response)}
		if x.Request != "" {
			e.Request = []byte(x.Request)
		}
		if x.Context != "" {
			body, err := replaceOnce(e.Response, from, to)
			if err != nil {
				return nil, fmt.Errorf("worked example %s: verify block: %w", x.ID, err)
			}
			if x.Context == receipt.ContextVerify {
				if body, err = replaceOnce(body, append([]byte(`"verifier_version":`), fromVersion...), append([]byte(`"verifier_version":`), toVersion...)); err != nil {
					return nil, fmt.Errorf("worked example %s: verifier_version: %w", x.ID, err)
				}
			}
			if e.Response, err = key.Attest(x.Context, body, receipt.FormatTime(exampleTime)); err != nil {
				return nil, fmt.Errorf("worked example %s: %w", x.ID, err)
			}
		}
		byID[x.ID] = e
	}
	out := &Examples{Key: key.Public(), Pass: byID["pass"], Fail: byID["fail"], Invalid: byID["invalid"], Score: byID["score-no-data"]}
	for _, e := range out.All() {
		if e.ID == "" || e.Response == nil {
			return nil, fmt.Errorf("worked examples: examples.json lacks one of pass, fail, invalid, score-no-data")
		}
	}
	return out, nil
}

// verifyBlocks are the verify members of the example answers made at generatedAt and of those
// of a deployment at baseURL, as the answers write them.
func verifyBlocks(generatedAt, baseURL string) (from, to []byte, err error) {
	member := func(base string) ([]byte, error) {
		b, err := json.Marshal(receipt.NewVerifyInfo(base, ExampleKeyVersion))
		if err != nil {
			return nil, fmt.Errorf("worked examples: verify block: %w", err)
		}
		return append([]byte(`"verify":`), b...), nil
	}
	if from, err = member(generatedAt); err != nil {
		return nil, nil, err
	}
	to, err = member(baseURL)
	return from, to, err
}

// replaceOnce replaces old in b by new, which must occur exactly once.
func replaceOnce(b, old, new []byte) ([]byte, error) {
	if n := bytes.Count(b, old); n != 1 {
		return nil, fmt.Errorf("%d occurrences of %s, want 1", n, old)
	}
	return bytes.Replace(b, old, new, 1), nil
}
