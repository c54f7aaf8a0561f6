package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// functions are the Lambda function groups under functions/ and the event each first invoke sends.
var functions = []struct{ name, event string }{
	{"verify", "events/verify-pass.json"},
	{"wellknown", "events/health.json"},
	{"score", "events/score-no-data.json"},
	{"mcp", "events/mcp-tools-list.json"},
}

// hello is the baseline bootstrap; it answers any event, and is sent verify's.
const (
	hello      = "hello"
	helloPkg   = "./infra/bench/hello"
	helloEvent = "events/verify-pass.json"
)

// Limits of the Lambda measurements, each with its reason.
const (
	// maxBinaryBytes is SPEC §14's 12 MB, read as decimal megabytes (the stricter reading).
	maxBinaryBytes = 12_000_000
	// maxColdRatio is SPEC §14's bar: a function's first invoke at most twice hello's.
	maxColdRatio = 2.0
	// invokeTimeout bounds one cold start and its first invoke; a healthy one takes well under a
	// second, so a minute means something hangs.
	invokeTimeout = time.Minute
)

// binarySize is one linux/arm64 bootstrap.
type binarySize struct {
	name  string
	bytes int64
}

// lambdaSizes builds every function for linux/arm64 through the Makefile's own build target (so
// its flags are the ones measured) and the hello bootstrap with the same flags.
func lambdaSizes(ctx context.Context, c config) ([]binarySize, error) {
	dir := filepath.Join(c.tmp, "arm64")
	cmd := exec.CommandContext(ctx, "make", "-s", "--no-print-directory", "build", "BIN="+dir, "LAMBDA_ARCH=arm64")
	cmd.Dir = c.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("make build: %w\n%s", err, out)
	}
	var sizes []binarySize
	for _, fn := range functions {
		fi, err := os.Stat(filepath.Join(dir, "lambda", fn.name, "bootstrap"))
		if err != nil {
			return nil, fmt.Errorf("make build did not write %s: %w", fn.name, err)
		}
		sizes = append(sizes, binarySize{fn.name, fi.Size()})
	}
	bin, err := buildBootstrap(ctx, c.root, helloPkg, filepath.Join(dir, "lambda", hello), "arm64")
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return nil, err
	}
	return append(sizes, binarySize{hello, fi.Size()}), nil
}

// buildBootstrap builds pkg for linux/arch into dir/bootstrap with the deployed binaries' flags
// (the Makefile's lambda_build, which builds only functions/*), build tags included, so that hello
// is a fair baseline.
func buildBootstrap(ctx context.Context, root, pkg, dir, arch string) (string, error) {
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", lambdatest.BuildTags,
		"-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
}

// coldStart is one binary's first invokes, one fresh emulator each.
type coldStart struct {
	name string
	// total runs from starting the emulator process to the first response; it includes
	// lambdatest.Start's wait for the emulator's port, which polls every 50 ms.
	total []time.Duration
	// invoke is the first invoke's round trip alone: the emulator starts the bootstrap on the first
	// invoke, so this is process start, the function's initialisation and the answer. (The
	// emulator's own "Init Duration" is not used: it ends before the runtime has initialised.)
	invoke []time.Duration
	// init is the binary's package initialisation, traced in runs of its own (traceInit).
	init initTrace
}

func (c coldStart) medians() (total, invoke time.Duration) {
	return medianDuration(c.total), medianDuration(c.invoke)
}

func medianDuration(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	f := make([]float64, len(d))
	for i, v := range d {
		f[i] = float64(v)
	}
	return time.Duration(median(f))
}

