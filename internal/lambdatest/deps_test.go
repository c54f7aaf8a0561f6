package lambdatest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testproc"
)

const (
	module = "github.com/agent-output-verifier/verifier/"
	// jsonSchemaLibrary is the engine's JSON Schema library. Its package initialization is most of
	// what a function spends initializing packages at a cold start (docs/PERFORMANCE.md), and only
	// the functions that verify need it.
	jsonSchemaLibrary = "github.com/santhosh-tekuri/jsonschema"
	// embeddedStore is the local server's embedded store's database. A function's file system is
	// neither shared between sandboxes nor kept, so a function runs on DynamoDB alone, and linking
	// bbolt would only cost its size and cold start.
	embeddedStore = "go.etcd.io/bbolt"
	// prometheusClient is the local server's metrics exporter (GET /metrics). A function writes its
	// metrics as CloudWatch EMF lines instead, so linking the client would only cost cold start.
	prometheusClient = "github.com/prometheus/"
)

// The leaf packages that the routes which never verify build on (the request's contract, the
// receipts, the score formula) do not link the JSON Schema library.
func TestLeafPackagesLinkNoJSONSchemaLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("lists dependencies with the go tool")
	}
	root := repoRoot(t)
	for _, pkg := range []string{"pkg/wire", "pkg/receipt", "pkg/reputation"} {
		if chain := importChain(t, root, "./"+pkg, jsonSchemaLibrary); chain != "" {
			t.Errorf("%s links the JSON Schema library: %s", pkg, chain)
		}
	}
}

// The score, wellknown and log functions answer without verifying anything, so they must not link the
// JSON Schema library: their service is built without an engine, and only the functions that
// verify import pkg/service/engine, the one package that joins the engine to the service.
func TestScoreAndWellknownLinkNoJSONSchemaLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the functions' dependencies with the go tool")
	}
	root := repoRoot(t)
	deps, err := lambdatest.FunctionDeps(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{"score", "wellknown", "log"} {
		if _, ok := deps[group]; !ok {
			t.Fatalf("no functions/%s", group)
		}
		for _, pkg := range deps[group] {
			if strings.HasPrefix(pkg, jsonSchemaLibrary) {
				t.Errorf("functions/%s links %s: %s", group, pkg, importChain(t, root, "./functions/"+group, jsonSchemaLibrary))
				break
			}
		}
	}
}

// No function links what only the local server needs: the embedded store (pkg/app opens only the
// store it is handed; only the local server and the tests import pkg/app/embedded, which opens
// bbolt) and the Prometheus client (pkg/telemetry keeps the counters and writes EMF by hand; only
// the local server imports pkg/telemetry/prom). Each check can fail: cmd/verifier, built from the
// same packages, does link both.
func TestFunctionsLinkNoLocalOnlyPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the functions' dependencies with the go tool")
	}
	root := repoRoot(t)
	deps, err := lambdatest.FunctionDeps(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, local := range []string{embeddedStore, prometheusClient} {
		for group, pkgs := range deps {
			for _, pkg := range pkgs {
				if strings.HasPrefix(pkg, local) {
					t.Errorf("functions/%s links %s: %s", group, pkg, importChain(t, root, "./functions/"+group, local))
					break
				}
			}
		}
		if importChain(t, root, "./cmd/verifier", local) == "" {
			t.Errorf("cmd/verifier links no %s: the dependency listing does not see it", local)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// importChain is the shortest chain of imports from pkg (for linux, as the functions are built)
// to a package whose path starts with target, written "a -> b -> c", or "" when there is none.
func importChain(t *testing.T, root, pkg, target string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", lambdatest.BuildTags, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	imports := map[string][]string{}
	var start string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
		start = f[0] // go list -deps lists the package itself last
	}
	from := map[string]string{start: ""}
	queue := []string{start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if strings.HasPrefix(p, target) {
			chain := []string{strings.TrimPrefix(p, module)}
			for q := from[p]; q != ""; q = from[q] {
				chain = append([]string{strings.TrimPrefix(q, module)}, chain...)
			}
			return strings.Join(chain, " -> ")
		}
		for _, q := range imports[p] {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	return ""
}

// linkedBaseline is how many packages each function's binary links today (`go list -deps` for
// linux with lambdatest.BuildTags, standard library included): every package is size and
// cold-start time, so a function may link fewer, never more. A change that must add packages
// (or a Go release that splits the standard library further) updates the number here, and its
// commit says why; one that removes some lowers it. To see the counts:
//
//	for f in functions/*; do echo $f $(GOOS=linux CGO_ENABLED=0 go list -deps -tags lambda.norpc,nethttpomithttp2 ./$f | wc -l); done
//
// One package each came with issue 35: golang.org/x/crypto/sha3 in place of pkg/x402's own
// Keccak-256 (its dependencies were linked already; each binary grew by 6–11 KB).
var linkedBaseline = map[string]int{
	"log":       308,
	"mcp":       362,
	"score":     309,
	"verify":    332,
	"wellknown": 311,
}

// No Lambda function links more packages than its baseline, and every function has one.
func TestFunctionsLinkNoMoreThanTheirBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the functions' dependencies with the go tool")
	}
	deps, err := lambdatest.FunctionDeps(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for group, pkgs := range deps {
		base, ok := linkedBaseline[group]
		switch {
		case !ok:
			t.Errorf("functions/%s has no entry in linkedBaseline: add %q: %d", group, group, len(pkgs))
		case len(pkgs) > base:
			t.Errorf("functions/%s links %d packages, %d more than its baseline of %d: list them with `GOOS=linux CGO_ENABLED=0 go list -deps -tags %s ./functions/%s` and drop what its routes do not need",
				group, len(pkgs), len(pkgs)-base, base, lambdatest.BuildTags, group)
		case len(pkgs) < base:
			t.Logf("functions/%s links %d packages, %d fewer than its baseline: lower linkedBaseline[%q] to %d", group, len(pkgs), base-len(pkgs), group, len(pkgs))
		}
	}
	for group := range linkedBaseline {
		if _, ok := deps[group]; !ok {
			t.Errorf("linkedBaseline names functions/%s, which does not exist: remove its entry", group)
		}
	}
}
