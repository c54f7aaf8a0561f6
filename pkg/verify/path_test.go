package verify

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
)

func pathKey(k string) jsonvalue.Step { return jsonvalue.Step{Kind: jsonvalue.StepKey, Key: k} }
func pathIndex(i int) jsonvalue.Step  { return jsonvalue.Step{Kind: jsonvalue.StepIndex, Index: i} }

var pathAll = jsonvalue.Step{Kind: jsonvalue.StepAll}

func TestPathParseValid(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []jsonvalue.Step
	}{
		{"a", []jsonvalue.Step{pathKey("a")}},
		{"a.b.c", []jsonvalue.Step{pathKey("a"), pathKey("b"), pathKey("c")}},
		{"a[]", []jsonvalue.Step{pathKey("a"), pathAll}},
		{"a[].b", []jsonvalue.Step{pathKey("a"), pathAll, pathKey("b")}},
		{"a[2].b", []jsonvalue.Step{pathKey("a"), pathIndex(2), pathKey("b")}},
		{"a[0][]", []jsonvalue.Step{pathKey("a"), pathIndex(0), pathAll}},
		{"a[].b[].c", []jsonvalue.Step{pathKey("a"), pathAll, pathKey("b"), pathAll, pathKey("c")}},
		{"[]", []jsonvalue.Step{pathAll}},
		{"[0].a", []jsonvalue.Step{pathIndex(0), pathKey("a")}},
		{"[10][]", []jsonvalue.Step{pathIndex(10), pathAll}},
		{`["key.with.dots"]`, []jsonvalue.Step{pathKey("key.with.dots")}},
		{`["a"]["b[]"]`, []jsonvalue.Step{pathKey("a"), pathKey("b[]")}},
		{`a["b.c"].d`, []jsonvalue.Step{pathKey("a"), pathKey("b.c"), pathKey("d")}},
		{`a.["b"]`, []jsonvalue.Step{pathKey("a"), pathKey("b")}},
		{`[""]`, []jsonvalue.Step{pathKey("")}},
		{`["\u00e9\n"]`, []jsonvalue.Step{pathKey("é\n")}},
		{`["a\"b"]`, []jsonvalue.Step{pathKey(`a"b`)}},
		{"line total.unit price", []jsonvalue.Step{pathKey("line total"), pathKey("unit price")}},
		{"é.ü-ß_1", []jsonvalue.Step{pathKey("é"), pathKey("ü-ß_1")}},
		{"$", []jsonvalue.Step{}},
		{"$.total", []jsonvalue.Step{pathKey("total")}},
		{"$['a b']", []jsonvalue.Step{pathKey("a b")}},
		{"$.items[0].price", []jsonvalue.Step{pathKey("items"), pathIndex(0), pathKey("price")}},
		{"$[]", []jsonvalue.Step{pathAll}},
		{"$[0]['$ref']", []jsonvalue.Step{pathIndex(0), pathKey("$ref")}},
		{`$["a"].b`, []jsonvalue.Step{pathKey("a"), pathKey("b")}},
		{`$.['a']`, []jsonvalue.Step{pathKey("a")}},
		{"a[9223372036854775807]", []jsonvalue.Step{pathKey("a"), pathIndex(9223372036854775807)}},
	} {
		p, err := jsonvalue.ParsePath(c.in)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", c.in, err)
			continue
		}
		if p.Raw != c.in || len(p.Steps) != len(c.want) || len(c.want) > 0 && !reflect.DeepEqual(p.Steps, c.want) {
			t.Errorf("ParsePath(%q) = %+v, want %+v", c.in, p.Steps, c.want)
		}
		// What a report writes, with its "$" and without, parses to the same steps.
		for _, out := range []string{jsonvalue.Render(p.Steps, nil), jsonvalue.Field(p.Steps, nil)} {
			if out == "" {
				continue // the root has no bare form
			}
			q, err := jsonvalue.ParsePath(out)
			if err != nil || len(q.Steps) != len(p.Steps) || len(p.Steps) > 0 && !reflect.DeepEqual(q.Steps, p.Steps) {
				t.Errorf("the report's %q for %q does not round-trip: %v", out, c.in, err)
			}
		}
	}
}

