package reputation

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"
)

// A Sketch counts distinct strings in constant space. Each string is reduced to a 32-bit hash (the
// first four bytes of its SHA-256, the same on every machine). While it has seen at most
// sketchExact distinct hashes it keeps them, sorted, and counts exactly; past that it turns into a
// HyperLogLog of sketchRegisters one-byte registers (standard error 1.04/√256 ≈ 6.5%), derived
// from the hashes alone. Either form depends only on the set of strings added, never on their
// order, so concurrent writers and a replay of the history build the same bytes.
//
// Encoding: up to sketchExact big-endian uint32 hashes (at most 252 bytes), or exactly
// sketchRegisters register bytes. Both stay small enough to keep the aggregate within a couple of
// DynamoDB write units. A nil Sketch is empty.
type Sketch []byte

const (
	// sketchBits is the HyperLogLog precision: 2^8 registers.
	sketchBits = 8
	// sketchRegisters is the size of the dense form in bytes.
	sketchRegisters = 1 << sketchBits
	// sketchExact is how many distinct hashes the exact form keeps: its encoding (4 bytes each)
	// stays shorter than the dense form's, so the length tells the forms apart.
	sketchExact = sketchRegisters/4 - 1
	// maxRank is the largest register value: 1 + the leading zeros of the 24 hash bits left after
	// the register index.
	maxRank = 32 - sketchBits + 1
)

func hash32(v string) uint32 {
	sum := sha256.Sum256([]byte(v))
	return binary.BigEndian.Uint32(sum[:4])
}

func (s Sketch) dense() bool { return len(s) == sketchRegisters }

// hashes decodes the exact form.
func (s Sketch) hashes() []uint32 {
	out := make([]uint32, len(s)/4)
	for i := range out {
		out[i] = binary.BigEndian.Uint32(s[4*i:])
	}
	return out
}

// setRegister raises the register of h in the dense form s.
func (s Sketch) setRegister(h uint32) {
	idx := h >> (32 - sketchBits)
	rank := byte(min(bits.LeadingZeros32(h<<sketchBits), 32-sketchBits) + 1)
	if rank > s[idx] {
		s[idx] = rank
	}
}

// Add counts v.
func (s *Sketch) Add(v string) {
	h := hash32(v)
	if s.dense() {
		s.setRegister(h)
		return
	}
	hs := s.hashes()
	i, found := slices.BinarySearch(hs, h)
	if found {
		return
	}
	hs = slices.Insert(hs, i, h)
	if len(hs) > sketchExact {
		d := make(Sketch, sketchRegisters)
		for _, h := range hs {
			d.setRegister(h)
		}
		*s = d
		return
	}
	out := make(Sketch, 4*len(hs))
	for i, h := range hs {
		binary.BigEndian.PutUint32(out[4*i:], h)
	}
	*s = out
}

// Estimate is the number of distinct strings added: exact up to sketchExact, approximate beyond.
func (s Sketch) Estimate() int64 {
	if !s.dense() {
		return int64(len(s) / 4)
	}
	m := float64(sketchRegisters)
	sum, zeros := 0.0, 0
	for _, r := range s {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting, the better estimate for small counts
	}
	// Once dense, more than sketchExact distinct strings were certainly added.
	return max(int64(math.Round(e)), sketchExact+1)
}

func (s Sketch) check() error {
	if s.dense() {
		for _, r := range s {
			if r > maxRank {
				return errors.New("sketch register out of range")
			}
		}
		return nil
	}
	if len(s)%4 != 0 || len(s) > 4*sketchExact {
		return errors.New("sketch has a malformed length")
	}
	hs := s.hashes()
	for i := 1; i < len(hs); i++ {
		if hs[i-1] >= hs[i] {
			return errors.New("sketch hashes are not sorted and distinct")
		}
	}
	return nil
}
