package lambdatest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/infra/mcp/mcptest"
	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// apiDomain is the host API Gateway gives the function: not loopback, so the MCP transport's DNS
// rebinding protection must not refuse it.
const apiDomain = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"

// TestMCPClientAgainstLambdaAndLocal has the official TypeScript SDK client list the tools and
// call each one against functions/mcp under the Runtime Interface Emulator (behind a stand-in for
// API Gateway, which turns the client's Streamable HTTP POSTs into HTTP API v2 events) and against
// the local server. Both must answer alike, and alike to the REST routes for the same input,
// apart from ids, times and signatures.
func TestMCPClientAgainstLambdaAndLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the mcp Lambda binary and the MCP client")
	}
	rie := emulatorOrSkip(t)
	mcptest.Require(t)
	r := root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	tmp := t.TempDir()
	keyFile := filepath.Join(tmp, "signing-key.json")
	key, err := lambdatest.WriteKey(keyFile, keyVersion)
	if err != nil {
		t.Fatal(err)
	}
	e := startFunction(ctx, t, rie, r, "mcp", dynalitetest.Start(t), keyFile)
	gateway := httptest.NewServer(&lambdatest.Gateway{Emulator: e, DomainName: apiDomain, SourceIP: sourceIP})
	t.Cleanup(gateway.Close)

	svc := localService(ctx, t, tmp, keyFile)
	local := httptest.NewServer(httpapi.Handler(svc, mcpserver.New(svc).Mount))
	t.Cleanup(local.Close)

	example, _ := json.Marshal(wire.ExampleRequest())
	draft := readSeed(t, "invoice-draft.request.json")
	calls := []mcptest.Call{
		{Name: mcpserver.ToolVerify, Arguments: example},
		{Name: mcpserver.ToolVerify, Arguments: draft},
		{Name: mcpserver.ToolVerify, Arguments: json.RawMessage(`{"task_id":"t","expected_schema":{},"submitted_output":1,"rules":[{"type":"nope","field":"a"}]}`)},
		{Name: mcpserver.ToolVerify}, // no arguments: the discovery probe
		{Name: mcpserver.ToolRecord, Arguments: json.RawMessage(`{"agent_id":"agent-never-seen"}`)},
		{Name: mcpserver.ToolRecord, Arguments: json.RawMessage(`{"agent_id":"test-seller-invoice-agent"}`)},
		{Name: mcpserver.ToolRecord, Arguments: json.RawMessage(`{"agent":"typo"}`)},
	}
	lam := mcptest.Run(t, gateway.URL+mcpserver.Path, calls...)
	loc := mcptest.Run(t, local.URL+mcpserver.Path, calls...)

	if lam.ServerInfo["name"] != "agent-output-verifier" || lam.Instructions == "" {
		t.Errorf("Lambda server info %v, instructions %q", lam.ServerInfo, lam.Instructions)
	}
	for _, name := range []string{mcpserver.ToolVerify, mcpserver.ToolRecord} {
		if lam.Tool(name) == nil {
			t.Errorf("the Lambda does not list %s: %+v", name, lam.Tools)
		}
	}
	if !reflect.DeepEqual(lam.Tools, loc.Tools) {
		t.Errorf("tools differ:\nLambda %+v\nlocal  %+v", lam.Tools, loc.Tools)
	}

	for i, c := range calls {
		l, o := lam.Results[i], loc.Results[i]
		if l.Error != "" || o.Error != "" {
			t.Errorf("call %d (%s): the client failed: Lambda %q, local %q", i, c.Name, l.Error, o.Error)
			continue
		}
		for where, res := range map[string]mcptest.Result{"Lambda": l, "local": o} {
			if !reflect.DeepEqual(stableJSON(t, []byte(res.Text())), stableJSON(t, res.Result.StructuredContent)) {
				t.Errorf("call %d, %s: the text copy differs from structuredContent:\n%s\n%s", i, where, res.Text(), res.Result.StructuredContent)
			}
		}
		if l.Result.IsError != o.Result.IsError {
			t.Errorf("call %d: isError Lambda %v, local %v", i, l.Result.IsError, o.Result.IsError)
		}
		got, want := stableJSON(t, l.Result.StructuredContent), stableJSON(t, o.Result.StructuredContent)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("call %d (%s): Lambda and local differ:\nLambda %s\nlocal  %s", i, c.Name, l.Result.StructuredContent, o.Result.StructuredContent)
		}
		// The same input over REST, on the local server: the same answer.
		var rest answer
		switch {
		case c.Name == mcpserver.ToolVerify && c.Arguments != nil:
			rest = request(t, http.MethodPost, local.URL+"/verify/schema", []byte(l.Sent))
		case c.Name == mcpserver.ToolRecord && !l.Result.IsError:
			var in struct {
				AgentID string `json:"agent_id"`
			}
			json.Unmarshal(c.Arguments, &in)
			rest = request(t, http.MethodGet, local.URL+"/score/"+url.PathEscape(in.AgentID), nil)
		default:
			continue
		}
		if (rest.status != http.StatusOK) != l.Result.IsError {
			t.Errorf("call %d: REST status %d, MCP isError %v", i, rest.status, l.Result.IsError)
		}
		if want := stableJSON(t, rest.body); !reflect.DeepEqual(got, want) {
			t.Errorf("call %d (%s): MCP and REST differ:\nMCP  %s\nREST %s", i, c.Name, l.Result.StructuredContent, rest.body)
		}
	}

	// What the Lambda signed verifies under the key it was given and binds the request sent.
	pub := []receipt.PublicKey{key.Public()}
	if err := receipt.VerifyReceipt(lam.Results[0].Result.StructuredContent, pub, []byte(lam.Results[0].Sent)); err != nil {
		t.Errorf("the Lambda's verify_schema receipt: %v", err)
	}
	if err := receipt.VerifyAttestation(lam.Results[4].Result.StructuredContent, receipt.ContextScore, pub); err != nil {
		t.Errorf("the Lambda's score: %v", err)
	}
	var probe map[string]any
	lam.Results[3].Decode(t, &probe)
	if res, _ := probe["resource"].(map[string]any); !lam.Results[3].Result.IsError || res["url"] != "mcp://tool/verify_schema" {
		t.Errorf("the probe: %s", lam.Results[3].Result.StructuredContent)
	}
	var ft map[string]any
	json.Unmarshal(lam.Results[3].Result.Meta["free_trial"], &ft)
	if ft["url"] != baseURL+"/mcp" || ft["remaining_calls_today"] != float64(svc.Pricing().FreeCallsPerDay-2) {
		t.Errorf("the probe's free_trial %v: the Lambda counted the two free calls of this client", ft)
	}
}

// request sends one request to url and returns the answer.
func request(t *testing.T, method, url string, body []byte) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// stableJSON is a document with the fields that differ between runs removed.
func stableJSON(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	return stable(t, answer{body: doc})
}

func readSeed(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "testdata", "seed", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
