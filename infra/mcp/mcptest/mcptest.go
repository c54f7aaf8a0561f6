// Package mcptest runs a real MCP client the project did not write, the official TypeScript SDK's
// Client (@modelcontextprotocol/sdk, pinned by infra/mcp/package-lock.json), against an MCP
// server, for tests (SPEC §10, §13). One call of Run is one node process: connect (initialize),
// list the tools, call the given tools in order, close.
//
//	s := mcptest.Run(t, srv.URL+"/mcp", mcptest.Call{Name: "verify_schema", Arguments: body})
//	// s.Tools lists the tools; s.Results[0].Result.StructuredContent is the answer
//
// The client checks each structuredContent against the tool's outputSchema, as MCP hosts do; a
// mismatch comes back as Result.Error. Without `npm ci --prefix infra/mcp` (or node) the test is
// skipped, or failed on CI (CI=true).
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// Limits of one client run, each generous because the machine may be busy with other tests.
const (
	// runTimeout bounds one node process: start-up is about half a second, each call a few
	// milliseconds plus what the server takes (a Lambda under the emulator, a paid call's
	// settlement on a local chain).
	runTimeout = 2 * time.Minute
	// stopGrace is how long node may take to exit after SIGTERM when the run times out.
	stopGrace = 5 * time.Second
)

// installHint is the fix for a missing client, repeated wherever the tests stop for it.
const installHint = "the MCP client is not installed: run `npm ci --prefix infra/mcp` from the repository root (make test does)"

// Call is one tools/call: the tool, its arguments (nil: none at all) and the request's _meta
// (where an x402 payment goes, under "x402/payment").
type Call struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      map[string]any  `json:"_meta,omitempty"`
}

// Tool is a tool as tools/list described it.
type Tool struct {
	Name         string         `json:"name"`
	Title        string         `json:"title"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema"`
	Annotations  map[string]any `json:"annotations"`
}

// Content is one content block of a tool result.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ToolResult is a CallToolResult as the client returned it.
type ToolResult struct {
	Content           []Content                  `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

// Result is the outcome of one Call: the result, or what the client threw (Error).
type Result struct {
	// Sent is the exact JSON of the arguments the client sent ("" when there were none), so that
	// a test can send the same bytes to the REST API.
	Sent   string      `json:"sent"`
	Result *ToolResult `json:"result"`
	Error  string      `json:"error"`
}

// Session is what one client run saw.
type Session struct {
	ServerInfo   map[string]any `json:"serverInfo"`
	Instructions string         `json:"instructions"`
	Tools        []Tool         `json:"tools"`
	Results      []Result       `json:"results"`
}

// Tool returns the listed tool called name, or nil.
func (s Session) Tool(name string) *Tool {
	for i := range s.Tools {
		if s.Tools[i].Name == name {
			return &s.Tools[i]
		}
	}
	return nil
}

// Required reports whether a missing client must fail the test instead of skipping it: on CI
// (CI=true) the MCP tests must never be silently skipped.
func Required() bool { return os.Getenv("CI") == "true" }

// Require skips the test (fails it on CI) when the client cannot run: no node, or infra/mcp not
// installed. It returns the client's directory and node's path. Tests that prepare something
// costly before Run call it first.
func Require(t testing.TB) (dir, node string) {
	t.Helper()
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	dir = filepath.Join(root, "infra", "mcp")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		unavailable(t, installHint)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		unavailable(t, "node is not on PATH; the MCP client needs Node.js 20 or later")
	}
	return dir, node
}

// Run connects the TypeScript SDK client to the Streamable HTTP endpoint url, lists the tools and
// makes calls in order. The test fails when the client cannot run or connect; a failed call is
// reported in its Result.
func Run(t testing.TB, url string, calls ...Call) Session {
	t.Helper()
	dir, node := Require(t)
	if calls == nil {
		calls = []Call{}
	}
	plan, err := json.Marshal(map[string]any{"calls": calls})
	if err != nil {
		t.Fatalf("mcptest: encode the calls: %v", err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, plan, 0o600); err != nil {
		t.Fatalf("mcptest: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", "--url", url, "--plan", planFile)
	cmd.Dir = dir
	// Loopback is never sent through a proxy.
	cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	testproc.SetProcessGroup(cmd)
	cmd.Cancel = func() error { testproc.KillProcessGroup(cmd.Process.Pid, true); return nil }
	cmd.WaitDelay = stopGrace
	var stdout bytes.Buffer
	stderr := &testproc.TailBuffer{Max: 16 << 10}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcptest: node client.mjs against %s: %v\nstderr:\n%s", url, err, stderr)
	}
	var s Session
	if err := json.Unmarshal(lastLine(stdout.Bytes()), &s); err != nil {
		t.Fatalf("mcptest: read the client's output: %v\n%s", err, stdout.Bytes())
	}
	if len(s.Results) != len(calls) {
		t.Fatalf("mcptest: %d calls made, %d results", len(calls), len(s.Results))
	}
	return s
}

// Decode decodes a result's structuredContent into v, failing the test when it cannot.
func (r Result) Decode(t testing.TB, v any) {
	t.Helper()
	if r.Result == nil {
		t.Fatalf("mcptest: the call failed in the client: %s", r.Error)
	}
	if err := json.Unmarshal(r.Result.StructuredContent, v); err != nil {
		t.Fatalf("mcptest: structuredContent: %v", err)
	}
}

// Text is the result's first text content block, "" when it has none.
func (r Result) Text() string {
	if r.Result == nil {
		return ""
	}
	for _, c := range r.Result.Content {
		if c.Type == "text" {
			return c.Text
		}
	}
	return ""
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

func unavailable(t testing.TB, msg string) {
	t.Helper()
	if Required() {
		t.Fatal(errors.New(msg))
	}
	t.Skip(fmt.Sprint(msg))
}
