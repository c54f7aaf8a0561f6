// Package lambdatest runs the project's Lambda binaries the way Lambda does, on this machine: each
// function is built for the host and served by the AWS Lambda Runtime Interface Emulator (RIE) on
// 127.0.0.1, then invoked with API Gateway HTTP API v2 events. The RIE test and `make invoke` both
// use it. Every process it starts is stopped by its process id.
package lambdatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// Limits of one emulator run, each with its reason.
const (
	// readyTimeout bounds the wait for the emulator's port: it listens within milliseconds, so a
	// long wait means it failed to start.
	readyTimeout = 15 * time.Second
	// stopGrace is how long the emulator gets to shut its runtime down after SIGTERM before the
	// whole process group is killed.
	stopGrace = 5 * time.Second
	// maxResponse bounds what Invoke reads: Lambda itself caps responses at 6 MB.
	maxResponse = 6 << 20
)

// BuildTags are the build tags of every Lambda binary, in the form `go build -tags` takes.
// lambda.norpc leaves out aws-lambda-go's RPC mode, which only the retired go1.x runtime used;
// nethttpomithttp2 leaves out net/http's bundled HTTP/2 (its code and its package initialisation in
// every binary), since everything a function calls speaks HTTP/1.1: the Lambda runtime API, the AWS
// JSON APIs, and any HTTPS facilitator. The Makefile's LAMBDA_TAGS must be the same (infra/sam
// checks it), and the bench builds its hello baseline with them too.
const BuildTags = "lambda.norpc,nethttpomithttp2"

// RIEPath is where `make tools` installs the emulator.
func RIEPath(root string) string {
	return filepath.Join(root, "bin", "tools", "aws-lambda-rie")
}

// Build compiles functions/<group> of the module at root for the host into dir/bootstrap, with
// the flags the deployed binaries use except the target architecture, and returns its path.
func Build(ctx context.Context, root, group, dir string) (string, error) {
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.CommandContext(ctx, goTool(), "build", "-trimpath", "-buildvcs=false", "-tags", BuildTags,
		"-ldflags", "-s -w", "-o", out, "./functions/"+group)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build functions/%s: %w\n%s", group, err, msg)
	}
	return out, nil
}

// goTool is the go command of the toolchain running this program: `go test` and `go run` put
// that toolchain's bin directory first on PATH, so "go" from PATH is it.
func goTool() string { return "go" }

// FunctionDeps lists, for each function group under root/functions, the import paths its Lambda
// binary links (go list -deps for linux with BuildTags), so that tests can say what a function
// may carry: every linked package is cold-start time.
func FunctionDeps(root string) (map[string][]string, error) {
	groups, _ := filepath.Glob(filepath.Join(root, "functions", "*"))
	if len(groups) < 2 {
		return nil, fmt.Errorf("functions/ holds %v", groups)
	}
	deps := make(map[string][]string, len(groups))
	for _, dir := range groups {
		group := filepath.Base(dir)
		cmd := exec.Command(goTool(), "list", "-deps", "-tags", BuildTags, "-f", "{{.ImportPath}}", "./functions/"+group)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go list functions/%s: %w\n%s", group, err, out)
		}
		deps[group] = strings.Fields(string(out))
	}
	return deps, nil
}

// Emulator is one aws-lambda-rie process serving one function binary on 127.0.0.1. It accepts one
// invocation at a time, as Lambda does for one execution environment.
type Emulator struct {
	// Addr is the host:port of the emulator's invoke API.
	Addr      string
	bootstrap string
	cmd       *exec.Cmd
	logs      *testproc.TailBuffer
	done      chan struct{}
	stopOnce  sync.Once
	stopErr   error
}

// Start runs the emulator at rie serving bootstrap. env is the function's whole environment:
// nothing of the caller's environment is passed on, so no real AWS credentials or profile can
// reach the function. Both of the emulator's listeners are on 127.0.0.1. The caller must Stop it.
func Start(ctx context.Context, rie, bootstrap string, env []string) (*Emulator, error) {
	invokePort, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	runtimePort, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	e := &Emulator{
		Addr:      net.JoinHostPort("127.0.0.1", strconv.Itoa(invokePort)),
		bootstrap: bootstrap,
		logs:      &testproc.TailBuffer{}, // unbounded: tests read all of it
		done:      make(chan struct{}),
	}
	e.cmd = exec.Command(rie,
		"--runtime-interface-emulator-address", e.Addr,
		"--runtime-api-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(runtimePort)),
		bootstrap)
	e.cmd.Dir = filepath.Dir(bootstrap)
	e.cmd.Env = env
	e.cmd.Stdout, e.cmd.Stderr = e.logs, e.logs
	// Its own process group, so Stop can end the emulator and anything it left behind together.
	testproc.SetProcessGroup(e.cmd)
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", rie, err)
	}
	go func() {
		e.cmd.Wait()
		close(e.done)
	}()
	if err := e.waitReady(ctx); err != nil {
		e.Stop()
		return nil, fmt.Errorf("%w\nemulator output:\n%s", err, e.Logs())
	}
	return e, nil
}

func (e *Emulator) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		c, err := net.DialTimeout("tcp", e.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-e.done:
			return errors.New("the emulator exited before it listened")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the emulator did not listen on %s within %s", e.Addr, readyTimeout)
		}
	}
}

// Invoke sends one event and returns the function's response payload. The first call also runs
// the function's initialisation, as a cold start does.
func (e *Emulator) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		"http://"+e.Addr+"/2015-03-31/functions/function/invocations", bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("read invoke response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke: emulator answered %s: %s", resp.Status, body)
	}
	return body, nil
}

