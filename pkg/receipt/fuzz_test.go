package receipt

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"
)

// FuzzVerifyAttestation alters the seed's receipts at random. Nothing may panic, and whatever still
// verifies must mean exactly what the original meant (same canonical form): only insignificant
// changes such as whitespace may survive.
func FuzzVerifyAttestation(f *testing.F) {
	keys := seedKeys(f)
	origs := [][]byte{readSeed(f, "invoice-draft.response.json"), readSeed(f, "invoice-final.response.json")}
	var canon [][]byte
	for _, o := range origs {
		f.Add(o)
		c, err := jcs.Transform(o)
		if err != nil {
			f.Fatal(err)
		}
		canon = append(canon, c)
	}
	f.Add([]byte(`{"attestation":{"algorithm":"Ed25519","key_version":"v1-2026-09c","timestamp":"t","signature":""}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		if err := VerifyAttestation(doc, ContextVerify, keys); err != nil {
			return
		}
		c, err := jcs.Transform(doc)
		if err != nil {
			t.Fatalf("verified a document jcs refuses: %v", err)
		}
		for _, want := range canon {
			if bytes.Equal(c, want) {
				return
			}
		}
		t.Fatalf("a changed receipt verifies:\n%s", doc)
	})
}

// FuzzRequestHashes runs the reference hashing on arbitrary requests: it must not panic, and where
// it succeeds its output_hash and schema_hash must equal the fast path's (the engine's) hashes.
func FuzzRequestHashes(f *testing.F) {
	f.Add(readSeed(f, "invoice-draft.request.json"))
	var vectors []struct {
		Request json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(readSeed(f, "request-hash-vectors.json"), &vectors); err != nil {
		f.Fatal(err)
	}
	for _, v := range vectors {
		f.Add([]byte(v.Request))
	}
	f.Add([]byte(`{"task_id":"t","expected_schema":true,"submitted_output":null,"bounds":{"a":{}},"rules":[{}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h, err := RequestHashes(body)
		if err != nil {
			return
		}
		var req map[string]json.RawMessage
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("hashed a body encoding/json refuses: %v", err)
		}
		for name, want := range map[string]string{"submitted_output": h.Output, "expected_schema": h.Schema} {
			c, err := Canonicalize(req[name])
			if err != nil {
				t.Fatalf("%s: fast path refuses what the reference hashed: %v", name, err)
			}
			if got := Digest(c); got != want {
				t.Fatalf("%s: fast path hash %s, reference %s", name, got, want)
			}
		}
	})
}

// FuzzCardKeys feeds arbitrary agent cards to CardKeys: it must not panic, and every key it
// returns must be usable (a version and 32 bytes).
func FuzzCardKeys(f *testing.F) {
	f.Add([]byte(`{"capabilities":{"extensions":[{"uri":"urn:json-schema-verifier:extension:attestation:v1","params":{"publicKeys":[{"keyVersion":"v1-2026-09c","algorithm":"Ed25519","publicKey":"d2IHH0/Xduci/5J8IewYmauUvgqf+gFIeCEXDwjHUhw="}]}}]}}`))
	f.Add([]byte(`{"capabilities":{"extensions":[{"uri":"urn:json-schema-verifier:extension:attestation:","params":{"publicKeys":[{"algorithm":"Ed25519"}]}}]}}`))
	f.Fuzz(func(t *testing.T, card []byte) {
		keys, err := CardKeys(card)
		if err != nil {
			return
		}
		for _, k := range keys {
			if k.Version == "" || len(k.Key) != 32 {
				t.Fatalf("unusable key %v", k)
			}
		}
	})
}
