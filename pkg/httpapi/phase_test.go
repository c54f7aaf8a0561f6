package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// At most maxPhases phases run at once; the others wait for a slot within their deadline, and
// one that finds none in time is the retryable 503 of a missed deadline, never run.
func TestPhasesAreBounded(t *testing.T) {
	s := &Service{Deadline: 5 * time.Second}
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
	short := &Service{Deadline: 30 * time.Millisecond}
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

// A free call that finds no phase slot within its deadline is the retryable 503 of a missed
// deadline and leaves its allowance as it was: FinishFree takes the free call once the work has
// its slot. (Taking it first, and then waiting for a slot, used the call without an answer.)
func TestFreeCallWithoutSlotKeepsAllowance(t *testing.T) {
	e := newPayEnv(t, openBolt(t), 2, nil)
	e.svc.Deadline = 50 * time.Millisecond
	ctx := context.Background()
	job, err := e.svc.Decode(ctx, []byte(okBody))
	if err != nil {
		t.Fatal(err)
	}
	client := e.svc.CallerID("127.0.0.1")
	today, _ := day(e.svc.now())

	for range maxPhases { // every slot busy, as under overload
		phaseSlots <- struct{}{}
	}
	v, granted, _, err := e.svc.FinishFree(ctx, job, client)
	for range maxPhases {
		<-phaseSlots
	}
	if ae, ok := apperr.As(err); !ok || ae.Code != apperr.DeadlineExceeded || !ae.Retryable || v != nil || granted {
		t.Fatalf("no slot: %v, %v, granted %v; want the deadline's retryable 503", v, err, granted)
	}
	if n, err := e.st.AllowanceUsed(ctx, client, today); err != nil || n != 0 {
		t.Fatalf("a call answered 503 for want of a slot used %d free calls (%v)", n, err)
	}

	// With a slot free, the same call is granted and counted, and the allowance then runs out.
	for want := 1; want >= 0; want-- {
		v, granted, remaining, err := e.svc.FinishFree(ctx, job, client)
		if err != nil || !granted || v == nil || remaining != want {
			t.Fatalf("free call: %v, granted %v, remaining %d, %v; want granted with %d left", v, granted, remaining, err, want)
		}
	}
	if v, granted, _, err := e.svc.FinishFree(ctx, job, client); err != nil || granted || v != nil {
		t.Fatalf("past the allowance: %v, granted %v, %v; want refused without an error", v, granted, err)
	}
	if n, _ := e.st.AllowanceUsed(ctx, client, today); n != 2 {
		t.Fatalf("%d free calls used, want 2", n)
	}
}
