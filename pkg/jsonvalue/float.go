package jsonvalue

import (
	"math"
	"math/big"
	"math/bits"
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
	if !ok || p.isZero() || p.huge || p.exp+p.digits()-1 > -308 {
		return strconv.ParseFloat(lit, 64)
	}
	if long := len(lit) > strconvDigits; p.digits() > 19 || long {
		// Read as strconv reads it: its first 800 digits, and where it places the point. A long
		// literal from 1e-308 up may be a normal number, which strconv reads right: it decides.
		if n, ok := longSubnormalBits(lit); ok && (!long || p.exp+p.digits()-1 < -308) {
			f := math.Float64frombits(n)
			if p.neg {
				f = -f
			}
			return f, nil
		}
		if len(lit) > strconvDigits {
			return strconv.ParseFloat(lit, 64)
		}
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

// strconvDigits is how many digits strconv's exact path keeps. Past them it misreads some
// subnormals: the decimal point of a literal whose digits run past the 800th (trailing zeros
// count) is placed as if they stopped there, so "1" + 900 zeros + "e-1210" reads as 0, and a
// literal of 936 digits near 3.2e-319 as well. Hashes must match what any Go verifier computes,
// so literals longer than this stay with strconv: they cost one slow parse per 800 bytes or
// more, a per-byte cost in line with the others (see BenchmarkRespondNumberShapes).
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
		if n, ok := subnormalBitsFast(m, -p.exp); ok {
			return n, n > minNormalBits
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

// subnormalScale is 2^1074 / 10^k as a 128-bit mantissa and a shift: m × 10^-k is
// m × mant / 2^shift units of 2^-1074, less than m units of 2^-shift too small, since mant is
// rounded down.
type subnormalScale struct {
	hi, lo uint64
	shift  uint
}

// subnormalFastMin and subnormalFastMax bound the k of a subnormal of up to 19 digits.
const subnormalFastMin, subnormalFastMax = 308, 342

var subnormalFast = func() (t [subnormalFastMax - subnormalFastMin + 1]subnormalScale) {
	two1074 := new(big.Int).Lsh(big.NewInt(1), 1074)
	for i := range t {
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(subnormalFastMin+i)), nil)
		// The shift that gives the quotient exactly 128 bits.
		shift := uint(128 - (new(big.Int).Quo(two1074, den).BitLen()))
		mant := new(big.Int).Quo(new(big.Int).Lsh(two1074, shift), den)
		for mant.BitLen() > 128 {
			shift--
			mant.Quo(new(big.Int).Lsh(two1074, shift), den)
		}
		for mant.BitLen() < 128 {
			shift++
			mant.Quo(new(big.Int).Lsh(two1074, shift), den)
		}
		lo := new(big.Int).And(mant, new(big.Int).SetUint64(math.MaxUint64))
		t[i] = subnormalScale{hi: new(big.Int).Rsh(mant, 64).Uint64(), lo: lo.Uint64(), shift: shift}
	}
	return t
}()

// subnormalBitsFast rounds m × 10^-k to units of 2^-1074 with 192-bit integer arithmetic, the way
// Eisel and Lemire read normal numbers: the product is exact but for the truncated scale, and
// ok is false only when that error could change the rounding (then the exact division decides).
// No exact tie can occur: m × 2^1075 / 10^k is never an odd integer, as 5^k does not divide m.
func subnormalBitsFast(m uint64, k int) (n uint64, ok bool) {
	if k < subnormalFastMin || k > subnormalFastMax {
		return 0, false
	}
	s := subnormalFast[k-subnormalFastMin]
	a1, a0 := bits.Mul64(m, s.lo)
	b1, b0 := bits.Mul64(m, s.hi)
	w1, carry := bits.Add64(a1, b0, 0)
	w := [3]uint64{a0, w1, b1 + carry}
	t := s.shift // 77 to 190 over the table: the quotient is under 2^64
	// The true product lies in [P, P+m): the rounding is known unless the bits below the
	// half-unit, plus m, can reach it. Bits 64 to t-2 all ones, and a carry out of the low word
	// when m is added to it, is the only way.
	if low := t - 1 - 64; allOnes(w[1], w[2], low) {
		if _, c := bits.Add64(w[0], m, 0); c != 0 {
			return 0, false
		}
	}
	n = shr192(w, t)
	if shr192(w, t-1)&1 == 1 {
		n++
	}
	return n, true
}

// shr192 is the low 64 bits of w >> s, w a 192-bit number in little-endian words, s < 192.
func shr192(w [3]uint64, s uint) uint64 {
	q, r := s/64, s%64
	v := w[q] >> r
	if r != 0 && q+1 < 3 {
		v |= w[q+1] << (64 - r)
	}
	return v
}

// allOnes tells whether the low n bits of the 128-bit number hi:lo are all ones.
func allOnes(lo, hi uint64, n uint) bool {
	if n <= 64 {
		mask := uint64(1)<<n - 1
		return lo&mask == mask
	}
	mask := uint64(1)<<(n-64) - 1
	return lo == math.MaxUint64 && hi&mask == mask
}

// longSubnormalBits rounds a subnormal literal of more than 19 digits from its first 19 without
// big arithmetic: the value lies between those digits and the same plus one unit in their last
// place, and when both ends round alike, so does everything between. It reads the digits as
// strconv's exact path does (see strconvDigits), so that the answer is strconv's even where
// strconv misplaces the point. ok is false when the ends round apart, or the result is not a
// subnormal; the caller then computes exactly.
func longSubnormalBits(lit string) (n uint64, ok bool) {
	var m uint64
	nd, dp, prefix := 0, 0, 0 // digits strconv keeps, its decimal point, digits in m
	sawDot, end := false, len(lit)
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		switch {
		case c == '-':
			continue
		case c == '.':
			sawDot, dp = true, nd
			continue
		case c == 'e' || c == 'E':
			end = i
		case c == '0' && nd == 0:
			dp-- // a leading zero
			continue
		case nd < strconvDigits:
			if prefix < 19 {
				m = m*10 + uint64(c-'0')
				prefix++
			}
			nd++
			continue
		default:
			continue // past strconv's digits: only whether one is nonzero, which m+1 covers
		}
		break
	}
	if !sawDot {
		dp = nd
	}
	if end < len(lit) {
		e, err := strconv.Atoi(lit[end+1:])
		if err != nil || e > 10000 || e < -10000 {
			return 0, false
		}
		dp += e
	}
	// The value is m × 10^(dp-prefix), plus less than one unit when digits follow m.
	k := prefix - dp
	if dp-1 < -324 {
		return 0, true // below 1e-324: zero, as strconv and the exact value agree
	}
	lo, ok := subnormalBitsFast(m, k)
	if !ok || lo >= minNormalBits {
		return 0, false
	}
	if nd > prefix {
		hi, ok := subnormalBitsFast(m+1, k)
		if !ok || hi != lo {
			return 0, false
		}
	}
	return lo, true
}
