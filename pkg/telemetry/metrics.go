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
	for _, rc := range m.Routes() {
		if rc.Route == name {
			return rc
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.Routes()
	for _, rc := range list {
		if rc.Route == name {
			return rc
		}
	}
	if len(list) >= maxSeries {
		name = "(other)"
		for _, rc := range list {
			if rc.Route == name {
				return rc
			}
		}
	}
	rc := &RouteCounts{Route: name}
	next := append(append(make([]*RouteCounts, 0, len(list)+1), list...), rc)
	m.routes.Store(&next)
	return rc
}

func (m *Metrics) network(name string) *NetworkAmount {
	for _, n := range m.Networks() {
		if n.Network == name {
			return n
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.Networks()
	for _, n := range list {
		if n.Network == name {
			return n
		}
	}
	if len(list) >= maxSeries {
		name = "(other)"
		for _, n := range list {
			if n.Network == name {
				return n
			}
		}
	}
	n := &NetworkAmount{Network: name}
	next := append(append(make([]*NetworkAmount, 0, len(list)+1), list...), n)
	m.networks.Store(&next)
	return n
}

// Outcomes lists every outcome, in order, for exporters.
func Outcomes() []Outcome {
	out := make([]Outcome, numOutcomes)
	for i := range out {
		out[i] = Outcome(i)
	}
	return out
}
