package telemetry

import (
	"fmt"
	"sync"
	"testing"
)

// Routes and networks are counted apart up to maxSeries names, past which new names share the
// "(other)" counters; concurrent first uses of one name get the same counters.
func TestSeriesBoundedAndShared(t *testing.T) {
	m := NewMetrics()
	var wg sync.WaitGroup
	got := make([]*RouteCounts, 16)
	for i := range got {
		wg.Go(func() { got[i] = m.route("/verify/schema") })
	}
	wg.Wait()
	for _, rc := range got {
		if rc != got[0] {
			t.Fatal("concurrent first uses of one route got different counters")
		}
	}
	for i := range 2 * maxSeries {
		m.route(fmt.Sprintf("/r%d", i))
		m.network(fmt.Sprintf("eip155:%d", i))
	}
	if n := len(m.Routes()); n != maxSeries+1 {
		t.Errorf("%d routes kept, want %d and (other)", n, maxSeries)
	}
	if n := len(m.Networks()); n != maxSeries+1 {
		t.Errorf("%d networks kept, want %d and (other)", n, maxSeries)
	}
	if a, b := m.route("/another"), m.route("/yet-another"); a != b || a.Route != "(other)" {
		t.Errorf("past the bound: %q and %q, want one (other)", a.Route, b.Route)
	}
	if m.route("/verify/schema") != got[0] {
		t.Error("a route counted before the bound lost its counters")
	}
}
