package reputation_test

import (
	"fmt"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/reputation"
)

// An agent with ten fresh paid passes and two free fails from 30 days ago: the fails weigh
// 0.5 × 0.5 = 0.25 each, so n = 10.5 and the weighted pass rate is 10/10.5.
func ExampleAggregate_ScoreAt() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var a reputation.Aggregate
	for i := range 10 {
		a.Add(reputation.Observation{VerifiedAt: now, Passed: true, Paid: true, OverallRatio: 1, TaskID: fmt.Sprint("invoice-", i)})
	}
	for i := range 2 {
		a.Add(reputation.Observation{VerifiedAt: now.AddDate(0, 0, -30), Passed: false, OverallRatio: 0.5, TaskID: fmt.Sprint("draft-", i)})
	}
	s := a.ScoreAt(now)
	fmt.Printf("score %.1f, confidence %s, effective %.2f\n", *s.Value, s.Confidence, s.Effective)
	fmt.Printf("pass rate %v, distinct tasks %d\n", a.PassRate(), a.Tasks.Estimate())
	// Output:
	// score 66.7, confidence medium, effective 10.50
	// pass rate 0.833333, distinct tasks 12
}
