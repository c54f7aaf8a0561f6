package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	bbolt "go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// The journal makes an answer's receipt (and its history record) durable in the smallest write
// there is, so that many answers share each synced commit without the commit growing with them:
// the answer waits for one append to one bucket of sequential keys, which dirties a page or two
// whatever the batch holds, instead of the receipt, pending-leaf, history and aggregate buckets
// (a page or more per agent a batch touches, which made commits cost what the batches saved).
// Each entry is then applied to those buckets by a deferred write (it lingers with the history,
// WithHistoryLinger; without a linger the entry is applied at once instead of journaled, since
// that is then the one write it would cost) that deletes it in the same transaction, so an entry is applied exactly once:
// before that commit it is in the journal, after it in its buckets. Open applies whatever a crash
// left in the journal before the store serves anyone.
//
// Until its entry is applied, a receipt is read from memory (Receipt), its leaf waits to be
// sequenced and its history record to be listed: those lag by the linger, nothing more, and
// nothing an answer delivered is lost by a crash.

// bucketJournal holds entries by sequence number.
var bucketJournal = []byte("journal")

// journalEntry is one delivered answer's records, as the journal stores them.
type journalEntry struct {
	Receipt store.Receipt       `json:"receipt"`
	History *store.Verification `json:"history,omitempty"`
}

// journal is what the store knows of the entries not yet applied.
type journal struct {
	mu       sync.Mutex
	entries  map[string]*journaled // by verification id: read before their buckets have them
	applying sync.WaitGroup        // deferred applications not yet committed, for Close
}

// journaled is a receipt whose entry is on disk and not yet applied.
type journaled struct {
	seq       uint64 // the entry's key: the order the answers were recorded in
	receipt   store.Receipt
	sequenced bool // DeletePendingLeaves named it: its leaf is no longer pending
}

// appendJournal writes e to the journal, on disk when it returns, then hands its application to
// a deferred write.
func (s *Store) appendJournal(ctx context.Context, e journalEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Recording a verification id again changes nothing (store.ReceiptLog).
	if _, ok := s.journaledReceipt(e.Receipt.VerificationID); ok {
		return nil
	}
	value, err := encodeEntry(e)
	if err != nil {
		return err
	}
	apply, err := s.entryWrite(ctx, e, value)
	if err != nil {
		return err
	}
	if s.linger == 0 {
		// Nothing lingers: applying at once is the one write the entry would have been.
		if err := s.writes.update(apply); err != nil {
			return fmt.Errorf("record receipt %s: %w", e.Receipt.VerificationID, err)
		}
		return nil
	}
	var key []byte
	var seq uint64
	var recorded bool
	err = s.writes.update(func(tx *bbolt.Tx) error {
		if recorded = getIn(tx, bucketReceipts, []byte(e.Receipt.VerificationID)) != nil; recorded {
			return nil
		}
		b, err := tx.CreateBucketIfNotExists(bucketJournal)
		if err != nil {
			return err
		}
		if seq, err = b.NextSequence(); err != nil {
			return err
		}
		key = u64(int64(seq))
		return b.Put(key, value)
	})
	if err != nil {
		return fmt.Errorf("record receipt %s: %w", e.Receipt.VerificationID, err)
	}
	if recorded {
		return nil
	}
	id := e.Receipt.VerificationID
	s.journal.mu.Lock()
	if s.journal.entries == nil {
		s.journal.entries = map[string]*journaled{}
	}
	mine := &journaled{seq: seq, receipt: e.Receipt}
	if _, ok := s.journal.entries[id]; !ok {
		s.journal.entries[id] = mine
	}
	s.journal.applying.Add(1)
	s.journal.mu.Unlock()
	go func() {
		defer s.journal.applying.Done()
		err := s.writes.updateDeferred(func(tx *bbolt.Tx) error { return applyEntry(tx, key, apply) })
		if err != nil {
			// It stays in the journal, read from memory, and Open applies it next time.
			return
		}
		s.journal.mu.Lock()
		if s.journal.entries[id] == mine {
			delete(s.journal.entries, id)
		}
		s.journal.mu.Unlock()
	}()
	return nil
}

// applyEntry runs an entry's writes and deletes it from the journal, in the caller's transaction.
// An entry already deleted was applied: nothing is written twice.
func applyEntry(tx *bbolt.Tx, key []byte, apply func(*bbolt.Tx) error) error {
	b := tx.Bucket(bucketJournal)
	if b == nil || b.Get(key) == nil {
		return nil
	}
	if err := apply(tx); err != nil {
		return err
	}
	return b.Delete(key)
}

// An entry is stored as the receipt's stored value (receiptWrite's: its expiry and JSON) after
// its length (4 bytes, big-endian), then the history record's JSON when there is one, so that
// recording an answer encodes its receipt once.
const entryHeader = 4

