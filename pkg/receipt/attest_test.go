package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

const testTimestamp = "2026-10-14T19:12:05.645221+00:00"

// TestAttestRoundTrip signs responses of several shapes and verifies them with the independent
// verifier; the signed bytes are the response's own bytes with the attestation appended last.
func TestAttestRoundTrip(t *testing.T) {
	k := testKey("v-test-1", 1)
	keys := []PublicKey{k.Public()}
	for name, resp := range map[string][]byte{
		"seed response":  stripAttestation(t, readSeed(t, "invoice-draft.response.json")),
		"compact":        []byte(`{"result":"pass","n":1.0}`),
		"empty":          []byte(`{}`),
		"empty spaced":   []byte("{ \n }\n"),
		"tricky numbers": []byte(`{"a":1e21,"b":1e-7,"c":10.0,"d":-0,"e":123456789012345678901234567890,"f":5e-324}`),
		"unicode":        []byte(`{"\ufb33":"caf\u00e9","😀":"\ud83d\ude00","ctl":"\u0001\n","sep":"\u2028"}`),
		"nested":         []byte(`{"z":{"y":[{"b":2,"a":1},[],{}],"x":null},"a":[true,false]}`),
	} {
		signed, err := k.Attest(ContextVerify, resp, testTimestamp)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := VerifyAttestation(signed, ContextVerify, keys); err != nil {
			t.Errorf("%s: %v\n%s", name, err, signed)
		}
		if err := VerifyAttestation(signed, ContextScore, keys); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: verified under another context: %v", name, err)
		}
		// The response's bytes are kept; only the attestation is added before the closing brace.
		end := bytes.LastIndexByte(resp, '}')
		if !bytes.HasPrefix(signed, resp[:end]) || !bytes.HasSuffix(signed, resp[end:]) {
			t.Errorf("%s: response bytes not kept:\n%s", name, signed)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(signed, &doc); err != nil {
			t.Fatalf("%s: signed response is not JSON: %v", name, err)
		}
		var att struct{ Algorithm, KeyVersion, Timestamp, Signature string }
		if err := json.Unmarshal(doc["attestation"], &struct {
			A *string `json:"algorithm"`
			K *string `json:"key_version"`
			T *string `json:"timestamp"`
			S *string `json:"signature"`
		}{&att.Algorithm, &att.KeyVersion, &att.Timestamp, &att.Signature}); err != nil {
			t.Fatal(err)
		}
		if att.Algorithm != "Ed25519" || att.KeyVersion != "v-test-1" || att.Timestamp != testTimestamp || len(att.Signature) != 88 {
			t.Errorf("%s: attestation %+v", name, att)
		}
	}
}

// TestAttestLayout checks the exact bytes of a small signed response against the seed's layout.
func TestAttestLayout(t *testing.T) {
	k := testKey("v1", 2)
	signed, err := k.Attest(ContextVerify, []byte(`{"b":1,"a":2}`), "t0")
	if err != nil {
		t.Fatal(err)
	}
	prefix := `{"b":1,"a":2,"attestation":{"algorithm":"Ed25519","key_version":"v1","timestamp":"t0","signature":"`
	if !bytes.HasPrefix(signed, []byte(prefix)) || !bytes.HasSuffix(signed, []byte(`=="}}`)) {
		t.Errorf("got %s", signed)
	}
}

// TestAttestRefuses checks that Attest refuses what it cannot sign faithfully.
func TestAttestRefuses(t *testing.T) {
	k := testKey("v1", 3)
	cases := []struct {
		name string
		key  Key
		ctx  string
		resp string
		ts   string
	}{
		{"array", k, ContextVerify, `[1]`, "t"},
		{"string", k, ContextVerify, `"x"`, "t"},
		{"already attested", k, ContextVerify, `{"a":1,"attestation":{}}`, "t"},
		{"attestation through an escape", k, ContextVerify, `{"attest\u0061tion":1}`, "t"},
		{"duplicate name", k, ContextVerify, `{"a":1,"a":2}`, "t"},
		{"out of range", k, ContextVerify, `{"a":1e400}`, "t"},
		{"invalid JSON", k, ContextVerify, `{"a":`, "t"},
		{"no context", k, "", `{}`, "t"},
		{"no timestamp", k, ContextVerify, `{}`, ""},
		{"invalid UTF-8 timestamp", k, ContextVerify, `{}`, "\xff"},
		{"no key version", Key{Private: k.Private}, ContextVerify, `{}`, "t"},
		{"no private key", Key{Version: "v1"}, ContextVerify, `{}`, "t"},
	}
	for _, c := range cases {
		if got, err := c.key.Attest(c.ctx, []byte(c.resp), c.ts); err == nil {
			t.Errorf("%s: signed %s", c.name, got)
		}
	}
	// A nested "attestation" is ordinary data.
	if _, err := k.Attest(ContextVerify, []byte(`{"x":{"attestation":1},"y":["attestation"]}`), "t"); err != nil {
		t.Errorf("nested attestation name: %v", err)
	}
}

