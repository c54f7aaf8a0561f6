package httpapi

import (
	"context"
	"sync"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// runPhase starts workers as phases need them, at most phaseWorkers, and runs every phase even
// when all of them are busy.
func TestRunPhaseStartsWorkersOnDemand(t *testing.T) {
	release := make(chan struct{})
	var done sync.WaitGroup
	const n = phaseWorkers + 36
	for range n {
		done.Add(1)
		runPhase(func() {
			defer done.Done()
			<-release
		})
	}
	if got := phaseStarted.Load(); got > phaseWorkers {
		t.Errorf("%d workers started for %d busy phases, want at most %d", got, n, phaseWorkers)
	}
	close(release)
	done.Wait() // every phase ran, the ones past the workers too
}

// A panic in a verification phase, which runs on a worker outside the router's recovery, is an
// internal error for that request alone: the process and the worker go on.
func TestPhasePanicIsAnInternalError(t *testing.T) {
	s := &Service{}
	for range 2 { // the second runs on the worker the first one used
		err := s.withDeadline(context.Background(), func(context.Context) error { panic("boom") })
		if ae, ok := apperr.As(err); !ok || ae.Code != apperr.Internal || ae.Status != 500 {
			t.Fatalf("panicking phase: %v, want a 500 internal_error", err)
		}
	}
	if err := s.withDeadline(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a phase after the panics: %v", err)
	}
}
