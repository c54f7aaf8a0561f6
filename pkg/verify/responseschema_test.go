package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// The published response schema accepts the seed's answers (full and compact) and every answer
// the engine gives, and refuses an error envelope.
func TestResponseSchemaAcceptsAnswers(t *testing.T) {
	sch, err := CompileSchema(wire.ResponseSchema(), false)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{
		"seed draft": seedFile(t, "invoice-draft.response.json"),
		"seed final": seedFile(t, "invoice-final.response.json"),
	}
	key := receipt.Key{Version: "test-key", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}
	ex, _ := json.Marshal(wire.ExampleRequest())
	compact := bytes.Replace(ex, []byte(`{`), []byte(`{"detail":"compact",`), 1)
	strict := bytes.Replace(seedFile(t, "invoice-draft.request.json"), []byte(`{`), []byte(`{"strict_content_check":true,`), 1)
	for name, body := range map[string][]byte{
		"draft": seedFile(t, "invoice-draft.request.json"), "example": ex, "compact": compact, "strict": strict,
	} {
		out, _, err := NewEngine(wire.Limits{}).Respond(body, testEnv, key)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs["live "+name] = out
	}
	for name, doc := range docs {
		tree, err := decodeTree(doc, 1000, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tally, _, _ := sch.Check(tree); len(tally.Failures) > 0 {
			t.Errorf("%s: the response schema refuses a real answer: %+v", name, tally.Failures)
		}
	}
	tree, _ := decodeTree(seedFile(t, "error-example.json"), 1000, 0)
	if tally, _, _ := sch.Check(tree); len(tally.Failures) == 0 {
		t.Errorf("the response schema accepts an error envelope")
	}
}
