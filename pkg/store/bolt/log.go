package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// The receipt log's buckets (SPEC §15). "receipts" maps a verification id to its record, the
// record's expiry (epoch seconds, big-endian 64-bit) then its JSON, so the sweep at Open removes
// expired ones; "log_pending" maps an arrival number (big-endian) to the pending leaf (its
// 32-byte hash then its id) and "log_pending_ids" an id to that number; "log_head" holds the
// tree head under headKey (encodeHead) and the log's identity under identityKey (its origin, a
// newline, its verifier key); "log_hashes" maps tlog's storage index to a stored hash, "log_leaves"
// an index to its leaf, "log_indexes" an id to its index (all big-endian 64-bit keys, which sort
// as numbers). Only records expire.
var (
	bucketReceipts   = []byte("receipts")
	bucketPending    = []byte("log_pending")
	bucketPendingIDs = []byte("log_pending_ids")
	bucketHead       = []byte("log_head")
	bucketHashes     = []byte("log_hashes")
	bucketLeaves     = []byte("log_leaves")
	bucketIndexes    = []byte("log_indexes")
	headKey          = []byte("head")
	identityKey      = []byte("identity")
)

var _ store.ReceiptLog = (*Store)(nil)

func u64(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// RecordReceipt implements store.ReceiptLog: the record and its pending leaf, on disk when it
// returns, as one journal entry (journal.go) that many answers' share a synced commit with.
func (s *Store) RecordReceipt(ctx context.Context, r store.Receipt) error {
	return s.appendJournal(ctx, journalEntry{Receipt: r})
}

var _ store.ReceiptWithHistory = (*Store)(nil)

// RecordReceiptWithHistory implements store.ReceiptWithHistory: the receipt and v's history
// record in one journal entry, on disk when it returns. The local server records every public
// answer so: its history is as durable as its receipt.
func (s *Store) RecordReceiptWithHistory(ctx context.Context, r store.Receipt, v store.Verification) error {
	return s.appendJournal(ctx, journalEntry{Receipt: r, History: &v})
}

// receiptWrite is the write of r's record and pending leaf, once: a receipt recorded already, or
// a leaf pending or sequenced already, is not written again.
func receiptWrite(r store.Receipt) (func(*bbolt.Tx) error, error) {
	if err := storekey.CheckID("verification id", r.VerificationID); err != nil {
		return nil, fmt.Errorf("record receipt: %w", err)
	}
	rec, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("record receipt %s: %w", r.VerificationID, err)
	}
	return receiptWriteOf(r, append(encodeExpiry(r.Expires.Unix()), rec...)), nil
}

// receiptWriteOf is receiptWrite of r with its stored value (expiry and JSON) made already.
func receiptWriteOf(r store.Receipt, value []byte) func(*bbolt.Tx) error {
	id := []byte(r.VerificationID)
	return func(tx *bbolt.Tx) error {
		if getIn(tx, bucketReceipts, id) != nil {
			return nil // recorded already
		}
		if err := putIn(tx, bucketReceipts, id, value); err != nil {
			return err
		}
		if getIn(tx, bucketIndexes, id) != nil || getIn(tx, bucketPendingIDs, id) != nil {
			return nil // in the log, or waiting for it, already
		}
		b, err := tx.CreateBucketIfNotExists(bucketPending)
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		if err := b.Put(u64(int64(seq)), append(r.ReceiptHash[:], id...)); err != nil {
			return err
		}
		return putIn(tx, bucketPendingIDs, id, u64(int64(seq)))
	}
}

// Receipt implements store.ReceiptLog.
func (s *Store) Receipt(ctx context.Context, id string) (store.Receipt, bool, error) {
	if err := storekey.CheckID("verification id", id); err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt: %w", err)
	}
	if r, ok := s.journaledReceipt(id); ok {
		if storekey.Expired(r.Expires.Unix(), s.now()) {
			return store.Receipt{}, false, nil
		}
		return r, true, nil
	}
	var r store.Receipt
	var found bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := getIn(tx, bucketReceipts, []byte(id))
		if len(v) < 8 {
			return nil
		}
		exp, _ := decodeExpiry(v[:8])
		if storekey.Expired(exp, s.now()) {
			return nil
		}
		found = true
		return json.Unmarshal(v[8:], &r)
	})
	if err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt %s: %w", id, err)
	}
	return r, found, nil
}

// encodeHead is the head's value: its size (8 bytes), root hash, the checkpoint's length (4
// bytes) and bytes, then each batch leaf's id length (2 bytes), id and hash, all big-endian. A
// binary form, because the head is read for every GET /log/checkpoint and may hold a batch of
// thousands of leaves.
func encodeHead(h translog.Head) []byte {
	b := make([]byte, 0, 8+32+4+len(h.Checkpoint)+len(h.Batch)*(2+36+32))
	b = binary.BigEndian.AppendUint64(b, uint64(h.Size))
	b = append(b, h.Hash[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(h.Checkpoint)))
	b = append(b, h.Checkpoint...)
	for _, l := range h.Batch {
		b = binary.BigEndian.AppendUint16(b, uint16(len(l.ID)))
		b = append(b, l.ID...)
		b = append(b, l.Hash[:]...)
	}
	return b
}

