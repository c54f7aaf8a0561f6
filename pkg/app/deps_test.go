package app

import (
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
	deps, err := lambdatest.FunctionDeps(root)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"github.com/aws/aws-sdk-go-v2/service/", "github.com/aws/aws-sdk-go-v2/config"}
	for group, pkgs := range deps {
		for _, pkg := range pkgs {
			for _, f := range forbidden {
				if strings.HasPrefix(pkg, f) {
					t.Errorf("functions/%s links %s", group, pkg)
				}
			}
		}
	}
}