// coldStarts builds each function and hello for the host and measures c.runs first invokes of
// each, rotating the order every round so that no binary always follows another. One untimed
// round first brings the binaries and the emulator into the page cache. storeTrips are c.runs
// allowance writes to the same dynalite, the part of verify's first invoke that is the store's.
func coldStarts(ctx context.Context, c config) (_ []coldStart, storeTrips []time.Duration, _ error) {
	dir := filepath.Join(c.tmp, "host")
	type target struct {
		name, bin string
		event     []byte
	}
	var targets []target
	bin, err := buildBootstrap(ctx, c.root, helloPkg, filepath.Join(dir, hello), runtime.GOARCH)
	if err != nil {
		return nil, nil, err
	}
	ev, err := os.ReadFile(filepath.Join(c.root, helloEvent))
	if err != nil {
		return nil, nil, err
	}
	targets = append(targets, target{hello, bin, ev})
	for _, fn := range functions {
		d := filepath.Join(dir, fn.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
		bin, err := lambdatest.Build(ctx, c.root, fn.name, d)
		if err != nil {
			return nil, nil, err
		}
		ev, err := os.ReadFile(filepath.Join(c.root, fn.event))
		if err != nil {
			return nil, nil, err
		}
		targets = append(targets, target{fn.name, bin, ev})
	}
	keyFile := filepath.Join(dir, "signing-key.json")
	if _, err := lambdatest.WriteKey(keyFile, "bench-"+time.Now().UTC().Format("2006-01-02")); err != nil {
		return nil, nil, err
	}

	// The functions link no embedded store: each runs on a table of its own on one dynalite, a
	// local server of DynamoDB's wire protocol, as it runs on DynamoDB on Lambda.
	dynamoDB, stopDynalite, err := dynalitetest.Launch(c.root)
	if err != nil {
		return nil, nil, err
	}
	defer stopDynalite()
	tables := 0
	// freshVars is the environment of the target named name, as `sam local` gives it
	// (lambdatest.EnvFile), on a new table. Hello reads none; it gets the verify function's, so
	// that every binary starts with the same environment.
	freshVars := func(name string) (map[string]string, error) {
		tables++
		table := fmt.Sprintf("verifier-bench-%d", tables)
		if err := dynamo.CreateTable(ctx, dynalitetest.Client(dynamoDB), table); err != nil {
			return nil, fmt.Errorf("create table: %w", err)
		}
		group := name
		if name == hello {
			group = "verify"
		}
		return lambdatest.LocalVars(c.root, group, lambdatest.Here{DynamoDB: dynamoDB, Table: table, KeyFile: keyFile})
	}

	results := make([]coldStart, len(targets))
	for i, t := range targets {
		results[i].name = t.name
	}
	for round := -1; round < c.runs; round++ {
		for k := range targets {
			i := (k + max(round, 0)) % len(targets)
			t := targets[i]
			// A fresh table, as a fresh data directory before: every first invoke finds an
			// empty store.
			vars, err := freshVars(t.name)
			if err != nil {
				return nil, nil, err
			}
			total, invoke, err := firstInvoke(ctx, c.rie, t.bin, t.event, vars)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", t.name, err)
			}
			if round < 0 {
				continue
			}
			results[i].total = append(results[i].total, total)
			results[i].invoke = append(results[i].invoke, invoke)
		}
	}
	for i, t := range targets {
		vars, err := freshVars(t.name)
		if err != nil {
			return nil, nil, err
		}
		if results[i].init, err = traceInit(ctx, t.bin, vars, c.runs); err != nil {
			return nil, nil, err
		}
	}
	for range c.runs {
		// What verify's free answer waits for and hello's does not: one conditional write of the
		// allowance, from a client of its own (a fresh connection, as at a cold start) to a
		// fresh table on the same dynalite.
		tables++
		table := fmt.Sprintf("verifier-bench-%d", tables)
		if err := dynamo.CreateTable(ctx, dynalitetest.Client(dynamoDB), table); err != nil {
			return nil, nil, fmt.Errorf("create table: %w", err)
		}
		st := dynamo.New(dynalitetest.Client(dynamoDB), table)
		start := time.Now()
		if _, _, err := st.ConsumeAllowance(ctx, "bench-client", time.Now().UTC().Format(time.DateOnly), 10, time.Now().Add(48*time.Hour)); err != nil {
			return nil, nil, fmt.Errorf("allowance write: %w", err)
		}
		storeTrips = append(storeTrips, time.Since(start))
	}
	return results, storeTrips, nil
}

// firstInvoke starts a fresh emulator serving bin, sends event and stops it. The answer must be
// an HTTP 200: a cold start that fails is not a measurement.
func firstInvoke(ctx context.Context, rie, bin string, event []byte, vars map[string]string) (total, invoke time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, invokeTimeout)
	defer cancel()
	start := time.Now()
	emu, err := lambdatest.Start(ctx, rie, bin, lambdatest.Env(vars))
	if err != nil {
		return 0, 0, err
	}
	listening := time.Now()
	payload, err := emu.Invoke(ctx, event)
	done := time.Now()
	logs := emu.Logs()
	if stopErr := emu.Stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w\nemulator output:\n%s", err, logs)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(payload, &resp); err != nil || resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("first invoke answered %.300s, want an HTTP 200", payload)
	}
	return done.Sub(start), done.Sub(listening), nil
}

// slowestRatio is the largest median ratio of a function to hello, and which function has it.
func slowestRatio(cs []coldStart, pick func(coldStart) time.Duration) (string, float64) {
	var base time.Duration
	for _, c := range cs {
		if c.name == hello {
			base = pick(c)
		}
	}
	name, worst := "", 0.0
	for _, c := range cs {
		if c.name == hello || base == 0 {
			continue
		}
		if r := float64(pick(c)) / float64(base); r > worst || name == "" {
			name, worst = c.name, r
		}
	}
	return name, worst
}

// sortedCopy is d in increasing order, for min and max.
func sortedCopy(d []time.Duration) []time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}
