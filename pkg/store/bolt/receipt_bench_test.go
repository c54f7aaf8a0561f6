//go:build linux

package bolt

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/pkg/store"
)

// receiptRequests are how many answers are recorded at once in BenchmarkReceiptDurability: the
// local server under its load generator holds a few dozen to a few hundred requests in flight.
var receiptRequests = []int{64, 256}

// BenchmarkReceiptDurability is what recording costs the local server per delivered answer, its
// receipt (record and pending leaf) and its history record, as receiptRequests concurrent
// requests record them:
//
//   - before: the receipt lingers for company (100 ms) with the history, written by background
//     writers; the answer waits for neither, and a crash loses both (issue 34 item 2);
//   - group-commit: the receipt is on disk before the answer (RecordReceipt), sharing its commit
//     with the receipts that arrive while the commit before it runs; the history lingers as before;
//   - commit-each: the receipt on disk before the answer in a commit of its own, for contrast.
//
// answers/s counts from the first answer to the last history record on disk; cpu-µs/answer is
// the process's CPU per answer. The two ratios against before are what durability costs.
//
//	go test ./pkg/store/bolt -run '^$' -bench ReceiptDurability -benchtime 20000x
func BenchmarkReceiptDurability(b *testing.B) {
	for _, mode := range []string{"before", "group-commit", "commit-each"} {
		for _, inFlight := range receiptRequests {
			if mode == "commit-each" && inFlight > receiptRequests[0] {
				continue // one commit per answer: more in flight only queue longer
			}
			benchmarkReceiptDurability(b, mode, inFlight)
		}
	}
}

// benchmarkReceiptDurability is one mode at inFlight answers at once.
func benchmarkReceiptDurability(b *testing.B, mode string, inFlight int) {
	b.Run(fmt.Sprintf("%s/in-flight=%d", mode, inFlight), func(b *testing.B) {
		s, err := Open(filepath.Join(b.TempDir(), FileName), WithHistoryLinger(100*time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		type job struct {
			r store.Receipt
			v store.Verification
		}
		jobs := make(chan job, 4096)
		var writers sync.WaitGroup
		for range 1024 { // cmd/verifier's historyWriters
			writers.Go(func() {
				for j := range jobs {
					if mode == "before" {
						if err := s.recordReceipt(context.Background(), j.r, s.writes.updateDeferred); err != nil {
							b.Error(err)
						}
					}
					if err := s.RecordVerification(context.Background(), j.v); err != nil {
						b.Error(err)
					}
				}
			})
		}
		var n atomic.Int64
		answer := func(prefix string) {
			i := n.Add(1)
			id := fmt.Sprintf("%s-%09d", prefix, i)
			now := time.Now()
			j := job{
				r: store.Receipt{VerificationID: id, ReceiptHash: sha256.Sum256([]byte(id)), Result: "pass", VerifiedAt: now,
					KeyVersion: "v1", OutputHash: fmt.Sprintf("%064x", i), SchemaHash: fmt.Sprintf("%064x", 1), RulesHash: fmt.Sprintf("%064x", 2),
					Expires: now.Add(90 * 24 * time.Hour)},
				v: store.Verification{AgentID: fmt.Sprintf("agent-%d", i%50), VerificationID: id, TaskID: "task",
					Result: "pass", OverallRatio: 1, VerifiedAt: now, CallerID: "caller"},
			}
			var err error
			switch mode {
			case "group-commit":
				err = s.RecordReceipt(context.Background(), j.r)
			case "commit-each":
				err = s.recordReceipt(context.Background(), j.r, func(fn func(*bbolt.Tx) error) error { return s.db.Update(fn) })
			}
			if err != nil {
				b.Error(err)
			}
			jobs <- j
		}
		run := func(total int, prefix string) {
			var wg sync.WaitGroup
			var next atomic.Int64
			for range inFlight {
				wg.Go(func() {
					for next.Add(1) <= int64(total) {
						answer(prefix)
					}
				})
			}
			wg.Wait()
		}
		run(2000, "warm") // pages to write into
		time.Sleep(300 * time.Millisecond)
		cpu0 := processCPU(b)
		start := time.Now()
		b.ResetTimer()
		run(b.N, "run")
		close(jobs)
		writers.Wait()
		b.StopTimer()
		elapsed, cpu := time.Since(start), processCPU(b)-cpu0
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "answers/s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/answer")
	})
}
