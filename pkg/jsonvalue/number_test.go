package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestSumFormatting(t *testing.T) {
	for _, c := range []struct {
		lits    []string
		want    string
		intLike bool
	}{
		{[]string{"87.0", "42.5"}, "129.5", false},
		{[]string{"100", "30"}, "130", true},
		{[]string{"100.0", "30"}, "130.0", false},
		{[]string{"1e2", "30"}, "130.0", false},
		{[]string{"-87.0", "42.5"}, "-44.5", false},
		{nil, "0", true},
		{[]string{"0.5", "-0.5"}, "0.0", false},
		{[]string{"1000000000.10", "0.20"}, "1000000000.3", false},
		{[]string{"0.0001"}, "0.0001", false},
		{[]string{"0.00001"}, "1e-05", false},
		{[]string{"0.000015"}, "1.5e-05", false},
		{[]string{"1e15"}, "1000000000000000.0", false},
		{[]string{"9999999999999998.0"}, "9999999999999998.0", false},
		{[]string{"1e16"}, "1e+16", false},
		{[]string{"123456789012345678.5"}, "1.234567890123456785e+17", false},
		{[]string{"1e300"}, "1e+300", false},
		{[]string{"100000000000000000000"}, "100000000000000000000", true},
		{[]string{"0.1", "0.2"}, "0.3", false},
	} {
		var c2 Calc
		var sum, x Decimal
		intLike := true
		for _, l := range c.lits {
			if err := ParseDecimal(l, &x); err != nil {
				t.Fatal(err)
			}
			intLike = intLike && IntegerLiteral(l)
			c2.Add(&sum, &sum, &x)
		}
		if intLike != c.intLike {
			t.Errorf("%v: intLike %v", c.lits, intLike)
		}
		if got := sum.PyString(intLike); got != c.want {
			t.Errorf("sum of %v: got %q, want %q", c.lits, got, c.want)
		}
	}
}

func TestDecimalParsing(t *testing.T) {
	for _, c := range []struct {
		lit  string
		err  error
		want string // coef and exponent, "coef e exp"
	}{
		{"0", nil, "0e0"},
		{"-0", nil, "0e0"},
		{"0.000", nil, "0e0"},
		{"0e999999999999999999999", nil, "0e0"},
		{"135.0", nil, "135e0"},
		{"42.50", nil, "425e-1"},
		{"-1.05", nil, "-105e-2"},
		{"1200", nil, "12e2"},
		{"1E+3", nil, "1e3"},
		{"0.001e3", nil, "1e0"},
		{"1e-300", nil, "1e-300"},
		{"123e300", nil, "123e300"},
		{"1e400", nil, "1e400"},
		{"1e-400", nil, "1e-400"},
		{"1e401", ErrExponent, ""},
		{"1e-401", ErrExponent, ""},
		{"0.00001e-396", ErrExponent, ""},
		{"1e99999999999999999999", ErrExponent, ""},
		{"1" + strings.Repeat("1", MaxDecimalDigits), ErrManyDigits, ""},
		{"1" + strings.Repeat("0", 5000), ErrExponent, ""}, // few digits, but 10^5000
		{"0." + strings.Repeat("0", 5000) + "1", ErrExponent, ""},
		{"1." + strings.Repeat("0", 5000), nil, "1e0"},
		{"01", ErrNotNumber, ""},
		{"1.", ErrNotNumber, ""},
		{".5", ErrNotNumber, ""},
		{"+1", ErrNotNumber, ""},
		{"1e", ErrNotNumber, ""},
		{"NaN", ErrNotNumber, ""},
		{"", ErrNotNumber, ""},
		{"1 ", ErrNotNumber, ""},
	} {
		var d Decimal
		err := ParseDecimal(c.lit, &d)
		if err != c.err {
			t.Errorf("ParseDecimal(%.30q): error %v, want %v", c.lit, err, c.err)
			continue
		}
		if err == nil {
			if got := fmt.Sprintf("%se%d", d.coef.String(), d.exp); got != c.want {
				t.Errorf("ParseDecimal(%q) = %s, want %s", c.lit, got, c.want)
			}
		}
	}
}

