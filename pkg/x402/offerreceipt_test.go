package x402

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// The Ed25519 JWS example of RFC 8037, Appendix A: the key (A.1), and the compact serialization
// of "Example of Ed25519 signing" under {"alg":"EdDSA"} (A.4).
const (
	rfc8037Seed = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
	rfc8037X    = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	rfc8037JWS  = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
)

func TestCompactJWSMatchesRFC8037(t *testing.T) {
	seed, err := base64.RawURLEncoding.DecodeString(rfc8037Seed)
	if err != nil {
		t.Fatal(err)
	}
	key := receipt.Key{Version: "rfc8037", Private: receipt.NewKeyFromSeed(seed)}
	if got := base64.RawURLEncoding.EncodeToString(key.Public().Key); got != rfc8037X {
		t.Fatalf("public key %s, want RFC 8037's %s", got, rfc8037X)
	}
	got, err := compactJWS([]byte(`{"alg":"EdDSA"}`), []byte("Example of Ed25519 signing"), key)
	if err != nil {
		t.Fatal(err)
	}
	if got != rfc8037JWS {
		t.Errorf("JWS\n got %s\nwant %s", got, rfc8037JWS)
	}
}

// checkJWS verifies a compact JWS with crypto/ed25519 alone and returns its decoded header and
// payload: three base64url parts without padding, the signature over "header.payload".
func checkJWS(t *testing.T, jws string, pub ed25519.PublicKey) (header map[string]string, payload []byte) {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("JWS has %d parts, want 3", len(parts))
	}
	dec := base64.RawURLEncoding.Strict()
	rawHeader, err1 := dec.DecodeString(parts[0])
	payload, err2 := dec.DecodeString(parts[1])
	sig, err3 := dec.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatalf("JWS part is not unpadded base64url: %v", err)
	}
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		t.Fatal("JWS signature does not verify with the receipt key")
	}
	if err := json.Unmarshal(rawHeader, &header); err != nil {
		t.Fatal(err)
	}
	return header, payload
}

func testOfferReceipt(t testing.TB) (*OfferReceipt, receipt.Key) {
	t.Helper()
	key := receipt.Key{Version: "v7", Private: receipt.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}
	o, err := NewOfferReceipt(key, "https://verifier.example.com")
	if err != nil {
		t.Fatal(err)
	}
	return o, key
}

