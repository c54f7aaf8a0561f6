package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// The Lambda functions reach AWS through pkg/internal/awsjson alone: the SDK's generated service
// clients and its configuration loader cost every function megabytes and milliseconds of package
// initialisation at each cold start (the DynamoDB client's alone about 3 ms), so none may be
// linked, whatever imports them.
func TestFunctionsLinkNoSDKServiceClient(t *testing.T) {
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
	forbidden := []string{"github.com/aws/aws-sdk-go-v2/service/", "github.com/aws/aws-sdk-go-v2/config"}
	for _, dir := range groups {
		group := filepath.Base(dir)
		cmd := exec.Command(goTool, "list", "-deps", "-tags", lambdatest.BuildTags, "-f", "{{.ImportPath}}", "./functions/"+group)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list functions/%s: %v\n%s", group, err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(pkg, f) {
					t.Errorf("functions/%s links %s", group, pkg)
				}
			}
		}
	}
}
