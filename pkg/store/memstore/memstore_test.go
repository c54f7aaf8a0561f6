package memstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		s := New(now)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// A closed store refuses every call rather than answering from forgotten state.
func TestClosedRefuses(t *testing.T) {
	clk := testclock.New(testclock.Epochs()[0])
	s := New(clk.Now)
	s.Close()
	ctx := context.Background()
	if _, _, err := s.ConsumeAllowance(ctx, "c", clk.Now().UTC().Format(time.DateOnly), 1, clk.Now().Add(time.Hour)); !errors.Is(err, errClosed) {
		t.Errorf("ConsumeAllowance after Close = %v, want errClosed", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, errClosed) {
		t.Errorf("Ping after Close = %v, want errClosed", err)
	}
}

func TestLogContract(t *testing.T) {
	storetest.RunLog(t, func(t *testing.T, now func() time.Time) store.ReceiptLog {
		s := New(now)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