// Logs returns what the emulator and the function printed so far.
func (e *Emulator) Logs() string { return e.logs.String() }

// Stop ends the emulator: SIGTERM to its process group (the emulator then stops the function),
// SIGKILL to the group after a grace period, and finally SIGKILL to any process still running
// this emulator's bootstrap binary (the function runs in a process group of its own). It is safe
// to call more than once.
func (e *Emulator) Stop() error {
	e.stopOnce.Do(func() {
		pgid := e.cmd.Process.Pid
		testproc.KillProcessGroup(pgid, false)
		select {
		case <-e.done:
		case <-time.After(stopGrace):
			testproc.KillProcessGroup(pgid, true)
			<-e.done
		}
		for _, pid := range pidsRunning(e.bootstrap) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				e.stopErr = fmt.Errorf("kill function process %d: %w", pid, err)
			}
		}
	})
	return e.stopErr
}

// pidsRunning lists the processes whose executable is exe, read from /proc. exe is a binary this
// package built in a fresh temporary directory, so the match is that run's processes only.
func pidsRunning(exe string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", d.Name(), "exe")); err == nil && strings.TrimSuffix(target, " (deleted)") == exe {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Env is the environment a function gets under the emulator: the given variables plus a region
// and dummy credentials, so the AWS SDK's configuration loads without any network or real account
// (nothing in a bolt-store run calls AWS).
func Env(vars map[string]string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIALAMBDATESTLOCAL0",
		"AWS_SECRET_ACCESS_KEY=lambdatest-local-secret-not-a-real-key",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// EnvFile is the functions' environment for runs on a developer's machine, relative to the module
// root: the file `sam local invoke --env-vars` and `sam local start-api --env-vars` read (SAM's
// format: "Parameters" holds what every function gets, and an entry under a function's logical id
// what that function alone gets, over it). The emulator runs here (the tests, `make invoke`, the
// bench's first invokes) read their variables from the same file through LocalVars, so it cannot
// rot; infra/sam checks it against template.yaml and pkg/config.
const EnvFile = "infra/sam/env.local.json"

// LogicalIDs maps each function group (functions/<group>) to its resource in template.yaml, the
// key of its entry in EnvFile. infra/sam checks it against the template's FunctionNames.
var LogicalIDs = map[string]string{
	"verify":    "VerifyFunction",
	"mcp":       "McpFunction",
	"wellknown": "WellKnownFunction",
	"score":     "ScoreFunction",
	"log":       "LogFunction",
}

// EnvVars is an env-vars file in SAM's format: "Parameters" and logical ids, each naming variables.
type EnvVars map[string]map[string]string

// ReadEnvVars reads EnvFile of the module at root. Every value must be a string: SAM would turn
// anything else into text of its own making, or into "".
func ReadEnvVars(root string) (EnvVars, error) {
	b, err := os.ReadFile(filepath.Join(root, EnvFile))
	if err != nil {
		return nil, err
	}
	var e EnvVars
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvFile, err)
	}
	return e, nil
}

// Function is what `sam local` sets, from the file, for the function logicalID: "Parameters",
// then the function's own entry over it. (SAM passes on only the variables the template declares
// for the function; infra/sam checks the file names no other.)
func (e EnvVars) Function(logicalID string) map[string]string {
	vars := map[string]string{}
	maps.Copy(vars, e["Parameters"])
	maps.Copy(vars, e[logicalID])
	return vars
}

// Here is what a run on this machine must have of its own, in place of EnvFile's values: the
// endpoint of the DynamoDB server it started (dynalite), its table there, and the key file it
// wrote. Everything else comes from the file, as `sam local` would set it. LogKeyFile is the
// receipt log's key file; without one the function runs with the log off (no VERIFIER_LOG_KEY,
// and no key at its default path), as a run that is not about the log needs no second key.
type Here struct {
	DynamoDB, Table, KeyFile, LogKeyFile string
}

// LocalVars is the environment of functions/<group> for a run on this machine: its variables in
// EnvFile with the three of Here replaced. This is the one place where an emulator run departs
// from the file. Env adds the region and the local credentials the client signs with, as `sam
// local` adds the caller's.
func LocalVars(root, group string, here Here) (map[string]string, error) {
	id, ok := LogicalIDs[group]
	if !ok {
		return nil, fmt.Errorf("functions/%s has no logical id in lambdatest.LogicalIDs", group)
	}
	e, err := ReadEnvVars(root)
	if err != nil {
		return nil, err
	}
	if _, ok := e[id]; !ok {
		return nil, fmt.Errorf("%s has no entry for %s", EnvFile, id)
	}
	vars := e.Function(id)
	if here.LogKeyFile == "" {
		delete(vars, "VERIFIER_LOG_KEY")
		delete(vars, "VERIFIER_LOG_KEY_VERSION")
	} else {
		vars["VERIFIER_LOG_KEY"] = "file:" + here.LogKeyFile
	}
	for name, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": here.DynamoDB,
		"VERIFIER_TABLE":            here.Table,
		"VERIFIER_SIGNING_KEY":      "file:" + here.KeyFile,
	} {
		if _, ok := vars[name]; !ok {
			return nil, fmt.Errorf("%s does not set %s for %s", EnvFile, name, id)
		}
		vars[name] = v
	}
	return vars, nil
}

// WriteKey generates a signing key called version and writes it to a new key file at path.
func WriteKey(path, version string) (receipt.Key, error) {
	k, err := keys.Generate(version, rand.Reader)
	if err != nil {
		return receipt.Key{}, err
	}
	if err := keys.WriteFile(path, k); err != nil {
		return receipt.Key{}, err
	}
	return k, nil
}
