package jsonvalue

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// floatCases are literals of every shape around and below the normal range, and random ones.
func floatCases(rng *rand.Rand) []string {
	cases := []string{"5e-324", "-5e-324", "1e-310", "2e-324", "3e-324", "2.4703282292062327e-324",
		"2.4703282292062328e-324", "4.9406564584124654e-324", "2.2250738585072009e-308",
		"2.2250738585072011e-308", "2.2250738585072014e-308", "2.225073858507201e-308", "1e-400", "-1e-400",
		"0.0000000000000000000000000000001e-300", "1e-307", "9.99e-308", "1e308", "1.7976931348623157e308",
		"1.7976931348623158e308", "1.7976931348623159e308", "1e309", "-1e309", "0e999999999999", "1e-999999999999",
		"1e999999999999", "-0", "0", "0.0e-5", "123456789012345678901234567890e-340",
		"0." + strings.Repeat("0", 500) + "1", "1" + strings.Repeat("0", 400), "1" + strings.Repeat("0", 300) + "e-620",
		"1" + strings.Repeat("0", 900) + "e-1210", "1." + strings.Repeat("0", 900) + "e-310",
		"12" + strings.Repeat("0", 798) + "e-1110", "12" + strings.Repeat("0", 799) + "e-1110",
		"0." + strings.Repeat("0", 700) + "3" + strings.Repeat("0", 200) + "e-300"}
	// Exact halfway points between neighbouring subnormals, and one digit either side: ties go to even.
	for _, k := range []int64{0, 1, 2, 3, 1 << 20, 1<<52 - 1, 1 << 52} {
		half := new(big.Rat).SetFrac(big.NewInt(2*k+1), new(big.Int).Lsh(big.NewInt(1), 1075))
		s := half.FloatString(1100)
		s = strings.TrimRight(s, "0")
		cases = append(cases, s, s+"1", s[:len(s)-1])
		// Past strconv's 800 digits, in every place the point can be: halfway points padded
		// with zeros, then a one (just above), and their integer forms.
		long := s + strings.Repeat("0", 100) + "1"
		digits := strings.TrimLeft(strings.ReplaceAll(long, ".", ""), "0")
		cases = append(cases, long, s+strings.Repeat("0", 100),
			fmt.Sprintf("%se-%d", digits, len(long)-2))
		if len(digits) > 850 {
			cases = append(cases, fmt.Sprintf("%s.%se-%d", digits[:850], digits[850:], len(long)-2-len(digits)+850))
		}
	}
	// Long literals with a point before, inside and past strconv's 800 digits, and leading zeros.
	for i := range 400 {
		lead, n := rng.IntN(3)*rng.IntN(300), 780+rng.IntN(220)
		var b strings.Builder
		b.WriteString("0." + strings.Repeat("0", lead))
		for range n {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		frac := strings.TrimPrefix(b.String(), "0.")
		adj := -305 - rng.IntN(22)
		switch i % 3 {
		case 0:
			cases = append(cases, fmt.Sprintf("0.%se%d", frac, adj+lead+1))
		case 1:
			d := strings.TrimLeft(frac, "0")
			if d == "" {
				continue
			}
			cases = append(cases, fmt.Sprintf("%s.%se%d", d[:1], d[1:], adj))
		case 2:
			d := strings.TrimLeft(frac, "0")
			if len(d) < 820 {
				continue
			}
			cases = append(cases, fmt.Sprintf("%s.%se%d", d[:810], d[810:], adj-809))
		}
	}
	for range 3000 {
		digits := 1 + rng.IntN(40)
		if rng.IntN(10) == 0 {
			digits = 1 + rng.IntN(1000)
		}
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(byte('1' + rng.IntN(9)))
		for range digits - 1 {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		fmt.Fprintf(&b, "e%d", -280-rng.IntN(80)-digits)
		cases = append(cases, b.String())
		f := math.Float64frombits(rng.Uint64N(1 << 53)) // subnormals and small normals, shortest form
		cases = append(cases, strconv.FormatFloat(f, 'e', -1, 64), strconv.FormatFloat(f, 'e', 25, 64))
	}
	return cases
}

// ParseFloat agrees with strconv.ParseFloat bit for bit and error for error.
func TestParseFloatMatchesStrconv(t *testing.T) {
	for _, lit := range floatCases(rand.New(rand.NewPCG(1, 2))) {
		got, gerr := ParseFloat(lit)
		want, werr := strconv.ParseFloat(lit, 64)
		if math.Float64bits(got) != math.Float64bits(want) || (gerr == nil) != (werr == nil) ||
			gerr != nil && !errors.Is(gerr, strconv.ErrRange) {
			t.Errorf("ParseFloat(%.60s) = %v, %v; strconv: %v, %v", lit, got, gerr, want, werr)
		}
		// An independent oracle where strconv is exact (see strconvDigits): big.Float's rounding.
		if q, ok := splitNumber(lit); ok && !q.huge && len(lit) <= strconvDigits && gerr == nil {
			bf, _, err := big.ParseFloat(lit, 10, 4000, big.ToNearestEven)
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := bf.Float64(); math.Float64bits(o) != math.Float64bits(got) {
				t.Errorf("ParseFloat(%.60s) = %v, big.Float: %v", lit, got, o)
			}
		}
		_, werrRange := strconv.ParseFloat(lit, 64)
		if Overflows(lit) != (werrRange != nil) {
			t.Errorf("Overflows(%.60s) = %v, strconv says %v", lit, Overflows(lit), werrRange)
		}
	}
}

// numberShapes are bodies of one shape of number each, for the benchmarks: ns per byte must not
// depend on the shape.
var numberShapes = []struct{ name, lit string }{
	{"normal", "123.456"},
	{"normal_exp", "6.02214076e23"},
	{"subnormal_min", "5e-324"},
	{"subnormal", "1e-310"},
	{"subnormal_long", "2.4703282292062328e-324"},
	{"mantissa_1000", "1." + strings.Repeat("7", 999)},
	{"mantissa_1000_subnormal", "1." + strings.Repeat("3", 999) + "e-315"},
	{"exp_huge_pos", "1e999999999999"},
	{"exp_huge_neg", "1e-999999999999"},
	{"exp_400", "1e400"},
	{"exp_-400", "1e-400"},
	{"zeros_before_point", "1" + strings.Repeat("0", 1000)},
	{"zeros_after_point", "0." + strings.Repeat("0", 1000) + "1"},
}

// BenchmarkParseFloatShapes reports ns/byte for each shape (ReportMetric), against strconv for
// the same literal.
func BenchmarkParseFloatShapes(b *testing.B) {
	for _, s := range numberShapes {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				ParseFloat(s.lit)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(s.lit)), "ns/byte")
		})
	}
}