// TestTopLevelPlace checks the scanner Attest uses on canonical bytes, and the receipt hash it
// places the attestation by.
func TestTopLevelPlace(t *testing.T) {
	for doc, want := range map[string]bool{
		`{}`:                                      false,
		`{"attestation":1}`:                       true,
		`{"a":1,"attestation":null}`:              true,
		`{"a":{"attestation":1}}`:                 false,
		`{"a":["attestation"],"b":1}`:             false,
		`{"a":"\",\"attestation\":","b":1}`:       false,
		`{"a\\":1,"attestation":2}`:               true,
		`{"x":[{"attestation":1}],"y":"attes"}`:   false,
		`{"agent_id":"x","attestation":{},"z":1}`: true,
		`{"\"q":1,"attestation":1}`:               true,
		`{"attestation ":1}`:                      false,
		`{"é":{"attestation":1}}`:                 false,
	} {
		if _, got, _ := topLevelPlace([]byte(doc), "attestation"); got != want {
			t.Errorf("%s: got %v, want %v", doc, got, want)
		}
	}
	// On canonical documents it answers as a full parse does, whatever the other names (the scan
	// stops early at a name that sorts after, so the names around "attestation" matter), and the
	// hash of the document with the attestation in its place is that of the RFC 8785 form.
	rng := rand.New(rand.NewPCG(1, 2))
	sig := bytes.Repeat([]byte{0xfb}, 64)
	hashed := 0
	names := []string{"a", "attestation", "attestatioN", "attestation0", "atte", "b", "z", "\"", "\x01", "é", "😀", "\uffff", "a\\b", "agent_id", "verify"}
	for range 2000 {
		m := map[string]int{}
		for range rng.IntN(6) {
			m[names[rng.IntN(len(names))]] = 1
		}
		raw, _ := json.Marshal(m)
		doc, err := Canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		_, want := m["attestation"]
		at, got, exact := topLevelPlace(doc, "attestation")
		if got != want {
			t.Fatalf("%s: got %v, want %v", doc, got, want)
		}
		if got || !exact {
			continue
		}
		var whole map[string]any
		if err := json.Unmarshal(doc, &whole); err != nil {
			t.Fatal(err)
		}
		whole["attestation"] = map[string]string{"algorithm": Algorithm, "key_version": "v1-\"é",
			"timestamp": "2026-12-02T00:00:00.000000+00:00", "signature": base64.StdEncoding.EncodeToString(sig)}
		raw, _ = json.Marshal(whole)
		c, err := Canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(appendWithAttestation(nil, doc, at, "v1-\"é", "2026-12-02T00:00:00.000000+00:00", sig), c) {
			t.Fatalf("%s: the attestation placed at %d does not give %s", doc, at, c)
		}
		hashed++
	}
	if hashed < 1000 {
		t.Fatalf("only %d documents were hashed", hashed)
	}
	// Signed through AttestCanonicalHashed, the hash is that of the signed answer's RFC 8785 form.
	key := Key{Version: "v1-\"é", Private: NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))}
	for range 300 {
		m := map[string]int{}
		for range rng.IntN(6) {
			m[names[rng.IntN(len(names))]] = 1
		}
		delete(m, "attestation")
		raw, _ := json.Marshal(m)
		doc, err := Canonicalize(raw)
		if err != nil {
			t.Fatal(err)
		}
		out, h, ok, err := key.AttestCanonicalHashed(ContextVerify, raw, doc, "2026-12-02T00:00:00.000000+00:00")
		if err != nil {
			t.Fatal(err)
		}
		c, err := Canonicalize(out)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, exact := topLevelPlace(doc, "attestation"); ok != exact || ok && h != sha256.Sum256(c) {
			t.Fatalf("%s signed: receipt hash %x (%v), want %x (exact %v)", raw, h, ok, sha256.Sum256(c), exact)
		}
	}
}

