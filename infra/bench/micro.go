package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// goBenchmark is one go test run: a package and the benchmarks it runs, and how long each runs
// when not the run's -benchtime ("1x": once a round, for benchmarks that each take a second).
type goBenchmark struct{ pkg, pattern, benchtime string }

// goBenchmarks are the packages and benchmarks that run, each package in a go test of its own.
// BenchmarkNaiveGo (this package) is the naive composition of the libraries, a peer of SPEC §14.
var goBenchmarks = []goBenchmark{
	{"./pkg/verify", "^(BenchmarkVerifySeedInvoice|BenchmarkBareValidate|BenchmarkVerifyUncachedSchema)$", ""},
	{"./pkg/receipt", "^(BenchmarkAttest|BenchmarkVerifyAttestation|BenchmarkCanonicalizeFast|BenchmarkCanonicalizeJCS)$", ""},
	{"./infra/bench", "^BenchmarkNaiveGo$", ""},
	// The work at the request limits, which the limits' comments cite (pkg/verify/limits.go).
	{"./pkg/verify", "^(BenchmarkHostileSchema|BenchmarkHostileSchemaWork|BenchmarkHostileRuleWork)$", "1x"},
}

// peerGoBenchmarks are what -peers runs: the whole signed verification and the naive composition.
var peerGoBenchmarks = []goBenchmark{
	{"./pkg/verify", "^BenchmarkVerifySeedInvoice$", ""},
	{"./infra/bench", "^BenchmarkNaiveGo$", ""},
}

// samples are one benchmark's results over the -count runs.
type samples struct {
	ns, bytes, allocs []float64
}

// stat is the median and spread of one benchmark.
type stat struct {
	ns, minNs, maxNs, bytes, allocs float64
	n                               int
}

// add appends o's results to s.
func (s *samples) add(o *samples) {
	s.ns = append(s.ns, o.ns...)
	s.bytes = append(s.bytes, o.bytes...)
	s.allocs = append(s.allocs, o.allocs...)
}

func (s *samples) stat() stat {
	return stat{ns: median(s.ns), minNs: slices.Min(s.ns), maxNs: slices.Max(s.ns),
		bytes: median(s.bytes), allocs: median(s.allocs), n: len(s.ns)}
}

// benchmarks maps a benchmark's name without the GOMAXPROCS suffix to its result.
type benchmarks map[string]stat

// get returns the named benchmark or an error saying it did not run.
func (b benchmarks) get(name string) (stat, error) {
	s, ok := b[name]
	if !ok {
		return stat{}, fmt.Errorf("benchmark %s did not run", name)
	}
	return s, nil
}

