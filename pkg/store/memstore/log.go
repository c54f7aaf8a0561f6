package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

var _ store.ReceiptLog = (*Store)(nil)

// receiptLog is the receipt log's state (SPEC §15), under the store's one lock.
type receiptLog struct {
	records  map[string]store.Receipt
	pending  map[string]pendingLeaf // verification id → its leaf, while not yet deleted
	seq      int64                  // the next pending leaf's arrival number
	head     translog.Head
	hashes   map[int64]translog.Hash // stored hashes by tlog's storage index
	leaves   map[int64]translog.Hash // index → leaf
	indexes  map[string]int64        // verification id → index
	identity *translog.Identity      // nil until claimed
}

type pendingLeaf struct {
	seq  int64
	hash translog.Hash
}

func (l *receiptLog) init() {
	if l.records == nil {
		l.records = map[string]store.Receipt{}
		l.pending = map[string]pendingLeaf{}
		l.hashes = map[int64]translog.Hash{}
		l.leaves = map[int64]translog.Hash{}
		l.indexes = map[string]int64{}
	}
}

// RecordReceipt implements store.ReceiptLog: the record and its pending leaf, under the lock.
func (s *Store) RecordReceipt(ctx context.Context, r store.Receipt) error {
	if err := storekey.CheckID("verification id", r.VerificationID); err != nil {
		return fmt.Errorf("record receipt: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("record receipt %s: %w", r.VerificationID, err)
	}
	defer s.mu.Unlock()
	s.log.init()
	if _, ok := s.log.records[r.VerificationID]; ok {
		return nil
	}
	r.Settlement = append([]byte(nil), r.Settlement...)
	s.log.records[r.VerificationID] = r
	if _, sequenced := s.log.indexes[r.VerificationID]; !sequenced {
		s.log.pending[r.VerificationID] = pendingLeaf{seq: s.log.seq, hash: r.ReceiptHash}
		s.log.seq++
	}
	return nil
}

// Receipt implements store.ReceiptLog; an expired record is gone.
func (s *Store) Receipt(ctx context.Context, id string) (store.Receipt, bool, error) {
	if err := storekey.CheckID("verification id", id); err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt %s: %w", id, err)
	}
	defer s.mu.Unlock()
	r, ok := s.log.records[id]
	if !ok || storekey.Expired(r.Expires.Unix(), s.now()) {
		return store.Receipt{}, false, nil
	}
	r.Settlement = append([]byte(nil), r.Settlement...)
	return r, true, nil
}

// LogHead implements translog.Storage.
func (s *Store) LogHead(ctx context.Context) (translog.Head, error) {
	if err := s.lock(ctx); err != nil {
		return translog.Head{}, fmt.Errorf("log head: %w", err)
	}
	defer s.mu.Unlock()
	h := s.log.head
	h.Checkpoint = slices.Clone(h.Checkpoint)
	h.Batch = slices.Clone(h.Batch)
	return h, nil
}

// SwapLogHead implements translog.Storage.
func (s *Store) SwapLogHead(ctx context.Context, prevSize int64, next translog.Head) error {
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("swap log head: %w", err)
	}
	defer s.mu.Unlock()
	if s.log.head.Size != prevSize {
		return fmt.Errorf("swap log head from %d: %w", prevSize, translog.ErrHeadMoved)
	}
	next.Checkpoint = slices.Clone(next.Checkpoint)
	next.Batch = slices.Clone(next.Batch)
	s.log.head = next
	return nil
}

// PutLogHashes implements translog.Storage.
func (s *Store) PutLogHashes(ctx context.Context, start int64, hashes []translog.Hash) error {
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("put log hashes: %w", err)
	}
	defer s.mu.Unlock()
	s.log.init()
	for i, h := range hashes {
		s.log.hashes[start+int64(i)] = h
	}
	return nil
}

// ReadLogHashes implements translog.Storage.
func (s *Store) ReadLogHashes(ctx context.Context, indexes []int64) ([]translog.Hash, error) {
	if err := s.lock(ctx); err != nil {
		return nil, fmt.Errorf("read log hashes: %w", err)
	}
	defer s.mu.Unlock()
	out := make([]translog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := s.log.hashes[x]
		if !ok {
			return nil, fmt.Errorf("read log hash %d: %w", x, translog.ErrNotFound)
		}
		out[i] = h
	}
	return out, nil
}

// PutLogLeaves implements translog.Storage.
func (s *Store) PutLogLeaves(ctx context.Context, start int64, leaves []translog.Leaf) error {
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("put log leaves: %w", err)
	}
	defer s.mu.Unlock()
	s.log.init()
	for i, l := range leaves {
		s.log.leaves[start+int64(i)] = l.Hash
		s.log.indexes[l.ID] = start + int64(i)
	}
	return nil
}

// LogLeaves implements translog.Storage.
func (s *Store) LogLeaves(ctx context.Context, start, n int64) ([]translog.Hash, error) {
	if err := s.lock(ctx); err != nil {
		return nil, fmt.Errorf("log leaves: %w", err)
	}
	defer s.mu.Unlock()
	out := make([]translog.Hash, 0, n)
	for i := start; i < start+n; i++ {
		h, ok := s.log.leaves[i]
		if !ok {
			return nil, fmt.Errorf("log leaf %d: %w", i, translog.ErrNotFound)
		}
		out = append(out, h)
	}
	return out, nil
}

// LogIndexes implements translog.Storage.
func (s *Store) LogIndexes(ctx context.Context, ids []string) (map[string]int64, error) {
	if err := s.lock(ctx); err != nil {
		return nil, fmt.Errorf("log indexes: %w", err)
	}
	defer s.mu.Unlock()
	out := map[string]int64{}
	for _, id := range ids {
		if i, ok := s.log.indexes[id]; ok {
			out[id] = i
		}
	}
	return out, nil
}

// PendingLeaves implements translog.Storage, in arrival order.
func (s *Store) PendingLeaves(ctx context.Context, limit int) ([]translog.Leaf, error) {
	if err := s.lock(ctx); err != nil {
		return nil, fmt.Errorf("pending leaves: %w", err)
	}
	defer s.mu.Unlock()
	type item struct {
		seq  int64
		leaf translog.Leaf
	}
	all := make([]item, 0, len(s.log.pending))
	for id, p := range s.log.pending {
		all = append(all, item{p.seq, translog.Leaf{ID: id, Hash: p.hash}})
	}
	slices.SortFunc(all, func(a, b item) int { return int(a.seq - b.seq) })
	out := make([]translog.Leaf, 0, min(limit, len(all)))
	for _, it := range all[:min(limit, len(all))] {
		out = append(out, it.leaf)
	}
	return out, nil
}

// DeletePendingLeaves implements translog.Storage.
func (s *Store) DeletePendingLeaves(ctx context.Context, ids []string) error {
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("delete pending leaves: %w", err)
	}
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.log.pending, id)
	}
	return nil
}

var _ translog.IdentityKeeper = (*Store)(nil)

// ClaimLogIdentity implements translog.IdentityKeeper, under the lock.
func (s *Store) ClaimLogIdentity(ctx context.Context, id translog.Identity) (translog.Identity, error) {
	if err := s.lock(ctx); err != nil {
		return translog.Identity{}, fmt.Errorf("claim log identity: %w", err)
	}
	defer s.mu.Unlock()
	if s.log.identity == nil {
		s.log.identity = &id
	}
	return *s.log.identity, nil
}
