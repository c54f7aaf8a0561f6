package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Load bars of SPEC §14.
const (
	minThroughput = 5000.0 // verifications per second on 2 cores, keep-alive on loopback
	maxP99        = 20.0   // milliseconds, open loop at half the rate
	// specRate is "half that rate" read as SPEC §14 words it: half of minThroughput. The open
	// loop at half the measured maximum is the stricter reading when the maximum exceeds the bar.
	specRate = minThroughput / 2
)

// phase is one row of loadgen's table.
type phase struct {
	requests, errors   int
	throughput         float64 // per second
	p50, p90, p99, max float64 // milliseconds
}

// loadRun is one loadgen run: a closed-loop phase and an open-loop one at half its throughput.
type loadRun struct {
	mix   string
	conns int
	paid  string
	// tmpfs marks the diagnostic run whose store lives in memory (tmpfsDir): its syncs cost
	// nothing, so it shows what the server's processors allow, and it is never judged.
	tmpfs bool
	// atSpecRate marks the realistic run whose open loop ran at specRate rather than at half its
	// own closed loop's throughput.
	atSpecRate bool
	closed     phase
	open       phase
	rate       float64 // the open loop's target rate
	// busyClosed and busyOpen are the machine's CPU busy share in each phase, in percent, or -1
	// when loadgen could not read it.
	busyClosed, busyOpen float64
	// srvClosed and srvOpen are the server's CPU per request (µs), genClosed and genOpen the load
	// generator's, and paidP50 and paidP99 the paid requests' latency in the open loop (ms); -1
	// where loadgen did not print them.
	srvClosed, srvOpen, genClosed, genOpen, paidP50, paidP99 float64
	// logP50 and logP99 are the receipt log's integration delay (ms) loadgen's probe measured in
	// the open loop; -1 when it did not (a server without a log).
	logP50, logP99 float64
}

// runLoad runs loadgen's realistic mix at every connection count, then at the count that did best
// the realistic mix again with its open loop at specRate, and the seed invoice alone. loadgen is
// built once, so that no compilation competes with the load.
func runLoad(ctx context.Context, c config) ([]loadRun, error) {
	gen := filepath.Join(c.tmp, "loadgen")
	build := exec.CommandContext(ctx, "go", "build", "-o", gen, "./infra/loadgen")
	build.Dir = c.root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build infra/loadgen: %w\n%s", err, out)
	}
	var runs []loadRun
	best := 0
	for i, n := range c.conns {
		r, err := loadgen(ctx, c, gen, n, "realistic", "0.1")
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
		if r.closed.throughput > runs[best].closed.throughput {
			best = i
		}
	}
	r, err := loadgen(ctx, c, gen, c.conns[best], "realistic", "0.1", "-open-rate", strconv.FormatFloat(specRate, 'f', -1, 64))
	if err != nil {
		return nil, err
	}
	r.atSpecRate = true
	runs = append(runs, r)
	if r, err = loadgen(ctx, c, gen, c.conns[best], "seed", "0"); err != nil {
		return nil, err
	}
	runs = append(runs, r)
	if st, err := os.Stat(tmpfsDir); err == nil && st.IsDir() {
		r, err := loadgen(ctx, c, gen, c.conns[best], "realistic", "0.1", "-data-parent", tmpfsDir)
		if err != nil {
			return nil, err
		}
		r.tmpfs = true
		runs = append(runs, r)
	}
	return runs, nil
}

// tmpfsDir is a memory-backed directory for the diagnostic load run, where it exists.
const tmpfsDir = "/dev/shm"

func loadgen(ctx context.Context, c config, gen string, conns int, mix, paid string, extra ...string) (loadRun, error) {
	out := filepath.Join(c.tmp, loadFileName(mix, conns, extra))
	args := append([]string{"-bin", c.verifier, "-duration", c.duration.String(), "-conns", strconv.Itoa(conns),
		"-mix", mix, "-paid", paid}, extra...)
	progress("  loadgen %s", strings.Join(args, " "))
	args = append(args, "-out", out)
	cmd := exec.CommandContext(ctx, gen, args...)
	cmd.Dir = c.root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return loadRun{}, fmt.Errorf("loadgen %s: %w\n%s", strings.Join(args, " "), err, msg)
	}
	table, err := os.ReadFile(out)
	if err != nil {
		return loadRun{}, err
	}
	r, err := parseLoadTable(string(table))
	if err != nil {
		return loadRun{}, fmt.Errorf("loadgen report %s: %w\n%s", out, err, table)
	}
	r.mix, r.conns, r.paid = mix, conns, paid
	return r, nil
}