func TestPathParseInvalid(t *testing.T) {
	for _, in := range []string{
		"", ".", "a..b", "a.", ".a", "a[", "a[1", "a[x]", "a[-1]", "a[01]", "a[+1]", "a[ 1]", "a[1.5]",
		"a[99999999999999999999]", `["a`, `["a"`, `["a"]b`, `["a\q"]`, `["a\`, "a]", "]", "a.[0]", "a.[]",
		"a[]b", "a[0]b", "a[]]", "\xff", "a.\xfe", `a."b"`, " zz", "zz ", "a.*", "$a", "a$", "$.", "$..a", "$.[0]",
	} {
		if p, err := jsonvalue.ParsePath(in); err == nil {
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
		{`["a.b"].c`, `$['a.b'].c`},
		{"line total.unit_price", "$['line total'].unit_price"},
	} {
		if got := mustPath(t, c.raw).Display(); got != c.want {
			t.Errorf("Display(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
	if got := jsonvalue.Display(""); got != "$" {
		t.Errorf("jsonvalue.Display(\"\") = %q", got)
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
		"grid": [[1, 2], [3]],
		"nest": [{"b": [{"c": 1}, {}]}, {}, {"b": 5}, {"b": [{"c": 2}]}]
	}`), &doc)
	for _, c := range []struct {
		path    string
		want    string // the values there, as a JSON array
		missing int
		places  []string // every place, in document order, when the case names them
	}{
		{"a.b", `[1]`, 0, []string{"a.b"}},
		{"a.n", `[null]`, 0, nil},
		{"a", `[{"b":1,"n":null}]`, 0, nil},
		{"list[].v", `[1,2,3]`, 0, []string{"list[0].v", "list[1].v", "list[2].v"}},
		{"list[].w[]", `[10,11,12]`, 0, []string{"list[0].w[0]", "list[0].w[1]", "list[2].w[0]"}},
		{"list[2].w[0]", `[12]`, 0, nil},
		{"list[1].w[]", `[]`, 0, []string{}},
		{"empty[]", `[]`, 0, []string{}},
		{"empty[].x", `[]`, 0, []string{}},
		{`["key.with.dots"].x`, `[true]`, 0, nil},
		{"grid[][]", `[1,2,3]`, 0, []string{"grid[0][0]", "grid[0][1]", "grid[1][0]"}},
		// A place with nothing there is kept, in order, and counted; the values there are still found.
		{"mixed[].v", `[1]`, 1, []string{"mixed[0].v", "mixed[1].v"}},
		{"nest[].b[].c", `[1,2]`, 3, []string{"nest[0].b[0].c", "nest[0].b[1].c", "nest[1].b[].c", "nest[2].b[].c", "nest[3].b[0].c"}},
		{"a.c", `[]`, 1, []string{"a.c"}},
		{"a.b.c", `[]`, 1, nil},
		{"a[]", `[]`, 1, []string{"a[]"}},
		{"list.v", `[]`, 1, nil},
		{"list[3]", `[]`, 1, nil},
		{"list[9223372036854775807]", `[]`, 1, nil},
		{"nope[]", `[]`, 1, []string{"nope[]"}},
		{"nope[].x[]", `[]`, 1, []string{"nope[].x[]"}},
	} {
		p := mustPath(t, c.path)
		vals, missing := p.Resolve(doc)
		if missing != c.missing {
			t.Errorf("Resolve(%q) missing = %d, want %d", c.path, missing, c.missing)
		}
		if vals == nil {
			vals = []any{}
		}
		got, _ := json.Marshal(vals)
		if string(got) != c.want {
			t.Errorf("Resolve(%q) = %s, want %s", c.path, got, c.want)
		}
		slots, at, m := jsonvalue.Places(p.Steps, doc, true)
		w := jsonvalue.CountAll(p.Steps)
		if m != missing || len(slots) != len(vals)+missing || len(at) != len(slots)*w {
			t.Errorf("jsonvalue.Places(%q) gave %d places (%d missing) and %d indices", c.path, len(slots), m, len(at))
		}
		if c.places != nil {
			places := []string{}
			for i := range slots {
				places = append(places, where{steps: p.Steps, at: at[i*w : (i+1)*w]}.raw())
			}
			if !reflect.DeepEqual(places, c.places) {
				t.Errorf("jsonvalue.Places(%q) places = %q, want %q", c.path, places, c.places)
			}
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
		{`["k.d"][]`, []int{3}, `['k.d'][3]`},
		{"[][0]", []int{4}, "[4][0]"},
		{"a[]", nil, "a[]"},
		{"a[].b[].c", []int{1, -1}, "a[1].b[].c"},
		{"a[].b[].c", []int{-1, -1}, "a[].b[].c"},
	} {
		if got := jsonvalue.Field(mustPath(t, c.path).Steps, c.at); got != c.want {
			t.Errorf("jsonvalue.Field(%q, %v) = %q, want %q", c.path, c.at, got, c.want)
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
		if got := jsonvalue.ElementwisePrefix(mustPath(t, c.field), mustPath(t, c.other)); got != c.want {
			t.Errorf("jsonvalue.ElementwisePrefix(%q, %q) = %d, want %d", c.field, c.other, got, c.want)
		}
	}
}

// FuzzParsePath: no input panics; a parsed path keeps its text, has steps, writes back to a path
// with the same steps, and resolves without panicking.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"a", "a.b", "a[]", "a[2].b", "a[].b[].c", `["key.with.dots"]`, `[""]`, "[0][1]",
		"a..b", "a[", `["a\"]`, `["\u00e9"]`, "a[01]", "a[-1]", `a.["b"]`, "\xff", "[]]", `["\x00"]`,
		"$", "$.a", "$['a b']", "$.items[0].price", "$[]", " a", "a.*", "a.$b", `a."b"`} {
		f.Add(s)
	}
	var doc any
	decodeJSON(f, []byte(`{"a": [{"b": [1, {"c": 2}]}, {"b": []}], "": {"": [[0]]}, "key.with.dots": 1}`), &doc)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := jsonvalue.ParsePath(s)
		if err != nil {
			return
		}
		if p.Raw != s || len(p.Steps) == 0 && s != "$" {
			t.Fatalf("ParsePath(%q) = %+v", s, p)
		}
		// A bare name the report would bracket is one the grammar defines: no '$', '*', quote,
		// control character or white space at its ends (docs/rules.md).
		for _, st := range p.Steps {
			if st.Kind == jsonvalue.StepKey && strings.Contains(s, st.Key) && st.Key != "" && !strings.Contains(s, "[") {
				if strings.ContainsAny(st.Key, "$*'\"") || strings.TrimSpace(st.Key) != st.Key {
					t.Fatalf("ParsePath(%q) reads the bare name %q", s, st.Key)
				}
			}
		}
		// A report shows at most jsonvalue.ShownChars of a path's keys (the rest ends in …) and
		// invalid UTF-8 as U+FFFD: only a path within both reads back to its own steps.
		shown, valid := 0, true
		for _, st := range p.Steps {
			if st.Kind == jsonvalue.StepKey {
				shown += utf8.RuneCountInString(st.Key)
				valid = valid && utf8.ValidString(st.Key)
			}
		}
		for _, out := range []string{jsonvalue.Render(p.Steps, nil), jsonvalue.Field(p.Steps, nil)} {
			if out == "" {
				continue
			}
			if q, err := jsonvalue.ParsePath(out); valid && shown <= jsonvalue.ShownChars && (err != nil || len(q.Steps) != len(p.Steps) || len(p.Steps) > 0 && !reflect.DeepEqual(q.Steps, p.Steps)) {
				t.Fatalf("ParsePath(%q): the report's form %q parses to %+v (%v)", s, out, q.Steps, err)
			}
		}
		vals, missing := p.Resolve(doc)
		tv, at, tmissing := jsonvalue.Places(p.Steps, doc, true)
		if missing != tmissing || len(vals)+missing != len(tv) || len(at) != len(tv)*jsonvalue.CountAll(p.Steps) {
			t.Fatalf("Resolve and resolveSteps disagree on %q", s)
		}
		for i := range tv {
			w := jsonvalue.CountAll(p.Steps)
			if len(p.Steps) == 0 {
				break // the root's place has no bare form
			}
			if _, err := jsonvalue.ParsePath(where{steps: p.Steps, at: at[i*w : (i+1)*w]}.raw()); err != nil {
				t.Fatalf("place %d of %q does not parse: %v", i, s, err)
			}
		}
		_ = p.Display()
	})
}
