package discovery

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// TestDIDDocument: /.well-known/did.json, where did:web resolves the offer-receipt kid of a
// deployment whose base URL is its host, names the DID of the configured base URL (its port
// percent-encoded) and lists every key of the ring, the previous one kept, as the agent card does.
func TestDIDDocument(t *testing.T) {
	e := newEnv(t)
	resp, body := e.get(t, "/.well-known/did.json")
	if resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	doc := decodeJSON(t, body)
	u, _ := url.Parse(e.base)
	did := "did:web:" + strings.ReplaceAll(u.Host, ":", "%3A")
	if doc["id"] != did {
		t.Errorf("id %v, want %s", doc["id"], did)
	}
	methods, _ := doc["verificationMethod"].([]any)
	keys := e.svc.Keys().PublicKeys()
	if len(methods) != 2 || len(keys) != 2 {
		t.Fatalf("%d methods for %d keys: %s", len(methods), len(keys), body)
	}
	for i, k := range keys {
		m := methods[i].(map[string]any)
		jwk := m["publicKeyJwk"].(map[string]any)
		x, _ := base64.RawURLEncoding.DecodeString(jwk["x"].(string))
		if m["id"] != did+"#"+k.Version || jwk["crv"] != "Ed25519" || !bytes.Equal(x, k.Key) {
			t.Errorf("method %d %v, want key %s", i, m, k)
		}
	}
	// A rotation publishes the new key and keeps the old ones.
	e.change(func(d *service.Deps) {
		d.Keys = receipt.KeyRing{Current: testKey("v-next", 3), Previous: keys}
	})
	_, body = e.get(t, "/.well-known/did.json")
	for _, v := range []string{"v-next", "v-current", "v-previous"} {
		if !bytes.Contains(body, []byte(`"`+did+"#"+v+`"`)) {
			t.Errorf("after rotation the document lacks %s: %s", v, body)
		}
	}
}
