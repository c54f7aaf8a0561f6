package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/verify"
)

// VerifyPaths are the two names of the one verification route; they behave byte for byte alike.
var VerifyPaths = []string{"/verify/schema", "/verify/deliverable"}

// MountVerify adds the verify routes to rt.
func (s *Service) MountVerify(rt *Router) {
	for _, p := range VerifyPaths {
		rt.Handle(http.MethodPost, p, s.handleVerify)
	}
}

// ReadBody reads a request body of at most limit bytes, for every transport that takes one; a
// longer body is a 413 naming the limit. A body declared longer (Content-Length) is refused at
// once, before a byte of it is read: waiting for bytes that would be refused anyway held the
// connection until the server's read timeout.
func ReadBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, apperr.TooLarge(limit)
	}
	// A body of a declared length is read into one buffer of that size (and a byte to see the
	// end), instead of one grown by doubling from 512 bytes, which was a twentieth of everything
	// the local server allocated under load. The length is only the client's word, so it sizes
	// the first buffer up to maxPresized: past that the buffer grows with the bytes that arrive,
	// and a connection that states a megabyte and sends nothing holds no more than that.
	size := 512
	if r.ContentLength >= 0 && r.ContentLength <= limit {
		size = int(min(r.ContentLength+1, maxPresized))
	}
	body, err := readAll(io.LimitReader(r.Body, limit+1), size)
	if err != nil {
		return nil, apperr.Field("body", "could not be read", "Send the body again.")
	}
	if int64(len(body)) > limit {
		return nil, apperr.TooLarge(limit)
	}
	return body, nil
}

// maxPresized is the largest buffer a body's stated length makes ReadBody allocate before its
// bytes arrive: more than the local server's realistic requests (at most about 10 KB).
const maxPresized = 16 << 10

// readAll is io.ReadAll into a buffer of size bytes to begin with.
func readAll(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to read on into
		}
	}
}

// Verification is a finished check: the signed response and the report it was made from.
type Verification struct {
	Body       []byte
	Report     *verify.Report
	Req        *verify.Request
	VerifiedAt time.Time
}

// Job is a request that passed validation and whose schema is compiled: from here on the caller
// can be charged.
type Job struct {
	req *verify.Request
	sch *verify.Schema
}

// withDeadline runs f within the service's per-request deadline; a caller past the deadline gets a
// retryable 503. f gets a context that ends then, so that the checks stop (Request.StopWhen)
// instead of running on; compiling a schema cannot stop, and is bounded by the request limits.
func (s *Service) withDeadline(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.deadline())
	defer cancel()
	deadlineErr := func() error {
		e := apperr.New(apperr.DeadlineExceeded, "The verification did not finish within its deadline. Nothing was charged; try again or send a smaller request.")
		e.RetryAfter = 1
		return e
	}
	// A phase waits for a slot within the deadline, and gives it back when it ends, which for a
	// compilation that cannot stop may be after its caller has been answered.
	select {
	case phaseSlots <- struct{}{}:
	case <-ctx.Done():
		return deadlineErr()
	}
	done := make(chan error, 1)
	runPhase(func() {
		defer func() { <-phaseSlots }()
		// The phase runs on a worker goroutine, outside the router's recovery: a panic here
		// would end the process with every request in it.
		defer func() {
			if p := recover(); p != nil {
				s.log().Error("panic", "phase", "verification", "panic", slog.AnyValue(p).String())
				done <- errPanic
			}
		}()
		done <- f(ctx)
	})
	select {
	case err := <-done:
		if errors.Is(err, verify.ErrStopped) {
			return deadlineErr() // the checks stopped for the deadline: no verdict
		}
		return err
	case <-ctx.Done():
		return deadlineErr()
	}
}

// maxPhases is how many verification phases (decoding and compiling, checking and signing) run
// at once; the others wait for a slot, within their deadline. The phases use the processors
// alone, so more at once than a few per processor only adds their memory: each holds its
// request's trees, compiled schema and findings, several MB for a hostile body, and every
// connection the server accepts could otherwise hold one.
var maxPhases = 4 * runtime.GOMAXPROCS(0)

// phaseSlots holds one token per running phase.
var phaseSlots = make(chan struct{}, maxPhases)

// phaseWorkers is how many goroutines stay ready to run the engine's phases for withDeadline.
// Each keeps the stack it has grown: a new goroutine per phase started small and copied its stack
// at every doubling on the way down the decoder and the schema walker, about 5% of the local
// server's CPU under load. They are started as phases find none idle, not all at once: a Lambda
// function runs one phase at a time, and starting all of them cost its first request about a
// millisecond. Past phaseWorkers, a phase gets a goroutine of its own. withDeadline runs at most
// maxPhases phases at once, so on up to 16 processors this bound is seldom the one that holds.
const phaseWorkers = 64

var (
	phases       = make(chan func())
	phaseStarted atomic.Int32 // workers started
)