// loadFileName names the report file of one loadgen run after all its flags, as one file name.
func loadFileName(mix string, conns int, extra []string) string {
	flags := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' {
			return r
		}
		return '_'
	}, strings.Join(extra, " "))
	return fmt.Sprintf("load-%s-%d-%s.md", mix, conns, flags)
}

var (
	openRate = regexp.MustCompile(`\(([0-9.]+)/s\)`)
	cpuBusy  = regexp.MustCompile(`CPU busy[^:]*: ([0-9.]+)% in the closed\s+loop, ([0-9.]+)% in the open loop`)
	srvCPU   = regexp.MustCompile(`Server process CPU[^:]*: ([0-9.]+) µs per\s+request in the closed\s+loop[^,]*, ([0-9.]+) µs per\s+request in the open\s+loop`)
	genCPU   = regexp.MustCompile(`Load generator CPU[^:]*: ([0-9.]+) µs per\s+request in the closed\s+loop, ([0-9.]+) µs in the open`)
	logDelay = regexp.MustCompile(`Receipt log integration delay[^:]*: p50 ([0-9.]+) ms, p90 [0-9.]+ ms, p99 ([0-9.]+) ms`)
	paidLat  = regexp.MustCompile(`Paid requests alone[^:]*: p50 [0-9.]+ ms, p99 [0-9.]+ ms in the closed\s+loop; p50 ([0-9.]+) ms, p99 ([0-9.]+) ms in the\s+open\s+loop`)
)

// pair reads the two numbers re captures in md into a and b, or leaves them at -1.
func pair(re *regexp.Regexp, md string, a, b *float64) {
	*a, *b = -1, -1
	if m := re.FindStringSubmatch(md); m != nil {
		*a, _ = strconv.ParseFloat(m[1], 64)
		*b, _ = strconv.ParseFloat(m[2], 64)
	}
}

// parseLoadTable reads the two rows of loadgen's Markdown table.
func parseLoadTable(md string) (loadRun, error) {
	var r loadRun
	pair(cpuBusy, md, &r.busyClosed, &r.busyOpen)
	pair(srvCPU, md, &r.srvClosed, &r.srvOpen)
	pair(genCPU, md, &r.genClosed, &r.genOpen)
	pair(paidLat, md, &r.paidP50, &r.paidP99)
	pair(logDelay, md, &r.logP50, &r.logP99)
	var closed, open bool
	for _, line := range strings.Split(md, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 8 {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		p, err := parsePhase(cells[1:])
		switch {
		case strings.HasPrefix(cells[0], "closed loop"):
			r.closed, closed = p, true
		case strings.HasPrefix(cells[0], "open loop"):
			m := openRate.FindStringSubmatch(cells[0])
			if m == nil {
				return r, fmt.Errorf("no rate in %q", cells[0])
			}
			r.rate, _ = strconv.ParseFloat(m[1], 64)
			r.open, open = p, true
		default:
			continue
		}
		if err != nil {
			return r, fmt.Errorf("row %q: %w", line, err)
		}
	}
	if !closed || !open {
		return r, fmt.Errorf("want a closed-loop and an open-loop row")
	}
	return r, nil
}

func parsePhase(c []string) (phase, error) {
	var p phase
	var err error
	ints := []*int{&p.requests, &p.errors}
	for i, dst := range ints {
		if *dst, err = strconv.Atoi(c[i]); err != nil {
			return p, err
		}
	}
	if p.throughput, err = strconv.ParseFloat(strings.TrimSuffix(c[2], "/s"), 64); err != nil {
		return p, err
	}
	for i, dst := range []*float64{&p.p50, &p.p90, &p.p99, &p.max} {
		if *dst, err = strconv.ParseFloat(strings.TrimSuffix(c[3+i], " ms"), 64); err != nil {
			return p, err
		}
	}
	return p, nil
}
