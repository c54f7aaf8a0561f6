package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/intoto/intototest"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// `receipt export --format in-toto --from BASE_URL/verifications/ID` against a running `verifier
// serve`: it waits for the record's attestation, checks it and writes it as served (go-
// securesystemslib verifies it under the card's key, in-toto parses it, its subject is the
// public task id or verification:<id>); a service whose record disagrees with the statement, or
// whose envelope is signed by another key, is FAIL (exit 1) with nothing written.
func TestReceiptExportFromService(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, dir)
	ids := map[string]string{}
	for name, body := range map[string]string{
		"public": `{"task_id":"inv-9","agent_id":"acme-bot","expected_schema":{"type":"integer"},"submitted_output":9}`,
		"anon":   `{"task_id":"private-task","expected_schema":{"type":"integer"},"submitted_output":9}`,
	} {
		resp, b := testhttp.Do(t, "POST", srv.url+"/verify/schema", []byte(body))
		if resp.StatusCode != 200 {
			t.Fatalf("verify: %d %s", resp.StatusCode, b)
		}
		var v struct {
			ID string `json:"verification_id"`
		}
		json.Unmarshal(b, &v)
		ids[name] = v.ID
	}
	_, card := testhttp.Do(t, "GET", srv.url+"/.well-known/agent-card.json", nil)
	keys, err := receipt.CardKeys(card)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"public": "inv-9", "anon": "verification:" + ids["anon"]} {
		out := filepath.Join(dir, name+".intoto.json")
		if code, msg := cli(t, "receipt", "export", "--format", "in-toto", "--from", srv.url+"/verifications/"+ids[name], "--out", out); code != exitOK {
			t.Fatalf("export --from (%s): %d %s", name, code, msg)
		}
		written, _ := os.ReadFile(out)
		_, served := testhttp.Do(t, "GET", srv.url+"/verifications/"+ids[name]+"/attestation", nil)
		if !bytes.Equal(bytes.TrimSpace(written), served) {
			t.Errorf("%s: the envelope written is not the one served", name)
		}
		st, _, _ := intototest.Open(t, written, keys[0].Version, keys[0].Key)
		if got := st.GetSubject()[0].GetName(); got != want {
			t.Errorf("%s: subject %q, want %q", name, got, want)
		}
	}

	// A service in the middle that changes the record, or re-signs the envelope with another key.
	target, _ := url.Parse(srv.url)
	for name, tamper := range map[string]func(path string, b []byte) []byte{
		"record says rules enforced": func(path string, b []byte) []byte {
			if strings.HasSuffix(path, "/attestation") || !strings.HasPrefix(path, "/verifications/") {
				return b
			}
			return bytes.Replace(b, []byte(`"enforce_rules":false`), []byte(`"enforce_rules":true`), 1)
		},
		"another signature": func(path string, b []byte) []byte {
			if !strings.HasSuffix(path, "/attestation") {
				return b
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			m["signatures"].([]any)[0].(map[string]any)["sig"] = base64.StdEncoding.EncodeToString(make([]byte, 64))
			out, _ := json.Marshal(m)
			return out
		},
	} {
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			resp, err := http.Get(target.String() + r.URL.Path)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			b = bytes.ReplaceAll(b, []byte(srv.url), []byte("http://"+r.Host)) // the card's URLs
			w.WriteHeader(resp.StatusCode)
			w.Write(tamper(r.URL.Path, b))
		}))
		out := filepath.Join(dir, "tampered.json")
		code, msg := cli(t, "receipt", "export", "--format", "in-toto", "--from", proxy.URL+"/verifications/"+ids["public"], "--out", out)
		proxy.Close()
		if code != exitFail || !strings.Contains(msg, "FAIL") {
			t.Errorf("%s: %d %s, want FAIL (exit 1)", name, code, msg)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: an envelope was written", name)
		}
	}
	if code, _ := cli(t, "receipt", "export", "--format", "in-toto", "--from", srv.url+"/verifications/x", "--key", "k"); code != exitInvalid {
		t.Errorf("--from with --key: exit %d, want 2", code)
	}
}
