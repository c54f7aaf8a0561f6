package verify

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// canonicalTreeSeeds are documents where RFC 8785 is easy to get wrong: number forms around the
// notation switches, negative zero, escapes, and member names that sort differently in UTF-16
// than in UTF-8.
var canonicalTreeSeeds = []string{
	`0`, `-0`, `-0.0`, `1`, `-1`, `10.25`, `1e21`, `1e20`, `123456789012345678901`, `1e-6`, `1e-7`,
	`0.000001`, `0.0000001`, `1.5e-7`, `5e-324`, `1.7976931348623157e308`, `-1.7976931348623157e308`,
	`9007199254740993`, `999999999999999`, `-999999999999999`, `1000000000000000`, `-7`, `0.1`, `1E2`, `1e+2`, `100e-2`, `333333333.33333329`, `1e23`, `4.35`,
	`"a\u0000\u001f\"\\/\b\f\n\r\t\u007f\u2028é😀"`, `"\ud83d\ude00"`,
	`{"\ue000":1,"😀":2,"a":3,"":4,"aa":5,"A":6,"é":7}`,
	`{"b":[{"z":null,"y":true,"x":false}],"a":{"d":[],"c":{}}}`,
	`[1,[2,[3,{"k":"v"}]],"s",null]`,
}

func TestCanonicalTree(t *testing.T) {
	for _, s := range canonicalTreeSeeds {
		checkCanonicalTree(t, []byte(s))
	}
	for _, body := range reportShapes(t) {
		checkCanonicalTree(t, body)
	}
	checkCanonicalTree(t, seedFile(t, "invoice-draft.request.json"))
}

// A literal smallInteger lets through unparsed is exactly what parsing and writing it would give.
func TestSmallInteger(t *testing.T) {
	for _, lit := range []string{"0", "-0", "7", "-7", "10", "999999999999999", "-999999999999999",
		"1000000000000000", "9007199254740993", "01", "-", "", "1.0", "1e2", "0.5", "-01", "1a"} {
		f, err := strconv.ParseFloat(lit, 64)
		exact := err == nil && string(appendES6Number(nil, f)) == lit
		if got := smallInteger(lit); got && !exact {
			t.Errorf("smallInteger(%q) = true, but its canonical form is %s", lit, appendES6Number(nil, f))
		}
	}
	for _, lit := range []string{"0", "7", "-7", "999999999999999", "-123456789012345"} {
		if !smallInteger(lit) {
			t.Errorf("smallInteger(%q) = false", lit)
		}
	}
}

// FuzzCanonicalTree holds the canonical form written from a decoded tree to the general
// canonicalizer reading the same bytes, and the UTF-16 ordering to the one of unicode/utf16.
func FuzzCanonicalTree(f *testing.F) {
	for _, s := range canonicalTreeSeeds {
		f.Add([]byte(s))
	}
	f.Add(seedFile(f, "invoice-draft.request.json"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkCanonicalTree(t, doc)
	})
}

func checkCanonicalTree(t *testing.T, doc []byte) {
	t.Helper()
	if !jsontext.Value(doc).IsValid() {
		return // the engine canonicalizes only members the body's reader has validated
	}
	tree, err := decodeTree(doc, DefaultLimits.MaxDepth, 0)
	if err != nil {
		return // beyond the decoder's limits: never hashed
	}
	got, gotErr := appendCanonicalTree(nil, tree)
	want, wantErr := receipt.Canonicalize(doc)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%q: tree encoder error %v, canonicalizer error %v", doc, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%q:\ntree:          %s\ncanonicalizer: %s", doc, got, want)
	}
	if m, ok := tree.(map[string]any); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		for _, a := range keys {
			for _, b := range keys {
				want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
				if got := utf16Less(a, b); got != want {
					t.Fatalf("utf16Less(%q, %q) = %d, want %d", a, b, got, want)
				}
			}
		}
	}
}