// TestKeyRing checks rotation: receipts of every ring key verify from PublicKeys, versions are
// listed once with the current key first, and Validate catches a version bound to two keys.
func TestKeyRing(t *testing.T) {
	old1, old2, cur := testKey("v1", 1), testKey("v2", 2), testKey("v3", 3)
	signedOld, err := old1.Attest(ContextVerify, []byte(`{"r":1}`), "t1")
	if err != nil {
		t.Fatal(err)
	}
	ring := KeyRing{Current: cur, Previous: []PublicKey{old2.Public(), old1.Public(), old2.Public(), cur.Public()}}
	if err := ring.Validate(); err != nil {
		t.Fatal(err)
	}
	pubs := ring.PublicKeys()
	var got []string
	for _, p := range pubs {
		got = append(got, p.Version)
	}
	if want := "v3,v2,v1"; strings.Join(got, ",") != want {
		t.Errorf("PublicKeys versions: got %v, want %s", got, want)
	}
	if err := VerifyAttestation(signedOld, ContextVerify, pubs); err != nil {
		t.Errorf("old receipt after rotation: %v", err)
	}
	signedNew, err := cur.Attest(ContextVerify, []byte(`{"r":2}`), "t2")
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyAttestation(signedNew, ContextVerify, pubs); err != nil {
		t.Errorf("new receipt: %v", err)
	}
	if err := VerifyAttestation(signedNew, ContextVerify, []PublicKey{old1.Public(), old2.Public()}); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("new receipt without the new key: %v", err)
	}
	if p, ok := ring.Lookup("v1"); !ok || !p.Key.Equal(old1.Public().Key) {
		t.Error("Lookup v1 failed")
	}
	if _, ok := ring.Lookup("v9"); ok {
		t.Error("Lookup v9 found a key")
	}

	bad := KeyRing{Current: cur, Previous: []PublicKey{{Version: "v3", Key: old1.Public().Key}}}
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepted a version bound to two keys")
	}
	if err := (KeyRing{Current: cur, Previous: []PublicKey{{Version: "v0", Key: []byte{1}}}}).Validate(); err == nil {
		t.Error("Validate accepted a malformed previous key")
	}
	if err := (KeyRing{}).Validate(); err == nil {
		t.Error("Validate accepted an empty ring")
	}
}

// TestVerifyMalformedKey checks that a malformed public key is an error, not a panic in ed25519.
func TestVerifyMalformedKey(t *testing.T) {
	k := testKey("v1", 4)
	signed, err := k.Attest(ContextVerify, []byte(`{}`), "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyAttestation(signed, ContextVerify, []PublicKey{{Version: "v1", Key: []byte{1, 2}}}); err == nil {
		t.Error("verified with a 2-byte key")
	}
}

// TestVerifyReceiptConsistency checks the self-consistency VerifyReceipt adds to the signature.
func TestVerifyReceiptConsistency(t *testing.T) {
	k := testKey("v1", 5)
	keys := []PublicKey{k.Public()}
	for _, c := range []struct {
		resp string
		ok   bool
	}{
		{`{"verified_at":"t","verify":{"key_version":"v1"},"output_hash":"x"}`, true},
		{`{"verified_at":"t2"}`, false},
		{`{"verify":{"key_version":"v0"}}`, false},
	} {
		signed, err := k.Attest(ContextVerify, []byte(c.resp), "t")
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyReceipt(signed, keys, nil); (err == nil) != c.ok {
			t.Errorf("%s: got %v, want ok=%v", c.resp, err, c.ok)
		}
	}
}