func TestOffersAreSignedJWS(t *testing.T) {
	o, key := testOfferReceipt(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	accepts := []Requirements{
		{Scheme: SchemeExact, Network: NetworkBase, Amount: "20000", Asset: usdcBase, PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", MaxTimeoutSeconds: 60},
		{Scheme: SchemeExact, Network: NetworkSolana, Amount: "20000", Asset: usdcSolana, PayTo: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", MaxTimeoutSeconds: 60},
	}
	ext, err := o.Offers(context.Background(), "https://verifier.example.com/verify/schema", accepts, now)
	if err != nil {
		t.Fatal(err)
	}
	offers := ext["info"].(map[string]any)["offers"].([]SignedOffer)
	if len(offers) != len(accepts) {
		t.Fatalf("%d offers for %d requirements", len(offers), len(accepts))
	}
	for i, off := range offers {
		if off.Format != FormatJWS || off.AcceptIndex != i {
			t.Errorf("offer %d: format %q acceptIndex %d", i, off.Format, off.AcceptIndex)
		}
		header, payload := checkJWS(t, off.Signature, key.Public().Key)
		if want := (map[string]string{"alg": "EdDSA", "kid": "did:web:verifier.example.com#v7"}); len(header) != 2 || header["alg"] != want["alg"] || header["kid"] != want["kid"] {
			t.Errorf("offer %d header %v, want %v", i, header, want)
		}
		// The payload is sent in its RFC 8785 form, so anyone can recompute the signed bytes.
		if canon, _ := receipt.Canonicalize(payload); !bytes.Equal(canon, payload) {
			t.Errorf("offer %d payload is not canonical: %s", i, payload)
		}
		var got OfferPayload
		if err := json.Unmarshal(payload, &got); err != nil {
			t.Fatal(err)
		}
		r := accepts[i]
		want := OfferPayload{Version: 1, ResourceURL: "https://verifier.example.com/verify/schema", Scheme: r.Scheme, Network: r.Network,
			Asset: r.Asset, PayTo: r.PayTo, Amount: r.Amount, ValidUntil: now.Unix() + 120} // OfferValidity
		if got != want {
			t.Errorf("offer %d payload\n got %+v\nwant %+v", i, got, want)
		}
	}
	// Another key does not verify the offer: the check above can fail.
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32)).Public().(ed25519.PublicKey)
	parts := strings.Split(offers[0].Signature, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if ed25519.Verify(other, []byte(parts[0]+"."+parts[1]), sig) {
		t.Error("an offer verifies with another key")
	}
}

func TestReceiptIsSignedJWS(t *testing.T) {
	o, key := testOfferReceipt(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ext, err := o.Receipt(context.Background(), "mcp://tool/verify_schema", NetworkBase, "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0xabc", now)
	if err != nil {
		t.Fatal(err)
	}
	r := ext["info"].(map[string]any)["receipt"].(SignedReceipt)
	if r.Format != FormatJWS {
		t.Errorf("format %q", r.Format)
	}
	header, payload := checkJWS(t, r.Signature, key.Public().Key)
	if header["kid"] != o.KeyID() || header["alg"] != AlgEdDSA {
		t.Errorf("header %v", header)
	}
	want := `{"issuedAt":1893553445,"network":"eip155:8453","payer":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","resourceUrl":"mcp://tool/verify_schema","transaction":"0xabc","version":1}`
	if string(payload) != want {
		t.Errorf("receipt payload\n got %s\nwant %s", payload, want)
	}
}

// failingSigner stands for a key source that cannot sign (a KMS key out of reach), or that
// answers something other than a signature.
type failingSigner struct{ sig []byte }

func (f failingSigner) Sign(context.Context, []byte) ([]byte, error) {
	if f.sig == nil {
		return nil, errors.New("key source unavailable")
	}
	return f.sig, nil
}

func (failingSigner) MaxMessage() int { return 0 }

func failingKey(version string, f failingSigner) receipt.Key {
	return receipt.RemoteKey(version, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32)).Public().(ed25519.PublicKey), f)
}

func TestOfferReceiptSignerFailures(t *testing.T) {
	for name, f := range map[string]failingSigner{"error": {}, "short signature": {sig: []byte{1, 2, 3}}} {
		o, err := NewOfferReceipt(failingKey("v1", f), "https://verifier.example.com")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Offers(context.Background(), "https://verifier.example.com/verify/schema", []Requirements{{Scheme: SchemeExact}}, time.Unix(0, 0)); err == nil {
			t.Errorf("%s: offers signed", name)
		}
		if _, err := o.Receipt(context.Background(), "r", NetworkBase, "p", "t", time.Unix(0, 0)); err == nil {
			t.Errorf("%s: receipt signed", name)
		}
	}
	if _, err := NewOfferReceipt(receipt.Key{Version: "v1"}, "https://verifier.example.com"); err == nil {
		t.Error("no signing key accepted")
	}
	if _, err := NewOfferReceipt(failingKey("v#1", failingSigner{}), "https://verifier.example.com"); err == nil {
		t.Error("a key version with # accepted")
	}
}

func TestDIDWeb(t *testing.T) {
	for _, c := range []struct{ base, want string }{
		{"https://verifier.example.com", "did:web:verifier.example.com"},
		{"https://Verifier.Example.com/", "did:web:verifier.example.com"},
		{"http://127.0.0.1:8080", "did:web:127.0.0.1%3A8080"},
		{"https://example.com/api/v1", "did:web:example.com:api:v1"},
		{"https://abc.execute-api.us-east-1.amazonaws.com", "did:web:abc.execute-api.us-east-1.amazonaws.com"},
		{"example.com", ""},
		{"ftp://example.com", ""},
		{"https://user@example.com", ""},
		{"https://example.com/?q=1", ""},
	} {
		got, err := DIDWeb(c.base)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("DIDWeb(%q) = %q, %v; want %q", c.base, got, err, c.want)
		}
	}
}

