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
//   - journal: the receipt and the history record are on disk before the answer, as one journal
//     entry (RecordReceiptWithHistory, what the local server does now) sharing its commit with
//     the answers that arrive while the commit before it runs, and applied to their buckets by
//     a write that lingers as the history did;
//   - in-place: the receipt and history record written to their buckets before the answer, in
//     shared commits as the journal's are: what each commit costs without the journal;
//   - commit-each: the receipt on disk before the answer in a commit of its own, for contrast.
//
// answers/s counts from the first answer to the last history record on disk; cpu-µs/answer is
// the process's CPU per answer. The two ratios against before are what durability costs.
//
//	go test ./pkg/store/bolt -run '^$' -bench ReceiptDurability -benchtime 20000x
func BenchmarkReceiptDurability(b *testing.B) {
	for _, mode := range []string{"before", "journal", "in-place", "commit-each"} {
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
						if err := s.writes.updateDeferred(mustReceiptWrite(b, j.r)); err != nil {
							b.Error(err)
						}
					}
					if mode == "journal" || mode == "in-place" {
						continue // written with the receipt
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
			case "journal":
				err = s.RecordReceiptWithHistory(context.Background(), j.r, j.v)
			case "in-place":
				receipt := mustReceiptWrite(b, j.r)
				var history func(*bbolt.Tx) error
				if history, err = s.verificationWrite(context.Background(), j.v); err == nil {
					err = s.writes.update(func(tx *bbolt.Tx) error {
						if err := receipt(tx); err != nil {
							return err
						}
						return history(tx)
					})
				}
			case "commit-each":
				err = s.db.Update(mustReceiptWrite(b, j.r))
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

// mustReceiptWrite is receiptWrite, which fails only on a bad id.
func mustReceiptWrite(b *testing.B, r store.Receipt) func(*bbolt.Tx) error {
	w, err := receiptWrite(r)
	if err != nil {
		b.Fatal(err)
	}
	return w
}
