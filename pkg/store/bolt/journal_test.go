package bolt

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/pkg/store"
)

// journalAnswer is the receipt and history record of answer i, for agent.
func journalAnswer(i int, agent string) (store.Receipt, store.Verification) {
	id := fmt.Sprintf("ver-journal-%04d", i)
	now := time.Now().UTC().Truncate(time.Second)
	r := store.Receipt{VerificationID: id, ReceiptHash: sha256.Sum256([]byte(id)), Result: "pass", VerifiedAt: now,
		KeyVersion: "v1", OutputHash: fmt.Sprintf("%064x", i), SchemaHash: fmt.Sprintf("%064x", 1),
		RulesHash: fmt.Sprintf("%064x", 2), Expires: now.Add(24 * time.Hour)}
	v := store.Verification{AgentID: agent, VerificationID: id, TaskID: "task", Result: "pass",
		OverallRatio: 1, VerifiedAt: now, CallerID: "caller"}
	return r, v
}

// An answer recorded with its history is readable, pending and (once applied) listed; a crash
// before its entry is applied loses none of it, and applying after the crash counts it once,
// even for an answer recorded twice.
func TestJournalSurvivesCrashBeforeApply(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreLingering(t) // entries wait an hour to be applied: the crash comes first
	const n = 20
	for i := range n {
		r, v := journalAnswer(i, "seller-journal")
		if err := s.RecordReceiptWithHistory(ctx, r, v); err != nil {
			t.Fatal(err)
		}
	}
	again, againHistory := journalAnswer(3, "seller-journal")
	again.Result = "fail" // a second record of one id changes nothing
	if err := s.RecordReceiptWithHistory(ctx, again, againHistory); err != nil {
		t.Fatal(err)
	}
	if got := count(t, s, bucketReceipts); got != 0 {
		t.Fatalf("%d receipts in their bucket before the linger: the entries were applied at once", got)
	}
	if r, ok, err := s.Receipt(ctx, "ver-journal-0003"); err != nil || !ok || r.Result != "pass" {
		t.Errorf("Receipt before apply = %+v, %v, %v; want the first record", r, ok, err)
	}
	pending, err := s.PendingLeaves(ctx, 100)
	if err != nil || len(pending) != n {
		t.Fatalf("PendingLeaves before apply = %d, %v; want %d", len(pending), err, n)
	}
	for i, l := range pending {
		if want := fmt.Sprintf("ver-journal-%04d", i); l.ID != want {
			t.Errorf("pending leaf %d is %s, want %s (recording order)", i, l.ID, want)
		}
	}
	crash(t, s)

	s = reopen(t, path)
	if got := count(t, s, bucketJournal); got != 0 {
		t.Errorf("%d journal entries left after Open", got)
	}
	pending, err = s.PendingLeaves(ctx, 100)
	if err != nil || len(pending) != n {
		t.Errorf("PendingLeaves after the crash = %d, %v; want %d", len(pending), err, n)
	}
	if r, ok, err := s.Receipt(ctx, "ver-journal-0003"); err != nil || !ok || r.Result != "pass" {
		t.Errorf("Receipt after the crash = %+v, %v, %v; want the first record", r, ok, err)
	}
	page, _, err := s.History(ctx, "seller-journal", 100, "")
	if err != nil || len(page) != n {
		t.Errorf("History after the crash = %d records, %v; want %d", len(page), err, n)
	}
	agg, ok, err := s.AgentAggregate(ctx, "seller-journal")
	if err != nil || !ok || agg.Verifications != n {
		t.Errorf("aggregate after the crash counts %d (%v, %v), want %d", agg.Verifications, ok, err, n)
	}
}

// Without a crash, every entry is applied before Close returns, leaving the journal empty on disk
// (read with bbolt itself: Open would apply what is left).
func TestJournalAppliedOnClose(t *testing.T) {
	ctx := context.Background()
	s, path := openStoreLingering(t)
	for i := range 5 {
		r, v := journalAnswer(i, "seller-close")
		if err := s.RecordReceiptWithHistory(ctx, r, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var journal, receipts int
	if err := db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketJournal); b != nil {
			journal = b.Stats().KeyN
		}
		if b := tx.Bucket(bucketReceipts); b != nil {
			receipts = b.Stats().KeyN
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if journal != 0 || receipts != 5 {
		t.Errorf("after Close: %d journal entries, %d receipts on disk; want 0 and 5", journal, receipts)
	}
}
