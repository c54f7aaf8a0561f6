package jsonvalue

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// This file is the one place where JSON number literals are read. Rules compare and add the
// literals exactly as sent (SPEC §4.3: `1000000000.10 + 0.20` equals `1000000000.30`), so nothing
// here goes through float64 except the check of whether a literal survives float64 at all.

const (
	// MaxDecimalExponent bounds the magnitude of a number the rules compute with: its leading
	// digit must sit within 10^±400. Every finite float64 (and the request decoder accepts no
	// other) lies well inside, while a hostile `1e-999999999` would need a coefficient of a
	// billion digits to line up with an ordinary number.
	MaxDecimalExponent = 400
	// MaxDecimalDigits bounds the significant digits of a number the rules compute with. Far
	// beyond any real amount, and it keeps parsing linear (big.Int parses decimal in quadratic
	// time).
	MaxDecimalDigits = 1000
	// maxExponentLiteral is where reading an exponent stops: anything larger is already far past
	// MaxDecimalExponent and must not overflow an int.
	maxExponentLiteral = 100_000_000
	// maxRatScale is the largest power of ten DecimalOfRat uses as a denominator: a finer rational
	// (a rule's tolerance) is compared as a big.Rat instead.
	maxRatScale = 2 * (MaxDecimalExponent + MaxDecimalDigits)
)

// Why a literal cannot be computed with. The texts complete "number 1e-999 ..." in messages.
var (
	ErrNotNumber  = errors.New("is not a JSON number")
	ErrExponent   = errors.New("has an exponent beyond ±400, too far to compute exactly")
	ErrManyDigits = errors.New("has more than 1000 significant digits, too many to compute exactly")
	errNotDecimal = errors.New("is not a finite decimal")
)

// numParts is a number literal taken apart without arithmetic: its value is
// (-1)^neg × (hi+lo) × 10^exp, where the digit string hi+lo has no leading or trailing zeros
// (empty for zero, which is never negative). hi comes from the integer part, lo from the fraction.
type numParts struct {
	neg    bool
	hi, lo string
	exp    int
	huge   bool // the literal's exponent is too large to hold; exp is meaningless
}

// digits is how many significant digits the number has.
func (p numParts) digits() int { return len(p.hi) + len(p.lo) }

// digit returns the i-th significant digit.
func (p numParts) digit(i int) byte {
	if i < len(p.hi) {
		return p.hi[i]
	}
	return p.lo[i-len(p.hi)]
}

// isZero tells whether the number is zero.
func (p numParts) isZero() bool { return p.hi == "" && p.lo == "" && !p.huge }

// check says whether the number is small enough to compute with (see MaxDecimalExponent).
func (p numParts) check() error {
	switch {
	case p.isZero():
		return nil
	case p.huge:
		return ErrExponent
	case p.digits() > MaxDecimalDigits:
		return ErrManyDigits
	}
	if adj := p.exp + p.digits() - 1; adj > MaxDecimalExponent || adj < -MaxDecimalExponent {
		return ErrExponent
	}
	return nil
}

// splitNumber takes a literal apart following the JSON number grammar exactly; ok is false for
// anything else. It does not allocate.
func splitNumber(s string) (p numParts, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		p.neg = true
		i++
	}
	intStart := i
	for i < len(s) && isDecimalDigit(s[i]) {
		i++
	}
	intEnd := i
	if intEnd == intStart || (s[intStart] == '0' && intEnd-intStart > 1) {
		return numParts{}, false
	}
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && isDecimalDigit(s[i]) {
			i++
		}
		fracEnd = i
		if fracEnd == fracStart {
			return numParts{}, false
		}
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		start := i
		for i < len(s) && isDecimalDigit(s[i]) {
			if exp < maxExponentLiteral {
				exp = exp*10 + int(s[i]-'0')
			} else {
				p.huge = true
			}
			i++
		}
		if i == start {
			return numParts{}, false
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return numParts{}, false
	}
	hi := strings.TrimLeft(s[intStart:intEnd], "0")
	frac := s[fracStart:fracEnd]
	lo := frac
	if hi == "" {
		lo = strings.TrimLeft(frac, "0")
	}
	exp -= len(frac)
	if t := strings.TrimRight(lo, "0"); len(t) < len(lo) {
		exp += len(lo) - len(t)
		lo = t
	}
	if lo == "" {
		t := strings.TrimRight(hi, "0")
		exp += len(hi) - len(t)
		hi = t
	}
	p.hi, p.lo, p.exp = hi, lo, exp
	if hi == "" && lo == "" {
		return numParts{}, true // zero, whatever its sign or exponent
	}
	return p, true
}