// decodeHead reads encodeHead's form.
func decodeHead(v []byte) (translog.Head, error) {
	var h translog.Head
	bad := errors.New("malformed log head")
	if len(v) < 8+32+4 {
		return h, bad
	}
	h.Size = int64(binary.BigEndian.Uint64(v))
	copy(h.Hash[:], v[8:40])
	n := int(binary.BigEndian.Uint32(v[40:44]))
	v = v[44:]
	if len(v) < n {
		return h, bad
	}
	h.Checkpoint, v = bytes.Clone(v[:n]), v[n:]
	for len(v) > 0 {
		if len(v) < 2 {
			return h, bad
		}
		n := int(binary.BigEndian.Uint16(v))
		if len(v) < 2+n+32 {
			return h, bad
		}
		l := translog.Leaf{ID: string(v[2 : 2+n])}
		copy(l.Hash[:], v[2+n:])
		h.Batch = append(h.Batch, l)
		v = v[2+n+32:]
	}
	return h, nil
}

// LogHead implements translog.Storage.
func (s *Store) LogHead(ctx context.Context) (translog.Head, error) {
	var h translog.Head
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := getIn(tx, bucketHead, headKey)
		if v == nil {
			return nil
		}
		var err error
		h, err = decodeHead(v)
		return err
	})
	if err != nil {
		return translog.Head{}, fmt.Errorf("log head: %w", err)
	}
	return h, nil
}

// SwapLogHead implements translog.Storage: bbolt's one writer makes the read and the write one
// step.
func (s *Store) SwapLogHead(ctx context.Context, prevSize int64, next translog.Head) error {
	for _, l := range next.Batch {
		if len(l.ID) > math.MaxUint16 {
			return fmt.Errorf("swap log head: a verification id of %d bytes", len(l.ID))
		}
	}
	value := encodeHead(next)
	err := s.writes.update(func(tx *bbolt.Tx) error {
		var size int64
		if v := getIn(tx, bucketHead, headKey); len(v) >= 8 {
			size = int64(binary.BigEndian.Uint64(v))
		}
		if size != prevSize {
			return translog.ErrHeadMoved
		}
		return putIn(tx, bucketHead, headKey, value)
	})
	if err != nil {
		return fmt.Errorf("swap log head from %d: %w", prevSize, err)
	}
	return nil
}

var _ translog.BatchCommitter = (*Store)(nil)

// CommitLogBatch implements translog.BatchCommitter: the head, the hashes, the leaves with their
// indices and the pending deletions in one transaction.
func (s *Store) CommitLogBatch(ctx context.Context, prevSize int64, next translog.Head, first int64, hashes []translog.Hash, leaves []translog.Leaf) error {
	next.Batch = nil
	value := encodeHead(next)
	err := s.writes.update(func(tx *bbolt.Tx) error {
		var size int64
		if v := getIn(tx, bucketHead, headKey); len(v) >= 8 {
			size = int64(binary.BigEndian.Uint64(v))
		}
		if size != prevSize {
			return translog.ErrHeadMoved
		}
		if err := putIn(tx, bucketHead, headKey, value); err != nil {
			return err
		}
		if err := putHashes(tx, first, hashes); err != nil {
			return err
		}
		if err := putLeaves(tx, prevSize, leaves); err != nil {
			return err
		}
		ids := make([]string, len(leaves))
		for i, l := range leaves {
			ids[i] = l.ID
		}
		return deletePending(tx, ids)
	})
	if err != nil {
		return fmt.Errorf("commit log batch from %d: %w", prevSize, err)
	}
	return nil
}

func putHashes(tx *bbolt.Tx, start int64, hashes []translog.Hash) error {
	for i, h := range hashes {
		if err := putIn(tx, bucketHashes, u64(start+int64(i)), h[:]); err != nil {
			return err
		}
	}
	return nil
}

func putLeaves(tx *bbolt.Tx, start int64, leaves []translog.Leaf) error {
	for i, l := range leaves {
		at := u64(start + int64(i))
		if err := putIn(tx, bucketLeaves, at, l.Hash[:]); err != nil {
			return err
		}
		if err := putIn(tx, bucketIndexes, []byte(l.ID), at); err != nil {
			return err
		}
	}
	return nil
}