// runGoBenchmarks runs every benchmark of runs c.count times and fails when a benchmark in
// required did not run. Each package's test binary is built once; then each round runs every
// package's benchmarks once, so that the rounds interleave: a ratio of two benchmarks compares
// runs made minutes apart at most as often as runs made side by side, and a machine that drifts
// (another process, the processor's clock) moves both sides of a ratio alike.
func runGoBenchmarks(ctx context.Context, c config, runs []goBenchmark, required []string) (benchmarks, error) {
	bins := make([]string, len(runs))
	for i, gb := range runs {
		bins[i] = filepath.Join(c.tmp, fmt.Sprintf("bench-%d.test", i))
		build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bins[i], gb.pkg)
		build.Dir = c.root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go test -c %s: %w\n%s", gb.pkg, err, out)
		}
	}
	collected := map[string]*samples{}
	for range c.count {
		for i, gb := range runs {
			args := []string{"-test.run", "^$", "-test.bench", gb.pattern, "-test.benchmem", "-test.count", "1"}
			if gb.benchtime != "" {
				args = append(args, "-test.benchtime", gb.benchtime)
			} else if c.benchtime != "" {
				args = append(args, "-test.benchtime", c.benchtime)
			}
			cmd := exec.CommandContext(ctx, bins[i], args...)
			cmd.Dir = filepath.Join(c.root, gb.pkg) // as go test runs it: testdata is relative
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w\n%s%s", gb.pkg, strings.Join(args, " "), err, out, stderr.Bytes())
			}
			parsed, err := parseBenchOutput(out)
			if err != nil {
				return nil, fmt.Errorf("benchmarks of %s: %w", gb.pkg, err)
			}
			for name, s := range parsed {
				if collected[name] == nil {
					collected[name] = &samples{}
				}
				collected[name].add(s)
			}
		}
	}
	all := benchmarks{}
	for name, s := range collected {
		all[name] = s.stat()
	}
	for _, name := range required {
		if _, err := all.get(name); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// requiredBenchmarks are the names the report reads; a renamed benchmark fails the run.
var requiredBenchmarks = []string{
	benchFullSeed, benchFull200, benchBareSeed, benchBare200, benchUncached,
	"BenchmarkAttest", "BenchmarkVerifyAttestation", benchNaiveSeed, benchNaive200,
}

// requiredPeerBenchmarks are the names the -peers report reads.
var requiredPeerBenchmarks = []string{benchFullSeed, benchFull200, benchNaiveSeed, benchNaive200}

const (
	benchFullSeed  = "BenchmarkVerifySeedInvoice/seed"
	benchFull200   = "BenchmarkVerifySeedInvoice/items=200"
	benchBareSeed  = "BenchmarkBareValidate/seed"
	benchBare200   = "BenchmarkBareValidate/items=200"
	benchUncached  = "BenchmarkVerifyUncachedSchema"
	benchNaiveSeed = "BenchmarkNaiveGo/seed"
	benchNaive200  = "BenchmarkNaiveGo/items=200"
)

var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseBenchOutput reads go test's benchmark lines: name, iterations, then value-unit pairs.
func parseBenchOutput(out []byte) (map[string]*samples, error) {
	res := map[string]*samples{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procsSuffix.ReplaceAllString(f[0], "")
		s := res[name]
		if s == nil {
			s = &samples{}
			res[name] = s
		}
		seen := 0
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %w", line, err)
			}
			switch f[i+1] {
			case "ns/op":
				s.ns = append(s.ns, v)
				seen++
			case "B/op":
				s.bytes = append(s.bytes, v)
				seen++
			case "allocs/op":
				s.allocs = append(s.allocs, v)
				seen++
			}
		}
		if seen != 3 {
			return nil, fmt.Errorf("benchmark line %q: want ns/op, B/op and allocs/op (-benchmem)", line)
		}
	}
	if len(res) == 0 {
		return nil, errors.New("no benchmark lines in the output")
	}
	return res, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchDocument is one request body that the Go benchmarks measure, written to a file so that the
// peers (Node, Python) work on the very same bytes.
type benchDocument struct {
	name, path string
	body       []byte
	size       int
}

// buildBenchDocuments builds the two request bodies of pkg/verify's benchmarks (benchInvoice in
// engine_test.go, rebuilt the same way: the seed request decoded into any, its line items replaced,
// encoded again). BenchmarkNaiveGo measures these bytes too.
func buildBenchDocuments(root string) ([]benchDocument, error) {
	raw, err := os.ReadFile(filepath.Join(root, "testdata", "seed", "invoice-draft.request.json"))
	if err != nil {
		return nil, err
	}
	var docs []benchDocument
	for _, n := range []int{0, 200} {
		var req map[string]any
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("seed request: %w", err)
		}
		name := "seed"
		if n > 0 {
			name = "items-200"
			items := make([]any, n)
			for i := range items {
				items[i] = map[string]any{"sku": "SKU-" + strings.Repeat("9", i%7+1), "qty": i%5 + 1, "line_total": 10.25}
			}
			out := req["submitted_output"].(map[string]any)
			out["line_items"] = items
			out["total"] = 10.25 * float64(n)
		}
		body, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		docs = append(docs, benchDocument{name: name, body: body, size: len(body)})
	}
	return docs, nil
}

// goBenchName is the sub-benchmark name the Go benchmarks give a document (itemsName in
// pkg/verify): "seed", "items=200".
func goBenchName(doc string) string { return strings.Replace(doc, "items-", "items=", 1) }

// writeBenchDocuments builds the request bodies and writes each to a file in c.tmp.
func writeBenchDocuments(c config) ([]benchDocument, error) {
	docs, err := buildBenchDocuments(c.root)
	if err != nil {
		return nil, err
	}
	for i := range docs {
		docs[i].path = filepath.Join(c.tmp, docs[i].name+".request.json")
		if err := os.WriteFile(docs[i].path, docs[i].body, 0o644); err != nil {
			return nil, err
		}
	}
	return docs, nil
}
