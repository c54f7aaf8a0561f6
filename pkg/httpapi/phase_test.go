package httpapi

import (
	"sync"
	"testing"
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
