package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
)

// agentIDCases are agent ids every route and tool must judge alike: control characters (C0, DEL,
// C1) are refused, anything else of 1 to 200 characters is taken.
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
