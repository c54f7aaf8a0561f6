package service_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

const module = "github.com/agent-output-verifier/verifier/"

// deps lists the packages pkg links, with the go tool; imports lists those it imports itself.
func deps(t *testing.T, root, pkg string) []string {
	t.Helper()
	return goList(t, root, "-deps", "./"+pkg)
}

func imports(t *testing.T, root, pkg string) []string {
	t.Helper()
	return goList(t, root, "-f", `{{join .Imports "\n"}}`, "./"+pkg)
}

func goList(t *testing.T, root string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// The application is transport-free, and the transports and discovery documents stand beside
// each other on it: the service imports no net/http (pkg/x402, whose payment types it uses, does
// for its facilitator client), and neither MCP nor discovery links the REST adapter (the
// pay-or-free decision is the service's alone, which both transports import).
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("lists dependencies with the go tool")
	}
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if d := imports(t, root, "pkg/service"); slices.Contains(d, "net/http") || !slices.Contains(d, module+"pkg/x402") {
		t.Errorf("pkg/service imports %v: want no net/http", d)
	}
	for _, pkg := range []string{"pkg/mcpserver", "pkg/discovery", "pkg/edge", "pkg/service"} {
		d := deps(t, root, pkg)
		for _, adapter := range []string{"pkg/httpapi", "pkg/mcpserver", "pkg/discovery"} {
			if adapter != pkg && slices.Contains(d, module+adapter) {
				t.Errorf("%s links %s", pkg, adapter)
			}
		}
	}
	for _, pkg := range []string{"pkg/httpapi", "pkg/mcpserver"} {
		if d := deps(t, root, pkg); !slices.Contains(d, module+"pkg/service") {
			t.Errorf("%s does not call the service", pkg)
		}
	}
}
