// Package telemetry is what the service tells its operator (SPEC §17), written once, from the
// service's outcomes: one structured log line per request, counters and a latency histogram by
// route and outcome, the amount settled by network, and the allowance store's and facilitator's
// errors. It links no metrics library, so the Lambda functions stay lean.
package telemetry

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// Outcome is what became of a request, in SPEC §17's five words.
type Outcome uint8

// The outcomes. A request that is neither a verification nor a score (a discovery document,
// /health) is free when answered, invalid when refused with a 4xx and an error with a 5xx.
const (
	Free           Outcome = iota // answered without a payment (the free allowance, free documents)
	Paid                          // answered and settled
	RefusedPayment                // payment required, or a payment refused; nothing delivered
	Invalid                       // refused with a 4xx: nothing consumed or charged
	Error                         // refused with a 5xx
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"free", "paid", "refused_payment", "invalid", "error"}

// String is the outcome's name in logs and metrics.
func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "error"
}

// Transport is how a request came: REST or MCP.
type Transport uint8

// The transports.
const (
	REST Transport = iota
	MCP
)

// String is the transport's name in logs.
func (t Transport) String() string {
	if t == MCP {
		return "mcp"
	}
	return "rest"
}

// Event is one request as the operator sees it. Every field is the service's own (a route
// template, a code, an id it made): nothing the caller wrote, no address, key or payment.
type Event struct {
	RequestID      string
	Method         string // an HTTP method name, or "(other)"
	Route          string // the route template, or "/mcp <tool>" for a tool call
	Transport      Transport
	Status         int
	Outcome        Outcome
	Code           apperr.Code // the §7 or payment code, empty when answered
	VerificationID string
	Result         string // pass or fail, for a verification
	Network        string // where a payment settled (CAIP-2)
	Amount         string // settled, in the asset's atomic units
	Duration       time.Duration
	noted          bool
}

// Note records a service outcome: what the transport rendered is what the operator reads.
func (e *Event) Note(o service.Outcome) {
	e.noted = true
	e.VerificationID, e.Result = o.VerificationID, o.Result
	switch o.Kind {
	case service.Answered:
		e.Outcome, e.Code = Free, ""
		if o.Settlement != nil {
			e.Outcome, e.Network, e.Amount = Paid, o.Settlement.Network, o.SettledAmount
		}
	case service.PaymentRequired:
		e.Outcome, e.Code = RefusedPayment, o.Code
	default:
		e.NoteError(o.Err)
	}
}

// NoteError records a refusal with err: a free-only deployment's spent allowance is a refused
// payment like the 402 it stands for; other 4xx are invalid, 5xx errors.
func (e *Event) NoteError(err *apperr.Error) {
	if err == nil {
		return
	}
	e.noted = true
	e.Code = err.Code
	switch {
	case err.Code == apperr.FreeTrialExhausted || err.Status() == 402:
		e.Outcome = RefusedPayment
	case err.Status() >= 500:
		e.Outcome = Error
	default:
		e.Outcome = Invalid
	}
}

// finish settles the outcome of a request no outcome was noted for, from its status.
func (e *Event) finish() {
	if e.noted {
		return
	}
	switch {
	case e.Status == 402:
		e.Outcome = RefusedPayment
	case e.Status >= 500:
		e.Outcome = Error
	case e.Status >= 400:
		e.Outcome = Invalid
	default:
		e.Outcome = Free
	}
}

// Observer writes an Event everywhere it goes: the log line, the in-process Metrics and the
// EMF document. One per process; safe for concurrent use.
//
// The HTTP edge (pkg/edge) fills one Event per request from the outcome a transport rendered and
// hands it to the Observer, which writes the log line, adds to the Metrics the local server
// exports (pkg/telemetry/prom, GET /metrics) and, on Lambda, writes a CloudWatch Embedded Metric
// Format document.
type Observer struct {
	log     *slog.Logger
	metrics *Metrics
	emf     *EMF
}

// NewObserver writes request lines to log (required), adds to metrics (nil: none) and writes EMF
// documents to emf (nil: none).
func NewObserver(log *slog.Logger, metrics *Metrics, emf *EMF) *Observer {
	return &Observer{log: log, metrics: metrics, emf: emf}
}

// Metrics is the observer's in-process metrics, nil when it keeps none.
func (o *Observer) Metrics() *Metrics { return o.metrics }

// Observe finishes e and writes it: the log line (SPEC §17's fields, nothing else), the metrics
// and the EMF document.
func (o *Observer) Observe(e *Event) {
	e.finish()
	o.log.LogAttrs(context.Background(), slog.LevelInfo, "request",
		slog.String("request_id", e.RequestID),
		slog.String("transport", e.Transport.String()),
		slog.String("method", e.Method),
		slog.String("route", e.Route),
		slog.Int("status", e.Status),
		slog.String("outcome", e.Outcome.String()),
		slog.String("code", string(e.Code)),
		slog.String("verification_id", e.VerificationID),
		slog.String("result", e.Result),
		slog.Float64("duration_ms", float64(e.Duration.Microseconds())/1000),
	)
	if o.metrics != nil {
		o.metrics.Add(e)
	}
	if o.emf != nil {
		o.emf.Write(e)
	}
}

