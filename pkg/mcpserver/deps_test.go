package mcpserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	groups, _ := filepath.Glob(filepath.Join(root, "functions", "*"))
	if len(groups) < 2 {
		t.Fatalf("functions/ holds %v", groups)
	}
	for _, dir := range groups {
		group := filepath.Base(dir)
		cmd := exec.Command(goTool, "list", "-deps", "-tags", "lambda.norpc", "-f", "{{.ImportPath}}", "./functions/"+group)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list functions/%s: %v\n%s", group, err, out)
		}
		links := strings.Contains(string(out), sdkModule+"/")
		if links != (group == "mcp") {
			t.Errorf("functions/%s links the MCP SDK: %v, want %v", group, links, group == "mcp")
		}
	}
}
