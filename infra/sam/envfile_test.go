package sam

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/pkg/config"
)

// envProblems lists what is wrong with ev as the environment `sam local` gives the template's
// functions, each problem a sentence; none means every function starts on it. SAM gives a
// function the variables its template declares, each with the file's value where the file names
// it (its function entry over "Parameters"), and drops the file's others silently. So the file
// must name every declared variable (the template's own values name the stack's resources,
// parameters without defaults and AWS's endpoints, none of which exists on a developer's
// machine), and nothing else; and what it names must be a configuration pkg/config accepts for a
// function: the DynamoDB store, a key file, no payee (a local run takes no payments).
func envProblems(tmpl parsed, ev lambdatest.EnvVars) []string {
	var problems []string
	fns := tmpl.GetAllServerlessFunctionResources()
	for entry := range ev {
		if _, ok := fns[entry]; !ok && entry != "Parameters" {
			problems = append(problems, fmt.Sprintf("entry %q is neither Parameters nor a function of template.yaml", entry))
		}
	}
	for _, id := range sortedKeys(fns) {
		if _, ok := ev[id]; !ok {
			problems = append(problems, fmt.Sprintf("no entry for %s, a function of template.yaml", id))
			continue
		}
		vars := ev.Function(id)
		declared := map[string]string{}
		if g, err := tmpl.GetServerlessGlobalFunction(); err == nil && g.Environment != nil {
			maps.Copy(declared, g.Environment.Variables)
		}
		if fn := fns[id]; fn.Environment != nil {
			maps.Copy(declared, fn.Environment.Variables)
		}
		for _, k := range sortedKeys(vars) {
			if _, ok := declared[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s: %s is set, but the template declares no such variable for it (no function reads it, and sam local drops it)", id, k))
			}
		}
		for _, k := range sortedKeys(declared) {
			if _, ok := vars[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s: %s is missing; sam local would give it the template's value %q", id, k, declared[k]))
			}
		}
		cfg, err := config.Load(func(k string) string { return vars[k] })
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: pkg/config refuses it: %v", id, err))
		case cfg.Store != "dynamodb":
			problems = append(problems, fmt.Sprintf("%s: VERIFIER_STORE is %q; a function links only the DynamoDB store", id, cfg.Store))
		case cfg.DefaultKey || !strings.HasPrefix(cfg.SigningKey, "file:"):
			problems = append(problems, fmt.Sprintf("%s: VERIFIER_SIGNING_KEY must name a development key file (file:), not an AWS key source or the default", id))
		case !cfg.X402.FreeOnly():
			problems = append(problems, fmt.Sprintf("%s: a payee is set; a local run takes no payments", id))
		}
		if u, err := url.Parse(vars["AWS_ENDPOINT_URL_DYNAMODB"]); err != nil || u.Scheme != "http" || u.Host == "" {
			problems = append(problems, fmt.Sprintf("%s: AWS_ENDPOINT_URL_DYNAMODB must be DynamoDB Local's http:// URL", id))
		}
	}
	return problems
}