// runPhase runs f on an idle phase worker, on a new one while there are fewer than
// phaseWorkers, or else on a goroutine of its own.
func runPhase(f func()) {
	select {
	case phases <- f:
		return
	default:
	}
	if phaseStarted.Add(1) > phaseWorkers {
		phaseStarted.Add(-1)
		go f()
		return
	}
	go func() {
		f()
		for f := range phases {
			f()
		}
	}()
}

// Decode validates a request body and compiles its schema within the deadline. Its errors are
// 422s (or 413s) that charge and consume nothing.
func (s *Service) Decode(ctx context.Context, body []byte) (*Job, error) {
	return s.decode(ctx, body, false)
}

// DecodeFree is Decode for a request the free allowance is to pay for: in the same phase it also
// validates the output against the schema (verify.Engine.CheckSchema), the one check that can
// refuse a sound request (schema_too_complex), so that such a request is refused before the
// allowance is consumed. A paid request does not need this: a refusal in Finish releases its
// payment unsettled, and checking before the payment is verified would be work done for free.
func (s *Service) DecodeFree(ctx context.Context, body []byte) (*Job, error) {
	return s.decode(ctx, body, true)
}

func (s *Service) decode(ctx context.Context, body []byte, checkSchema bool) (*Job, error) {
	var job Job
	err := s.withDeadline(ctx, func(ctx context.Context) (err error) {
		if job.req, job.sch, err = s.Engine.Decode(body); err != nil || !checkSchema {
			return err
		}
		job.req.StopWhen(ctx.Done())
		return s.Engine.CheckSchema(job.req, job.sch)
	})
	if err != nil {
		return nil, err
	}
	return &job, nil
}

// Finish checks a decoded request and signs the report within the deadline.
func (s *Service) Finish(ctx context.Context, job *Job) (*Verification, error) {
	var v *Verification
	err := s.withDeadline(ctx, func(ctx context.Context) error {
		// The checks stop when the deadline answers for them, instead of running on.
		job.req.StopWhen(ctx.Done())
		now := s.now()
		env := verify.Envelope{
			VerificationID: s.newID(), VerifiedAt: now, VerifierVersion: verify.Version,
			Verify: verify.NewVerifyInfo(s.BaseURL, s.Keys.Current.Version),
		}
		out, rep, err := s.Engine.Finish(job.req, job.sch, env, s.Keys.Current)
		if err != nil {
			return err
		}
		v = &Verification{Body: out, Report: rep, Req: job.req, VerifiedAt: now}
		return nil
	})
	if err != nil {
		// The phase may still be running (a missed deadline): what it writes is not read.
		return nil, err
	}
	return v, nil
}

// RunVerification decodes, checks and signs one request body, with no allowance or payment: for
// callers that did their own accounting.
func (s *Service) RunVerification(ctx context.Context, body []byte) (*Verification, error) {
	job, err := s.Decode(ctx, body)
	if err != nil {
		return nil, err
	}
	return s.Finish(ctx, job)
}

// recordTimeout bounds the best-effort history write.
const recordTimeout = 2 * time.Second

func (s *Service) deadline() time.Duration {
	if s.Deadline > 0 {
		return s.Deadline
	}
	return DefaultDeadline
}

// handleVerify is POST /verify/schema and /verify/deliverable. An empty body is the x402
// discovery probe (402); an invalid body is a 422 that consumes and charges nothing; a body with a
// payment takes the paid path; everything else draws on the free allowance.
func (s *Service) handleVerify(w http.ResponseWriter, r *http.Request) {
	body, err := ReadBody(r, s.Engine.Limits().MaxBody)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	payment := r.Header.Get(HeaderPaymentSignature)
	if len(bytes.TrimSpace(body)) == 0 && payment == "" {
		s.writePaymentRequired(w, r, apperr.PaymentRequired, "Send a verification request; this route is paid with x402 past the free allowance.",
			s.freeTrial(r.Context(), s.clientKey(r), 0, false), nil)
		return
	}
	if payment == "" && s.Allowance != nil && int64(len(body)) > s.Pricing.FreeMaxBody {
		// Before decoding: parsing and compiling a body the free allowance does not cover is
		// work to be paid for too.
		s.refuseFreeSize(w, r)
		return
	}
	// A request for the free allowance is checked against its schema before the allowance is
	// consumed (DecodeFree): a schema too costly to evaluate is refused without counting.
	decode := s.Decode
	if payment == "" && s.Allowance != nil {
		decode = s.DecodeFree
	}
	job, err := decode(r.Context(), body)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	switch {
	case payment != "":
		s.servePaid(w, r, job, payment)
	case s.Allowance == nil:
		// No allowance accounting (tools and tests that build a Service by hand).
		v, err := s.Finish(r.Context(), job)
		if err != nil {
			s.WriteError(w, r, err)
			return
		}
		s.Record(r.Context(), v, ClientIdentity(r, s.TrustedProxyHops), false)
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, v.Body)
	default:
		s.serveFree(w, r, job)
	}
}