// TestVerifyReceiptOwnSigner runs the whole receipt chain as the service does it: hash a request,
// sign a response carrying those hashes, verify receipt and hashes; another request must fail.
func TestVerifyReceiptOwnSigner(t *testing.T) {
	req := readSeed(t, "invoice-draft.request.json")
	h, err := RequestHashes(req)
	if err != nil {
		t.Fatal(err)
	}
	resp := fmt.Sprintf(`{"result":"fail","output_hash":%q,"schema_hash":%q,"rules_hash":%q,"request_hash":%q,"verified_at":%q}`,
		h.Output, h.Schema, h.Rules, h.Request, testTimestamp)
	k := testKey("v1", 6)
	signed, err := k.Attest(ContextVerify, []byte(resp), testTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	keys := []PublicKey{k.Public()}
	if err := VerifyReceipt(signed, keys, req); err != nil {
		t.Fatal(err)
	}
	// Spelling out a default changes neither the rules as hashed for request_hash nor anything else
	// but rules_hash, which hashes rules as sent.
	explicit := bytes.Replace(req, []byte(`"equals_field": "total"`), []byte(`"equals_field": "total", "tolerance": 1e-9`), 1)
	h2, err := RequestHashes(explicit)
	if err != nil {
		t.Fatal(err)
	}
	if h2.Request != h.Request || h2.Output != h.Output || h2.Schema != h.Schema || h2.Rules == h.Rules {
		t.Errorf("explicit default: got %+v, was %+v", h2, h)
	}
	if err := VerifyReceipt(signed, keys, explicit); !errors.Is(err, ErrHashMismatch) {
		t.Errorf("explicit default: got %v, want rules_hash mismatch", err)
	}
	other := bytes.Replace(req, []byte(`"total": 135.0`), []byte(`"total": 129.5`), 1)
	if err := VerifyReceipt(signed, keys, other); !errors.Is(err, ErrHashMismatch) {
		t.Errorf("other output: got %v, want %v", err, ErrHashMismatch)
	}
}

// TestRequestHashesDefaults checks the default-filling rules of request_hash one by one.
func TestRequestHashesDefaults(t *testing.T) {
	base := `"task_id":"t","expected_schema":true,"submitted_output":null`
	same := func(a, b string) {
		t.Helper()
		ha, err := RequestHashes([]byte(a))
		if err != nil {
			t.Fatal(err)
		}
		hb, err := RequestHashes([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		if ha.Request != hb.Request {
			t.Errorf("request_hash differs:\n%s\n%s", a, b)
		}
	}
	same(`{`+base+`}`, `{`+base+`,"agent_id":null,"strict_content_check":false,"enforce_rules":false,"detail":"compact"}`)
	same(`{`+base+`}`, `{`+base+`,"bounds":{},"rules":[]}`)
	same(`{`+base+`}`, `{`+base+`,"bounds":null,"rules":null}`)
	same(`{`+base+`,"bounds":{"a":{"min":1}}}`, `{`+base+`,"bounds":{"a":{"min":1.0,"max":null,"if_present":false}}}`)
	same(`{`+base+`,"rules":[{"type":"unique","field":"a[]"}]}`,
		`{`+base+`,"rules":[{"type":"unique","field":"a[]","equals_field":null,"equals":null,"other_field":null,"value":null,"in_field":null,"values":null,"tolerance":0.000000001,"if_present":false}]}`)

	f, err := requestForms([]byte(`{` + base + `,"bounds":{},"rules":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(f.rules), `{"bounds":{},"rules":[]}`; got != want {
		t.Errorf("rules_hash form: got %s, want %s (rules as sent)", got, want)
	}
	for _, bad := range []string{`[]`, `null`, `{"task_id":"t","expected_schema":true}`, `{` + base + `,"rules":[1]}`, `{` + base + `,"bounds":[]}`, `{` + base + `,"task_id":"u"}`} {
		if _, err := RequestHashes([]byte(bad)); err == nil {
			t.Errorf("%s: hashed", bad)
		}
	}
}

// TestCardKeys reads keys from an agent card the way a receipt verifier does.
func TestCardKeys(t *testing.T) {
	seed := seedKeys(t)[0]
	other := testKey("v0", 9).Public()
	card := fmt.Sprintf(`{"name":"x","capabilities":{"streaming":false,"extensions":[
		{"uri":"urn:other","params":{"publicKeys":[{"keyVersion":"zz","algorithm":"Ed25519","publicKey":"bad"}]}},
		{"uri":"urn:json-schema-verifier:extension:attestation:v1","params":{"requestHashTestVectors":[],"publicKeys":[
			{"keyVersion":%q,"algorithm":"Ed25519","publicKey":%q,"publicKeyEncoding":"base64 of the raw 32-byte Ed25519 public key"},
			{"keyVersion":"pq","algorithm":"ML-DSA-65","publicKey":"AAAA"},
			{"keyVersion":%q,"algorithm":"Ed25519","publicKey":%q}]}}]}}`,
		seed.Version, b64(seed.Key), other.Version, b64(other.Key))
	keys, err := CardKeys([]byte(card))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].Version != seed.Version || !keys[0].Key.Equal(seed.Key) || keys[1].Version != "v0" {
		t.Fatalf("got %v", keys)
	}
	if err := VerifyAttestation(readSeed(t, "invoice-draft.response.json"), ContextVerify, keys); err != nil {
		t.Error(err)
	}
	for name, bad := range map[string]string{
		"no extension":   `{"capabilities":{"extensions":[]}}`,
		"no key":         `{"capabilities":{"extensions":[{"uri":"urn:json-schema-verifier:extension:attestation:v1","params":{}}]}}`,
		"short key":      `{"capabilities":{"extensions":[{"uri":"urn:json-schema-verifier:extension:attestation:v1","params":{"publicKeys":[{"keyVersion":"a","algorithm":"Ed25519","publicKey":"AAAA"}]}}]}}`,
		"conflict":       fmt.Sprintf(`{"capabilities":{"extensions":[{"uri":"urn:json-schema-verifier:extension:attestation:v1","params":{"publicKeys":[{"keyVersion":"a","algorithm":"Ed25519","publicKey":%q},{"keyVersion":"a","algorithm":"Ed25519","publicKey":%q}]}}]}}`, b64(seed.Key), b64(other.Key)),
		"not JSON":       `{`,
		"no version":     fmt.Sprintf(`{"capabilities":{"extensions":[{"uri":"urn:json-schema-verifier:extension:attestation:v1","params":{"publicKeys":[{"algorithm":"Ed25519","publicKey":%q}]}}]}}`, b64(seed.Key)),
		"wrong shape":    `{"capabilities":[]}`,
		"padded key b64": fmt.Sprintf(`{"capabilities":{"extensions":[{"uri":"urn:json-schema-verifier:extension:attestation:v1","params":{"publicKeys":[{"keyVersion":"a","algorithm":"Ed25519","publicKey":%q}]}}]}}`, b64(seed.Key)[:43]),
	} {
		if keys, err := CardKeys([]byte(bad)); err == nil {
			t.Errorf("%s: got %v", name, keys)
		}
	}
}

// TestKeyHidesPrivate checks that a signing key printed or marshalled by accident shows no secret.
func TestKeyHidesPrivate(t *testing.T) {
	k := testKey("v1", 0x5a)
	secret := []string{b64(k.Private.Seed()), b64(k.Private), fmt.Sprintf("%x", []byte(k.Private.Seed())), fmt.Sprint([]byte(k.Private.Seed()))}
	j, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s %x %X %q %d", k, k, k, k, k, k, k, k), k.String(), string(j), fmt.Sprint(KeyRing{Current: k})} {
		for _, s := range secret {
			if strings.Contains(out, s) {
				t.Errorf("output leaks the private key: %s", out)
			}
		}
		if !strings.Contains(out, b64(k.Public().Key)) {
			t.Errorf("output does not show the public key: %s", out)
		}
	}
}

// TestAttestAllocs guards the sign path: the signed response and the 64-byte signature are its
// only allocations (the message buffer is pooled; the signer is called through a function value,
// so its signature is on the heap whichever implementation signs).
func TestAttestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	resp := stripAttestation(t, readSeed(t, "invoice-draft.response.json"))
	k := testKey("v1", 8)
	if _, err := k.Attest(ContextVerify, resp, testTimestamp); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() { _, _ = k.Attest(ContextVerify, resp, testTimestamp) }); n > 2 {
		t.Errorf("%v allocations per Attest, want 2", n)
	}
}
