package verify

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// The vectors the agent card publishes are the seed's, computed by this build: same requests,
// same canonical forms, same hashes; and the engine's decoder, which hashes every request with the
// same assembly from its own trees, gets the same forms and hashes from the same requests.
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
		if !jsonEqual(t, got[i].Request, want[i].Request) {
			t.Errorf("vector %d: request differs:\n got %s\nwant %s", i, got[i].Request, want[i].Request)
		}
		// The literals travel as sent (10.0 stays 10.0): the request is the seed's text.
		var gb, wb bytes.Buffer
		json.Compact(&gb, got[i].Request)
		json.Compact(&wb, want[i].Request)
		if gb.String() != wb.String() {
			t.Errorf("vector %d: request literals differ:\n got %s\nwant %s", i, gb.String(), wb.String())
		}
		if got[i].Canonical != want[i].Canonical {
			t.Errorf("vector %d: canonical\n got %s\nwant %s", i, got[i].Canonical, want[i].Canonical)
		}
		if got[i].RequestHash != want[i].RequestHash {
			t.Errorf("vector %d: request_hash %s, want %s", i, got[i].RequestHash, want[i].RequestHash)
		}
		req, err := DecodeRequest(want[i].Request, DefaultLimits)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if string(req.Canonical) != got[i].Canonical || req.Hashes.Request != got[i].RequestHash {
			t.Errorf("vector %d: the engine hashes it as %s (%s), the published vector says %s", i, req.Hashes.Request, req.Canonical, got[i].RequestHash)
		}
	}
	// Callers get a copy: changing it does not change what the next caller sees.
	got[0].RequestHash = "changed"
	again, _ := RequestHashVectors()
	if again[0].RequestHash == "changed" {
		t.Error("RequestHashVectors returns shared state")
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