func deletePending(tx *bbolt.Tx, ids []string) error {
	byID, seqs := tx.Bucket(bucketPendingIDs), tx.Bucket(bucketPending)
	if byID == nil || seqs == nil {
		return nil
	}
	for _, id := range ids {
		seq := byID.Get([]byte(id))
		if seq == nil {
			continue
		}
		if err := seqs.Delete(bytes.Clone(seq)); err != nil {
			return err
		}
		if err := byID.Delete([]byte(id)); err != nil {
			return err
		}
	}
	return nil
}

// PutLogHashes implements translog.Storage.
func (s *Store) PutLogHashes(ctx context.Context, start int64, hashes []translog.Hash) error {
	err := s.writes.update(func(tx *bbolt.Tx) error { return putHashes(tx, start, hashes) })
	if err != nil {
		return fmt.Errorf("put log hashes at %d: %w", start, err)
	}
	return nil
}

// ReadLogHashes implements translog.Storage.
func (s *Store) ReadLogHashes(ctx context.Context, indexes []int64) ([]translog.Hash, error) {
	out := make([]translog.Hash, len(indexes))
	err := s.db.View(func(tx *bbolt.Tx) error {
		for i, x := range indexes {
			v := getIn(tx, bucketHashes, u64(x))
			if len(v) != len(out[i]) {
				return fmt.Errorf("hash %d: %w", x, translog.ErrNotFound)
			}
			copy(out[i][:], v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read log hashes: %w", err)
	}
	return out, nil
}

// PutLogLeaves implements translog.Storage.
func (s *Store) PutLogLeaves(ctx context.Context, start int64, leaves []translog.Leaf) error {
	err := s.writes.update(func(tx *bbolt.Tx) error { return putLeaves(tx, start, leaves) })
	if err != nil {
		return fmt.Errorf("put log leaves at %d: %w", start, err)
	}
	return nil
}

// LogLeaves implements translog.Storage.
func (s *Store) LogLeaves(ctx context.Context, start, n int64) ([]translog.Hash, error) {
	out := make([]translog.Hash, n)
	err := s.db.View(func(tx *bbolt.Tx) error {
		for i := range n {
			v := getIn(tx, bucketLeaves, u64(start+i))
			if len(v) != len(out[i]) {
				return fmt.Errorf("leaf %d: %w", start+i, translog.ErrNotFound)
			}
			copy(out[i][:], v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("log leaves: %w", err)
	}
	return out, nil
}

// LogIndexes implements translog.Storage.
func (s *Store) LogIndexes(ctx context.Context, ids []string) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		for _, id := range ids {
			if v := getIn(tx, bucketIndexes, []byte(id)); len(v) == 8 {
				out[id] = int64(binary.BigEndian.Uint64(v))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("log indexes: %w", err)
	}
	return out, nil
}

// PendingLeaves implements translog.Storage, in arrival order.
func (s *Store) PendingLeaves(ctx context.Context, limit int) ([]translog.Leaf, error) {
	var out []translog.Leaf
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketPending)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
			var l translog.Leaf
			if len(v) <= len(l.Hash) {
				return fmt.Errorf("malformed pending leaf %x", k)
			}
			copy(l.Hash[:], v)
			l.ID = string(bytes.Clone(v[len(l.Hash):]))
			out = append(out, l)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pending leaves: %w", err)
	}
	return s.journaledLeaves(out, limit), nil
}

// DeletePendingLeaves implements translog.Storage.
func (s *Store) DeletePendingLeaves(ctx context.Context, ids []string) error {
	if err := s.writes.update(func(tx *bbolt.Tx) error { return deletePending(tx, ids) }); err != nil {
		return fmt.Errorf("delete pending leaves: %w", err)
	}
	s.journalSequenced(ids)
	return nil
}

var _ translog.IdentityKeeper = (*Store)(nil)

// ClaimLogIdentity implements translog.IdentityKeeper: bbolt's one writer makes the read and
// the write one step.
func (s *Store) ClaimLogIdentity(ctx context.Context, id translog.Identity) (translog.Identity, error) {
	if strings.Contains(id.Origin, "\n") || id.Origin == "" || id.VerifierKey == "" {
		return translog.Identity{}, fmt.Errorf("claim log identity: malformed identity %q", id.Origin)
	}
	if err := ctx.Err(); err != nil {
		return translog.Identity{}, fmt.Errorf("claim log identity: %w", err)
	}
	var got translog.Identity
	err := s.writes.update(func(tx *bbolt.Tx) error {
		if v := getIn(tx, bucketHead, identityKey); v != nil {
			origin, key, ok := strings.Cut(string(v), "\n")
			if !ok {
				return errors.New("malformed stored identity")
			}
			got = translog.Identity{Origin: origin, VerifierKey: key}
			return nil
		}
		got = id
		return putIn(tx, bucketHead, identityKey, []byte(id.Origin+"\n"+id.VerifierKey))
	})
	if err != nil {
		return translog.Identity{}, fmt.Errorf("claim log identity: %w", err)
	}
	return got, nil
}
