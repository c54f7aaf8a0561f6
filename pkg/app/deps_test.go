package app

import (
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// The Lambda functions reach DynamoDB through the SDK's own client (service/dynamodb), which does
// the signing, retries, throttling, error codes and endpoints, with the configuration NewAWS
// builds by hand: none links the SDK's configuration loader (aws-sdk-go-v2/config), whose
// credential chain (SSO, STS, instance metadata) costs every function megabytes. No hand-written
// client of the AWS protocols is linked either, whatever imports it.
//
// The service clients are held at their last releases before schema-based serialisation
// (dynamodb v1.68.0, kms v1.60.0, secretsmanager v1.49.0, all of 2026-09-09): from the next ones
// on, each client links a table of every operation's schema (service/<name>/schemas) and builds
// it at package initialisation, which put the mcp function over its size bar and added to every
// function's initialisation while the functions call seven operations. An upgrade
// that brings the tables back fails here; docs/PERFORMANCE.md's Lambda section measures the cost.
func TestFunctionsLinkTheSDKClients(t *testing.T) {
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
	if len(deps) == 0 {
		t.Fatal("no function's dependencies were listed")
	}
	const (
		sdkDynamoDB = "github.com/aws/aws-sdk-go-v2/service/dynamodb"
		sdkLoader   = "github.com/aws/aws-sdk-go-v2/config"
		handWritten = "github.com/agent-output-verifier/verifier/pkg/internal/awsjson"
	)
	for group, pkgs := range deps {
		if !slices.Contains(pkgs, sdkDynamoDB) {
			t.Errorf("functions/%s does not link %s", group, sdkDynamoDB)
		}
		if slices.Contains(pkgs, handWritten) {
			t.Errorf("functions/%s links %s", group, handWritten)
		}
		for _, pkg := range pkgs {
			if pkg == sdkLoader || strings.HasPrefix(pkg, sdkLoader+"/") {
				t.Errorf("functions/%s links %s", group, pkg)
			}
			if strings.HasPrefix(pkg, "github.com/aws/aws-sdk-go-v2/service/") && strings.HasSuffix(pkg, "/schemas") {
				t.Errorf("functions/%s links %s, an SDK release with schema tables", group, pkg)
			}
		}
	}
}
