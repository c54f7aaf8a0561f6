package main

import (
	"os"
	"strings"
	"testing"
)

// A report loadgen wrote is read whole: both phases and every figure the report shows.
func TestParseLoadTable(t *testing.T) {
	md, err := os.ReadFile("testdata/loadgen-report.md")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseLoadTable(string(md))
	if err != nil {
		t.Fatal(err)
	}
	if r.closed.requests != 8734 || r.closed.throughput != 4347 || r.closed.p99 != 22.09 {
		t.Errorf("closed loop %+v", r.closed)
	}
	if r.rate != 2174 || r.open.requests != 4348 || r.open.p99 != 12.17 || r.open.max != 30.70 {
		t.Errorf("open loop %+v at %v/s", r.open, r.rate)
	}
	got := []float64{r.busyClosed, r.busyOpen, r.srvClosed, r.srvOpen, r.genClosed, r.genOpen, r.paidP50, r.paidP99, r.logP50, r.logP99}
	want := []float64{84, 66, 291, 442, 85, 159, 7.00, 25.81, 132.13, 752.12}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("figures %v, want %v", got, want)
			break
		}
	}

	// Lines loadgen could not print (no /proc) are missing, not wrong.
	r, err = parseLoadTable(string(md[:len(md)/2]) + "\n| open loop at half that rate (10/s) | 1 | 0 | 10/s | 1 ms | 1 ms | 1 ms | 1 ms |\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.srvClosed != -1 || r.genOpen != -1 || r.paidP99 != -1 || r.logP99 != -1 {
		t.Errorf("absent figures read as %v, %v, %v; want -1", r.srvClosed, r.genOpen, r.paidP99)
	}
}

// The summary judges the p99 bar on the run at SPEC's rate, and the throughput bar on the best of
// the connection counts, which neither the SPEC-rate run nor the diagnostic one can be, however
// fast their closed loops were.
func TestJudgedLoadRuns(t *testing.T) {
	runs := []loadRun{
		{mix: "realistic", conns: 32, closed: phase{throughput: 5100}},
		{mix: "realistic", conns: 128, closed: phase{throughput: 6000}},
		{mix: "realistic", conns: 256, closed: phase{throughput: 5900}},
		{mix: "realistic", conns: 128, atSpecRate: true, rate: specRate, closed: phase{throughput: 7000}},
		{mix: "seed", conns: 128, closed: phase{throughput: 9000}},
		{mix: "realistic", conns: 128, tmpfs: true, closed: phase{throughput: 8000}},
	}
	best, spec := judgedLoadRuns(runs)
	if best != &runs[1] {
		t.Errorf("best run %+v, want the 128-connection realistic run", best)
	}
	if spec != &runs[3] {
		t.Errorf("SPEC-rate run %+v, want the one marked", spec)
	}
	if got := loadLabel(runs[3]); got != "realistic, open loop at SPEC's rate" {
		t.Errorf("label %q", got)
	}
	if specRate != 2500 {
		t.Errorf("specRate %v, want half of SPEC's 5,000/s", specRate)
	}
	if best, spec := judgedLoadRuns(runs[4:5]); best != nil || spec != nil {
		t.Errorf("a seed run alone was judged: %v, %v", best, spec)
	}
}

// Every load run writes a file of its own, in the run's directory.
func TestLoadFileName(t *testing.T) {
	names := map[string]bool{}
	for _, extra := range [][]string{nil, {"-open-rate", "2500"}, {"-data-parent", tmpfsDir}} {
		n := loadFileName("realistic", 128, extra)
		if strings.ContainsAny(n, "/\\ ") || names[n] {
			t.Errorf("file name %q for %v: a path, or taken", n, extra)
		}
		names[n] = true
	}
}
