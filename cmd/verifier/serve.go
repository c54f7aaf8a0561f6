package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/app/embedded"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"github.com/agent-output-verifier/verifier/pkg/telemetry"
	"github.com/agent-output-verifier/verifier/pkg/telemetry/prom"
	"github.com/agent-output-verifier/verifier/pkg/verify"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Timeouts of the local server beyond the request's own. A request may run for
// service.LongestRequest (a paid one waits for the facilitator twice), so neither the write
// timeout, which counts from the request's headers, nor the shutdown grace may be shorter: a
// settlement cut off is a payment charged without an answer.
const (
	writeTimeout  = service.LongestRequest + 10*time.Second
	shutdownGrace = service.LongestRequest + 5*time.Second
)

// maxHeaderBytes bounds a request's header section: a payment header is the largest a request
// needs, and the rest is room for ordinary headers.
const maxHeaderBytes = x402.MaxHeaderBytes + 16<<10

// historyWriters is how many history writes may be in flight at once. The embedded store lets
// history writes wait up to 100 ms for company and commits them together, so a writer may wait that
// long plus a commit for each record, and the writers in flight must outnumber the verifications
// the server answers in that time. When they still fall behind, the queue fills and requests
// record for themselves (backpressure).
const historyWriters = 1024

// gcPercent is the garbage collector's GOGC for the local server unless the operator sets GOGC.
// The live heap is small (compiled schemas and connections) while every verification allocates,
// so Go's default of 100 collects several times a second under load and the collector takes a
// large share of the server's CPU in profiles; 400 collects a quarter as often, for a heap up to
// five times what is live.
const gcPercent = 400

// memoryLimit is the collector's soft memory limit for the local server unless the operator sets
// GOMEMLIMIT. At gcPercent the heap may grow to five times what is live before a collection, and
// what is live includes a schema cache of up to verify.SchemaCacheBytes: without a limit, a stream
// of distinct large schemas took the server's resident memory to several times the cache's bound.
// With it the collector runs as often as it must near the limit, which leaves room for the cache, a
// full set of concurrent verifications and the collector's own slack
// (TestServeMemoryUnderLargeSchemas).
const memoryLimit = 4 * verify.SchemaCacheBytes

const serveSynopsis = `  verifier serve [--addr 127.0.0.1:8080] [--data DIR] [--metrics-addr ADDRESS]
Serves every route on one machine with the embedded store; configured by the environment
(docs/configuration.md). On first run it creates a signing key in the data directory.
GET /metrics (Prometheus) is served on --addr when it is a loopback address, else only on
--metrics-addr.`

func runServe(args []string, stdout, stderr io.Writer) (code int) {
	c := newCommand("serve", serveSynopsis)
	addr := c.String("addr", "127.0.0.1:8080", "listen `ADDRESS`")
	data := c.String("data", "", "data `DIR`ectory (default $VERIFIER_DATA_DIR or .data)")
	metricsAddr := c.String("metrics-addr", "", "serve GET /metrics on its own listen `ADDRESS` (default: on --addr when that is loopback)")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if c.NArg() != 0 {
		return c.misuse(stderr, "unexpected argument %q", c.Arg(0))
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "verifier serve: listen: %v\n", err)
		return exitError
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); os.Getenv("VERIFIER_BASE_URL") == "" && net.ParseIP(host).IsUnspecified() {
		ln.Close()
		fmt.Fprintf(stderr, "verifier serve: listening on every address (%s): set VERIFIER_BASE_URL to the URL clients use, which receipts name\n", *addr)
		return exitError
	}
	getenv := func(name string) string {
		switch {
		case name == "VERIFIER_DATA_DIR" && *data != "":
			return *data
		case name == "VERIFIER_BASE_URL" && os.Getenv(name) == "":
			// The local server names its own address in receipts unless told otherwise.
			return "http://" + ln.Addr().String()
		}
		return os.Getenv(name)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "verifier serve: %v\n", err)
		return exitError
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	aws, err := app.NewAWS(context.Background())
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "verifier serve: %v\n", err)
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, closeStore, err := app.Build(ctx, cfg, app.Options{CreateDevKey: true, Engine: engine.New, Log: log, KeySource: aws.KeySource, ReadSecret: aws.ReadSecret,
		OpenStore: embedded.Opener{Other: aws.OpenStore, BackgroundHistory: true}.Open})
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "verifier serve: %v\n", err)
		return exitError
	}
	defer func() {
		// After the server and the history writers stopped: the allowance counts are written
		// back, and a failure to do so is the exit status's business.
		if err := closeStore(); err != nil {
			fmt.Fprintf(stderr, "verifier serve: %v\n", err)
			code = exitError
		}
	}()
	// The receipt log's sequencer stops after the history writers (defers run last first), so
	// that its last step sequences the last answers recorded.
	stopSequencer, err := svc.StartSequencer(ctx, service.SequencerInterval)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "verifier serve: receipt log: %v\n", err)
		return exitError
	}
	defer stopSequencer()
	stopRecording := svc.StartRecording(historyWriters)
	defer stopRecording() // after the server stops: the queued history writes land before the store closes

	// Telemetry is written once, by the router, from the outcomes; the metrics are exported on
	// the loopback address alone unless --metrics-addr says where (SPEC §17).
	metrics := telemetry.NewMetrics()
	observe := func(rt *edge.Router) {
		rt.SetObserver(telemetry.NewObserver(log, metrics, nil))
		if *metricsAddr == "" && isLoopback(ln.Addr()) {
			rt.Handle(http.MethodGet, metricsPath, prom.Handler(metrics).ServeHTTP)
		}
	}
	if *metricsAddr != "" {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "verifier serve: listen for metrics: %v\n", err)
			return exitError
		}
		mux := http.NewServeMux()
		mux.Handle("GET "+metricsPath, prom.Handler(metrics))
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go msrv.Serve(mln)
		defer msrv.Close()
		fmt.Fprintf(stdout, "metrics on http://%s%s\n", mln.Addr(), metricsPath)
	}
	srv := &http.Server{
		Handler:           httpapi.Handler(svc, observe, mcpserver.New(svc).Mount, discovery.New(svc).Mount),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: writeTimeout, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: maxHeaderBytes,
	}
	fmt.Fprintf(stdout, "serving %s on http://%s (key %s, store %s)\n", cfg.BaseURL, ln.Addr(), svc.Keys().Current.Version, cfg.Store)
	errc := make(chan error, 1)
	// The server's own refusals (headers over the limit, a request it cannot parse) are answered
	// in the error envelope, as every other answer is.
	go func() { errc <- srv.Serve(httpapi.EnvelopeListener(ln, maxHeaderBytes)) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "verifier serve: %v\n", err)
			return exitError
		}
	case <-ctx.Done():
		stop() // a second signal ends the process at once
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			fmt.Fprintf(stderr, "verifier serve: shutdown: %v\n", err)
			return exitError
		}
	}
	return exitOK
}

// metricsPath is where the Prometheus exposition is served.
const metricsPath = "/metrics"

// isLoopback reports whether a listener is bound to a loopback address only.
func isLoopback(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}
