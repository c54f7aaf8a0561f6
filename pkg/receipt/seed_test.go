package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// TestRequestHashVectors checks the seed's three request_hash vectors: the exact canonical form and
// its hash.
func TestRequestHashVectors(t *testing.T) {
	var vectors []struct {
		Request     json.RawMessage `json:"request"`
		Canonical   string          `json:"canonical"`
		RequestHash string          `json:"request_hash"`
	}
	if err := json.Unmarshal(readSeed(t, "request-hash-vectors.json"), &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) != 3 {
		t.Fatalf("got %d vectors, want 3", len(vectors))
	}
	for i, v := range vectors {
		forms, err := requestForms(v.Request)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if got, want := string(forms.request), v.Canonical; got != want {
			t.Errorf("vector %d canonical:\n got %s\nwant %s", i, got, want)
		}
		h, err := RequestHashes(v.Request)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if got, want := h.Request, v.RequestHash; got != want {
			t.Errorf("vector %d request_hash: got %s, want %s", i, got, want)
		}
		if got, want := Digest([]byte(v.Canonical)), v.RequestHash; got != want {
			t.Errorf("vector %d: the seed's canonical form hashes to %s, not %s", i, got, want)
		}
	}
}

// TestSeedInvoiceHashes checks the four hashes the live service put in the draft receipt.
func TestSeedInvoiceHashes(t *testing.T) {
	h, err := RequestHashes(readSeed(t, "invoice-draft.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct{ OutputHash, SchemaHash, RulesHash, RequestHash string }
	if err := json.Unmarshal(readSeed(t, "invoice-draft.response.json"), &struct {
		O *string `json:"output_hash"`
		S *string `json:"schema_hash"`
		R *string `json:"rules_hash"`
		Q *string `json:"request_hash"`
	}{&resp.OutputHash, &resp.SchemaHash, &resp.RulesHash, &resp.RequestHash}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"output_hash", h.Output, resp.OutputHash},
		{"schema_hash", h.Schema, resp.SchemaHash},
		{"rules_hash", h.Rules, resp.RulesHash},
		{"request_hash", h.Request, resp.RequestHash},
	} {
		if c.got != c.want || c.want == "" {
			t.Errorf("%s: got %s, want %s", c.name, c.got, c.want)
		}
	}
}

// TestSeedFinalHashes rebuilds the final invoice's request as the seed shows it (the draft with the
// total corrected and detail compact). Its output_hash and rules_hash must match the live receipt.
// The seed elides that request's schema ("same schema as above"), yet its schema_hash differs from
// the draft's, so the schema actually sent was not byte-for-byte the draft's: that hash is not checked.
func TestSeedFinalHashes(t *testing.T) {
	var req map[string]any
	if err := json.Unmarshal(readSeed(t, "invoice-draft.request.json"), &req); err != nil {
		t.Fatal(err)
	}
	req["task_id"] = "invoice-7731-final"
	req["detail"] = "compact"
	req["submitted_output"].(map[string]any)["total"] = json.Number("129.5")
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	h, err := RequestHashes(body)
	if err != nil {
		t.Fatal(err)
	}
	var resp map[string]any
	if err := json.Unmarshal(readSeed(t, "invoice-final.response.json"), &resp); err != nil {
		t.Fatal(err)
	}
	if got, want := h.Output, resp["output_hash"]; got != want {
		t.Errorf("output_hash: got %s, want %s", got, want)
	}
	if got, want := h.Rules, resp["rules_hash"]; got != want {
		t.Errorf("rules_hash: got %s, want %s", got, want)
	}
}

// TestSeedReceiptsVerify checks the live service's two receipts with its published key.
func TestSeedReceiptsVerify(t *testing.T) {
	keys := seedKeys(t)
	for _, name := range []string{"invoice-draft.response.json", "invoice-final.response.json"} {
		signed := readSeed(t, name)
		if err := VerifyAttestation(signed, ContextVerify, keys); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := VerifyReceipt(signed, keys, nil); err != nil {
			t.Errorf("%s: VerifyReceipt: %v", name, err)
		}
	}
	if err := VerifyReceipt(readSeed(t, "invoice-draft.response.json"), keys, readSeed(t, "invoice-draft.request.json")); err != nil {
		t.Errorf("draft receipt against its request: %v", err)
	}
}

// TestSeedReceiptRefusals checks that the seed's receipts fail for every reason they should.
func TestSeedReceiptRefusals(t *testing.T) {
	keys := seedKeys(t)
	draft := readSeed(t, "invoice-draft.response.json")
	final := readSeed(t, "invoice-final.response.json")
	other := testKey("v1-2026-09c", 7).Public() // same version, another key

	cases := []struct {
		name    string
		doc     []byte
		context string
		keys    []PublicKey
		want    error
	}{
		{"score context", draft, ContextScore, keys, ErrSignature},
		{"reputation context", draft, ContextReputation, keys, ErrSignature},
		{"unknown key version", draft, ContextVerify, []PublicKey{{Version: "v0", Key: keys[0].Key}}, ErrUnknownKey},
		{"no keys", draft, ContextVerify, nil, ErrUnknownKey},
		{"wrong key", final, ContextVerify, []PublicKey{other}, ErrSignature},
		{"wrong algorithm", bytes.Replace(draft, []byte(`"algorithm": "Ed25519"`), []byte(`"algorithm": "Ed448"`), 1), ContextVerify, keys, ErrAlgorithm},
		{"no attestation", stripAttestation(t, draft), ContextVerify, keys, ErrMalformed},
		{"extra attestation member", bytes.Replace(draft, []byte(`"algorithm": "Ed25519",`), []byte(`"algorithm": "Ed25519", "note": "x",`), 1), ContextVerify, keys, ErrMalformed},
		{"duplicate member", bytes.Replace(draft, []byte(`"result": "fail",`), []byte(`"result": "pass", "result": "fail",`), 1), ContextVerify, keys, ErrMalformed},
		{"not an object", []byte(`[1]`), ContextVerify, keys, ErrMalformed},
		{"not JSON", draft[:100], ContextVerify, keys, ErrMalformed},
		{"signature padding bits", bytes.Replace(draft, []byte(`XBQ==`), []byte(`XBR==`), 1), ContextVerify, keys, ErrMalformed},
	}
	for _, c := range cases {
		err := VerifyAttestation(c.doc, c.context, c.keys)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if err := VerifyAttestation(draft, "", keys); err == nil {
		t.Error("empty context: verified")
	}

	// A receipt checked against the wrong request fails on its hashes.
	if err := VerifyReceipt(final, keys, readSeed(t, "invoice-draft.request.json")); !errors.Is(err, ErrHashMismatch) {
		t.Errorf("final receipt against the draft request: got %v, want %v", err, ErrHashMismatch)
	}
}

// TestSeedReceiptEveryByte alters each byte of each seed receipt in several ways (every single-bit
// flip, and the next digit or letter); no altered receipt may verify. A parse failure is a failure.
func TestSeedReceiptEveryByte(t *testing.T) {
	keys := seedKeys(t)
	for _, name := range []string{"invoice-draft.response.json", "invoice-final.response.json"} {
		orig := readSeed(t, name)
		doc := append([]byte{}, orig...)
		tried := 0
		for i := range doc {
			b := doc[i]
			variants := make([]byte, 0, 9)
			for bit := 0; bit < 8; bit++ {
				variants = append(variants, b^(1<<bit))
			}
			switch {
			case b >= '0' && b <= '9':
				variants = append(variants, '0'+(b-'0'+1)%10)
			case b >= 'a' && b <= 'z':
				variants = append(variants, 'a'+(b-'a'+1)%26)
			case b >= 'A' && b <= 'Z':
				variants = append(variants, 'A'+(b-'A'+1)%26)
			}
			for _, v := range variants {
				doc[i] = v
				tried++
				if err := VerifyAttestation(doc, ContextVerify, keys); err == nil {
					t.Errorf("%s: byte %d changed from %q to %q still verifies", name, i, b, v)
				}
			}
			doc[i] = b
		}
		if !bytes.Equal(doc, orig) {
			t.Fatal("test bug: document not restored")
		}
		t.Logf("%s: %d altered documents, none verified", name, tried)
	}
}
