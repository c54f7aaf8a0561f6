package discovery

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// a2aRequired lists the fields the A2A specification v1.0.0 marks REQUIRED
// (specification/a2a.proto at tag v1.0.0, field_behavior = REQUIRED), in their JSON names.
var a2aRequired = struct {
	card, iface, skill, provider []string
}{
	card:     []string{"name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"},
	iface:    []string{"url", "protocolBinding", "protocolVersion"},
	skill:    []string{"id", "name", "description", "tags"},
	provider: []string{"url", "organization"},
}

// nonEmpty tells whether v is a present, non-empty JSON value (a capabilities object may be
// empty of flags but must be there).
func nonEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	}
	return true
}

func TestAgentCardHasEveryA2ARequiredField(t *testing.T) {
	e := newEnv(t)
	resp, body := e.get(t, "/.well-known/agent-card.json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("agent card: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	card := decodeJSON(t, body)
	for _, f := range a2aRequired.card {
		if !nonEmpty(card[f]) {
			t.Errorf("card.%s is missing or empty", f)
		}
	}
	if _, ok := card["capabilities"].(map[string]any); !ok {
		t.Errorf("capabilities is not an object: %v", card["capabilities"])
	}
	if _, legacy := card["url"]; legacy {
		t.Errorf("card has v0.3's top-level url; v1.0 puts it in supportedInterfaces")
	}
	ifaces, _ := card["supportedInterfaces"].([]any)
	for i, x := range ifaces {
		m, _ := x.(map[string]any)
		for _, f := range a2aRequired.iface {
			if !nonEmpty(m[f]) {
				t.Errorf("supportedInterfaces[%d].%s is missing", i, f)
			}
		}
		if u, _ := m["url"].(string); !strings.HasPrefix(u, e.base) {
			t.Errorf("supportedInterfaces[%d].url = %q, not on %s", i, u, e.base)
		}
	}
	skills, _ := card["skills"].([]any)
	for i, x := range skills {
		m, _ := x.(map[string]any)
		for _, f := range a2aRequired.skill {
			if !nonEmpty(m[f]) {
				t.Errorf("skills[%d].%s is missing", i, f)
			}
		}
	}
	if p, ok := card["provider"].(map[string]any); ok {
		for _, f := range a2aRequired.provider {
			if !nonEmpty(p[f]) {
				t.Errorf("provider.%s is missing", f)
			}
		}
	}
	for _, modes := range []string{"defaultInputModes", "defaultOutputModes"} {
		if list, _ := card[modes].([]any); !slices.Contains(list, any("application/json")) {
			t.Errorf("%s = %v, want application/json", modes, card[modes])
		}
	}
	if card["documentationUrl"] != e.base+PathDocs {
		t.Errorf("documentationUrl = %v", card["documentationUrl"])
	}
}

// extension returns the card's extension whose uri starts with prefix.
func extension(t *testing.T, card map[string]any, prefix string) map[string]any {
	t.Helper()
	caps, _ := card["capabilities"].(map[string]any)
	exts, _ := caps["extensions"].([]any)
	for _, x := range exts {
		m, _ := x.(map[string]any)
		if u, _ := m["uri"].(string); strings.HasPrefix(u, prefix) {
			params, _ := m["params"].(map[string]any)
			return params
		}
	}
	t.Fatalf("no extension %s... in %v", prefix, exts)
	return nil
}

func TestAgentCardAttestationExtension(t *testing.T) {
	e := newEnv(t)
	_, body := e.get(t, "/.well-known/agent-card.json")
	params := extension(t, decodeJSON(t, body), receipt.CardExtensionPrefix)

	// Every key of the ring, current and earlier, in the published form.
	keys, _ := params["publicKeys"].([]any)
	want := e.svc.Keys().PublicKeys()
	if len(keys) != len(want) {
		t.Fatalf("%d public keys, want %d", len(keys), len(want))
	}
	for i, k := range keys {
		m := k.(map[string]any)
		if m["keyVersion"] != want[i].Version || m["algorithm"] != "Ed25519" ||
			m["publicKey"] != base64.StdEncoding.EncodeToString(want[i].Key) ||
			m["publicKeyEncoding"] != "base64 of the raw 32-byte Ed25519 public key" {
			t.Errorf("publicKeys[%d] = %v, want %s", i, m, want[i])
		}
	}
	ctxs, _ := params["contexts"].(map[string]any)
	for name, c := range map[string]string{"verify": receipt.ContextVerify, "score": receipt.ContextScore, "reputation": receipt.ContextReputation} {
		if ctxs[name] != c {
			t.Errorf("contexts.%s = %v, want %s", name, ctxs[name], c)
		}
	}

	// The vectors, computed by the running code, are the seed's: request, canonical form, hash.
	got, _ := json.Marshal(params["requestHashTestVectors"])
	var gotV, wantV []struct {
		Request     json.RawMessage `json:"request"`
		Canonical   string          `json:"canonical"`
		RequestHash string          `json:"request_hash"`
	}
	json.Unmarshal(got, &gotV)
	if err := json.Unmarshal(seedFile(t, "request-hash-vectors.json"), &wantV); err != nil {
		t.Fatal(err)
	}
	if len(gotV) != len(wantV) || len(gotV) == 0 {
		t.Fatalf("%d vectors, want %d", len(gotV), len(wantV))
	}
	for i := range wantV {
		if canonical(t, gotV[i].Request) != canonical(t, wantV[i].Request) || gotV[i].Canonical != wantV[i].Canonical || gotV[i].RequestHash != wantV[i].RequestHash {
			t.Errorf("vector %d:\n got %+v\nwant %+v", i, gotV[i], wantV[i])
		}
		// And the independent implementation agrees with the card.
		h, err := receipt.RequestHashes(gotV[i].Request)
		if err != nil || h.Request != gotV[i].RequestHash {
			t.Errorf("vector %d: receipt.RequestHashes = %s, %v; card says %s", i, h.Request, err, gotV[i].RequestHash)
		}
	}
}

// The card's keys verify a receipt the service has just signed, and every receipt of a key
// rotated out.
func TestAgentCardKeysVerifyFreshReceipt(t *testing.T) {
	e := newEnv(t)
	req := seedFile(t, "invoice-draft.request.json")
	resp, receiptBody := e.do(t, http.MethodPost, "/verify/schema", req)
	if resp.StatusCode != 200 {
		t.Fatalf("verify: %d %s", resp.StatusCode, receiptBody)
	}
	_, card := e.get(t, "/.well-known/agent-card.json")
	keys, err := receipt.CardKeys(card)
	if err != nil {
		t.Fatal(err)
	}
	if err := receipt.VerifyReceipt(receiptBody, keys, req); err != nil {
		t.Errorf("a fresh receipt does not verify with the card's keys: %v", err)
	}
	_, score := e.get(t, "/score/unknown-agent")
	if err := receipt.VerifyAttestation(score, receipt.ContextScore, keys); err != nil {
		t.Errorf("a fresh score does not verify with the card's keys: %v", err)
	}
	_, rep := e.get(t, "/reputation/unknown-agent")
	if err := receipt.VerifyAttestation(rep, receipt.ContextReputation, keys); err != nil {
		t.Errorf("a fresh history does not verify with the card's keys: %v", err)
	}

	// After a rotation the card lists the new key and still the old one.
	e.change(func(d *service.Deps) {
		old := d.Keys
		d.Keys.Current = testKey("v-next", 3)
		d.Keys.Previous = old.PublicKeys()
	})
	_, card = e.get(t, "/.well-known/agent-card.json")
	if keys, err = receipt.CardKeys(card); err != nil {
		t.Fatal(err)
	}
	if err := receipt.VerifyReceipt(receiptBody, keys, req); err != nil {
		t.Errorf("a receipt of the rotated key no longer verifies: %v", err)
	}
	_, fresh := e.do(t, http.MethodPost, "/verify/schema", req)
	if err := receipt.VerifyReceipt(fresh, keys, req); err != nil {
		t.Errorf("a receipt of the new key does not verify: %v", err)
	}
}

func TestAgentCardX402Extension(t *testing.T) {
	e := newEnv(t)
	_, body := e.get(t, "/.well-known/agent-card.json")
	params := extension(t, decodeJSON(t, body), "urn:json-schema-verifier:extension:x402:")
	nets, _ := params["networks"].([]any)
	if len(nets) != 1 || nets[0].(map[string]any)["network"] != "eip155:8453" || nets[0].(map[string]any)["payTo"] != payee {
		t.Errorf("networks = %v", nets)
	}
	prices, _ := json.Marshal(params["prices"])
	for _, want := range []string{`"priceUSD":"0.02"`, `"priceUSD":"0.01"`, e.base + "/verify/schema", e.base + "/score/{agent_id}"} {
		if !strings.Contains(string(prices), want) {
			t.Errorf("prices %s lack %s", prices, want)
		}
	}
	if fa, _ := params["freeAllowance"].(map[string]any); fa["callsPerClientPerDay"] != float64(7) {
		t.Errorf("freeAllowance = %v", fa)
	}

	free := newEnv(t, freeOnly)
	_, body = free.get(t, "/.well-known/agent-card.json")
	params = extension(t, decodeJSON(t, body), "urn:json-schema-verifier:extension:x402:")
	if n, _ := params["networks"].([]any); len(n) != 0 {
		t.Errorf("a free-only deployment names networks: %v", n)
	}
}

// Both paths serve the same bytes, cacheable for five minutes, with an ETag that answers 304.
func TestAgentCardCaching(t *testing.T) {
	e := newEnv(t)
	r1, b1 := e.get(t, "/.well-known/agent-card.json")
	r2, b2 := e.get(t, "/.well-known/agent.json")
	if !bytes.Equal(b1, b2) {
		t.Errorf("the two paths differ:\n%s\n%s", b1, b2)
	}
	etag := r1.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || etag != r2.Header.Get("ETag") {
		t.Errorf("ETag %q and %q", etag, r2.Header.Get("ETag"))
	}
	if cc := r1.Header.Get("Cache-Control"); cc != "max-age=300" {
		t.Errorf("Cache-Control %q", cc)
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		resp, body := e.get(t, "/.well-known/agent-card.json", "If-None-Match", inm)
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d %q %s", inm, resp.StatusCode, resp.Header.Get("ETag"), body)
		}
	}
	if resp, _ := e.get(t, "/.well-known/agent-card.json", "If-None-Match", `"stale"`); resp.StatusCode != 200 {
		t.Errorf("a stale ETag got %d", resp.StatusCode)
	}
	// A rotation changes the bytes and so the ETag.
	e.change(func(d *service.Deps) { d.Keys.Previous = nil })
	if r3, _ := e.get(t, "/.well-known/agent-card.json", "If-None-Match", etag); r3.StatusCode != 200 || r3.Header.Get("ETag") == etag {
		t.Errorf("after a key change: %d %q", r3.StatusCode, r3.Header.Get("ETag"))
	}
}
