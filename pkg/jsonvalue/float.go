package jsonvalue

import (
	"math"
	"math/big"
	"strconv"
)

// ParseFloat is strconv.ParseFloat(lit, 64) for a JSON number literal, bit for bit and error for
// error, in time that grows with the literal's length and not with its value. strconv takes its
// exact slow path for every result below the normal range (5e-324, 1e-310: about a thousand
// times the cost of a normal number), which made a body of subnormals cost seconds; ParseFloat
// computes those results with one integer division instead, and leaves the rest to strconv,
// whose fast path covers them.
func ParseFloat(lit string) (float64, error) {
	p, ok := splitNumber(lit)
	// adj is the decimal exponent of the first digit: below -307 the value is under 1e-307 and
	// may be subnormal; the smallest normal float64 is about 2.2e-308.
	if !ok || p.isZero() || p.huge || p.digits() > strconvDigits || p.exp+p.digits()-1 > -308 {
		return strconv.ParseFloat(lit, 64)
	}
	if p.exp+p.digits()-1 < -324 {
		// Below 1e-324, under half the smallest subnormal (4.9e-324): zero, of the literal's sign.
		if p.neg {
			return math.Copysign(0, -1), nil
		}
		return 0, nil
	}
	n, normal := subnormalBits(p)
	if normal {
		return strconv.ParseFloat(lit, 64)
	}
	f := math.Float64frombits(n)
	if p.neg {
		f = -f
	}
	return f, nil
}

// strconvDigits is how many significant digits strconv's exact path keeps: past them it answers
// 0 for some subnormals that round to a nonzero float64 (a literal of 936 digits near 3.2e-319).
// Hashes and messages must not change, so such literals stay with strconv: they cost one
// slow parse per 800 bytes or more, a per-byte cost in line with the others.
const strconvDigits = 800

// minNormalBits is the bit pattern of the smallest normal float64, 2^-1022: a subnormal's
// significand n counts units of 2^-1074, and n = 2^52 is exactly that number's bits.
const minNormalBits = 1 << 52

// subnormalBits rounds |p| (below 1e-307) to the nearest multiple of 2^-1074, ties to even, and
// returns that multiple, which is also the float64's bit pattern while it is at most 2^52;
// normal is true when it is more, and so the value is a normal number.
func subnormalBits(p numParts) (bits uint64, normal bool) {
	var c, r big.Int
	if p.digits() <= 19 {
		var m uint64
		for i := range p.digits() {
			m = m*10 + uint64(p.digit(i)-'0')
		}
		c.SetUint64(m)
	} else {
		c.SetString(p.hi+p.lo, 10)
	}
	// n = c × 2^1074 / 10^k = c × 2^(1074-k) / 5^k: the smaller divisor costs less.
	k := -p.exp // p.exp < 0: the value is below 1e-307
	den := subnormalPow5(k)
	if k <= 1074 {
		c.Lsh(&c, uint(1074-k))
	} else {
		den = new(big.Int).Lsh(den, uint(k-1074))
	}
	c.QuoRem(&c, den, &r)
	r.Lsh(&r, 1)
	if cmp := r.Cmp(den); cmp > 0 || cmp == 0 && c.Bit(0) == 1 {
		c.Add(&c, big.NewInt(1))
	}
	if !c.IsUint64() || c.Uint64() > minNormalBits {
		return 0, true
	}
	return c.Uint64(), false
}

// Overflows tells whether lit, a JSON number, is beyond float64's range (strconv.ParseFloat
// answers ErrRange), without parsing it where its magnitude already answers.
func Overflows(lit string) bool {
	p, ok := splitNumber(lit)
	if !ok {
		_, err := strconv.ParseFloat(lit, 64)
		return err != nil
	}
	if p.isZero() {
		return false
	}
	if p.huge {
		return p.exp >= 0 // a huge negative exponent underflows to zero, which is no error
	}
	switch adj := p.exp + p.digits() - 1; {
	case adj < 308:
		return false
	case adj > 308:
		return true
	}
	_, err := strconv.ParseFloat(lit, 64) // 1e308 to 1e309: a normal number, strconv's fast path
	return err != nil
}

// subnormalScales holds 5^k for the k a subnormal of up to 36 digits divides by, so that such
// a number costs no power of its own.
var subnormalScales = func() (t [68]*big.Int) {
	for i := range t {
		t[i] = new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(subnormalScaleMin+i)), nil)
	}
	return t
}()

const subnormalScaleMin = 308

// subnormalPow5 is 5^k, shared: the caller must not modify it.
func subnormalPow5(k int) *big.Int {
	if i := k - subnormalScaleMin; i >= 0 && i < len(subnormalScales) {
		return subnormalScales[i]
	}
	return new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(k)), nil)
}
