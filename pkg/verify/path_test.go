package verify

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func pathKey(k string) Step { return Step{Kind: StepKey, Key: k} }
func pathIndex(i int) Step  { return Step{Kind: StepIndex, Index: i} }

var pathAll = Step{Kind: StepAll}

func TestPathParseValid(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Step
	}{
		{"a", []Step{pathKey("a")}},
		{"a.b.c", []Step{pathKey("a"), pathKey("b"), pathKey("c")}},
		{"a[]", []Step{pathKey("a"), pathAll}},
		{"a[].b", []Step{pathKey("a"), pathAll, pathKey("b")}},
		{"a[2].b", []Step{pathKey("a"), pathIndex(2), pathKey("b")}},
		{"a[0][]", []Step{pathKey("a"), pathIndex(0), pathAll}},
		{"a[].b[].c", []Step{pathKey("a"), pathAll, pathKey("b"), pathAll, pathKey("c")}},
		{"[]", []Step{pathAll}},
		{"[0].a", []Step{pathIndex(0), pathKey("a")}},
		{"[10][]", []Step{pathIndex(10), pathAll}},
		{`["key.with.dots"]`, []Step{pathKey("key.with.dots")}},
		{`["a"]["b[]"]`, []Step{pathKey("a"), pathKey("b[]")}},
		{`a["b.c"].d`, []Step{pathKey("a"), pathKey("b.c"), pathKey("d")}},
		{`a.["b"]`, []Step{pathKey("a"), pathKey("b")}},
		{`[""]`, []Step{pathKey("")}},
		{`["\u00e9\n"]`, []Step{pathKey("é\n")}},
		{`["a\"b"]`, []Step{pathKey(`a"b`)}},
		{"line total.unit price", []Step{pathKey("line total"), pathKey("unit price")}},
		{"é.ü-ß_1", []Step{pathKey("é"), pathKey("ü-ß_1")}},
		{`a."b"`, []Step{pathKey("a"), pathKey(`"b"`)}},
		{"a[9223372036854775807]", []Step{pathKey("a"), pathIndex(9223372036854775807)}},
	} {
		p, err := ParsePath(c.in)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", c.in, err)
			continue
		}
		if p.Raw != c.in || !reflect.DeepEqual(p.Steps, c.want) {
			t.Errorf("ParsePath(%q) = %+v, want %+v", c.in, p.Steps, c.want)
		}
		// What formatSteps writes parses to the same steps.
		q, err := ParsePath(formatSteps(p.Steps, nil))
		if err != nil || !reflect.DeepEqual(q.Steps, p.Steps) {
			t.Errorf("formatSteps(%q) = %q does not round-trip: %v", c.in, formatSteps(p.Steps, nil), err)
		}
	}
}

