// Package translog is the receipt transparency log of SPEC §15: an append-only Merkle tree with one
// leaf per signed /verify/* answer, its tiles (C2SP tlog-tiles, height 8) and its checkpoints
// (C2SP tlog-checkpoint signed notes). Hashing, tiles and proofs are golang.org/x/mod/sumdb/tlog's,
// signed notes golang.org/x/mod/sumdb/note's: nothing here hashes a tree or checks a proof by hand.
// A leaf is the hash of a signed answer (ReceiptHash), so the log holds no caller data.
package translog

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// TileHeight is the height of the log's tiles (SPEC §15: C2SP tlog-tiles, height 8, 256 hashes a
// tile).
const TileHeight = 8

// MaxBatch bounds the leaves one commit appends. The batch travels inside the tree head until it
// is finished, so the bound keeps the head one small item (under DynamoDB's 400 KB with room to
// spare: about 100 bytes a leaf) and one step's work short; a backlog is taken in several steps.
const MaxBatch = 256

// Hash is a tree hash (tlog's).
type Hash = tlog.Hash

// Leaf is one signed answer waiting for, or holding, its place in the tree.
type Leaf struct {
	ID   string    // the verification id (public: the reputation history lists them)
	Hash tlog.Hash // the receipt hash, the leaf's data
}

// Head is the committed tree head.
type Head struct {
	Size       int64
	Hash       tlog.Hash // the root hash of the tree of Size leaves
	Checkpoint []byte    // the signed checkpoint of that tree
	// Batch is the leaves the last commit appended (indices Size-len(Batch) … Size-1), until the
	// step that committed them, or the next one, has finished writing them; then nil.
	Batch []Leaf
}

// ErrHeadMoved is SwapLogHead's answer when the stored head's size is no longer the one the
// caller read: another sequencer committed first.
var ErrHeadMoved = errors.New("translog: the tree head moved")

// ErrNotFound is a read's answer for something the log does not hold (yet).
var ErrNotFound = errors.New("translog: not found")

// Storage is what the log keeps, as single-item operations; Sequencer's comment says how it uses
// them. Every store implementation runs the same contract tests (store/storetest).
type Storage interface {
	// LogHead returns the committed head; the zero Head when nothing was ever committed.
	LogHead(ctx context.Context) (Head, error)
	// SwapLogHead replaces the head with next if the stored head's size is still prevSize (0 when
	// there is none), and answers ErrHeadMoved (wrapped) otherwise.
	SwapLogHead(ctx context.Context, prevSize int64, next Head) error
	// PutLogHashes writes stored hashes (tlog's storage indexes) from start on.
	PutLogHashes(ctx context.Context, start int64, hashes []tlog.Hash) error
	// ReadLogHashes reads stored hashes; a missing one is ErrNotFound (wrapped).
	ReadLogHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	// PutLogLeaves writes the leaves of indices start… (index → leaf hash, and id → index).
	PutLogLeaves(ctx context.Context, start int64, leaves []Leaf) error
	// LogLeaves reads the leaf hashes of indices start … start+n-1; a missing one is ErrNotFound.
	LogLeaves(ctx context.Context, start, n int64) ([]tlog.Hash, error)
	// LogIndexes returns the indices of those ids that have one.
	LogIndexes(ctx context.Context, ids []string) (map[string]int64, error)
	// PendingLeaves returns up to limit leaves recorded and not yet deleted, oldest first as far
	// as the store can tell.
	PendingLeaves(ctx context.Context, limit int) ([]Leaf, error)
	// DeletePendingLeaves deletes the pending entries of ids; a missing one is no error.
	DeletePendingLeaves(ctx context.Context, ids []string) error
}

// ReceiptHash is a signed response's leaf data: the SHA-256 of its RFC 8785 form.
func ReceiptHash(signedResponse []byte) (tlog.Hash, error) {
	c, err := receipt.Canonicalize(signedResponse)
	if err != nil {
		return tlog.Hash{}, fmt.Errorf("receipt hash: %w", err)
	}
	return sha256.Sum256(c), nil
}

// RecordHash is the tree's level-0 hash of a leaf (RFC 6962's leaf hash of its 32 bytes).
func RecordHash(leaf tlog.Hash) tlog.Hash { return tlog.RecordHash(leaf[:]) }

// overlay is a HashReader that answers some indexes from memory (a batch not yet written) and
// the others from the storage.
type overlay struct {
	ctx   context.Context
	s     Storage
	extra map[int64]tlog.Hash
}

func (o overlay) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	var at []int
	for i, x := range indexes {
		if h, ok := o.extra[x]; ok {
			out[i] = h
			continue
		}
		missing = append(missing, x)
		at = append(at, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	hs, err := o.s.ReadLogHashes(o.ctx, missing)
	if err != nil {
		return nil, err
	}
	if len(hs) != len(missing) {
		return nil, fmt.Errorf("translog: storage returned %d hashes for %d indexes", len(hs), len(missing))
	}
	for j, i := range at {
		out[i] = hs[j]
	}
	return out, nil
}

// appendHashes computes the stored hashes of leaves appended after a tree of size n, reading the
// existing ones through r, and adds them to extra (which r must consult). It returns the first
// new storage index and the new hashes in order.
func appendHashes(n int64, leaves []Leaf, r tlog.HashReader, extra map[int64]tlog.Hash) (int64, []tlog.Hash, error) {
	start := tlog.StoredHashCount(n)
	var all []tlog.Hash
	for i, l := range leaves {
		hs, err := tlog.StoredHashesForRecordHash(n+int64(i), RecordHash(l.Hash), r)
		if err != nil {
			return 0, nil, fmt.Errorf("hash leaf %d: %w", n+int64(i), err)
		}
		base := tlog.StoredHashIndex(0, n+int64(i))
		for j, h := range hs {
			extra[base+int64(j)] = h
		}
		all = append(all, hs...)
	}
	return start, all, nil
}