// TestLocalEnvVars holds the checked-in env-vars file of `sam local` to template.yaml and
// pkg/config (envProblems), and shows each rule can fail on a copy broken the way it guards.
func TestLocalEnvVars(t *testing.T) {
	tmpl := load(t)
	ev, err := lambdatest.ReadEnvVars(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range envProblems(tmpl, ev) {
		t.Error(p)
	}

	broken := func(change func(lambdatest.EnvVars)) lambdatest.EnvVars {
		c := lambdatest.EnvVars{}
		for k, v := range ev {
			c[k] = maps.Clone(v)
		}
		change(c)
		return c
	}
	for _, c := range []struct {
		name, want string
		ev         lambdatest.EnvVars
	}{
		{"a function's entry missing", "no entry for McpFunction", broken(func(e lambdatest.EnvVars) { delete(e, "McpFunction") })},
		{"an entry for no function", `entry "OldFunction"`, broken(func(e lambdatest.EnvVars) { e["OldFunction"] = map[string]string{} })},
		{"a variable the config requires", "VERIFIER_TABLE is missing", broken(func(e lambdatest.EnvVars) { delete(e["Parameters"], "VERIFIER_TABLE") })},
		{"a variable no function reads", "VERIFIER_TABEL is set", broken(func(e lambdatest.EnvVars) { e["ScoreFunction"]["VERIFIER_TABEL"] = "t" })},
		{"a value pkg/config refuses", "pkg/config refuses", broken(func(e lambdatest.EnvVars) { e["VerifyFunction"]["VERIFIER_FREE_CALLS_PER_DAY"] = "many" })},
		{"an AWS key source", "development key file", broken(func(e lambdatest.EnvVars) {
			e["Parameters"]["VERIFIER_SIGNING_KEY"] = "secretsmanager:verifier-signing-key"
			e["Parameters"]["VERIFIER_KEY_VERSION"] = "v1"
		})},
		{"a payee", "takes no payments", broken(func(e lambdatest.EnvVars) {
			e["Parameters"]["X402_PAY_TO_EVM"] = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
			e["Parameters"]["X402_FACILITATOR_URL"] = "https://facilitator.example"
		})},
		{"no local endpoint", "AWS_ENDPOINT_URL_DYNAMODB", broken(func(e lambdatest.EnvVars) { e["Parameters"]["AWS_ENDPOINT_URL_DYNAMODB"] = "" })},
	} {
		got := envProblems(tmpl, c.ev)
		if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, c.want) }) {
			t.Errorf("%s: problems %q, want one saying %q", c.name, got, c.want)
		}
	}
}

// lambdatest.LogicalIDs, which the emulator runs use to find a function's entry in the file,
// names each function of the template by the group its FunctionName ends in.
func TestLogicalIDsMatchTemplate(t *testing.T) {
	tmpl := load(t)
	fns := tmpl.GetAllServerlessFunctionResources()
	want := map[string]string{}
	for id, fn := range fns {
		want[functionGroup(t, fn)] = id
	}
	if !maps.Equal(lambdatest.LogicalIDs, want) {
		t.Errorf("lambdatest.LogicalIDs = %v, template.yaml has %v", lambdatest.LogicalIDs, want)
	}
}

// The steps of docs/deploying.md that run the functions with `sam local` agree with the env-vars
// file and the template: the file's path, DynamoDB Local's container name and port (the
// endpoint), the table's name and key schema, the key file's name, and the API's port (the base
// URL). They cannot run here (no Docker), so this is what keeps them from rotting.
func TestLocalRunDocs(t *testing.T) {
	tmpl := load(t)
	ev, err := lambdatest.ReadEnvVars(root)
	if err != nil {
		t.Fatal(err)
	}
	vars := ev["Parameters"]
	doc := readFile(t, root+"/docs/deploying.md")
	_, section, ok := strings.Cut(doc, "## Running the functions with sam local")
	if !ok {
		t.Fatal("docs/deploying.md has no section \"Running the functions with sam local\"")
	}
	endpoint, _ := url.Parse(vars["AWS_ENDPOINT_URL_DYNAMODB"])
	base, _ := url.Parse(vars["VERIFIER_BASE_URL"])
	keyFile := path.Base(strings.TrimPrefix(vars["VERIFIER_SIGNING_KEY"], "file:"))
	logKeyFile := path.Base(strings.TrimPrefix(vars["VERIFIER_LOG_KEY"], "file:"))
	want := []string{
		"--env-vars " + lambdatest.EnvFile,
		"--name " + endpoint.Hostname(),
		"-p 127.0.0.1:" + endpoint.Port() + ":" + endpoint.Port(),
		"--endpoint-url http://127.0.0.1:" + endpoint.Port(),
		"-sharedDb",
		"--table-name " + vars["VERIFIER_TABLE"],
		"--port " + base.Port(),
		keyFile,
		logKeyFile,
	}
	for _, tb := range tmpl.GetAllDynamoDBTableResources() {
		for _, a := range tb.AttributeDefinitions {
			want = append(want, "AttributeName="+a.AttributeName+",AttributeType="+a.AttributeType)
		}
		for _, k := range tb.KeySchema {
			want = append(want, "AttributeName="+k.AttributeName+",KeyType="+k.KeyType)
		}
	}
	for id := range tmpl.GetAllServerlessFunctionResources() {
		want = append(want, id)
	}
	for _, w := range want {
		if !strings.Contains(section, w) {
			t.Errorf("docs/deploying.md's sam local steps do not say %q", w)
		}
	}
}