// Record adds a delivered verification to its agent's history, best-effort: a store failure is
// logged and never fails or delays the answer beyond the write itself. test- ids and anonymous
// verifications are never recorded. client is the caller's ClientIdentity, the same the free
// allowance counted.
func (s *Service) Record(ctx context.Context, v *Verification, client string, paid bool) {
	if s.Store == nil || v.Req.AgentID == nil || strings.HasPrefix(*v.Req.AgentID, "test-") {
		return
	}
	rec := store.Verification{
		AgentID: *v.Req.AgentID, VerificationID: v.Report.VerificationID, TaskID: v.Req.TaskID,
		Result: v.Report.Result, OverallRatio: v.Report.OverallRatio(), VerifiedAt: v.VerifiedAt,
		Paid: paid, CallerID: s.CallerID(client),
	}
	if s.queueRecord(rec) {
		return
	}
	if s.writeRecord(ctx, rec) {
		s.foldLater(rec.AgentID)
	}
}

// queueRecord hands rec to the background writers, unless there are none (a Lambda function, or
// writers stopped) or their queue is full, when the caller writes it now rather than lose it
// (backpressure).
func (s *Service) queueRecord(rec store.Verification) bool {
	s.recording.RLock()
	defer s.recording.RUnlock()
	if s.records == nil || s.recording.stopped {
		return false
	}
	select {
	case s.records <- rec:
		return true
	default:
		return false
	}
}

// writeRecord writes rec and reports whether it was written.
func (s *Service) writeRecord(ctx context.Context, rec store.Verification) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := s.Store.RecordVerification(ctx, rec); err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log().Warn("record verification failed", "verification_id", rec.VerificationID, "err", err.Error())
		}
		return false
	}
	return true
}

// Folder is a store that takes a record with one write and counts it into the agent's aggregate
// later, when Fold runs (store/dynamo): every read folds first, and the service folds after
// recording, so that the reads find little to do.
type Folder interface {
	Fold(ctx context.Context, agentID string) (agg reputation.Aggregate, ok bool, err error)
}

// foldTimeout bounds one fold after recording. A fold cut off loses nothing (the next fold or
// read takes over), so the bound only keeps a stuck store from holding a goroutine.
const foldTimeout = 10 * time.Second

// foldLater folds agentID's records in the background when the store is a Folder, off the answer
// path. One fold per agent runs at a time in a process: a record arriving meanwhile makes it run
// once more when it ends, so hundreds of concurrent records for one agent cost a few folds, not
// hundreds of folds racing each other. On Lambda the fold may be frozen with the function once it
// has answered; it then continues, or finds its deadline passed, when the function is thawed, and
// what it left is folded by the next fold or read.
func (s *Service) foldLater(agentID string) {
	f, ok := s.Store.(Folder)
	if !ok {
		return
	}
	s.folding.Lock()
	defer s.folding.Unlock()
	if _, running := s.folding.again[agentID]; running {
		s.folding.again[agentID] = true
		return
	}
	if s.folding.again == nil {
		s.folding.again = map[string]bool{}
	}
	s.folding.again[agentID] = false
	s.folding.wg.Go(func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), foldTimeout)
			_, _, err := f.Fold(ctx, agentID)
			cancel()
			if err != nil {
				s.log().Warn("fold after recording failed; the next fold or read counts what it left", "err", err.Error())
			}
			s.folding.Lock()
			if !s.folding.again[agentID] {
				delete(s.folding.again, agentID)
				s.folding.Unlock()
				return
			}
			s.folding.again[agentID] = false
			s.folding.Unlock()
		}
	})
}

// recordQueue is how many history writes may wait for the background writers.
const recordQueue = 4096

// StartRecording moves history writes off the request path: answers go out without waiting for
// the store (SPEC §9: recording never slows the answer). The returned stop function waits for
// the queued writes, for a graceful shutdown. Long-running servers use it; a Lambda function,
// which may be frozen as soon as it answers, records synchronously instead.
func (s *Service) StartRecording(workers int) (stop func()) {
	s.records = make(chan store.Verification, recordQueue)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rec := range s.records {
				s.writeRecordRetrying(rec)
			}
		}()
	}
	return func() {
		s.recording.Lock()
		s.recording.stopped = true
		close(s.records)
		s.recording.Unlock()
		wg.Wait()
		s.folding.wg.Wait()
	}
}

// Retries of a background history write: a write that failed (a timeout, an unreachable store) is
// tried again after recordRetryWait, doubled each time, recordAttempts times in all. No answer
// waits for it; a store that stays out longer than that loses the record, which SPEC §9 excuses.
const (
	recordAttempts  = 4
	recordRetryWait = 500 * time.Millisecond
)

// writeRecordRetrying is a background writer's write of rec, retried, then folded.
func (s *Service) writeRecordRetrying(rec store.Verification) {
	wait := recordRetryWait
	for attempt := 1; ; attempt++ {
		if s.writeRecord(context.Background(), rec) {
			s.foldLater(rec.AgentID)
			return
		}
		if attempt == recordAttempts {
			s.log().Error("record verification lost after retries", "verification_id", rec.VerificationID, "attempts", attempt)
			return
		}
		time.Sleep(wait)
		wait *= 2
	}
}
