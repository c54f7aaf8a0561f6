package service

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
)

// recordTimeout bounds the best-effort history write.
const recordTimeout = 2 * time.Second

// Record adds a delivered verification to its agent's history, best-effort: a store failure is
// logged and never fails or delays the answer beyond the write itself. test- ids and anonymous
// verifications are never recorded. client is the caller's ClientIdentity, the same the free
// allowance counted.
func (s *Service) Record(ctx context.Context, v *Verification, client string, paid bool) {
	if v.AgentID == nil || strings.HasPrefix(*v.AgentID, "test-") {
		return
	}
	rec := store.Verification{
		AgentID: *v.AgentID, VerificationID: v.VerificationID, TaskID: v.TaskID,
		Result: v.Result, OverallRatio: v.OverallRatio, VerifiedAt: v.VerifiedAt,
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
	if err := s.d.Store.RecordVerification(ctx, rec); err != nil {
		if !errors.Is(err, context.Canceled) {
			s.d.Log.Warn("record verification failed", "verification_id", rec.VerificationID, "err", err.Error())
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
	f, ok := s.d.Store.(Folder)
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

// WaitForFolds waits for the folds foldLater started (see StartRecording's stop, which does too):
// a Lambda function's folds run on after its answers.
func (s *Service) WaitForFolds() { s.folding.wg.Wait() }

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
			s.d.Log.Error("record verification lost after retries", "verification_id", rec.VerificationID, "attempts", attempt)
			return
		}
		time.Sleep(wait)
		wait *= 2
	}
}
