package bolt_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
)

// A local server opens one file under its data directory, takes free calls from a client's daily
// allowance and pages through an agent's history with the cursor History hands back.
func Example() {
	dataDir, err := os.MkdirTemp("", "verifier-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dataDir)
	s, err := bolt.Open(filepath.Join(dataDir, bolt.FileName))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	now := time.Now().UTC()
	day := now.Format(time.DateOnly)
	resets := now.Truncate(24 * time.Hour).Add(24 * time.Hour) // the next UTC midnight
	for range 3 {
		granted, remaining, err := s.ConsumeAllowance(ctx, "203.0.113.9", day, 2, resets)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("granted:", granted, "remaining:", remaining)
	}

	for i := range 3 {
		err := s.RecordVerification(ctx, store.Verification{
			AgentID:        "agent-7",
			VerificationID: fmt.Sprintf("v-%d", i),
			Result:         "pass",
			OverallRatio:   1,
			VerifiedAt:     time.Date(2025, 3, 1, 12, i, 0, 0, time.UTC),
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	for cursor := ""; ; {
		page, next, err := s.History(ctx, "agent-7", 2, cursor)
		if err != nil {
			log.Fatal(err)
		}
		for _, v := range page {
			fmt.Println(v.VerificationID, v.VerifiedAt.Format(time.TimeOnly))
		}
		if next == "" {
			break
		}
		cursor = next
	}
	// Output:
	// granted: true remaining: 1
	// granted: true remaining: 0
	// granted: false remaining: 0
	// v-2 12:02:00
	// v-1 12:01:00
	// v-0 12:00:00
}