func isDecimalDigit(c byte) bool { return c >= '0' && c <= '9' }

// Decimal is an exact number: coef × 10^exp. The zero value is 0.
type Decimal struct {
	coef big.Int
	exp  int
}

// ParseDecimal reads a literal into d exactly, or says why it will not compute with it. This is
// the one entry point from json.Number to arithmetic.
func ParseDecimal(lit string, d *Decimal) error {
	p, ok := splitNumber(lit)
	if !ok {
		return ErrNotNumber
	}
	if err := p.check(); err != nil {
		return err
	}
	d.exp = p.exp
	if n := p.digits(); n <= 18 {
		var u uint64
		for i := 0; i < n; i++ {
			u = u*10 + uint64(p.digit(i)-'0')
		}
		d.coef.SetUint64(u)
	} else {
		d.coef.SetString(p.hi+p.lo, 10)
	}
	if p.neg {
		d.coef.Neg(&d.coef)
	}
	return nil
}

// IntegerLiteral tells whether a literal is written as an integer (no fraction, no exponent), the
// way Python's json module decides between int and float; the seed's sums are printed by that rule.
func IntegerLiteral(lit string) bool { return !strings.ContainsAny(lit, ".eE") }

// pow10s holds 10^0 … 10^63, the alignments ordinary amounts need.
var pow10s = func() (t [64]*big.Int) {
	ten := big.NewInt(10)
	t[0] = big.NewInt(1)
	for i := 1; i < len(t); i++ {
		t[i] = new(big.Int).Mul(t[i-1], ten)
	}
	return t
}()

// pow10 returns 10^k (k ≥ 0). The result is shared and must not be modified.
func pow10(k int) *big.Int {
	if k < len(pow10s) {
		return pow10s[k]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
}

// Calc does decimal arithmetic with one scratch integer, so that a rule evaluated over many values
// allocates only while its numbers grow.
type Calc struct{ tmp big.Int }

// Add sets z = x + y. z may be x or y.
func (c *Calc) Add(z, x, y *Decimal) { c.combine(z, x, y, false) }

// Sub sets z = x − y. z may be x or y.
func (c *Calc) Sub(z, x, y *Decimal) { c.combine(z, x, y, true) }

func (c *Calc) combine(z, x, y *Decimal, minus bool) {
	if a, b, e, ok := aligned64(x, y); ok {
		if minus {
			b = -b
		}
		z.coef.SetInt64(a + b) // |a|, |b| < 2^62: no overflow
		z.exp = e
		return
	}
	op := (*big.Int).Add
	if minus {
		op = (*big.Int).Sub
	}
	switch {
	case x.exp == y.exp:
		op(&z.coef, &x.coef, &y.coef)
		z.exp = x.exp
	case x.exp > y.exp:
		c.tmp.Mul(&x.coef, pow10(x.exp-y.exp))
		op(&z.coef, &c.tmp, &y.coef)
		z.exp = y.exp
	default:
		c.tmp.Mul(&y.coef, pow10(y.exp-x.exp))
		op(&z.coef, &x.coef, &c.tmp)
		z.exp = x.exp
	}
}

// Cmp compares x and y: -1, 0 or +1.
func (c *Calc) Cmp(x, y *Decimal) int {
	if a, b, _, ok := aligned64(x, y); ok {
		return cmp.Compare(a, b)
	}
	switch {
	case x.exp == y.exp:
		return x.coef.Cmp(&y.coef)
	case x.coef.Sign() != y.coef.Sign():
		return cmp.Compare(x.coef.Sign(), y.coef.Sign())
	}
	if c, ok := cmpMagnitude(x, y); ok {
		return c * x.coef.Sign()
	}
	switch {
	case x.exp > y.exp:
		c.tmp.Mul(&x.coef, pow10(x.exp-y.exp))
		return c.tmp.Cmp(&y.coef)
	default:
		c.tmp.Mul(&y.coef, pow10(y.exp-x.exp))
		return x.coef.Cmp(&c.tmp)
	}
}

// cmpMagnitude compares |x| and |y|, both nonzero, by their orders of magnitude alone when those
// are more than one decade apart (5e-324 against 1), so that such a comparison costs no power of
// ten: each |v| lies in [2^(bits-1), 2^bits) × 10^exp, and the margin covers the float rounding.
func cmpMagnitude(x, y *Decimal) (int, bool) {
	lo := func(d *Decimal) float64 { return float64(d.coef.BitLen()-1)*math.Log10(2) + float64(d.exp) }
	hi := func(d *Decimal) float64 { return float64(d.coef.BitLen())*math.Log10(2) + float64(d.exp) }
	switch {
	case hi(x)+1 < lo(y):
		return -1, true
	case hi(y)+1 < lo(x):
		return 1, true
	}
	return 0, false
}

// aligned64 is the fast path of Calc for ordinary amounts: x and y brought to their common
// exponent e as int64 coefficients, when both fit with room to add (below 2^62 in magnitude).
func aligned64(x, y *Decimal) (a, b int64, e int, ok bool) {
	if !x.coef.IsInt64() || !y.coef.IsInt64() {
		return 0, 0, 0, false
	}
	e = min(x.exp, y.exp)
	if a, ok = scale64(x.coef.Int64(), x.exp-e); !ok {
		return 0, 0, 0, false
	}
	if b, ok = scale64(y.coef.Int64(), y.exp-e); !ok {
		return 0, 0, 0, false
	}
	return a, b, e, true
}

// scale64 returns v × 10^k when its magnitude stays below 2^62.
func scale64(v int64, k int) (int64, bool) {
	const limit = 1 << 62
	if k >= len(pow10u64) || v <= -limit || v >= limit {
		return 0, false
	}
	m := uint64(v)
	if v < 0 {
		m = uint64(-v)
	}
	hi, lo := bits.Mul64(m, pow10u64[k])
	if hi != 0 || lo >= limit {
		return 0, false
	}
	if v < 0 {
		return -int64(lo), true
	}
	return int64(lo), true
}

// pow10u64 holds 10^0 … 10^18.
var pow10u64 = func() (t [19]uint64) {
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 10
	}
	return t
}()