func TestDecimalArithmetic(t *testing.T) {
	dec := func(s string) *Decimal {
		var d Decimal
		if err := ParseDecimal(s, &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
	var c Calc
	for _, tc := range []struct {
		x, y string
		cmp  int
	}{
		{"1", "1.0", 0}, {"1.05", "1.1", -1}, {"-1", "-1.5", 1}, {"1e3", "999.999", 1},
		{"1000000000.30", "1000000000.299999999999", 1}, {"0", "-0.0", 0}, {"-2", "1", -1}, {"1e-400", "0", 1},
	} {
		if got := c.Cmp(dec(tc.x), dec(tc.y)); got != tc.cmp {
			t.Errorf("cmp(%s, %s) = %d, want %d", tc.x, tc.y, got, tc.cmp)
		}
	}
	var z Decimal
	c.Sub(&z, dec("1000000000.30"), dec("0.20"))
	if got := z.PyString(false); got != "1000000000.1" {
		t.Errorf("sub = %s", got)
	}
}

func TestValueKeys(t *testing.T) {
	key := func(s string) string {
		var v any
		decodeJSON(t, []byte(s), &v)
		return string(AppendKey(nil, v))
	}
	for _, c := range []struct {
		a, b  string
		equal bool
	}{
		{`1`, `1.0`, true}, {`1`, `1e0`, true}, {`100`, `1e2`, true}, {`0.1`, `1e-1`, true}, {`-0`, `0`, true},
		{`1`, `"1"`, false}, {`0.1`, `0.10000000000000001`, false}, {`1`, `-1`, false},
		{`{"a":1,"b":[1,2]}`, `{"b":[1.0,2],"a":1}`, true}, {`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false}, {`null`, `false`, false}, {`[]`, `{}`, false},
		{`["a,b"]`, `["a","b"]`, false}, {`{"a":"b","c":"d"}`, `{"a":"b\",\"c\":\"d"}`, false},
		{`"é"`, `"\u00e9"`, true}, {`[[1],[2]]`, `[[1,2]]`, false},
	} {
		if got := key(c.a) == key(c.b); got != c.equal {
			t.Errorf("%s == %s: got %v, want %v (%q, %q)", c.a, c.b, got, c.equal, key(c.a), key(c.b))
		}
	}
}

// The int64 fast path and the big.Int path of Calc agree with big.Rat arithmetic on literals of
// every size, including those at the edges of the fast path.
func TestDecimalAgainstRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lit := func() string {
		var b strings.Builder
		if rng.IntN(3) == 0 {
			b.WriteByte('-')
		}
		switch rng.IntN(4) {
		case 0:
			b.WriteString(strconv.FormatUint(rng.Uint64N(1<<62+10), 10)) // around the fast-path limit
		case 1:
			b.WriteString(strconv.Itoa(rng.IntN(1000)))
		default:
			b.WriteString(strconv.FormatUint(rng.Uint64(), 10))
			b.WriteString(strings.Repeat("9", rng.IntN(30)))
		}
		if rng.IntN(2) == 0 {
			b.WriteString("." + strconv.Itoa(rng.IntN(100000)))
		}
		if rng.IntN(2) == 0 {
			b.WriteString("e" + strconv.Itoa(rng.IntN(60)-30))
		}
		return b.String()
	}
	var c Calc
	for i := 0; i < 20000; i++ {
		xs, ys := lit(), lit()
		var x, y, z Decimal
		if ParseDecimal(xs, &x) != nil || ParseDecimal(ys, &y) != nil {
			t.Fatalf("parse %s %s", xs, ys)
		}
		xr, _ := new(big.Rat).SetString(xs)
		yr, _ := new(big.Rat).SetString(ys)
		if got, want := c.Cmp(&x, &y), xr.Cmp(yr); got != want {
			t.Fatalf("cmp(%s, %s) = %d, want %d", xs, ys, got, want)
		}
		c.Add(&z, &x, &y)
		if got, want := z.Rat(), new(big.Rat).Add(xr, yr); got.Cmp(want) != 0 {
			t.Fatalf("%s + %s = %s, want %s", xs, ys, got.RatString(), want.RatString())
		}
		c.Sub(&z, &x, &y)
		if got, want := z.Rat(), new(big.Rat).Sub(xr, yr); got.Cmp(want) != 0 {
			t.Fatalf("%s - %s = %s, want %s", xs, ys, got.RatString(), want.RatString())
		}
		c.Add(&x, &x, &y) // aliasing
		if got, want := x.Rat(), new(big.Rat).Add(xr, yr); got.Cmp(want) != 0 {
			t.Fatalf("aliased %s + %s = %s, want %s", xs, ys, got.RatString(), want.RatString())
		}
	}
}

func TestInexactNumber(t *testing.T) {
	for _, c := range []struct {
		lit     string
		inexact bool
		becomes string
	}{
		{"0.1", false, ""},
		{"0.30000000000000004", false, ""},
		{"135.0", false, ""},
		{"1.0", false, ""},
		{"-0", false, ""},
		{"-0.0e5", false, ""},
		{"1e21", false, ""},
		{"1e23", false, ""},
		{"9007199254740992", false, ""},
		{"9007199254740993", true, "9007199254740992"},
		{"9007199254740994", false, ""},
		{"-9007199254740993", true, "-9007199254740992"},
		{"123456789012345678", true, "123456789012345680"},
		{"1.00000000000000000001", true, "1"},
		{"0.1000000000000000055511151231257827", true, "0.1"},
		{"0.000000000931322574615478515625", true, "9.313225746154785e-10"}, // 2^-30, exact but not shortest
		{"1.7976931348623157e308", false, ""},
		{"5e-324", false, ""},
		{"4.9e-324", true, "5e-324"},
		{"1e-400", true, "0"},
		{"1e400", true, "infinity, beyond double range"},
		{"1e-99999999999999999999", true, "0"},
		{"2.5e-8", false, ""},
		{"12345678901234567", true, "12345678901234568"},
		{"123456789012345", false, ""},
		{"0.1234567890123", false, ""},
		{"-0.000000000001", false, ""},
		{"1E400", true, "infinity, beyond double range"},
		{"1E-400", true, "0"},
		{"1e-4000", true, "0"},
	} {
		inexact, becomes := InexactNumber(c.lit)
		if inexact != c.inexact || becomes != c.becomes {
			t.Errorf("InexactNumber(%q) = %v %q, want %v %q", c.lit, inexact, becomes, c.inexact, c.becomes)
		}
	}
}

// InexactNumber answers as its rule says, computed here with big.Rat, for random literals of up to
// 20 digits: short ones, which it answers without parsing, and longer ones, which it parses.
func TestInexactNumberRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		lit := randomPlainLiteral(rng)
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			t.Fatalf("ParseFloat(%q): %v", lit, err)
		}
		exact, _ := new(big.Rat).SetString(lit)
		shortest, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
		if got, want := func() bool { inexact, _ := InexactNumber(lit); return inexact }(), exact.Cmp(shortest) != 0; got != want {
			t.Errorf("InexactNumber(%q) = %v, want %v", lit, got, want)
		}
	}
}

// randomPlainLiteral is a JSON number without an exponent: up to 20 digits, some of them after a
// point, often with leading zeros after it and an optional sign.
func randomPlainLiteral(rng *rand.Rand) string {
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	lit := strings.TrimLeft(digits(1+rng.IntN(17)), "0")
	if lit == "" || rng.IntN(3) == 0 {
		lit = "0"
	}
	if rng.IntN(2) == 0 {
		lit += "." + strings.Repeat("0", rng.IntN(12)) + digits(1+rng.IntN(8))
	}
	if rng.IntN(2) == 0 {
		lit = "-" + lit
	}
	return lit
}

// TestParseSmall: ParseSmall reads every literal it accepts to the value ParseDecimal reads,
// refuses what splitNumber refuses, and accepts every literal of at most 18 characters.
func TestParseSmall(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lits := []string{"0", "-0", "0.000", "1.50", "01", "1.", ".5", "+1", "1e", "1e+", "-", "", "1 ", "1e99999999999",
		"123456789012345678", "1234567890123456789", "0.000000000000000000000001", "1E-3", "-12.5e2", "100"}
	for range 5000 {
		var b strings.Builder
		if rng.IntN(3) == 0 {
			b.WriteByte('-')
		}
		b.WriteString(strconv.FormatUint(rng.Uint64N(1<<uint(rng.IntN(63)+1)), 10))
		if rng.IntN(2) == 0 {
			b.WriteString("." + strings.Repeat("0", rng.IntN(3)) + strconv.Itoa(rng.IntN(100000)))
		}
		if rng.IntN(3) == 0 {
			b.WriteString("e" + strconv.Itoa(rng.IntN(80)-40))
		}
		lits = append(lits, b.String())
	}
	for _, lit := range lits {
		s, ok := ParseSmall(lit)
		_, valid := splitNumber(lit)
		if !valid {
			if ok {
				t.Errorf("ParseSmall(%q) accepted a literal that is not a JSON number", lit)
			}
			continue
		}
		if !ok {
			if len(lit) <= 18 && !strings.ContainsAny(lit, "eE") {
				t.Errorf("ParseSmall(%q) refused a literal of at most 18 digits", lit)
			}
			continue
		}
		want, _ := new(big.Rat).SetString(lit)
		got := new(big.Rat).SetInt64(s.M)
		if s.E >= 0 {
			got.Mul(got, new(big.Rat).SetInt(pow10(s.E)))
		} else {
			got.Quo(got, new(big.Rat).SetInt(pow10(-s.E)))
		}
		if got.Cmp(want) != 0 {
			t.Errorf("ParseSmall(%q) = %d e%d, want %s", lit, s.M, s.E, want.RatString())
		}
	}
}
