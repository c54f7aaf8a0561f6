package wire

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"
)

// A literal SmallInteger lets through unparsed is exactly what parsing and writing it would give.
func TestSmallInteger(t *testing.T) {
	for _, lit := range []string{"0", "-0", "7", "-7", "10", "999999999999999", "-999999999999999",
		"1000000000000000", "9007199254740993", "01", "-", "", "1.0", "1e2", "0.5", "-01", "1a"} {
		f, err := strconv.ParseFloat(lit, 64)
		exact := err == nil && string(appendES6Number(nil, f)) == lit
		if got := SmallInteger(lit); got && !exact {
			t.Errorf("SmallInteger(%q) = true, but its canonical form is %s", lit, appendES6Number(nil, f))
		}
	}
	for _, lit := range []string{"0", "7", "-7", "999999999999999", "-123456789012345"} {
		if !SmallInteger(lit) {
			t.Errorf("SmallInteger(%q) = false", lit)
		}
	}
}

// PlainASCII's word-at-a-time test answers as the byte-at-a-time one does, at every position and
// length, for the bytes around each boundary.
func TestPlainASCII(t *testing.T) {
	simple := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	edge := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x41, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0xc3, 0xff}
	rng := rand.New(rand.NewPCG(3, 4))
	var plain int
	for range 200000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(8) == 0 {
				b[i] = edge[rng.IntN(len(edge))]
			} else {
				b[i] = byte(0x20 + rng.IntN(0x5f))
			}
		}
		s := string(b)
		want := simple(s)
		if got := PlainASCII(s); got != want {
			t.Fatalf("PlainASCII(%q) = %v, want %v", s, got, want)
		}
		if want {
			plain++
		}
	}
	if plain < 10000 {
		t.Errorf("only %d plain strings drawn", plain)
	}
}

// SpecialBytes' lowest mark is exactly the first byte that ends a string or needs a look, for
// words of bytes around those.
func TestSpecialBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	near := []byte{'"', '\\', 0x1f, 0x20, 0, 0x7f, 0x80, 0xff, 0x21, 0x5b, 0x5d, 0x23, 0xa0, 0x9f}
	for range 300000 {
		var b [8]byte
		first := 8
		for i := range b {
			switch r.IntN(3) {
			case 0:
				b[i] = byte(r.IntN(256))
			case 1:
				b[i] = near[r.IntN(len(near))]
			default:
				b[i] = byte(0x20 + r.IntN(0x60))
			}
			if (b[i] < 0x20 || b[i] == '"' || b[i] == '\\') && first == 8 {
				first = i
			}
		}
		m := SpecialBytes(binary.LittleEndian.Uint64(b[:]))
		if got := bits.TrailingZeros64(m) >> 3; got != first || (m == 0) != (first == 8) {
			t.Fatalf("SpecialBytes(%q) = %#x: first byte %d, want %d", b, m, got, first)
		}
	}
}
