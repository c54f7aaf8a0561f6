package client

import (
	"crypto/sha256"
	"math/big"
	"testing"
)

// onCurveByEuler is the curve test written out in big integers: y is the low 255 bits of b
// reduced modulo p = 2^255 - 19, and b is on the curve when x^2 = (y^2 - 1) / (d y^2 + 1) is 0
// or a square (Euler's criterion). It is the reference onEd25519Curve is held to.
func onCurveByEuler(b [32]byte) bool {
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	d := new(big.Int).ModInverse(big.NewInt(121666), p)
	d.Mul(d, big.NewInt(-121665)).Mod(d, p)
	le := b
	le[31] &= 0x7f
	for i, j := 0, 31; i < j; i, j = i+1, j-1 {
		le[i], le[j] = le[j], le[i]
	}
	y := new(big.Int).SetBytes(le[:])
	y.Mod(y, p)
	y2 := new(big.Int).Mul(y, y)
	u := new(big.Int).Sub(y2, big.NewInt(1))
	v := new(big.Int).Mul(y2, d)
	v.Add(v, big.NewInt(1)).Mod(v, p)
	x2 := u.Mul(u, v.ModInverse(v, p))
	x2.Mod(x2, p)
	if x2.Sign() == 0 {
		return true
	}
	e := new(big.Int).Rsh(new(big.Int).Sub(p, big.NewInt(1)), 1)
	return new(big.Int).Exp(x2, e, p).Cmp(big.NewInt(1)) == 0
}

// onEd25519Curve agrees with the big-integer reference on hashes (about half of them on the
// curve), with and without the sign bit, and on the edge encodings: y = 0, y = 1 (the identity),
// y = p - 1 and the non-canonical y = p and y = p + 1, which Solana reduces rather than refuses.
func TestOnEd25519CurveMatchesReference(t *testing.T) {
	var cases [][32]byte
	for i := range 512 {
		h := sha256.Sum256([]byte{byte(i), byte(i >> 8)})
		cases = append(cases, h)
		h[31] ^= 0x80
		cases = append(cases, h)
	}
	le := func(n *big.Int) [32]byte {
		var b [32]byte
		n.FillBytes(b[:])
		for i, j := 0, 31; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		return b
	}
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	for _, n := range []*big.Int{big.NewInt(0), big.NewInt(1), new(big.Int).Sub(p, big.NewInt(1)), p, new(big.Int).Add(p, big.NewInt(1))} {
		b := le(n)
		cases = append(cases, b)
		b[31] |= 0x80
		cases = append(cases, b)
	}
	on := 0
	for _, b := range cases {
		want := onCurveByEuler(b)
		if got := onEd25519Curve(b); got != want {
			t.Errorf("onEd25519Curve(%x) = %v, want %v", b, got, want)
		}
		if want {
			on++
		}
	}
	if on == 0 || on == len(cases) {
		t.Fatalf("%d of %d cases on the curve: the cases do not tell the two answers apart", on, len(cases))
	}
}
