// Package prom exports the process's telemetry.Metrics in the Prometheus text format, for the
// local server's GET /metrics. Only the local server imports it, so no Lambda function links
// the Prometheus client (internal/lambdatest checks it).
package prom

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agent-output-verifier/verifier/pkg/telemetry"
)

var (
	requestsDesc = prometheus.NewDesc(telemetry.MetricRequests,
		"Requests answered, by route template and outcome (free, paid, refused_payment, invalid, error).",
		[]string{"route", "outcome"}, nil)
	durationDesc = prometheus.NewDesc(telemetry.MetricDuration,
		"Time from a request's arrival to its answer, by route template.", []string{"route"}, nil)
	settledDesc = prometheus.NewDesc(telemetry.MetricSettled,
		"Amount settled, in the asset's atomic units (USDC: millionths of a dollar), by network.", []string{"network"}, nil)
	storeDesc = prometheus.NewDesc(telemetry.MetricStoreErrors,
		"Requests refused because the store (allowance, payment reservations, reputation) did not answer.", nil, nil)
	facilitatorDesc = prometheus.NewDesc(telemetry.MetricFacilitatorErrors,
		"Paid requests refused because the payment facilitator did not answer.", nil, nil)
	settlementDesc = prometheus.NewDesc(telemetry.MetricSettlementFailures,
		"Paid requests whose settlement the facilitator refused.", nil, nil)
)

// collector reads telemetry.Metrics at scrape time: the request path only adds to atomics.
type collector struct{ m *telemetry.Metrics }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{requestsDesc, durationDesc, settledDesc, storeDesc, facilitatorDesc, settlementDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, rc := range c.m.Routes() {
		for _, o := range telemetry.Outcomes() {
			ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(rc.Requests[o].Load()), rc.Route, o.String())
		}
		buckets := make(map[float64]uint64, len(telemetry.LatencyBuckets))
		var count uint64
		for i, bound := range telemetry.LatencyBuckets {
			count += rc.Buckets[i].Load()
			buckets[bound] = count
		}
		count += rc.Buckets[len(telemetry.LatencyBuckets)].Load()
		ch <- prometheus.MustNewConstHistogram(durationDesc, count, float64(rc.SumNanos.Load())/1e9, buckets, rc.Route)
	}
	for _, n := range c.m.Networks() {
		ch <- prometheus.MustNewConstMetric(settledDesc, prometheus.CounterValue, float64(n.Amount.Load()), n.Network)
	}
	ch <- prometheus.MustNewConstMetric(storeDesc, prometheus.CounterValue, float64(c.m.StoreErrors.Load()))
	ch <- prometheus.MustNewConstMetric(facilitatorDesc, prometheus.CounterValue, float64(c.m.FacilitatorErrors.Load()))
	ch <- prometheus.MustNewConstMetric(settlementDesc, prometheus.CounterValue, float64(c.m.SettlementFailures.Load()))
}

// Handler serves m (and the Go runtime's own metrics) in the Prometheus text format.
func Handler(m *telemetry.Metrics) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{m}, collectors.NewGoCollector())
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