// Rat is d as a big.Rat, for the rare comparison with a tolerance that is not a decimal.
func (d *Decimal) Rat() *big.Rat {
	num := new(big.Int).Set(&d.coef)
	den := big.NewInt(1)
	if d.exp >= 0 {
		num.Mul(num, pow10(d.exp))
	} else {
		den.Set(pow10(-d.exp))
	}
	return new(big.Rat).SetFrac(num, den)
}

// DecimalOfRat writes r as coef × 10^-k when its denominator divides a power of ten of manageable
// size.
func DecimalOfRat(r *big.Rat) (*Decimal, error) {
	den := new(big.Int).Set(r.Denom())
	twos := int(den.TrailingZeroBits())
	den.Rsh(den, uint(twos))
	fives := 0
	five := big.NewInt(5)
	var q, m big.Int
	for den.Cmp(big.NewInt(1)) != 0 && fives <= maxRatScale {
		q.QuoRem(den, five, &m)
		if m.Sign() != 0 {
			return nil, errNotDecimal
		}
		den.Set(&q)
		fives++
	}
	k := max(twos, fives)
	if den.Cmp(big.NewInt(1)) != 0 || k > maxRatScale {
		return nil, errNotDecimal
	}
	d := &Decimal{exp: -k}
	d.coef.Mul(r.Num(), pow10(k))
	d.coef.Quo(&d.coef, r.Denom())
	return d, nil
}