func BenchmarkStrconvShapes(b *testing.B) {
	for _, s := range numberShapes {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				strconv.ParseFloat(s.lit, 64)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(s.lit)), "ns/byte")
		})
	}
}

// Calc.Cmp agrees with big.Rat on random decimals of every magnitude, near and far apart.
func TestCmpMatchesRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lit := func() string {
		digits := 1 + rng.IntN(30)
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(byte('1' + rng.IntN(9)))
		for range digits - 1 {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		fmt.Fprintf(&b, "e%d", rng.IntN(800)-400)
		return b.String()
	}
	var c Calc
	for range 20000 {
		a, b := lit(), lit()
		if rng.IntN(4) == 0 {
			b = a[:len(a)-1] + "1" // the same magnitude, often
		}
		var x, y Decimal
		if ParseDecimal(a, &x) != nil || ParseDecimal(b, &y) != nil {
			continue
		}
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		if got, want := c.Cmp(&x, &y), ra.Cmp(rb); got != want {
			t.Fatalf("Cmp(%s, %s) = %d, big.Rat: %d", a, b, got, want)
		}
	}
}

// The 192-bit path for subnormals of up to 19 digits agrees with the exact division on every k
// it covers, on random mantissas and on 19-digit truncations of halfway points (the hardest
// roundings), and leaves only a few of them to the exact division.
func TestSubnormalBitsFast(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	exact := func(m uint64, k int) uint64 {
		c := new(big.Int).Lsh(new(big.Int).SetUint64(m), 1075)
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
		c.Quo(c, den) // 2n or 2n+1: no exact tie is possible (5^k does not divide m)
		n := new(big.Int).Rsh(c, 1)
		if c.Bit(0) == 1 {
			n.Add(n, big.NewInt(1))
		}
		return n.Uint64()
	}
	var tried, fell int
	check := func(m uint64, k int) {
		tried++
		n, ok := subnormalBitsFast(m, k)
		if !ok {
			fell++
			return
		}
		if want := exact(m, k); n != want {
			t.Fatalf("subnormalBitsFast(%d, %d) = %d, exact %d", m, k, n, want)
		}
	}
	for k := subnormalFastMin; k <= subnormalFastMax; k++ {
		for range 2000 {
			digits := 1 + rng.IntN(19)
			m := rng.Uint64N(uint64(math.Pow10(digits-1))*9) + uint64(math.Pow10(digits-1))
			if adj := digits - 1 - k; adj > -308 || adj < -324 {
				continue
			}
			check(m, k)
		}
	}
	for range 20000 {
		j := rng.Int64N(1 << 52)
		half := new(big.Rat).SetFrac(big.NewInt(2*j+1), new(big.Int).Lsh(big.NewInt(1), 1075))
		s := half.FloatString(1100)
		digits := strings.TrimLeft(strings.ReplaceAll(s, ".", ""), "0")
		lead := len(s) - 2 - len(digits) // zeros after the point before the first digit
		if len(digits) < 19 {
			continue
		}
		m, _ := strconv.ParseUint(digits[:19], 10, 64)
		check(m, lead+19)
		check(m+1, lead+19)
	}
	if fell*1000 > tried {
		t.Errorf("%d of %d subnormals fell back to the exact division", fell, tried)
	}
	t.Logf("%d of %d fell back", fell, tried)
}

// Long subnormals (more than 19 digits, or past strconv's 800) are read from their first 19
// digits nearly always: only those within a unit in the 19th digit of a halfway point are not.
func TestLongSubnormalsTakeTheShortPath(t *testing.T) {
	var long, short int
	for _, lit := range floatCases(rand.New(rand.NewPCG(1, 2))) {
		p, ok := splitNumber(lit)
		if adj := p.exp + p.digits() - 1; !ok || p.isZero() || p.huge || adj > -309 || adj < -324 ||
			p.digits() <= 19 && len(lit) <= strconvDigits {
			continue
		}
		long++
		if _, ok := longSubnormalBits(lit); ok {
			short++
		}
	}
	if long < 500 || short*100 < long*90 {
		t.Errorf("%d of %d long subnormals took the short path", short, long)
	}
}
