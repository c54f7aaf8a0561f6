package reputation

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
)

// sketchBits is the HyperLogLog precision: 2^8 = 256 one-byte registers. The standard error is
// 1.04/√256 ≈ 6.5% for large counts, and small counts (up to a few hundred) are estimated by
// linear counting, which is nearly exact; 256 bytes per sketch keeps the aggregate within one
// DynamoDB write unit or two.
const sketchBits = 8

// sketchSize is the number of registers.
const sketchSize = 1 << sketchBits

// Sketch is a HyperLogLog sketch of distinct strings: an approximate count that takes constant
// space and merges by register-wise maximum, so the same set of strings gives the same sketch
// whatever the order they were added in. A nil Sketch is empty.
type Sketch []byte

// Add counts s. The hash is SHA-256, so sketches are the same on every machine and every run.
func (s *Sketch) Add(v string) {
	if len(*s) == 0 {
		*s = make(Sketch, sketchSize)
	}
	sum := sha256.Sum256([]byte(v))
	x := binary.BigEndian.Uint64(sum[:8])
	idx := x >> (64 - sketchBits)
	rank := byte(min(bits.LeadingZeros64(x<<sketchBits), 64-sketchBits) + 1)
	if rank > (*s)[idx] {
		(*s)[idx] = rank
	}
}

// Estimate is the approximate number of distinct strings added, rounded to an integer.
func (s Sketch) Estimate() int64 {
	if len(s) == 0 {
		return 0
	}
	m := float64(sketchSize)
	sum, zeros := 0.0, 0
	for _, r := range s {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting: accurate for small counts
	}
	return int64(math.Round(e))
}

func (s Sketch) check() error {
	if len(s) != 0 && len(s) != sketchSize {
		return errors.New("sketch has the wrong size")
	}
	for _, r := range s {
		if r > 64-sketchBits+1 {
			return errors.New("sketch register out of range")
		}
	}
	return nil
}
