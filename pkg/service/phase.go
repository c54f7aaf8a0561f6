package service

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// Verification is a finished check: the signed response and what the history records of it.
type Verification struct {
	Checked
	VerifiedAt time.Time
}

// Job is a request that passed validation and whose schema is compiled: from here on the caller
// can be charged.
type Job struct {
	check Checkable
}

// withDeadline runs f within the service's per-request deadline; a caller past the deadline gets a
// retryable 503. f gets a context that ends then, so that the checks stop (Request.StopWhen)
// instead of running on; compiling a schema cannot stop, and is bounded by the request limits.
func (s *Service) withDeadline(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.d.Deadline)
	defer cancel()
	deadlineErr := func() error {
		e := apperr.New(apperr.DeadlineExceeded, "The verification did not finish within its deadline. Nothing was charged; try again or send a smaller request.")
		e.RetryAfter = 1
		return e
	}
	// A phase waits for a slot within the deadline, and gives it back when it ends, which for a
	// compilation that cannot stop may be after its caller has been answered.
	select {
	case s.phases.slots <- struct{}{}:
	case <-ctx.Done():
		return deadlineErr()
	}
	done := make(chan error, 1)
	s.phases.run(func() {
		defer func() { <-s.phases.slots }()
		// The phase runs on a worker goroutine, outside the router's recovery: a panic here
		// would end the process with every request in it.
		defer func() {
			if p := recover(); p != nil {
				s.d.Log.Error("panic", "phase", "verification", "panic", slog.AnyValue(p).String())
				done <- ErrPanic
			}
		}()
		done <- f(ctx)
	})
	select {
	case err := <-done:
		if errors.Is(err, ErrStopped) {
			return deadlineErr() // the checks stopped for the deadline: no verdict
		}
		return err
	case <-ctx.Done():
		return deadlineErr()
	}
}

// maxPhases is how many verification phases (decoding and compiling, checking and signing) of
// one service run at once; the others wait for a slot, within their deadline. The phases use the processors
// alone, so more at once than a few per processor only adds their memory: each holds its
// request's trees, compiled schema and findings, several MB for a hostile body, and every
// connection the server accepts could otherwise hold one.
var maxPhases = 4 * runtime.GOMAXPROCS(0)

// phaseWorkers is how many goroutines of one service stay ready to run the engine's phases for
// withDeadline.
// Each keeps the stack it has grown: a new goroutine per phase started small and copied its stack
// at every doubling on the way down the decoder and the schema walker, a cost every request paid
// under load. They are started as phases find none idle, not all at once: a Lambda function runs
// one phase at a time, and starting all of them would delay its first request. Past phaseWorkers, a phase gets a goroutine of its own. withDeadline runs at most
// maxPhases phases at once, so on up to 16 processors this bound is seldom the one that holds.
const phaseWorkers = 64

// phasePool is a service's phase workers and the slots that bound its running phases. Each
// service has its own (New builds it), so two services in one process never share a bound.
type phasePool struct {
	slots   chan struct{} // one token per running phase, maxPhases at most
	work    chan func()   // phases handed to idle workers
	started atomic.Int32  // workers started
}

func newPhasePool() *phasePool {
	return &phasePool{slots: make(chan struct{}, maxPhases), work: make(chan func())}
}

// run runs f on an idle phase worker, on a new one while there are fewer than phaseWorkers, or
// else on a goroutine of its own.
func (p *phasePool) run(f func()) {
	select {
	case p.work <- f:
		return
	default:
	}
	if p.started.Add(1) > phaseWorkers {
		p.started.Add(-1)
		go f()
		return
	}
	go func() {
		f()
		for f := range p.work {
			f()
		}
	}()
}

// decode validates a request body and compiles its schema within the deadline. Its errors are
// 422s (or 413s) that charge and consume nothing. With checkSchema, for a request the free
// allowance is to pay for, the same phase also validates the output against the schema
// (Checkable.CheckSchema), the one check that can refuse a sound request (schema_too_complex,
// rules_too_complex), so that such a request is refused before the allowance is consumed. A paid
// request does not need this: a refusal in finish releases its payment unsettled, and checking
// before the payment is verified would be work done for free.
func (s *Service) decode(ctx context.Context, body []byte, checkSchema bool) (*Job, error) {
	var job Job
	err := s.withDeadline(ctx, func(ctx context.Context) (err error) {
		if job.check, err = s.d.Engine.Decode(body); err != nil || !checkSchema {
			return err
		}
		job.check.StopWhen(ctx.Done())
		return job.check.CheckSchema()
	})
	if err != nil {
		return nil, err
	}
	return &job, nil
}

// finish checks a decoded request and signs the report within the deadline. payment is what
// bought it (SPEC §16), signed with it; nil leaves the answer without a payment member.
func (s *Service) finish(ctx context.Context, job *Job, payment *receipt.Payment) (*Verification, error) {
	var v *Verification
	err := s.withDeadline(ctx, func(ctx context.Context) error {
		// The checks stop when the deadline answers for them, instead of running on.
		job.check.StopWhen(ctx.Done())
		now := s.d.Now()
		env := Envelope{
			VerificationID: s.d.NewID(), VerifiedAt: now, VerifierVersion: wire.Version,
			Verify: receipt.NewVerifyInfo(s.d.BaseURL, s.d.Keys.Current.Version), Payment: payment,
			HashReceipt: s.d.Receipts != nil,
		}
		checked, err := job.check.Finish(env, s.d.Keys.Current.WithContext(ctx))
		if err != nil {
			return err
		}
		v = &Verification{Checked: checked, VerifiedAt: now}
		return nil
	})
	if err != nil {
		// The phase may still be running (a missed deadline): what it writes is not read.
		return nil, err
	}
	return v, nil
}
