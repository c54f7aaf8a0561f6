package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/mod/sumdb/tlog"
	"strings"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/translog"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// recordTimeout bounds the best-effort history write.
const recordTimeout = 2 * time.Second

// receiptRetryWait is the first pause before a failed receipt write is tried again (doubled each
// time, within the store timeout): the answer waits for it, since no answer leaves unrecorded.
const receiptRetryWait = 50 * time.Millisecond

// ReceiptRecorder is where the service records each signed answer for the receipt log (SPEC
// §15): the stored record and its pending leaf, in one durable write (store.ReceiptLog).
type ReceiptRecorder interface {
	RecordReceipt(ctx context.Context, r store.Receipt) error
}

// DefaultRecordDays is how long a stored record is kept (VERIFIER_RECORD_DAYS) when Deps say
// nothing; the log's leaves never expire.
const DefaultRecordDays = 90

// recordJob is a delivered verification's history record, on its way to its agent's history.
type recordJob struct {
	history *store.Verification
}

// record records a verification about to be delivered. Its receipt (every signed answer, free
// or paid, when the service keeps a receipt log) is written first, durably, and the answer waits
// for it: a receipt a caller holds is always in the log once sequencing catches up, whatever
// crashes after (SPEC §15). When that write fails, even after retries, record returns the error
// to answer instead, and the answer is not delivered. The agent's history (test- ids and
// anonymous verifications have none) is best-effort after it: queued for the background writers
// when they run, written now otherwise; its failure is logged and never fails the answer. caller
// is the caller's id (CallerID), the same the free allowance counted; settlement is a paid
// answer's.
//
// A receipt log that writes both at once (Deps.ReceiptsWithHistory: the local server's) gets the
// history record in the receipt's own write, so that it is as durable as the receipt.
func (s *Service) record(ctx context.Context, v *Verification, caller string, settlement *x402.SettleResponse) error {
	var history *store.Verification
	if inPublicHistory(v) {
		history = &store.Verification{
			AgentID: *v.AgentID, VerificationID: v.VerificationID, TaskID: v.TaskID,
			Result: v.Result, OverallRatio: v.OverallRatio, VerifiedAt: v.VerifiedAt,
			Paid: settlement != nil, CallerID: caller,
		}
	}
	if s.d.Receipts != nil {
		together := s.d.ReceiptsWithHistory
		ok := together != nil
		write := s.d.Receipts.RecordReceipt
		if ok && history != nil {
			write = func(ctx context.Context, r store.Receipt) error {
				return together.RecordReceiptWithHistory(ctx, r, *history)
			}
		}
		if err := s.recordReceipt(ctx, v, settlement, write); err != nil {
			return err
		}
		if ok && history != nil {
			s.foldLater(history.AgentID)
			return nil
		}
	}
	if history == nil {
		return nil
	}
	job := recordJob{history: history}
	if s.queueRecord(job) {
		return nil
	}
	s.writeRecord(ctx, &job)
	return nil
}

// recordReceipt writes v's receipt record and pending leaf with write, trying again after a
// failure for up to the store timeout (Deps.StoreTimeout, as for the allowance and the payment's
// reservation), and answers a failure as the error to deliver instead of the answer.
func (s *Service) recordReceipt(ctx context.Context, v *Verification, settlement *x402.SettleResponse, write func(context.Context, store.Receipt) error) error {
	r, err := s.receiptOf(v, settlement)
	if err != nil {
		s.d.Log.Error("receipt record not made; the answer is not delivered", "verification_id", v.VerificationID, "err", err.Error())
		return receiptNotRecorded(settlement != nil)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.StoreTimeout)
	defer cancel()
	wait := receiptRetryWait
	for {
		err := write(ctx, r)
		if err == nil {
			return nil
		}
		s.d.Log.Warn("record receipt failed", "verification_id", r.VerificationID, "err", err.Error())
		select {
		case <-ctx.Done():
			s.d.Log.Error("receipt not recorded; the answer is not delivered", "verification_id", r.VerificationID)
			return receiptNotRecorded(settlement != nil)
		case <-time.After(wait):
			wait *= 2
		}
	}
}

// receiptNotRecorded is the answer of a verification whose receipt could not be written: the
// answer is withheld, since a receipt handed out must be provable in the log. A paid one was
// settled already (recording follows settlement, which its record holds).
func receiptNotRecorded(paid bool) *apperr.Error {
	if !paid {
		e := apperr.New(apperr.Unavailable, "The receipt log's store did not take this answer's receipt, so the answer is not delivered; try again shortly.")
		e.RetryAfter = 1
		return e
	}
	e := apperr.New(apperr.Unavailable, "The payment was settled, but the receipt log's store did not take this answer's receipt, so the answer is not delivered (a delivered receipt is always provable in the log). Check the payment's settlement on chain before paying for this work again.")
	e.Retryable, e.Charged = false, true
	e.NextAction = []apperr.NextAction{{Action: "check_payment"}}
	return e
}