func TestPathParseInvalid(t *testing.T) {
	for _, in := range []string{
		"", ".", "a..b", "a.", ".a", "a[", "a[1", "a[x]", "a[-1]", "a[01]", "a[+1]", "a[ 1]", "a[1.5]",
		"a[99999999999999999999]", `["a`, `["a"`, `["a"]b`, `["a\q"]`, `["a\`, "a]", "]", "a.[0]", "a.[]",
		"a[]b", "a[0]b", "a[]]", "\xff", "a.\xfe",
	} {
		if p, err := ParsePath(in); err == nil {
			t.Errorf("ParsePath(%q) = %+v, want an error", in, p.Steps)
		} else if strings.Contains(err.Error(), in) && in != "" && in != "." && in != "]" {
			t.Errorf("ParsePath(%q) error echoes the path: %v", in, err)
		}
	}
}

func TestPathDisplay(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"line_items[].line_total", "$.line_items[].line_total"},
		{"[0].a", "$[0].a"},
		{`["a.b"].c`, `$["a.b"].c`},
	} {
		if got := mustPath(t, c.raw).Display(); got != c.want {
			t.Errorf("Display(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
	if got := displayRaw(""); got != "$" {
		t.Errorf("displayRaw(\"\") = %q", got)
	}
}

func TestPathResolve(t *testing.T) {
	var doc any
	decodeJSON(t, []byte(`{
		"a": {"b": 1, "n": null},
		"list": [{"v": 1, "w": [10, 11]}, {"v": 2, "w": []}, {"v": 3, "w": [12]}],
		"empty": [],
		"mixed": [{"v": 1}, {"u": 2}],
		"key.with.dots": {"x": true},
		"grid": [[1, 2], [3]]
	}`), &doc)
	for _, c := range []struct {
		path  string
		want  string // the values as a JSON array
		found bool
		at    []int
	}{
		{"a.b", `[1]`, true, nil},
		{"a.n", `[null]`, true, nil},
		{"a", `[{"b":1,"n":null}]`, true, nil},
		{"list[].v", `[1,2,3]`, true, []int{0, 1, 2}},
		{"list[].w[]", `[10,11,12]`, true, []int{0, 0, 0, 1, 2, 0}},
		{"list[2].w[0]", `[12]`, true, nil},
		{"list[1].w[]", `[]`, true, nil},
		{"empty[]", `[]`, true, nil},
		{"empty[].x", `[]`, true, nil},
		{`["key.with.dots"].x`, `[true]`, true, nil},
		{"grid[][]", `[1,2,3]`, true, []int{0, 0, 0, 1, 1, 0}},
		{"mixed[].v", ``, false, nil},
		{"a.c", ``, false, nil},
		{"a.b.c", ``, false, nil},
		{"a[]", ``, false, nil},
		{"list.v", ``, false, nil},
		{"list[3]", ``, false, nil},
		{"list[9223372036854775807]", ``, false, nil},
		{"nope[]", ``, false, nil},
	} {
		p := mustPath(t, c.path)
		vals, found := p.Resolve(doc)
		if found != c.found {
			t.Errorf("Resolve(%q) found = %v, want %v", c.path, found, c.found)
			continue
		}
		if !found {
			continue
		}
		got, _ := json.Marshal(vals)
		if string(got) != c.want {
			t.Errorf("Resolve(%q) = %s, want %s", c.path, got, c.want)
		}
		tv, at, _ := resolveSteps(p.Steps, doc, true)
		if len(tv) != len(vals) || len(at) != len(vals)*countAll(p.Steps) {
			t.Errorf("resolveSteps(%q) gave %d values and %d indices", c.path, len(tv), len(at))
		}
		if c.at != nil && !reflect.DeepEqual(at, c.at) {
			t.Errorf("resolveSteps(%q) indices = %v, want %v", c.path, at, c.at)
		}
	}
	// Resolving twice gives the same answer: key steps rewrite only the resolver's own slice.
	p := mustPath(t, "list[].v")
	a, _ := p.Resolve(doc)
	b, _ := p.Resolve(doc)
	if !reflect.DeepEqual(a, b) {
		t.Error("Resolve is not repeatable")
	}
}

func TestPathConcreteLocations(t *testing.T) {
	for _, c := range []struct {
		path string
		at   []int
		want string
	}{
		{"line_items[].line_total", []int{1}, "line_items[1].line_total"},
		{"a[].b[].c", []int{2, 0}, "a[2].b[0].c"},
		{`["k.d"][]`, []int{3}, `["k.d"][3]`},
		{"[][0]", []int{4}, "[4][0]"},
		{"a[]", nil, "a[]"},
	} {
		if got := formatSteps(mustPath(t, c.path).Steps, c.at); got != c.want {
			t.Errorf("formatSteps(%q, %v) = %q, want %q", c.path, c.at, got, c.want)
		}
	}
}

func TestPathElementwisePrefix(t *testing.T) {
	for _, c := range []struct {
		field, other string
		want         int
	}{
		{"items[].end", "items[].start", 2},
		{"orders[].lines[].qty", "orders[].max", 2},
		{"orders[].lines[].qty", "orders[].lines[].max", 4},
		{"items[].end", "limit", 0},
		{"items[].end", "other[].start", 0},
		{"items[].end", "items[0].start", 0},
		{"items[0].end", "items[].start", 0},
		{"a.items[].end", "b.items[].start", 0},
		{"items[].end", "items[].a[].b", 0},
		{"items[]", "items[]", 2},
	} {
		if got := elementwisePrefix(mustPath(t, c.field), mustPath(t, c.other)); got != c.want {
			t.Errorf("elementwisePrefix(%q, %q) = %d, want %d", c.field, c.other, got, c.want)
		}
	}
}

// FuzzParsePath: no input panics; a parsed path keeps its text, has steps, writes back to a path
// with the same steps, and resolves without panicking.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"a", "a.b", "a[]", "a[2].b", "a[].b[].c", `["key.with.dots"]`, `[""]`, "[0][1]",
		"a..b", "a[", `["a\"]`, `["\u00e9"]`, "a[01]", "a[-1]", `a.["b"]`, "\xff", "[]]", `["\x00"]`} {
		f.Add(s)
	}
	var doc any
	decodeJSON(f, []byte(`{"a": [{"b": [1, {"c": 2}]}, {"b": []}], "": {"": [[0]]}, "key.with.dots": 1}`), &doc)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			return
		}
		if p.Raw != s || len(p.Steps) == 0 {
			t.Fatalf("ParsePath(%q) = %+v", s, p)
		}
		out := formatSteps(p.Steps, nil)
		q, err := ParsePath(out)
		if err != nil || !reflect.DeepEqual(q.Steps, p.Steps) {
			t.Fatalf("ParsePath(%q): formatSteps gave %q, which parses to %+v (%v)", s, out, q.Steps, err)
		}
		vals, found := p.Resolve(doc)
		tv, at, tfound := resolveSteps(p.Steps, doc, true)
		if found != tfound || len(vals) != len(tv) || (found && len(at) != len(tv)*countAll(p.Steps)) {
			t.Fatalf("Resolve and resolveSteps disagree on %q", s)
		}
		_ = p.Display()
	})
}
