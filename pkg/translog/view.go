package translog

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// View is the log as the routes read it: the committed head, with its batch overlaid when the
// sequencer has not finished writing it, so that what is published never waits for that.
type View struct {
	Head  Head
	ctx   context.Context
	s     Storage
	extra map[int64]Hash // the unfinished batch's stored hashes
}

// ErrBadTile is Tile's answer for a path that is not a tile of this log's tree (wrong height,
// malformed, or beyond the tree).
var ErrBadTile = errors.New("translog: no such tile")

// Read opens a view of the log at its current head.
func Read(ctx context.Context, s Storage) (*View, error) {
	head, err := s.LogHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("read log head: %w", err)
	}
	v := &View{Head: head, ctx: ctx, s: s, extra: map[int64]Hash{}}
	if len(head.Batch) > 0 {
		start := head.Size - int64(len(head.Batch))
		if _, _, err := appendHashes(start, head.Batch, v.reader(), v.extra); err != nil {
			return nil, fmt.Errorf("read log: %w", err)
		}
	}
	return v, nil
}

func (v *View) reader() overlay { return overlay{ctx: v.ctx, s: v.s, extra: v.extra} }

// Tile returns the tile at path (tlog's layout: "tile/8/0/x001/234", "tile/8/data/000.p/7") and
// whether it is full, and so immutable. A data tile is its leaves' 32-byte hashes, concatenated.
func (v *View) Tile(path string) (data []byte, full bool, err error) {
	t, err := tlog.ParseTilePath(path)
	if err != nil || t.H != TileHeight || t.L > maxTileLevel {
		return nil, false, ErrBadTile
	}
	level := max(t.L, 0)
	// The tile's last entry covers leaves up to (N*256+W) << (level*8); it must be inside the tree.
	if t.N > (v.Head.Size>>(uint(level)*TileHeight))>>TileHeight {
		return nil, false, ErrBadTile
	}
	if (t.N<<TileHeight+int64(t.W))<<(uint(level)*TileHeight) > v.Head.Size {
		return nil, false, ErrBadTile
	}
	full = t.W == 1<<TileHeight
	if t.L >= 0 {
		data, err = tlog.ReadTileData(t, v.reader())
		return data, full, err
	}
	start := t.N << TileHeight
	leaves, err := v.leaves(start, int64(t.W))
	if err != nil {
		return nil, false, err
	}
	data = make([]byte, 0, len(leaves)*tlog.HashSize)
	for _, h := range leaves {
		data = append(data, h[:]...)
	}
	return data, full, nil
}

// maxTileLevel is the highest tile level a tree of 2^63 leaves has (8 levels of 8 bits).
const maxTileLevel = 7

// leaves reads leaf hashes start … start+n-1, the unfinished batch's from the head.
func (v *View) leaves(start, n int64) ([]Hash, error) {
	bstart := v.Head.Size - int64(len(v.Head.Batch))
	stored := min(n, max(bstart-start, 0))
	var out []Hash
	if stored > 0 {
		hs, err := v.s.LogLeaves(v.ctx, start, stored)
		if err != nil {
			return nil, fmt.Errorf("read leaves at %d: %w", start, err)
		}
		out = append(out, hs...)
	}
	for i := start + stored; i < start+n; i++ {
		out = append(out, v.Head.Batch[i-bstart].Hash)
	}
	return out, nil
}

// Inclusion is where a leaf is in the tree, and the proof of it under the view's checkpoint.
type Inclusion struct {
	Index      int64
	TreeSize   int64
	Checkpoint []byte
	Proof      tlog.RecordProof
}

// Prove finds the leaf of verification id and proves its inclusion in the view's tree; ok is
// false while it is pending (or unknown).
func (v *View) Prove(id string) (inc Inclusion, ok bool, err error) {
	index := int64(-1)
	bstart := v.Head.Size - int64(len(v.Head.Batch))
	for i, l := range v.Head.Batch {
		if l.ID == id {
			index = bstart + int64(i)
		}
	}
	if index < 0 {
		got, err := v.s.LogIndexes(v.ctx, []string{id})
		if err != nil {
			return Inclusion{}, false, fmt.Errorf("read index of %s: %w", id, err)
		}
		i, found := got[id]
		if !found || i >= v.Head.Size {
			return Inclusion{}, false, nil
		}
		index = i
	}
	p, err := tlog.ProveRecord(v.Head.Size, index, v.reader())
	if err != nil {
		return Inclusion{}, false, fmt.Errorf("prove leaf %d: %w", index, err)
	}
	return Inclusion{Index: index, TreeSize: v.Head.Size, Checkpoint: v.Head.Checkpoint, Proof: p}, true, nil
}

// ProveTree proves that the tree of oldSize leaves is a prefix of the view's tree.
func (v *View) ProveTree(oldSize int64) (tlog.TreeProof, error) {
	return tlog.ProveTree(v.Head.Size, oldSize, v.reader())
}