// inPublicHistory says v goes into its agent's public history (SPEC §9): it names an agent whose
// id does not start with test-.
func inPublicHistory(v *Verification) bool {
	return v.AgentID != nil && !strings.HasPrefix(*v.AgentID, "test-")
}

// queueRecord hands job to the background writers, unless there are none (a Lambda function, or
// writers stopped) or their queue is full, when the caller writes it now rather than lose it
// (backpressure).
func (s *Service) queueRecord(job recordJob) bool {
	s.recording.RLock()
	defer s.recording.RUnlock()
	if s.records == nil || s.recording.stopped {
		return false
	}
	select {
	case s.records <- job:
		return true
	default:
		return false
	}
}

// writeRecord writes job's history record and reports whether it was written.
func (s *Service) writeRecord(ctx context.Context, job *recordJob) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	rec := job.history
	if err := s.d.Store.RecordVerification(ctx, *rec); err != nil {
		if !errors.Is(err, context.Canceled) {
			s.d.Log.Warn("record verification failed", "verification_id", rec.VerificationID, "err", err.Error())
		}
		return false
	}
	s.foldLater(rec.AgentID)
	return true
}

// receiptOf is v's stored record (SPEC §15): the receipt hash of the whole signed answer, its
// hashes and verdict, and a paid answer's settlement.
func (s *Service) receiptOf(v *Verification, settlement *x402.SettleResponse) (store.Receipt, error) {
	// The engine hashed the answer while signing it; only an answer it could not hash so is
	// parsed again.
	h := tlog.Hash(v.ReceiptHash)
	if !v.HasReceiptHash {
		var err error
		if h, err = translog.ReceiptHash(v.Body); err != nil {
			return store.Receipt{VerificationID: v.VerificationID}, err
		}
	}
	r := store.Receipt{
		VerificationID: v.VerificationID, ReceiptHash: h, Result: v.Result, VerifiedAt: v.VerifiedAt.UTC(),
		KeyVersion: v.KeyVersion, OutputHash: v.Hashes.Output, SchemaHash: v.Hashes.Schema,
		RulesHash: v.Hashes.Rules, RequestHash: v.Hashes.Request,
		EnforceRules: v.EnforceRules, VerifierVersion: wire.Version,
		Expires: v.VerifiedAt.Add(time.Duration(s.d.RecordDays) * 24 * time.Hour),
	}
	if inPublicHistory(v) {
		// The agent's public history lists this task id already (SPEC §9); anonymous and test-
		// verifications keep theirs out of the public record.
		r.TaskID = v.TaskID
	}
	if settlement != nil {
		var err error
		if r.Settlement, err = json.Marshal(settlement); err != nil {
			return store.Receipt{}, fmt.Errorf("settlement of %s: %w", v.VerificationID, err)
		}
	}
	return r, nil
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

// foldLater folds agentID's records in the background with Deps.Folder, when there is one, off
// the answer path. One fold per agent runs at a time in a process: a record arriving meanwhile makes it run
// once more when it ends, so hundreds of concurrent records for one agent cost a few folds, not
// hundreds of folds racing each other. On Lambda the fold may be frozen with the function once it
// has answered; it then continues, or finds its deadline passed, when the function is thawed, and
// what it left is folded by the next fold or read.
func (s *Service) foldLater(agentID string) {
	f := s.d.Folder
	if f == nil {
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
				s.d.Log.Warn("fold after recording failed; the next fold or read counts what it left", "err", err.Error())
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

// waitForFolds waits for the folds foldLater started (see StartRecording's stop, which does too):
// a Lambda function's folds run on after its answers.
func (s *Service) waitForFolds() { s.folding.wg.Wait() }

// recordQueue is how many history writes may wait for the background writers.
const recordQueue = 4096

// StartRecording moves history writes off the request path: answers go out without waiting for
// the store (SPEC §9: recording never slows the answer). The returned stop function waits for
// the queued writes, for a graceful shutdown. Long-running servers use it; a Lambda function,
// which may be frozen as soon as it answers, records synchronously instead.
func (s *Service) StartRecording(workers int) (stop func()) {
	s.records = make(chan recordJob, recordQueue)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range s.records {
				s.writeRecordRetrying(job)
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

// writeRecordRetrying is a background writer's write of job, retried.
func (s *Service) writeRecordRetrying(job recordJob) {
	wait := recordRetryWait
	for attempt := 1; ; attempt++ {
		if s.writeRecord(context.Background(), &job) {
			return
		}
		if attempt == recordAttempts {
			s.d.Log.Error("record verification lost after retries", "attempts", attempt)
			return
		}
		time.Sleep(wait)
		wait *= 2
	}
}
