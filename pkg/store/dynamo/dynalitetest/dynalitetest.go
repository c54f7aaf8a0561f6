// Package dynalitetest starts dynalite, a local server speaking DynamoDB's real wire protocol, for
// tests that need a DynamoDB without AWS or Docker: the store contract suite, and later the HTTP
// and payment tests. dynalite is pinned by infra/dynalite/package-lock.json; each Start runs its own
// in-memory server on 127.0.0.1 and stops it (by process group) when the test ends.
package dynalitetest

import (
	"github.com/agent-output-verifier/verifier/internal/testproc"

	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// cliPath is where `npm ci --prefix infra/dynalite` puts dynalite's server, relative to the repo root.
var cliPath = filepath.Join("infra", "dynalite", "node_modules", "dynalite", "cli.js")

// installHint is the fix for a missing dynalite, repeated wherever the tests stop for it.
const installHint = "dynalite is not installed: run `npm ci --prefix infra/dynalite` from the repository root"

// startTimeout bounds the wait for dynalite to listen; node starts in well under a second, but the
// machine may be busy with other tests.
const startTimeout = 20 * time.Second

// startAttempts covers the small window in which another process can take the free port we picked
// before dynalite binds it.
const startAttempts = 3

// Region is the region the test clients sign for; dynalite accepts any.
const Region = "us-east-1"

// Required reports whether a missing dynalite must fail the test instead of skipping it: on CI
// (CI=true) and wherever VERIFIER_REQUIRE_DYNALITE=1, so the DynamoDB contract can never be
// silently skipped where it is meant to run.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("VERIFIER_REQUIRE_DYNALITE") == "1"
}

// Start runs a fresh in-memory dynalite on 127.0.0.1 and returns its endpoint URL
// ("http://127.0.0.1:<port>"). The process (and its process group) is killed in t.Cleanup. If node
// or dynalite is missing, the test is skipped, or failed when Required.
func Start(t testing.TB) string {
	t.Helper()
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatalf("dynalite: %v", err)
	}
	node, cli, err := locate(root)
	if err != nil {
		unavailable(t, err.Error())
	}
	endpoint, stop, err := run(node, cli)
	if err != nil {
		t.Fatalf("dynalite: %v", err)
	}
	t.Cleanup(stop)
	return endpoint
}

// Launch is Start for the programs that are not tests (the benchmarks, `make invoke`): it runs a
// fresh in-memory dynalite on 127.0.0.1 and returns its endpoint URL and the function that stops
// it (its process group, by PID), which the caller must call. root is the repository root; a
// missing node or dynalite is an error naming the fix.
func Launch(root string) (endpoint string, stop func(), err error) {
	node, cli, err := locate(root)
	if err != nil {
		return "", nil, err
	}
	if endpoint, stop, err = run(node, cli); err != nil {
		return "", nil, fmt.Errorf("dynalite: %w", err)
	}
	return endpoint, stop, nil
}

// locate finds node and dynalite's server under root.
func locate(root string) (node, cli string, err error) {
	cli = filepath.Join(root, cliPath)
	if _, err := os.Stat(cli); err != nil {
		return "", "", errors.New(installHint)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", errors.New("node is not on PATH; dynalite needs Node.js 20 or later")
	}
	return node, cli, nil
}

// run starts dynalite, retrying when another process took the port first.
func run(node, cli string) (endpoint string, stop func(), err error) {
	for range startAttempts {
		if endpoint, stop, err = start(node, cli); err == nil {
			return endpoint, stop, nil
		}
	}
	return "", nil, err
}

func unavailable(t testing.TB, msg string) {
	t.Helper()
	if Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// start makes one attempt: pick a free port, run dynalite on it, wait for its "listening" line.
// Waiting for that line rather than for the port to answer makes sure the server on the port is
// ours and not some other process that took the port first. On success the caller owns stop.
func start(node, cli string) (string, func(), error) {
	port, err := testproc.FreePort()
	if err != nil {
		return "", nil, err
	}
	// tolerate-aborts.js sits in infra/dynalite, three levels above cli.js.
	tolerate := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(cli))), "tolerate-aborts.js")
	cmd := exec.Command(node, "--require", tolerate, cli,
		"--host", "127.0.0.1",
		"--port", strconv.Itoa(port),
		// Tables are ACTIVE at once; the default half second per table adds up over many tests.
		"--createTableMs", "0",
		"--deleteTableMs", "0",
		"--updateTableMs", "0",
	)
	testproc.SetProcessGroup(cmd)
	// An os.Pipe rather than cmd.StdoutPipe: Wait runs concurrently with the reader below, and
	// Wait closes a StdoutPipe under the reader's feet.
	stdout, w, err := os.Pipe()
	if err != nil {
		return "", nil, fmt.Errorf("pipe stdout: %w", err)
	}
	cmd.Stdout = w
	stderr := testproc.TailBuffer{Max: 64 << 10}
	cmd.Stderr = &stderr
	err = cmd.Start()
	_ = w.Close() // the child holds its own copy
	if err != nil {
		_ = stdout.Close()
		return "", nil, fmt.Errorf("start %s: %w", cli, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		testproc.KillProcessGroup(cmd.Process.Pid, false)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			testproc.KillProcessGroup(cmd.Process.Pid, true)
			<-exited
		}
	}

	listening := make(chan struct{})
	go func() {
		defer stdout.Close()
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening") {
				once.Do(func() { close(listening) })
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()

	select {
	case <-listening:
	case <-exited:
		return "", nil, fmt.Errorf("dynalite exited before listening on port %d: %s", port, stderr.String())
	case <-time.After(startTimeout):
		stop()
		return "", nil, fmt.Errorf("dynalite did not listen on port %d within %s: %s", port, startTimeout, stderr.String())
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conn, err := net.DialTimeout("tcp", addr, startTimeout)
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("dial dynalite at %s: %w", addr, err)
	}
	_ = conn.Close()
	return "http://" + addr, stop, nil
}

// Client returns an SDK DynamoDB client for endpoint with dummy static credentials, built from
// explicit options rather than the SDK's configuration loader, so it reads none of the machine's
// AWS configuration or environment and a test can never reach real AWS.
//
// It makes up to retryAttempts attempts a call where the SDK's default is 3: under a loaded CI
// machine a response body was twice cut by a connection the HTTP transport closed under it
// ("use of closed network connection" with status 200, a known race of the SDK's client and
// net/http: aws-sdk-go-v2 issues 1825 and 2737), three attempts in a row. The SDK retries the
// same calls the same way in production, where the client keeps its default of 3; more attempts
// here only ride out the race on the test's one loaded machine.
func Client(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:           Region,
		BaseEndpoint:     aws.String(endpoint),
		RetryMaxAttempts: retryAttempts,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "dynalite", SecretAccessKey: "dynalite", Source: "dynalitetest"}, nil
		}),
	})
}

// retryAttempts is how many attempts the test client makes of a call (see Client).
const retryAttempts = 8

var tableSeq atomic.Int64

// TableName returns a table name no other test of this process uses, so every test can create its
// own table in a shared dynalite.
func TableName(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("verifier-test-%d-%d", os.Getpid(), tableSeq.Add(1))
}