// encodeEntry is e's stored form.
func encodeEntry(e journalEntry) ([]byte, error) {
	if err := storekey.CheckID("verification id", e.Receipt.VerificationID); err != nil {
		return nil, fmt.Errorf("record receipt: %w", err)
	}
	rec, err := json.Marshal(e.Receipt)
	if err != nil {
		return nil, fmt.Errorf("record receipt %s: %w", e.Receipt.VerificationID, err)
	}
	value := make([]byte, entryHeader, entryHeader+8+len(rec)+256)
	value = append(value, encodeExpiry(e.Receipt.Expires.Unix())...)
	value = append(value, rec...)
	binary.BigEndian.PutUint32(value, uint32(len(value)-entryHeader))
	if e.History != nil {
		if value, err = appendJSON(value, e.History); err != nil {
			return nil, fmt.Errorf("record verification %s: %w", e.History.VerificationID, err)
		}
	}
	return value, nil
}

// appendJSON appends v's JSON to dst.
func appendJSON(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	return append(dst, b...), err
}

// decodeEntry reads an entry's stored form back.
func decodeEntry(value []byte) (journalEntry, error) {
	var e journalEntry
	if len(value) < entryHeader {
		return e, errors.New("truncated entry")
	}
	n := int(binary.BigEndian.Uint32(value))
	if n < 8 || entryHeader+n > len(value) {
		return e, errors.New("truncated entry")
	}
	if err := json.Unmarshal(value[entryHeader+8:entryHeader+n], &e.Receipt); err != nil {
		return e, err
	}
	if rest := value[entryHeader+n:]; len(rest) > 0 {
		e.History = new(store.Verification)
		if err := json.Unmarshal(rest, e.History); err != nil {
			return e, err
		}
	}
	return e, nil
}

// entryWrite is the write that applies e, stored as value, to its buckets: its receipt and
// pending leaf, and its history record and aggregate when it has one. Each part writes once,
// whatever ran before.
func (s *Store) entryWrite(ctx context.Context, e journalEntry, value []byte) (func(*bbolt.Tx) error, error) {
	n := binary.BigEndian.Uint32(value)
	receipt := receiptWriteOf(e.Receipt, value[entryHeader:entryHeader+n])
	if e.History == nil {
		return receipt, nil
	}
	history, err := s.verificationWrite(ctx, *e.History)
	if err != nil {
		return nil, err
	}
	return func(tx *bbolt.Tx) error {
		if err := receipt(tx); err != nil {
			return err
		}
		return history(tx)
	}, nil
}

// journaledReceipt is the receipt of id if its journal entry is not applied yet.
func (s *Store) journaledReceipt(id string) (store.Receipt, bool) {
	s.journal.mu.Lock()
	defer s.journal.mu.Unlock()
	if j, ok := s.journal.entries[id]; ok {
		return j.receipt, true
	}
	return store.Receipt{}, false
}

// journaledLeaves appends to leaves, up to limit in all, the leaves of entries not yet applied
// nor sequenced, oldest first, that leaves does not hold already.
func (s *Store) journaledLeaves(leaves []translog.Leaf, limit int) []translog.Leaf {
	s.journal.mu.Lock()
	var more []*journaled
	for _, j := range s.journal.entries {
		if !j.sequenced {
			more = append(more, j)
		}
	}
	s.journal.mu.Unlock()
	if len(more) == 0 {
		return leaves
	}
	slices.SortFunc(more, func(a, b *journaled) int { return cmp.Compare(a.seq, b.seq) })
	have := make(map[string]bool, len(leaves))
	for _, l := range leaves {
		have[l.ID] = true
	}
	for _, j := range more {
		if len(leaves) >= limit {
			break
		}
		if !have[j.receipt.VerificationID] {
			leaves = append(leaves, translog.Leaf{ID: j.receipt.VerificationID, Hash: j.receipt.ReceiptHash})
		}
	}
	return leaves
}

// journalSequenced marks the entries of ids as no longer pending (DeletePendingLeaves).
func (s *Store) journalSequenced(ids []string) {
	s.journal.mu.Lock()
	defer s.journal.mu.Unlock()
	for _, id := range ids {
		if j, ok := s.journal.entries[id]; ok {
			j.sequenced = true
		}
	}
}

// replayJournal applies every entry a crash (or a failed application) left in the journal, in
// one transaction, before the store is used.
func replayJournal(s *Store) error {
	empty := true
	if err := s.db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketJournal); b != nil {
			k, _ := b.Cursor().First()
			empty = k == nil
		}
		return nil
	}); err != nil || empty {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketJournal)
		if b == nil {
			return nil
		}
		var keys, values [][]byte
		var entries []journalEntry
		err := b.ForEach(func(k, v []byte) error {
			e, err := decodeEntry(v)
			if err != nil {
				return fmt.Errorf("journal entry %x: %w", k, err)
			}
			keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
			entries = append(entries, e)
			return nil
		})
		if err != nil {
			return err
		}
		for i, e := range entries {
			apply, err := s.entryWrite(context.Background(), e, values[i])
			if err != nil {
				return fmt.Errorf("journal entry %x: %w", keys[i], err)
			}
			if err := applyEntry(tx, keys[i], apply); err != nil {
				return fmt.Errorf("journal entry %x: %w", keys[i], err)
			}
		}
		return nil
	})
}
