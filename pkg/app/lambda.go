package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/telemetry"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// Garbage collector settings of a function, each unless the environment sets its own.
const (
	// lambdaGCPercent is GOGC. A function's live heap is a few MB (compiled schemas, the
	// handlers) in a 512 MB sandbox, while Go's default of 100 starts the first collection at a
	// 4 MB heap, which the MCP function's cold start alone reaches: a collection in the middle of
	// the first invoke, and then one every few requests. At 400 the first comes at 16 MB, as for
	// the local server (cmd/verifier serve).
	lambdaGCPercent = 400
	// lambdaMemoryPercent is GOMEMLIMIT as a share of the function's memory
	// (AWS_LAMBDA_FUNCTION_MEMORY_SIZE): a live heap that does grow (a schema cache full of large
	// schemas) is then collected as often as it needs near the limit, instead of growing to five
	// times its size past the sandbox's memory. The rest is headroom for what the limit does not
	// count (the binary's pages, the kernel's buffers) and for the limit being a soft one.
	lambdaMemoryPercent = 80
)

// TuneGC sets a function's garbage collector (lambdaGCPercent, lambdaMemoryPercent), each
// setting unless the environment sets its own (GOGC, GOMEMLIMIT). It changes the whole process,
// so a function's main calls it, first.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(lambdaGCPercent)
	}
	if mb, err := strconv.ParseInt(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), 10, 64); err == nil && mb > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(mb << 20 / 100 * lambdaMemoryPercent)
	}
}

// ServeLambda serves a function's routes: it reads the configuration, builds the service with
// the AWS key sources and store, and serves the router routes makes of it (HTTP API payload
// v2). A function that verifies passes its engine (engine.New of pkg/service/engine); the
// others pass nil, and link neither the engine nor its JSON Schema library. It returns only an
// error of start-up, for main to report and exit on: once serving, the Lambda runtime owns the
// process, and lambda.Start does not return.
func ServeLambda(routes func(*service.Service) *edge.Router, engine func(wire.Limits) service.Engine) error {
	svc, err := buildLambda(engine)
	if err != nil {
		return err
	}
	rt := routes(svc)
	// Telemetry on Lambda: the request line, and an EMF document CloudWatch turns into the
	// metrics (SPEC §17), both to the function's log stream.
	rt.SetObserver(telemetry.NewObserver(svc.Log(), nil,
		telemetry.NewEMF(os.Stdout, os.Getenv("VERIFIER_METRICS_NAMESPACE"), time.Now)))
	lambda.Start(EventHandler(svc, rt))
	return nil
}

// buildLambda reads a function's configuration and builds its service.
func buildLambda(engine func(wire.Limits) service.Engine) (*service.Service, error) {
	ctx := context.Background()
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return nil, err
	}
	if cfg.Store == "bolt" {
		// Before the key is looked for: a function left on the default store would otherwise
		// first fail on a key file it has no data directory for.
		return nil, noEmbeddedStore()
	}
	aws, err := NewAWS(ctx)
	if err != nil {
		return nil, err
	}
	svc, _, err := Build(ctx, cfg, Options{KeySource: aws.KeySource, ReadSecret: aws.ReadSecret, OpenStore: aws.OpenStore, Engine: engine})
	if err != nil {
		return nil, err
	}
	return svc, nil
}

// Timing of the log function's invocation (functions/log): a schedule invokes it every minute,
// and it sequences for at most sequencerBudget, a step every sequencerPause, so that one
// invocation ends before the next begins (with reserved concurrency 1 a late one would be
// throttled, not run beside it) and a leaf waits at most about sequencerPause when the function
// runs. sequencerMargin is left of the function's own timeout for the last step to end.
const (
	sequencerBudget = 50 * time.Second
	sequencerPause  = time.Second
	sequencerMargin = 5 * time.Second
)

// SequencerResult is what one invocation of the log function reports.
type SequencerResult struct {
	Sequenced int   `json:"sequenced"`
	TreeSize  int64 `json:"tree_size"`
}

// ServeLogSequencer serves functions/log: it builds the service (no engine, no routes) and, on
// each scheduled invocation, runs the receipt log's sequencer (SPEC §15). As ServeLambda, it
// returns only an error of start-up.
func ServeLogSequencer() error {
	svc, err := buildLambda(nil)
	if err != nil {
		return err
	}
	if !svc.LogEnabled() {
		return errors.New("configuration: the log function needs a store that keeps the receipt log and VERIFIER_LOG_KEY")
	}
	if err := svc.CheckLogIdentity(context.Background()); err != nil {
		return fmt.Errorf("receipt log: %w", err)
	}
	lambda.Start(func(ctx context.Context, _ json.RawMessage) (SequencerResult, error) {
		return Sequence(ctx, svc, sequencerBudget)
	})
	return nil
}

// Sequence runs svc's sequencer for up to budget (less when ctx ends sooner, less
// sequencerMargin), a drain every sequencerPause, and reports what it added.
func Sequence(ctx context.Context, svc *service.Service, budget time.Duration) (SequencerResult, error) {
	end := time.Now().Add(budget)
	if d, ok := ctx.Deadline(); ok && d.Add(-sequencerMargin).Before(end) {
		end = d.Add(-sequencerMargin)
	}
	var res SequencerResult
	for {
		stepCtx, cancel := context.WithDeadline(ctx, end.Add(sequencerMargin/2))
		n, err := svc.Sequence(stepCtx)
		cancel()
		res.Sequenced += n
		if err != nil {
			return res, fmt.Errorf("sequence the receipt log: %w", err)
		}
		if time.Now().Add(sequencerPause).After(end) {
			break
		}
		select {
		case <-ctx.Done():
			return res, nil
		case <-time.After(sequencerPause):
		}
	}
	size, err := svc.LogTreeSize(ctx)
	if err != nil {
		return res, fmt.Errorf("read the receipt log's size: %w", err)
	}
	res.TreeSize = size
	return res, nil
}