// PyString formats d the way the seed's messages show numbers, which is how Python prints what
// its json module decoded: intLike (every operand was an integer literal) prints all digits of
// the integer ("130"); otherwise the repr of a float, but with exact digits: at least one
// fractional digit ("130.0", "129.5"), and exponent notation when the decimal point would sit more
// than 16 places right or 4 places left of the first digit ("1e+16", "1.5e-05").
//
// It writes on the stack and allocates the answer alone (a sum_equals failure writes one).
func (d *Decimal) PyString(intLike bool) string {
	var dbuf, obuf [64]byte
	var digits []byte
	if d.coef.IsInt64() {
		digits = strconv.AppendInt(dbuf[:0], d.coef.Int64(), 10) // big.Int's own writing allocates
	} else {
		digits = d.coef.Append(dbuf[:0], 10)
	}
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	t := bytes.TrimRight(digits, "0")
	if len(t) == 0 {
		if intLike {
			return "0"
		}
		return "0.0"
	}
	exp := d.exp + len(digits) - len(t)
	digits = t
	b := obuf[:0]
	if neg {
		b = append(b, '-')
	}
	if intLike && exp >= 0 {
		return string(appendZeros(append(b, digits...), exp))
	}
	decpt := len(digits) + exp // the decimal point sits after this many digits
	switch {
	case decpt > 16 || decpt <= -4:
		b = append(b, digits[0])
		if len(digits) > 1 {
			b = append(append(b, '.'), digits[1:]...)
		}
		e := decpt - 1
		b = append(b, 'e')
		if e < 0 {
			b = append(b, '-')
			e = -e
		} else {
			b = append(b, '+')
		}
		if e < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendInt(b, int64(e), 10)
	case decpt <= 0:
		b = append(appendZeros(append(b, "0."...), -decpt), digits...)
	case decpt < len(digits):
		b = append(append(append(b, digits[:decpt]...), '.'), digits[decpt:]...)
	default:
		b = append(appendZeros(append(b, digits...), decpt-len(digits)), ".0"...)
	}
	return string(b)
}

// appendZeros appends n zeros.
func appendZeros(b []byte, n int) []byte {
	for range n {
		b = append(b, '0')
	}
	return b
}

// appendNumberKey appends the canonical form of a number literal for equality (exists_in,
// unique): equal exact values give equal keys (1, 1.0, 1e0 and 10e-1 all give "#1e0;"). A literal
// whose exponent does not fit is keyed by its own text.
func appendNumberKey(b []byte, lit string) []byte {
	p, ok := splitNumber(lit)
	if !ok || p.huge {
		b = append(b, "#?"...)
		b = append(b, lit...)
		return append(b, ';')
	}
	b = append(b, '#')
	if p.neg {
		b = append(b, '-')
	}
	b = append(b, p.hi...)
	b = append(b, p.lo...)
	b = append(b, 'e')
	b = strconv.AppendInt(b, int64(p.exp), 10)
	return append(b, ';')
}

// InexactNumber tells whether a literal does not survive IEEE-754 double precision, and if so what
// it becomes. The rule: parse the literal to the nearest float64, write that float64 in its
// shortest round-trip form (as RFC 8785 serializes it), and compare the exact decimal values of
// the two. They differ for 9007199254740993 (→ 9007199254740992), for more than 17 significant
// digits, and for values that underflow (1e-400 → 0); they agree for 0.1 (→ 0.1) and 1.0 (→ 1),
// whose hashes are faithful even though 0.1 is not exactly a binary fraction.
func InexactNumber(lit string) (inexact bool, becomes string) {
	// A literal of at most 15 characters and no exponent has at most 15 significant digits and
	// sits within 10^±15, where the test below always answers exact: nearly every number an
	// output holds is answered without taking it apart.
	if len(lit) <= 15 && !hasExponent(lit) {
		return false, ""
	}
	p, ok := splitNumber(lit)
	if !ok || p.isZero() {
		return false, ""
	}
	// Up to 15 significant digits survive in the normal range (DBL_DIG), which covers nearly
	// every real number without parsing a float.
	if adj := p.exp + p.digits() - 1; !p.huge && p.digits() <= 15 && adj >= -300 && adj <= 300 {
		return false, ""
	}
	f, err := ParseFloat(lit)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return false, ""
	}
	q, ok := splitNumber(strconv.FormatFloat(f, 'e', -1, 64))
	if ok && !p.huge && q.neg == p.neg && q.exp == p.exp && q.digits() == p.digits() {
		same := true
		for i := 0; i < p.digits() && same; i++ {
			same = p.digit(i) == q.digit(i)
		}
		if same {
			return false, ""
		}
	}
	return true, esNumber(f)
}

// hasExponent tells whether a literal has an exponent part ('e' or 'E').
func hasExponent(lit string) bool {
	for i := 0; i < len(lit); i++ {
		if lit[i]|0x20 == 'e' {
			return true
		}
	}
	return false
}

