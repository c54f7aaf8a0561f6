package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
)

// agentIDCases are agent ids every route and tool must judge alike: control characters (C0, DEL,
// C1), format characters (bidi controls, zero-width and other invisible ones) and ids of white
// space only are refused, anything else of 1 to 200 characters is taken.
var agentIDCases = []struct {
	id string
	ok bool
}{
	{"seller-1", true},
	{"Émile 🙂 agent", true},
	{"a b/c%d", true},
	{"a\x00b", false},
	{"\x00", false},
	{"line\nbreak", false},
	{"carriage\rreturn", false},
	{"tab\there", false},
	{"\x1b[31mred", false},
	{"del\x7f", false},
	{"c1\u0085next-line", false},
	{"c1\u009bcsi", false},
	// Bidi controls make an id display as another; every one is refused, wherever it stands.
	{"\u202erelles", false},
	{"sell\u202aer", false},
	{"seller\u202b", false},
	{"a\u202cb", false},
	{"a\u202db", false},
	{"a\u2066b\u2069", false},
	{"a\u2067b", false},
	{"a\u2068b", false},
	{"a\u200eb", false},
	{"a\u200fb", false},
	{"a\u061cb", false},
	// Other format characters: invisible, so two ids that look alike would differ.
	{"sel\u200bler", false},     // zero-width space
	{"sel\u200cler", false},     // zero-width non-joiner
	{"sel\u200dler", false},     // zero-width joiner
	{"sel\u2060ler", false},     // word joiner
	{"\ufeffseller", false},     // byte order mark
	{"sel\u00adler", false},     // soft hyphen
	{"seller\U000e0041", false}, // tag latin capital A
	// White space only names nobody; white space inside an id is taken.
	{" ", false},
	{"   ", false},
	{"\u00a0", false},
	{"\u3000\u2003", false},
	{"\u2028", false},
	{"a seller", true},
	{"\u00a0a", true},
	// NFC, not NFKC: compatibility forms are other names, and taken.
	{"\ufb01ne", true},
	{"\uff21gent", true},
}

// An agent_id with a control character is a 422 on agent_id from /verify (which would otherwise
// record it), /reputation and /score alike; the others are served by all three.
func TestAgentIDOneValidation(t *testing.T) {
	rec := &memRecorder{}
	_, srv := newTestService(t, rec, nil)
	for _, c := range agentIDCases {
		idJSON, _ := json.Marshal(c.id)
		body := fmt.Sprintf(`{"task_id":"t","agent_id":%s,"expected_schema":{},"submitted_output":1}`, idJSON)
		for _, req := range []struct{ method, url string }{
			{"POST", srv.URL + "/verify/schema"},
			{"GET", srv.URL + "/reputation/" + url.PathEscape(c.id)},
			{"GET", srv.URL + "/score/" + url.PathEscape(c.id)},
		} {
			var b []byte
			if req.method == "POST" {
				b = []byte(body)
			}
			resp, out := testhttp.Do(t, req.method, req.url, b)
			var env struct {
				Code   string
				Fields []struct{ Field string }
			}
			json.Unmarshal(out, &env)
			switch {
			case c.ok && resp.StatusCode != 200:
				t.Errorf("%s %q: %d %s, want 200", req.method, c.id, resp.StatusCode, out)
			case !c.ok && (resp.StatusCode != 422 || env.Code != "invalid_request" || len(env.Fields) != 1 || env.Fields[0].Field != "agent_id"):
				t.Errorf("%s %s %q: %d %s, want a 422 on agent_id", req.method, req.url, c.id, resp.StatusCode, out)
			}
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, v := range rec.recs {
		for _, c := range agentIDCases {
			if !c.ok && v.AgentID == c.id {
				t.Errorf("agent_id %q was recorded", c.id)
			}
		}
	}
}

// An agent_id is used in its NFC form: the composed and decomposed spellings of one name are one
// agent, recorded, signed and looked up under the composed one.
func TestAgentIDNormalised(t *testing.T) {
	for _, c := range []struct{ sent, nfc string }{
		{"selle\u0301r", "sell\u00e9r"},                                 // e + combining acute
		{"\u1100\u1161\u11a8-agent", "\uac01-agent"},                    // Hangul jamo
		{"A\u030angstr\u00f6m", "\u00c5ngstr\u00f6m"},                   // A + ring above
		{"\u212bngstr\u00f6m", "\u00c5ngstr\u00f6m"},                    // the Angstrom sign is canonically Å
		{"o\u0308\u0301", "\u00f6\u0301"},                               // one composition, one mark left
		{strings.Repeat("e\u0301", 100), strings.Repeat("\u00e9", 100)}, // 200 characters sent, 100 used
		{"sell\u00e9r", "sell\u00e9r"},
	} {
		rec := &memRecorder{}
		_, srv := newTestService(t, rec, nil)
		idJSON, _ := json.Marshal(c.sent)
		body := fmt.Sprintf(`{"task_id":"t","agent_id":%s,"expected_schema":{},"submitted_output":1}`, idJSON)
		resp, out := testhttp.Do(t, "POST", srv.URL+"/verify/schema", []byte(body))
		var answer struct {
			AgentID string `json:"agent_id"`
		}
		if err := json.Unmarshal(out, &answer); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%+q: %d %s", c.sent, resp.StatusCode, out)
		}
		if answer.AgentID != c.nfc {
			t.Errorf("%+q: the answer names agent %+q, want its NFC form %+q", c.sent, answer.AgentID, c.nfc)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			rec.mu.Lock()
			n := len(rec.recs)
			var got string
			if n > 0 {
				got = rec.recs[0].AgentID
			}
			rec.mu.Unlock()
			if n > 0 {
				if got != c.nfc {
					t.Errorf("%+q: recorded as %+q, want %+q", c.sent, got, c.nfc)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%+q: nothing recorded", c.sent)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, route := range []string{"/score/", "/reputation/"} {
			for _, spelling := range []string{c.sent, c.nfc} {
				resp, out := testhttp.Do(t, "GET", srv.URL+route+url.PathEscape(spelling), nil)
				var doc struct {
					AgentID string `json:"agent_id"`
				}
				if err := json.Unmarshal(out, &doc); err != nil || resp.StatusCode != 200 || doc.AgentID != c.nfc {
					t.Errorf("GET %s%+q: %d, agent %+q, want 200 naming %+q", route, spelling, resp.StatusCode, doc.AgentID, c.nfc)
				}
			}
		}
	}
}
