package verify

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// The engine's decoder, which hashes every request with the same assembly from its own trees,
// gets the seed's canonical forms and hashes from the seed's requests (pkg/wire's test holds the
// published vectors themselves to the seed).
func TestRequestHashVectorsMatchSeed(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/seed/request-hash-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []wire.HashVector
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		req, err := DecodeRequest(want[i].Request, wire.DefaultLimits)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if string(req.Canonical) != want[i].Canonical || req.Hashes.Request != want[i].RequestHash {
			t.Errorf("vector %d: the engine hashes it as %s (%s), the seed says %s", i, req.Hashes.Request, req.Canonical, want[i].RequestHash)
		}
	}
}
