package main

import (
	"os"
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
	got := []float64{r.busyClosed, r.busyOpen, r.srvClosed, r.srvOpen, r.genClosed, r.genOpen, r.paidP50, r.paidP99}
	want := []float64{84, 66, 291, 442, 85, 159, 7.00, 25.81}
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
	if r.srvClosed != -1 || r.genOpen != -1 || r.paidP99 != -1 {
		t.Errorf("absent figures read as %v, %v, %v; want -1", r.srvClosed, r.genOpen, r.paidP99)
	}
}