// esNumber writes f as ECMAScript (and so RFC 8785) does, for messages.
func esNumber(f float64) string {
	if math.IsInf(f, 0) {
		return "infinity, beyond double range"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-7 && a < 1e21) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	// Go pads the exponent to two digits ("1e-07"); ECMAScript does not ("1e-7").
	if i := strings.IndexByte(s, 'e'); i >= 0 && len(s) > i+3 && s[i+2] == '0' {
		s = s[:i+2] + s[i+3:]
	}
	return s
}

// CheckNumber tells whether lit is a JSON number the rules can compute with exactly: nil, or why
// not (ErrNotNumber, ErrExponent, ErrManyDigits).
func CheckNumber(lit string) error {
	p, ok := splitNumber(lit)
	if !ok {
		return ErrNotNumber
	}
	return p.check()
}

// Set sets d to x.
func (d *Decimal) Set(x *Decimal) { d.coef.Set(&x.coef); d.exp = x.exp }

// SetZero sets d to 0, keeping its storage.
func (d *Decimal) SetZero() { d.coef.SetInt64(0); d.exp = 0 }

// Sign is -1, 0 or +1.
func (d *Decimal) Sign() int { return d.coef.Sign() }

// Abs sets d to |d|.
func (d *Decimal) Abs() { d.coef.Abs(&d.coef) }

// Small is an exact decimal M × 10^E held in an int64: the form most literals fit, read without
// allocating (the schema evaluator compares every number of an output with its bounds this way).
type Small struct {
	M int64
	E int
}

// ParseSmall reads lit as a Small; ok is false when lit is not a JSON number or has more than 18
// digits after its leading zeros or an exponent too large to hold, and the caller computes with
// big.Rat. It follows splitNumber's grammar in one pass, without normalizing (1.50 is 150×10^-2),
// since the evaluator reads every number of an output with it (TestParseSmall holds the two to
// the same values).
func ParseSmall(lit string) (s Small, ok bool) {
	i, neg := 0, false
	if i < len(lit) && lit[i] == '-' {
		neg = true
		i++
	}
	var m int64
	digits, e := 0, 0
	add := func(c byte) bool {
		if m == 0 && c == '0' {
			return true
		}
		if digits == 18 {
			return false
		}
		m = m*10 + int64(c-'0')
		digits++
		return true
	}
	start := i
	for ; i < len(lit) && isDecimalDigit(lit[i]); i++ {
		if !add(lit[i]) {
			return Small{}, false
		}
	}
	if i == start || (lit[start] == '0' && i-start > 1) {
		return Small{}, false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		frac := i
		for ; i < len(lit) && isDecimalDigit(lit[i]); i++ {
			if !add(lit[i]) {
				return Small{}, false
			}
			e--
		}
		if i == frac {
			return Small{}, false
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		x, from := 0, i
		for ; i < len(lit) && isDecimalDigit(lit[i]); i++ {
			if x >= maxExponentLiteral {
				return Small{}, false
			}
			x = x*10 + int(lit[i]-'0')
		}
		if i == from {
			return Small{}, false
		}
		if eneg {
			x = -x
		}
		e += x
	}
	if i != len(lit) {
		return Small{}, false
	}
	if m == 0 {
		return Small{}, true
	}
	if neg {
		m = -m
	}
	return Small{M: m, E: e}, true
}

// AlignSmall brings a and b to their smaller exponent; ok is false when a coefficient would
// leave the int64 fast path.
func AlignSmall(a, b Small) (am, bm int64, ok bool) {
	e := min(a.E, b.E)
	if am, ok = scale64(a.M, a.E-e); !ok {
		return 0, 0, false
	}
	if bm, ok = scale64(b.M, b.E-e); !ok {
		return 0, 0, false
	}
	return am, bm, true
}

// CmpSmall compares a and b: -1, 0 or +1; ok is false when they cannot be aligned in int64.
func CmpSmall(a, b Small) (c int, ok bool) {
	am, bm, ok := AlignSmall(a, b)
	return cmp.Compare(am, bm), ok
}

// IsInteger tells whether s is a whole number.
func (s Small) IsInteger() bool {
	switch {
	case s.E >= 0:
		return true
	case -s.E >= len(pow10u64):
		return s.M == 0 // |M| < 10^18: a smaller power of ten never divides it unless it is 0
	}
	return s.M%int64(pow10u64[-s.E]) == 0
}
