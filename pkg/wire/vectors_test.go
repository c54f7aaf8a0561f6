package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// The vectors are the seed's canonical forms and hashes, computed here without the engine (the
// engine's own test holds its decoder to the same vectors).
func TestRequestHashVectorsMatchSeed(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/seed/request-hash-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []HashVector
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	got, err := RequestHashVectors()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d vectors, want %d", len(got), len(want))
	}
	for i := range want {
		// The literals travel as sent (10.0 stays 10.0): the request is the seed's text.
		var gb, wb bytes.Buffer
		if err := json.Compact(&gb, got[i].Request); err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if err := json.Compact(&wb, want[i].Request); err != nil {
			t.Fatal(err)
		}
		if gb.String() != wb.String() {
			t.Errorf("vector %d: request differs:\n got %s\nwant %s", i, gb.String(), wb.String())
		}
		if got[i].Canonical != want[i].Canonical {
			t.Errorf("vector %d: canonical\n got %s\nwant %s", i, got[i].Canonical, want[i].Canonical)
		}
		if got[i].RequestHash != want[i].RequestHash {
			t.Errorf("vector %d: request_hash %s, want %s", i, got[i].RequestHash, want[i].RequestHash)
		}
	}
	// Callers get a copy: changing it does not change what the next caller sees.
	got[0].RequestHash = "changed"
	if again, _ := RequestHashVectors(); again[0].RequestHash == "changed" {
		t.Error("RequestHashVectors returns shared state")
	}
}

// A member without a canonical form is a 422 naming that member.
func TestAppendRequestNamesTheMember(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts RequestParts
	}{
		{"task_id", RequestParts{TaskID: 1.5}},
		{"agent_id", RequestParts{TaskID: "t", AgentID: "\xff"}},
		{"rules", RequestParts{TaskID: "t", Rules: []any{map[string]any{"field": "\xff"}}}},
		{"bounds", RequestParts{TaskID: "t", Bounds: map[string]any{"a": map[string]any{"min": json.Number("1e999")}}}},
	} {
		_, err := AppendRequest(nil, &tc.parts)
		e, ok := apperr.As(err)
		if !ok || len(e.Fields) != 1 || e.Fields[0].Field != tc.name {
			t.Errorf("%s: got %v, want a 422 naming %s", tc.name, err, tc.name)
		}
	}
}
