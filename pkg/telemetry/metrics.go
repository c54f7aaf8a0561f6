package telemetry

import (
	"sync"
	"sync/atomic"
)

// LatencyBuckets are the upper bounds, in seconds, of the latency histogram: from a cached free
// verification (about a millisecond) to a paid one that waited on settlement (tens of seconds,
// service.LongestRequest).
var LatencyBuckets = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// maxSeries bounds the routes and networks Metrics keeps apart. Both are the service's own
// names (route templates, configured networks), so a few dozen; past the bound they are counted
// under "(other)", so that no input can grow the metrics without end.
const maxSeries = 64

// RouteCounts are one route's counters.
type RouteCounts struct {
	Route    string
	Requests [numOutcomes]atomic.Uint64
	// Buckets counts requests at or under each of LatencyBuckets (not cumulative; the last
	// cell is beyond the last bound); SumNanos is their total duration.
	Buckets  [len(LatencyBuckets) + 1]atomic.Uint64
	SumNanos atomic.Uint64
}

// NetworkAmount is the amount settled on one network, in the asset's atomic units.
type NetworkAmount struct {
	Network string
	Amount  atomic.Uint64
}

// Metrics are the process's counters, updated with atomic adds only: routes and networks are
// found by a scan of a short list of pre-resolved counters, never a map or an allocation per
// request. The local server exports them (pkg/telemetry/prom); a Lambda function writes EMF.
type Metrics struct {
	mu       sync.Mutex // guards appending to routes and networks
	routes   atomic.Pointer[[]*RouteCounts]
	networks atomic.Pointer[[]*NetworkAmount]

	StoreErrors, FacilitatorErrors, SettlementFailures atomic.Uint64
}

// NewMetrics starts empty counters.
func NewMetrics() *Metrics { return &Metrics{} }

// Add counts e.
func (m *Metrics) Add(e *Event) {
	rc := m.route(e.Route)
	rc.Requests[e.Outcome].Add(1)
	secs := e.Duration.Seconds()
	i := 0
	for i < len(LatencyBuckets) && secs > LatencyBuckets[i] {
		i++
	}
	rc.Buckets[i].Add(1)
	rc.SumNanos.Add(uint64(e.Duration.Nanoseconds()))
	store, facilitator, settlement := errorCounts(e.Code)
	if store != 0 {
		m.StoreErrors.Add(1)
	}
	if facilitator != 0 {
		m.FacilitatorErrors.Add(1)
	}
	if settlement != 0 {
		m.SettlementFailures.Add(1)
	}
	if amount, ok := settled(e); ok {
		m.network(e.Network).Amount.Add(amount)
	}
}

// Routes are the routes counted so far.
func (m *Metrics) Routes() []*RouteCounts {
	if p := m.routes.Load(); p != nil {
		return *p
	}
	return nil
}

// Networks are the networks settled on so far.
func (m *Metrics) Networks() []*NetworkAmount {
	if p := m.networks.Load(); p != nil {
		return *p
	}
	return nil
}

func (m *Metrics) route(name string) *RouteCounts {
	return series(&m.mu, &m.routes, name, func(rc *RouteCounts) string { return rc.Route },
		func(name string) *RouteCounts { return &RouteCounts{Route: name} })
}

func (m *Metrics) network(name string) *NetworkAmount {
	return series(&m.mu, &m.networks, name, func(n *NetworkAmount) string { return n.Network },
		func(name string) *NetworkAmount { return &NetworkAmount{Network: name} })
}

// series finds the counters named name in the list at p, or appends new ones under mu: readers
// scan the published list without a lock, and a writer publishes a copy with one more entry.
// Past maxSeries entries, new names share the counters named "(other)".
func series[T any](mu *sync.Mutex, p *atomic.Pointer[[]*T], name string, nameOf func(*T) string, newT func(string) *T) *T {
	find := func(list []*T, name string) *T {
		for _, c := range list {
			if nameOf(c) == name {
				return c
			}
		}
		return nil
	}
	load := func() []*T {
		if l := p.Load(); l != nil {
			return *l
		}
		return nil
	}
	if c := find(load(), name); c != nil {
		return c
	}
	mu.Lock()
	defer mu.Unlock()
	list := load()
	if c := find(list, name); c != nil {
		return c
	}
	if len(list) >= maxSeries {
		name = "(other)"
		if c := find(list, name); c != nil {
			return c
		}
	}
	c := newT(name)
	next := append(append(make([]*T, 0, len(list)+1), list...), c)
	p.Store(&next)
	return c
}

// Outcomes lists every outcome, in order, for exporters.
func Outcomes() []Outcome {
	out := make([]Outcome, numOutcomes)
	for i := range out {
		out[i] = Outcome(i)
	}
	return out
}
