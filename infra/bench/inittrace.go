package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
)

// initTrace is a binary's package initialisation as the Go runtime reports it
// (GODEBUG=inittrace=1), over several runs.
type initTrace struct {
	// total is each run's sum over all packages.
	total []time.Duration
	// pkgs is each package's time, one entry per run.
	pkgs map[string][]time.Duration
}

// initLine is one line of GODEBUG=inittrace=1: "init <package> @<start> ms, <clock> ms clock,
// <bytes> bytes, <allocs> allocs".
var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock, [0-9]+ bytes, [0-9]+ allocs$`)

// parseInitTrace reads one run's trace into t; a run without a single init line is an error.
func (t *initTrace) parseInitTrace(out []byte) error {
	var sum time.Duration
	seen := 0
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		m := initLine.FindSubmatch(s.Bytes())
		if m == nil {
			continue
		}
		ms, err := strconv.ParseFloat(string(m[2]), 64)
		if err != nil {
			return fmt.Errorf("inittrace line %q: %w", s.Bytes(), err)
		}
		d := time.Duration(ms * float64(time.Millisecond))
		if t.pkgs == nil {
			t.pkgs = map[string][]time.Duration{}
		}
		t.pkgs[string(m[1])] = append(t.pkgs[string(m[1])], d)
		sum += d
		seen++
	}
	if seen == 0 {
		return fmt.Errorf("no inittrace lines in the output:\n%.500s", out)
	}
	t.total = append(t.total, sum)
	return nil
}

// largest are the n packages with the largest median initialisation, largest first.
func (t initTrace) largest(n int) []string {
	names := make([]string, 0, len(t.pkgs))
	for name := range t.pkgs {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(medianDuration(t.pkgs[b]), medianDuration(t.pkgs[a])); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return names[:min(n, len(names))]
}

// traceInit runs bin runs times outside the emulator with GODEBUG=inittrace=1 and the environment
// of its first invokes (vars) but no runtime API: the process initialises its packages, builds the
// service and exits, finding no runtime to serve, which is all the trace needs. The timed first
// invokes run without the trace, whose lines would add to what they measure. Building the service
// makes no call to the store, so the runs may share vars' table.
func traceInit(ctx context.Context, bin string, vars map[string]string, runs int) (initTrace, error) {
	var t initTrace
	for range runs {
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = append(lambdatest.Env(vars), "GODEBUG=inittrace=1")
		// The exit status is the runtime API's absence; the trace is on stderr either way.
		out, _ := cmd.CombinedOutput()
		if err := t.parseInitTrace(out); err != nil {
			return initTrace{}, fmt.Errorf("%s: %w", filepath.Base(filepath.Dir(bin)), err)
		}
	}
	return t, nil
}
