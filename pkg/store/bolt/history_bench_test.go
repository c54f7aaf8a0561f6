//go:build linux

package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/store"
)

// BenchmarkHistoryLinger is what the local server's history costs per record at two lingers:
// records arrive at a steady 2,800 a second for 50 agents and are written by 1,024 writers, as
// `verifier serve` writes them. ns/op is the arrival interval, not a cost; the costs are the
// process's CPU per record (the feeder's share included, the same at both lingers) and the page
// bytes the commits wrote per record.
//
//	go test ./pkg/store/bolt -run '^$' -bench HistoryLinger -benchtime 14000x
func BenchmarkHistoryLinger(b *testing.B) {
	for _, linger := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond} {
		b.Run(fmt.Sprintf("linger=%v", linger), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), FileName), WithHistoryLinger(linger))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			records := make(chan store.Verification, 4096)
			var wg sync.WaitGroup
			for range 1024 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for v := range records {
						if err := s.RecordVerification(context.Background(), v); err != nil {
							b.Error(err)
						}
					}
				}()
			}
			const rate = 2800
			feed := func(n int, prefix string) {
				start := time.Now()
				for i := range n {
					if d := time.Until(start.Add(time.Duration(i) * time.Second / rate)); d > 0 {
						time.Sleep(d)
					}
					records <- store.Verification{
						AgentID: fmt.Sprintf("agent-%d", i%50), VerificationID: fmt.Sprintf("%s-%09d", prefix, i),
						TaskID: "task", Result: "pass", OverallRatio: 1, VerifiedAt: time.Now(), CallerID: "caller",
					}
				}
			}
			feed(rate, "warm") // a second of history first, so that the pages exist
			time.Sleep(2 * linger)
			cpu0, tx0 := processCPU(b), s.db.Stats().TxStats
			b.ResetTimer()
			feed(b.N, "run")
			close(records)
			wg.Wait()
			b.StopTimer()
			tx1 := s.db.Stats().TxStats
			cpu, tx := processCPU(b)-cpu0, tx1.Sub(&tx0)
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/record")
			b.ReportMetric(float64(tx.GetPageAlloc())/1024/float64(b.N), "page-KB/record")
		})
	}
}

// processCPU is this process's CPU time so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
