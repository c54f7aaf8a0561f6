package translog

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// CheckInclusion checks that leaf is at index in the tree of a checkpoint signed by the log key
// (note.Open) with tlog.CheckRecord, and returns the checkpoint.
func CheckInclusion(signedCheckpoint []byte, verifierKey string, leaf Hash, index int64, proof tlog.RecordProof) (Checkpoint, error) {
	cp, err := OpenCheckpoint(signedCheckpoint, verifierKey)
	if err != nil {
		return Checkpoint{}, err
	}
	if index < 0 || index >= cp.Size {
		return Checkpoint{}, fmt.Errorf("inclusion: index %d is outside the checkpoint's %d leaves", index, cp.Size)
	}
	if err := tlog.CheckRecord(proof, cp.Size, cp.Hash, index, RecordHash(leaf)); err != nil {
		return Checkpoint{}, fmt.Errorf("inclusion of leaf %d: %w", index, err)
	}
	return cp, nil
}

// maxAuditLeaves bounds the tree an audit rebuilds in memory (about 100 bytes a leaf): beyond it
// an audit is refused rather than exhausting the auditor's memory.
const maxAuditLeaves = 1 << 24

// Audit recomputes the tree of cp from the log's tiles, read through fetch (a tile path, as
// tlog.Tile.Path writes it, to its bytes): every data tile's leaves are hashed into a tree whose
// root must be cp's, and every hash tile the log serves must equal the one recomputed. With from
// (an earlier checkpoint of the same log) it also checks that from's tree is a prefix of cp's
// (tlog.ProveTree / tlog.CheckTree over the recomputed hashes, and from's root recomputed): a
// fork or a rewritten history fails. It returns the leaves, in index order.
func Audit(fetch func(path string) ([]byte, error), cp Checkpoint, from *Checkpoint) ([]Hash, error) {
	if cp.Size > maxAuditLeaves {
		return nil, fmt.Errorf("audit: %d leaves is more than this auditor rebuilds (%d)", cp.Size, maxAuditLeaves)
	}
	if from != nil && (from.Origin != cp.Origin || from.Size > cp.Size) {
		return nil, fmt.Errorf("audit: the earlier checkpoint (%s, %d leaves) is not an earlier state of %s (%d leaves)", from.Origin, from.Size, cp.Origin, cp.Size)
	}
	tiles := tlog.NewTiles(TileHeight, 0, cp.Size)
	leaves := make([]Hash, 0, cp.Size)
	for _, t := range tiles {
		if t.L != 0 {
			continue
		}
		dt := t
		dt.L = -1
		data, err := fetch(dt.Path())
		if err != nil {
			return nil, fmt.Errorf("audit: fetch %s: %w", dt.Path(), err)
		}
		if len(data) != dt.W*tlog.HashSize {
			return nil, fmt.Errorf("audit: %s holds %d bytes, want %d", dt.Path(), len(data), dt.W*tlog.HashSize)
		}
		for i := 0; i < dt.W; i++ {
			var h Hash
			copy(h[:], data[i*tlog.HashSize:])
			leaves = append(leaves, h)
		}
	}
	if int64(len(leaves)) != cp.Size {
		return nil, fmt.Errorf("audit: the data tiles hold %d leaves, the checkpoint %d", len(leaves), cp.Size)
	}
	var stored []Hash
	r := tlog.HashReaderFunc(func(indexes []int64) ([]Hash, error) {
		out := make([]Hash, len(indexes))
		for i, x := range indexes {
			if x < 0 || x >= int64(len(stored)) {
				return nil, fmt.Errorf("audit: hash %d not computed", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, l := range leaves {
		hs, err := tlog.StoredHashesForRecordHash(int64(i), RecordHash(l), r)
		if err != nil {
			return nil, fmt.Errorf("audit: hash leaf %d: %w", i, err)
		}
		stored = append(stored, hs...)
	}
	root, err := tlog.TreeHash(cp.Size, r)
	if err != nil {
		return nil, fmt.Errorf("audit: root: %w", err)
	}
	if root != cp.Hash {
		return nil, fmt.Errorf("audit: the tiles' leaves hash to %s, the checkpoint says %s", root, cp.Hash)
	}
	for _, t := range tiles {
		want, err := tlog.ReadTileData(t, r)
		if err != nil {
			return nil, fmt.Errorf("audit: tile %s: %w", t.Path(), err)
		}
		got, err := fetch(t.Path())
		if err != nil {
			return nil, fmt.Errorf("audit: fetch %s: %w", t.Path(), err)
		}
		if !bytes.Equal(got, want) {
			return nil, fmt.Errorf("audit: tile %s differs from the tree its data tiles make", t.Path())
		}
	}
	if from != nil && from.Size > 0 {
		old, err := tlog.TreeHash(from.Size, r)
		if err != nil {
			return nil, fmt.Errorf("audit: root of the earlier tree: %w", err)
		}
		proof, err := tlog.ProveTree(cp.Size, from.Size, r)
		if err != nil {
			return nil, fmt.Errorf("audit: consistency proof: %w", err)
		}
		if err := tlog.CheckTree(proof, cp.Size, cp.Hash, from.Size, from.Hash); err != nil || old != from.Hash {
			return nil, ErrFork
		}
	}
	return leaves, nil
}

// ErrFork is Audit's answer when the earlier checkpoint's tree is not a prefix of the current
// one: the log forked or rewrote its history.
var ErrFork = errors.New("audit: the earlier checkpoint is not consistent with the current tree (a fork or a rewritten history)")
