package lambdatest_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testproc"
	"github.com/agent-output-verifier/verifier/pkg/config"
)

// A function that cannot start says why on stderr, in one line after whatever its wiring logged,
// writes nothing on stdout and exits with status 1, before it asks the runtime for an event; one
// that can start reaches the runtime's client, which (with no runtime API to call here) ends it
// with status 1 and its own message. Every function binary is run with nothing of the caller's
// environment. Under the emulator, the invocation of a function that cannot start fails with the
// runtime's exit and the reason in the function's log.
func TestFunctionsExitOnStartupFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Lambda binaries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	keyFile, logKeyFile := filepath.Join(tmp, "signing-key.json"), filepath.Join(tmp, "log-key.json")
	if _, err := lambdatest.WriteKey(keyFile, keyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := lambdatest.WriteKey(logKeyFile, "log-"+keyVersion); err != nil {
		t.Fatal(err)
	}
	// No DynamoDB listens here: the log function's start-up check of its log fails on it.
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dynamoDB := map[string]string{
		"VERIFIER_STORE": "dynamodb", "VERIFIER_TABLE": "startup", "VERIFIER_SIGNING_KEY": "file:" + keyFile,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIALAMBDATESTLOCAL0", "AWS_SECRET_ACCESS_KEY": "lambdatest-local-secret-not-a-real-key",
		"AWS_ENDPOINT_URL": "http://127.0.0.1:" + strconv.Itoa(port),
	}
	with := func(vars map[string]string, more ...string) map[string]string {
		m := map[string]string{}
		for k, v := range vars {
			m[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			if more[i+1] == "" {
				delete(m, more[i])
			} else {
				m[more[i]] = more[i+1]
			}
		}
		return m
	}
	badConfig := map[string]string{"VERIFIER_MAX_BODY": "many"}
	_, configErr := config.Load(func(k string) string { return badConfig[k] })
	if configErr == nil {
		t.Fatal("the invalid configuration loads")
	}
	const (
		noEmbedded = "configuration: VERIFIER_STORE is bolt, but this binary has no embedded store (only the local server, verifier serve, has one): set VERIFIER_STORE=dynamodb and VERIFIER_TABLE\n"
		logOff     = `{"time":"T","level":"WARN","msg":"receipt log off: no log key (set VERIFIER_LOG_KEY)"}` + "\n"
		noRuntime  = "T expected AWS Lambda environment variables [AWS_LAMBDA_RUNTIME_API] are not defined\n"
	)
	absentKey := filepath.Join(tmp, "absent", "signing-key.json")
	cases := []struct {
		name string
		vars map[string]string
		// want is stderr, times written T, of the functions that serve routes; wantLog of
		// functions/log where it differs. A want ending in "…" is a prefix of one line.
		want, wantLog string
	}{
		{"the default store", nil, noEmbedded, ""},
		{"an invalid configuration", badConfig, configErr.Error() + "\n", ""},
		{"no region", with(dynamoDB, "AWS_REGION", "", "VERIFIER_LOG_KEY", "file:"+logKeyFile), "open store: configuration: no AWS region (set AWS_REGION)\n", ""},
		{"no signing key file", with(dynamoDB, "VERIFIER_SIGNING_KEY", "file:"+absentKey),
			"load signing key: read key file: open " + absentKey + ": no such file or directory\n", ""},
		{"no log key", with(dynamoDB, "VERIFIER_DATA_DIR", filepath.Join(tmp, "absent")),
			logOff + noRuntime, logOff + "configuration: the log function needs a store that keeps the receipt log and VERIFIER_LOG_KEY\n"},
		{"a log that cannot be read", with(dynamoDB, "VERIFIER_LOG_KEY", "file:"+logKeyFile),
			noRuntime, "receipt log: check the log's identity: read head: log head: operation error DynamoDB: GetItem, …"},
	}
	times := regexp.MustCompile(`(?m)^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d |"time":"[^"]*"`)
	built := map[string]string{}
	for _, fn := range []string{"verify", "mcp", "score", "wellknown", "log"} {
		bin, err := lambdatest.Build(ctx, root(t), fn, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		built[fn] = bin
		for _, c := range cases {
			want := c.want
			if fn == "log" && c.wantLog != "" {
				want = c.wantLog
			}
			cmd := exec.CommandContext(ctx, bin)
			cmd.Dir = tmp
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
			for k, v := range c.vars {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("functions/%s, %s: ended with %v, want exit status 1", fn, c.name, err)
			}
			got := times.ReplaceAllStringFunc(stderr.String(), func(s string) string {
				if strings.HasPrefix(s, `"time"`) {
					return `"time":"T"`
				}
				return "T "
			})
			if prefix, ok := strings.CutSuffix(want, "…"); ok {
				if !strings.HasPrefix(got, prefix) || strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
					t.Errorf("functions/%s, %s: stderr %q, want one line starting %q", fn, c.name, got, prefix)
				}
			} else if got != want {
				t.Errorf("functions/%s, %s: stderr %q, want %q", fn, c.name, got, want)
			}
			if stdout.Len() != 0 {
				t.Errorf("functions/%s, %s: stdout %q, want nothing", fn, c.name, stdout.String())
			}
		}
	}

	rie := emulatorOrSkip(t)
	for _, fn := range slices.Sorted(maps.Keys(built)) {
		e, err := lambdatest.Start(ctx, rie, built[fn], lambdatest.Env(nil))
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Invoke(ctx, []byte(`{}`))
		// The emulator may log the exit after it answers.
		for end := time.Now().Add(10 * time.Second); !strings.Contains(e.Logs(), "exit status 1") && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		logs := e.Logs()
		if stopErr := e.Stop(); stopErr != nil {
			t.Error(stopErr)
		}
		if err == nil {
			t.Errorf("functions/%s on the default store was invoked under the emulator", fn)
		}
		if !strings.Contains(logs, "\n"+noEmbedded) || !strings.Contains(logs, "exit status 1") {
			t.Errorf("functions/%s under the emulator: its log does not hold the reason and its exit status 1:\n%s", fn, logs)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a function made the data directory it was not given: %v", err)
	}
}
