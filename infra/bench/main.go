// Command bench measures the SPEC §14 performance bars on this machine in one run and writes
// docs/PERFORMANCE.md: `make bench`.
//
// It runs, in this order (the noise-sensitive micro-benchmarks first, the load last):
//
//   - the Go benchmarks of pkg/verify (whole signed verification against bare santhosh-tekuri
//     parse+validate, cached against uncached schema) and pkg/receipt (signing, canonicalization),
//     -count times, and takes medians;
//   - the naive Go composition of the libraries (BenchmarkNaiveGo, this package), in the same go test
//     runs;
//   - Python (jsonschema, and jsonschema + cryptography doing the whole job) and Node (ajv +
//     canonicalize + node:crypto doing the whole job) on the same two request documents; every
//     response a peer signs is checked against the Go engine before its number is used;
//   - the Lambda functions built for linux/arm64 exactly as `make build` builds them (sizes), and
//     for the host, each with a hello-world bootstrap, under the Runtime Interface Emulator (first
//     invoke, fresh emulator each time);
//   - infra/loadgen against bin/verifier at each connection count; at the count that did best, once
//     more with the open loop at SPEC §14's rate (half of 5,000/s), and with the seed invoice only.
//
// Every number in the report comes from this run; nothing is typed in. Run it from the module root
// after `make verifier tools` and the Node peer's npm install (the Makefile's bench target does all
// three). -peers measures only the whole job against the peers and prints that part of the report;
// -lambda measures only the Lambda sizes and first invokes and prints them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// config is what one run measures and where it writes.
type config struct {
	root       string
	out        string
	count      int
	benchtime  string
	duration   time.Duration
	conns      []int
	runs       int
	verifier   string
	rie        string
	python     string
	node       string
	peers      bool          // measure only the whole job against the peers; write no report
	lambda     bool          // measure only the Lambda sizes and first invokes; write no report
	peerRound  time.Duration // length of one timed round of a peer script
	peerRounds int           // rounds of each peer script (-count)
	tmp        string
	args       []string
}

func main() {
	var c config
	flag.StringVar(&c.out, "out", "docs/PERFORMANCE.md", "where to write the report")
	flag.IntVar(&c.count, "count", 9, "rounds of the Go benchmarks, each running every benchmark once (medians are reported)")
	flag.StringVar(&c.benchtime, "benchtime", "", "go test -benchtime (default: go test's own)")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "length of each loadgen phase")
	conns := flag.String("conns", "32,128,256", "loadgen connection counts to try, comma-separated")
	// 15, not 5: the median of five first invokes moved from run to run on the same tree, and so
	// did a function's ratio to hello, minutes apart.
	flag.IntVar(&c.runs, "runs", 15, "cold starts measured per Lambda binary")
	flag.StringVar(&c.verifier, "bin", "bin/verifier", "the verifier binary loadgen serves (make verifier)")
	flag.StringVar(&c.rie, "rie", "", "the aws-lambda-rie binary (default: bin/tools/aws-lambda-rie, from make tools)")
	flag.StringVar(&c.python, "python", "python3", "the Python interpreter for the Python peer (jsonschema + cryptography)")
	flag.StringVar(&c.node, "node", "node", "the Node binary for the Node peer (ajv + canonicalize + node:crypto, infra/bench/node)")
	flag.BoolVar(&c.peers, "peers", false, "measure only the whole job against the peers (Go, naive Go, Node, Python) and print it; the report is not written")
	flag.BoolVar(&c.lambda, "lambda", false, "measure only the Lambda sizes and first invokes and print them; the report is not written")
	flag.DurationVar(&c.peerRound, "peer-round", time.Second, "length of one timed round of the Node and Python peers (-count rounds)")
	flag.Parse()
	c.args = os.Args[1:]
	c.peerRounds = c.count
	for _, s := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -conns %q: want positive integers separated by commas\n", *conns)
			os.Exit(2)
		}
		c.conns = append(c.conns, n)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root, err := testproc.RepoRoot()
	if err != nil {
		return err
	}
	c.root = root
	if c.rie == "" {
		c.rie = lambdatest.RIEPath(root)
	}
	if c.verifier, err = filepath.Abs(c.verifier); err != nil {
		return err
	}
	if c.peers && c.lambda {
		return errors.New("-peers and -lambda each measure one part; choose one")
	}
	if !c.peers {
		needed := []string{c.verifier, c.rie}
		if c.lambda {
			needed = []string{c.rie}
		}
		for _, p := range needed {
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("%w (run `make verifier tools`, or `make bench`, which does)", err)
			}
		}
	}
	c.tmp, err = os.MkdirTemp("", "verifier-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(c.tmp)

	r := report{peerRound: c.peerRound}
	r.started = time.Now()
	if r.machine, err = describeMachine(ctx); err != nil {
		return err
	}

	if c.lambda {
		if err := measureLambdas(ctx, c, &r); err != nil {
			return err
		}
		r.finished = time.Now()
		r.step("end")
		r.args = c.args
		fmt.Print(r.lambdaMarkdown())
		return nil
	}
	r.step("Go benchmarks")
	runs, required := goBenchmarks, requiredBenchmarks
	if c.peers {
		runs, required = peerGoBenchmarks, requiredPeerBenchmarks
	}
	progress("Go benchmarks (-count %d): %s", c.count, packageList(runs))
	if r.bench, err = runGoBenchmarks(ctx, c, runs, required); err != nil {
		return err
	}
	if r.docs, err = writeBenchDocuments(c); err != nil {
		return err
	}
	r.step("Python peer")
	progress("Python: jsonschema, and the whole job with jsonschema + cryptography, on the same documents")
	if r.python, err = runPython(ctx, c, r.docs); err != nil {
		return err
	}
	r.step("Node peer")
	progress("Node: the whole job with ajv + canonicalize + node:crypto on the same documents")
	if r.node, err = runNode(ctx, c, r.docs); err != nil {
		return err
	}
	if c.peers {
		r.finished = time.Now()
		r.step("end")
		r.args = c.args
		fmt.Print(r.peersMarkdown())
		return nil
	}
	if err := measureLambdas(ctx, c, &r); err != nil {
		return err
	}
	r.step("load")
	progress("load: %d-second phases at %v connections, then the seed invoice only", int(c.duration.Seconds()), c.conns)
	if r.load, err = runLoad(ctx, c); err != nil {
		return err
	}

	r.finished = time.Now()
	r.step("end")
	r.args = c.args
	r.phase = c.duration
	out := filepath.Join(root, c.out)
	if filepath.IsAbs(c.out) {
		out = c.out
	}
	if err := writeFileAtomic(out, []byte(r.markdown())); err != nil {
		return err
	}
	progress("wrote %s (%s)", c.out, r.finished.Sub(r.started).Round(time.Second))
	return nil
}