// DefaultNamespace is the CloudWatch namespace of the EMF documents when
// VERIFIER_METRICS_NAMESPACE names none.
const DefaultNamespace = "AgentOutputVerifier"

// Metric names, the same in the Prometheus exposition and the EMF documents.
const (
	MetricRequests           = "verifier_requests_total"
	MetricDuration           = "verifier_request_duration_seconds"
	MetricSettled            = "verifier_settled_atomic_units_total"
	MetricStoreErrors        = "verifier_store_errors_total"
	MetricFacilitatorErrors  = "verifier_facilitator_errors_total"
	MetricSettlementFailures = "verifier_settlement_failures_total"
)

// EMF writes one CloudWatch Embedded Metric Format document per request, as a line: Lambda's
// log stream is where CloudWatch extracts the metrics from, with no SDK and no API call.
type EMF struct {
	mu        sync.Mutex
	w         io.Writer
	namespace string
	now       func() time.Time
	buf       []byte
}

// NewEMF writes documents under namespace (DefaultNamespace when empty) to w, stamped by now.
func NewEMF(w io.Writer, namespace string, now func() time.Time) *EMF {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return &EMF{w: w, namespace: namespace, now: now}
}

// Write writes e's document: the request count, latency and error counts under the dimensions
// route and outcome and, through the empty dimension set, as service-wide totals (the alarms of
// the SAM template watch those: a CloudWatch alarm cannot add up a metric's dimension values),
// and for a paid request the amount settled under the dimension network.
// The request id and verification id are properties (searchable, not dimensions).
func (m *EMF) Write(e *Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buf[:0]
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, m.now().UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = strconv.AppendQuote(b, m.namespace)
	b = append(b, `,"Dimensions":[["route","outcome"],[]],"Metrics":[{"Name":"`+MetricRequests+`","Unit":"Count"},{"Name":"`+
		MetricDuration+`","Unit":"Seconds"},{"Name":"`+MetricStoreErrors+`","Unit":"Count"},{"Name":"`+
		MetricFacilitatorErrors+`","Unit":"Count"},{"Name":"`+MetricSettlementFailures+`","Unit":"Count"}]}`...)
	amount, paid := settled(e)
	if paid {
		b = append(b, `,{"Namespace":`...)
		b = strconv.AppendQuote(b, m.namespace)
		b = append(b, `,"Dimensions":[["network"]],"Metrics":[{"Name":"`+MetricSettled+`","Unit":"Count"}]}`...)
	}
	b = append(b, `]},"route":`...)
	b = strconv.AppendQuote(b, e.Route)
	b = append(b, `,"outcome":"`...)
	b = append(b, e.Outcome.String()...)
	b = append(b, `","request_id":`...)
	b = strconv.AppendQuote(b, e.RequestID)
	if e.VerificationID != "" {
		b = append(b, `,"verification_id":`...)
		b = strconv.AppendQuote(b, e.VerificationID)
	}
	b = append(b, `,"`+MetricRequests+`":1,"`+MetricDuration+`":`...)
	b = strconv.AppendFloat(b, e.Duration.Seconds(), 'f', -1, 64)
	store, facilitator, settlement := errorCounts(e.Code)
	b = append(b, `,"`+MetricStoreErrors+`":`...)
	b = strconv.AppendUint(b, store, 10)
	b = append(b, `,"`+MetricFacilitatorErrors+`":`...)
	b = strconv.AppendUint(b, facilitator, 10)
	b = append(b, `,"`+MetricSettlementFailures+`":`...)
	b = strconv.AppendUint(b, settlement, 10)
	if paid {
		b = append(b, `,"network":`...)
		b = strconv.AppendQuote(b, e.Network)
		b = append(b, `,"`+MetricSettled+`":`...)
		b = strconv.AppendUint(b, amount, 10)
	}
	b = append(b, "}\n"...)
	m.buf = b
	m.w.Write(b)
}

// settled is the amount a paid request settled, in atomic units.
func settled(e *Event) (uint64, bool) {
	if e.Outcome != Paid || e.Network == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(e.Amount, 10, 64)
	return n, err == nil
}

// errorCounts says which of the operator's error counters code adds to: the store unavailable
// (the allowance or payment reservations, or the reputation reads), the facilitator unavailable,
// and a settlement the facilitator refused.
func errorCounts(code apperr.Code) (store, facilitator, settlement uint64) {
	switch code {
	case apperr.Unavailable:
		return 1, 0, 0
	case apperr.FacilitatorDown:
		return 0, 1, 0
	case apperr.PaymentSettleFail:
		return 0, 0, 1
	}
	return 0, 0, 0
}
