package service

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// A phase pool starts workers as phases need them, at most phaseWorkers, and runs every phase
// even when all of them are busy.
func TestRunPhaseStartsWorkersOnDemand(t *testing.T) {
	pool := newPhasePool()
	release := make(chan struct{})
	var done sync.WaitGroup
	const n = phaseWorkers + 36
	for range n {
		done.Add(1)
		pool.run(func() {
			defer done.Done()
			<-release
		})
	}
	if got := pool.started.Load(); got > phaseWorkers {
		t.Errorf("%d workers started for %d busy phases, want at most %d", got, n, phaseWorkers)
	}
	close(release)
	done.Wait() // every phase ran, the ones past the workers too
}

// A panic in a verification phase, which runs on a worker outside the router's recovery, is an
// internal error for that request alone: the process and the worker go on.
func TestPhasePanicIsAnInternalError(t *testing.T) {
	s := &Service{d: Deps{Deadline: DefaultDeadline, Log: slog.Default()}, phases: newPhasePool()}
	for range 2 { // the second runs on the worker the first one used
		err := s.withDeadline(context.Background(), func(context.Context) error { panic("boom") })
		if ae, ok := apperr.As(err); !ok || ae.Code != apperr.Internal || ae.Status() != 500 {
			t.Fatalf("panicking phase: %v, want a 500 internal_error", err)
		}
	}
	if err := s.withDeadline(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a phase after the panics: %v", err)
	}
}

// At most maxPhases phases run at once; the others wait for a slot within their deadline, and
// one that finds none in time is the retryable 503 of a missed deadline, never run.
func TestPhasesAreBounded(t *testing.T) {
	s := &Service{d: Deps{Deadline: 5 * time.Second, Log: slog.Default()}, phases: newPhasePool()}
	var running, most atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 * maxPhases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.withDeadline(context.Background(), func(context.Context) error {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-release
				running.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	for running.Load() < int32(maxPhases) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // time for a phase past the bound to start, if one could
	if got := running.Load(); got != int32(maxPhases) {
		t.Errorf("%d phases running, want %d", got, maxPhases)
	}
	short := &Service{d: Deps{Deadline: 30 * time.Millisecond, Log: slog.Default()}, phases: s.phases} // s's slots, all taken
	ran := false
	err := short.withDeadline(context.Background(), func(context.Context) error { ran = true; return nil })
	if ae, ok := apperr.As(err); !ok || ae.Code != apperr.DeadlineExceeded || ran {
		t.Errorf("a phase finding no slot: %v (ran %v), want the deadline's 503 and not run", err, ran)
	}
	close(release)
	wg.Wait()
	if got := most.Load(); got != int32(maxPhases) {
		t.Errorf("at most %d phases ran at once, want %d", got, maxPhases)
	}
}