func TestDIDDocumentListsEveryKey(t *testing.T) {
	cur := receipt.Key{Version: "v2", Private: receipt.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))}
	old := receipt.Key{Version: "v1", Private: receipt.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))}.Public()
	ring := receipt.KeyRing{Current: cur, Previous: []receipt.PublicKey{old}}
	doc, err := DIDDocument("http://127.0.0.1:8080", ring.PublicKeys())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(doc)
	var got struct {
		ID                 string   `json:"id"`
		AssertionMethod    []string `json:"assertionMethod"`
		VerificationMethod []struct {
			ID, Type, Controller string
			PublicKeyJwk         map[string]string `json:"publicKeyJwk"`
		} `json:"verificationMethod"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	did := "did:web:127.0.0.1%3A8080"
	if got.ID != did || len(got.VerificationMethod) != 2 || strings.Join(got.AssertionMethod, ",") != did+"#v2,"+did+"#v1" {
		t.Fatalf("DID document %s", raw)
	}
	for i, k := range []receipt.PublicKey{cur.Public(), old} {
		m := got.VerificationMethod[i]
		x, _ := base64.RawURLEncoding.DecodeString(m.PublicKeyJwk["x"])
		if m.ID != did+"#"+k.Version || m.Controller != did || m.Type != "JsonWebKey2020" ||
			m.PublicKeyJwk["kty"] != "OKP" || m.PublicKeyJwk["crv"] != "Ed25519" || !bytes.Equal(x, k.Key) {
			t.Errorf("method %d %+v, want key %s", i, m, k)
		}
	}
}

func TestVerifyJWS(t *testing.T) {
	o, key := testOfferReceipt(t)
	ext, err := o.Receipt(context.Background(), "https://verifier.example.com/verify/schema", NetworkBase, "0xpayer", "0xtx", time.Unix(1_900_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	jws := ext["info"].(map[string]any)["receipt"].(SignedReceipt).Signature
	header, payload, err := VerifyJWS(jws, key.Public().Key)
	if err != nil || header.Kid != o.KeyID() || !bytes.Contains(payload, []byte(`"payer":"0xpayer"`)) {
		t.Fatalf("VerifyJWS = %+v, %s, %v", header, payload, err)
	}
	parts := strings.Split(jws, ".")
	forged, _ := json.Marshal(map[string]any{"payer": "0xsomeoneelse"})
	noneHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"x"}`))
	for name, bad := range map[string]string{
		"another payload": parts[0] + "." + base64.RawURLEncoding.EncodeToString(forged) + "." + parts[2],
		"alg none":        noneHeader + "." + parts[1] + "." + parts[2],
		"no signature":    parts[0] + "." + parts[1] + ".",
		"two parts":       parts[0] + "." + parts[1],
		"four parts":      jws + ".x",
		"padded":          jws + "==",
	} {
		if _, _, err := VerifyJWS(bad, key.Public().Key); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32)).Public().(ed25519.PublicKey)
	if _, _, err := VerifyJWS(jws, other); err == nil {
		t.Error("verified with another key")
	}
}

// FuzzVerifyJWS: a JWS a client or a receipt file hands over never panics the verifier, and
// only the server's own signature verifies: what verifies under the key is a JWS it signed, with
// the one algorithm, whose payload round-trips.
func FuzzVerifyJWS(f *testing.F) {
	o, key := testOfferReceipt(f)
	ext, _ := o.Receipt(context.Background(), "https://verifier.example.com/verify/schema", NetworkBase, "0xpayer", "0xtx", time.Unix(1_900_000_000, 0))
	good := ext["info"].(map[string]any)["receipt"].(SignedReceipt).Signature
	f.Add(good)
	f.Add(rfc8037JWS)
	f.Add("..")
	f.Add("e30.e30.")
	f.Fuzz(func(t *testing.T, jws string) {
		header, payload, err := VerifyJWS(jws, key.Public().Key)
		if err != nil {
			return
		}
		if header.Alg != AlgEdDSA {
			t.Fatalf("verified a JWS with alg %q", header.Alg)
		}
		parts := strings.Split(jws, ".")
		if base64.RawURLEncoding.EncodeToString(payload) != parts[1] {
			t.Fatalf("payload %q is not the JWS's", payload)
		}
	})
}
