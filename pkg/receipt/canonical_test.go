package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// canonicalCase is one entry of testdata/canonical-cases.json: a JSON text and its RFC 8785 form.
type canonicalCase struct {
	Name  string `json:"name"`
	Input string `json:"input"`
	Want  string `json:"want"`
}

func canonicalCases(t testing.TB) []canonicalCase {
	t.Helper()
	var cases []canonicalCase
	if err := json.Unmarshal(readFile(t, filepath.Join("testdata", "canonical-cases.json")), &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestCanonicalCases checks the fast path and gowebpki/jcs against the expected canonical form of
// each tricky input: numbers, escapes, surrogates, UTF-16 key order, nesting.
func TestCanonicalCases(t *testing.T) {
	for _, c := range canonicalCases(t) {
		got, err := Canonicalize([]byte(c.Input))
		if err != nil {
			t.Errorf("%s: Canonicalize: %v", c.Name, err)
		} else if string(got) != c.Want {
			t.Errorf("%s: Canonicalize:\n got %s\nwant %s", c.Name, got, c.Want)
		}
		ref, err := jcs.Transform([]byte(c.Input))
		if err != nil {
			t.Errorf("%s: jcs: %v", c.Name, err)
		} else if string(ref) != c.Want {
			t.Errorf("%s: jcs:\n got %s\nwant %s", c.Name, ref, c.Want)
		}
		again, err := Canonicalize(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Errorf("%s: canonical form is not a fixed point: %s", c.Name, again)
		}
	}
}

// rejectedInputs are documents both canonicalizers must refuse: RFC 8785 cannot represent them,
// or two readers could see different values in them.
var rejectedInputs = []struct{ name, input string }{
	{"duplicate name", `{"a":1,"a":2}`},
	{"duplicate name through an escape", `{"a":1,"\u0061":2}`},
	{"nested duplicate", `[{"x":{"k":1,"k":1}}]`},
	{"invalid UTF-8 byte", "\"\xff\""},
	{"overlong UTF-8", "\"\xc0\xaf\""},
	{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\""},
	{"truncated UTF-8", "\"\xe2\x9c\""},
	{"lone high surrogate", `"\ud800"`},
	{"lone low surrogate", `"\udc00"`},
	{"high surrogate then letter", `"\ud800\u0041"`},
	{"reversed surrogate pair", `"\ude00\ud83d"`},
	{"lone surrogate in a name", `{"\ud800":1}`},
	{"number beyond double range", `1e400`},
	{"negative number beyond double range", `-1e400`},
	{"huge number inside", `{"a":[1,2,1E309]}`},
	{"long integer beyond double range", "1" + strings.Repeat("0", 400)},
	{"NaN", `NaN`},
	{"Infinity", `[Infinity]`},
	{"leading zero", `01`},
	{"bare dot", `1.`},
	{"leading dot", `.5`},
	{"plus sign", `+1`},
	{"hex", `0x10`},
	{"trailing comma", `[1,]`},
	{"trailing member comma", `{"a":1,}`},
	{"two values", `1 2`},
	{"two objects", `{} {}`},
	{"empty", ``},
	{"whitespace only", " \n"},
	{"single quotes", `'a'`},
	{"unterminated string", `"abc`},
	{"raw control character", "\"\x01\""},
	{"raw newline in string", "\"a\nb\""},
	{"comment", `/*c*/1`},
	{"bad escape", `"\x41"`},
	{"short unicode escape", `"\u12"`},
	{"non-string name", `{1:2}`},
	{"missing colon", `{"a" 1}`},
	{"unclosed object", `{"a":1`},
	{"non-ASCII outside strings", "[1,\u00a02]"},
	{"BOM", "\ufeff{}"},
}

// TestCanonicalRejects checks that both canonicalizers refuse the same bad documents.
func TestCanonicalRejects(t *testing.T) {
	for _, c := range rejectedInputs {
		if got, err := Canonicalize([]byte(c.input)); err == nil {
			t.Errorf("%s: Canonicalize accepted %q as %q", c.name, c.input, got)
		}
		if got, err := jcs.Transform([]byte(c.input)); err == nil {
			t.Errorf("%s: jcs accepted %q as %q", c.name, c.input, got)
		}
	}
	if _, err := Canonicalize([]byte("1e400")); !errors.Is(err, ErrNumberRange) {
		t.Errorf("1e400: got %v, want ErrNumberRange", err)
	}
	if _, err := Canonicalize(nil); err == nil {
		t.Error("nil: accepted")
	}
}

// TestCanonicalDepth checks that both canonicalizers have the same nesting limit (10000), so that
// neither accepts a document the other refuses.
func TestCanonicalDepth(t *testing.T) {
	for _, depth := range []int{10000, 10001} {
		doc := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		_, errF := Canonicalize([]byte(doc))
		_, errR := jcs.Transform([]byte(doc))
		if (errF == nil) != (errR == nil) {
			t.Errorf("depth %d: fast path error %v, jcs error %v", depth, errF, errR)
		}
		if (errF == nil) != (depth <= 10000) {
			t.Errorf("depth %d: fast path error %v", depth, errF)
		}
	}
}

// TestAppendCanonical checks that AppendCanonical keeps dst's bytes and leaves dst's length alone
// on error, since the engine assembles the request_hash form with it.
func TestAppendCanonical(t *testing.T) {
	dst := []byte(`{"a":`)
	got, err := AppendCanonical(dst, []byte(` { "y" : 1.50, "x" : [ ] } `))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"x":[],"y":1.5}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, bad := range []string{`{"x":1,"x":2}`, `[1e999]`, `nope`} {
		got, err := AppendCanonical(dst, []byte(bad))
		if err == nil {
			t.Errorf("%s: accepted", bad)
		}
		if string(got) != `{"a":` {
			t.Errorf("%s: dst became %q", bad, got)
		}
	}
	// A saturated-looking number that is in range must still pass the range check.
	if got, err := AppendCanonical(nil, []byte(`["1.7976931348623157e+308", 1.7976931348623157e308, 1e-999]`)); err != nil {
		t.Errorf("in-range maximum refused: %v", err)
	} else if want := `["1.7976931348623157e+308",1.7976931348623157e+308,0]`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestCanonicalizeAllocs guards the hot path: one allocation for the result, whatever the size.
func TestCanonicalizeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	for name, doc := range map[string][]byte{
		"seed response": readSeed(t, "invoice-draft.response.json"),
		"200 items":     invoice(200),
	} {
		Canonicalize(doc) // warm jsontext's encoder pool
		if n := testing.AllocsPerRun(50, func() { _, _ = Canonicalize(doc) }); n > 1 {
			t.Errorf("%s: %v allocations per Canonicalize, want at most 1", name, n)
		}
		buf := make([]byte, 0, 2*len(doc))
		if n := testing.AllocsPerRun(50, func() { _, _ = AppendCanonical(buf, doc) }); n > 0 {
			t.Errorf("%s: %v allocations per AppendCanonical into a large enough buffer, want 0", name, n)
		}
	}
}

// FuzzCanonicalEqual is the differential test of the two canonicalizers: whatever one accepts the
// other accepts, with byte-identical output, and the output is a fixed point. No known difference
// is exempted: the fast path's only departure from jsontext (saturating numbers beyond the double
// range) is closed by Canonicalize itself.
func FuzzCanonicalEqual(f *testing.F) {
	for _, c := range canonicalCases(f) {
		f.Add([]byte(c.Input))
	}
	for _, c := range rejectedInputs {
		f.Add([]byte(c.input))
	}
	for _, name := range []string{"invoice-draft.request.json", "invoice-draft.response.json", "request-hash-vectors.json"} {
		f.Add(readSeed(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, errF := Canonicalize(data)
		ref, errR := jcs.Transform(data)
		if (errF == nil) != (errR == nil) {
			t.Fatalf("disagree on %q: fast path error %v, jcs error %v", data, errF, errR)
		}
		if errF != nil {
			return
		}
		if !bytes.Equal(fast, ref) {
			t.Fatalf("different canonical forms of %q:\nfast %q\njcs  %q", data, fast, ref)
		}
		if again, err := Canonicalize(fast); err != nil || !bytes.Equal(again, fast) {
			t.Fatalf("not a fixed point: %q -> %q (%v)", fast, again, err)
		}
	})
}
