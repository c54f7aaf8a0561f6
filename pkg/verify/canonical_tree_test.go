package verify

import (
	"bytes"
	"slices"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
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
	tree, err := decodeTree(doc, wire.DefaultLimits.MaxDepth, 0)
	if !jsontext.Value(doc).IsValid() {
		if err == nil && utf8.Valid(doc) {
			t.Fatalf("%q: the tree builder reads what the decoder refuses", doc)
		}
		return
	}
	if err != nil {
		return // beyond the decoder's limits: never hashed
	}
	got, gotErr := wire.AppendCanonicalTree(nil, tree)
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
				if got := wire.UTF16Less(a, b); got != want {
					t.Fatalf("UTF16Less(%q, %q) = %d, want %d", a, b, got, want)
				}
			}
		}
	}
}
