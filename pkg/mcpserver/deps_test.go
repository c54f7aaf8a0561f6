package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// sdkModule is the MCP SDK's module path.
const sdkModule = "github.com/modelcontextprotocol/go-sdk"

// Only functions/mcp links the MCP SDK: every byte is cold-start time, so the other Lambda
// binaries must not carry it (STYLE: each binary links only what its routes need).
func TestOnlyTheMCPFunctionLinksTheSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the functions' dependencies with the go tool")
	}
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	deps, err := lambdatest.FunctionDeps(root)
	if err != nil {
		t.Fatal(err)
	}
	for group, pkgs := range deps {
		links := slices.ContainsFunc(pkgs, func(p string) bool { return strings.HasPrefix(p, sdkModule+"/") })
		if links != (group == "mcp") {
			t.Errorf("functions/%s links the MCP SDK: %v, want %v", group, links, group == "mcp")
		}
	}
}