// measureLambdas is the Lambda step: sizes, then first invokes.
func measureLambdas(ctx context.Context, c config, r *report) error {
	r.step("Lambda builds and first invokes")
	progress("Lambda sizes (linux/arm64, make build)")
	var err error
	if r.sizes, err = lambdaSizes(ctx, c); err != nil {
		return err
	}
	progress("Lambda first invokes under the emulator (%d runs each)", c.runs)
	r.cold, r.storeTrips, err = coldStarts(ctx, c)
	return err
}

// packageList names the packages of runs for the progress line.
func packageList(runs []goBenchmark) string {
	var s []string
	for _, r := range runs {
		s = append(s, strings.TrimPrefix(r.pkg, "./"))
	}
	return strings.Join(s, ", ")
}

// machine is what the numbers were measured on.
type machine struct {
	cpu, goVersion, kernel string
	nproc, numCPU          int
}

func describeMachine(ctx context.Context) (machine, error) {
	m := machine{cpu: "unknown", numCPU: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = "Linux " + strings.TrimSpace(string(b))
	}
	out, err := exec.CommandContext(ctx, "nproc").Output()
	if err != nil {
		return m, fmt.Errorf("nproc: %w", err)
	}
	if m.nproc, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return m, fmt.Errorf("nproc: %q", out)
	}
	out, err = exec.CommandContext(ctx, "go", "version").Output()
	if err != nil {
		return m, fmt.Errorf("go version: %w", err)
	}
	m.goVersion = strings.TrimPrefix(strings.TrimSpace(string(out)), "go version ")
	return m, nil
}

// clockTicks is Linux's USER_HZ, the unit of /proc/stat, which is 100 on every supported
// architecture.
const clockTicks = 100

// cpuSample is the machine's busy CPU time so far and this process's own (its waited-for children
// included), in core-seconds, so that a step's difference shows what other processes took.
type cpuSample struct {
	busy, own float64
	ok        bool
}

func sampleCPU() cpuSample {
	var s cpuSample
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	// user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s
		}
		if i != 3 && i != 4 {
			s.busy += float64(n) / clockTicks
		}
	}
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			return s
		}
		s.own += time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	s.ok = true
	return s
}

func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
