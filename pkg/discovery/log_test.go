package discovery

import (
	"context"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// The agent card names the receipt log (SPEC §15): its origin, a verifier key note.NewVerifier
// reads, and the checkpoint URL; and a checkpoint the service signs opens under that key.
func TestCardTransparencyLog(t *testing.T) {
	svc := testsvc.New(t, service.Deps{BaseURL: "https://verifier.example.com"})
	card, err := AgentCard(svc)
	if err != nil {
		t.Fatal(err)
	}
	tl, _ := card.Capabilities.Extensions[0].Params["transparencyLog"].(map[string]string)
	if tl["origin"] != "verifier.example.com/log" || tl["checkpointUrl"] != "https://verifier.example.com/log/checkpoint" {
		t.Fatalf("transparencyLog = %v", tl)
	}
	v, err := note.NewVerifier(tl["verifierKey"])
	if err != nil || v.Name() != tl["origin"] {
		t.Fatalf("verifierKey %q: %v", tl["verifierKey"], err)
	}
	if o := svc.Verify(context.Background(), service.VerifyCall{Body: []byte(`{"task_id":"t","expected_schema":{},"submitted_output":1}`),
		Caller: svc.CallerID("192.0.2.1"), Route: "/verify/schema"}); o.Kind != service.Answered {
		t.Fatal(o.Err)
	}
	// The answer's leaf waits for the sequencer: a checkpoint comes from a sequenced answer.
	if _, err := svc.LogCheckpoint(context.Background()); err == nil {
		t.Fatal("a checkpoint of an empty log")
	}
	lk := testsvc.LogKey("https://verifier.example.com")
	signed, err := lk.Sign(1, translog.RecordHash(translog.Hash{1}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := translog.OpenCheckpoint(signed, tl["verifierKey"]); err != nil {
		t.Errorf("a checkpoint signed with the log key does not open under the card's key: %v", err)
	}
}
