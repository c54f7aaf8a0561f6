package jsonvalue

import (
	"reflect"
	"strings"
	"testing"
)

func key(k string) Step { return Step{Kind: StepKey, Key: k} }
func index(i int) Step  { return Step{Kind: StepIndex, Index: i} }

var all = Step{Kind: StepAll}

func TestRender(t *testing.T) {
	for _, c := range []struct {
		steps []Step
		at    []int
		want  string
	}{
		{nil, nil, "$"},
		{[]Step{key("line_items"), index(0), key("qty")}, nil, "$.line_items[0].qty"},
		{[]Step{key("items"), all, key("unit price")}, []int{3}, "$.items[3]['unit price']"},
		{[]Step{key("items"), all, key("unit price")}, nil, "$.items[]['unit price']"},
		{[]Step{key("items"), all, all}, []int{1, -1}, "$.items[1][]"},
		{[]Step{key("a.b")}, nil, "$['a.b']"},
		{[]Step{key("a[0]")}, nil, "$['a[0]']"},
		{[]Step{key("it's")}, nil, `$['it\'s']`},
		{[]Step{key(`say "hi"`)}, nil, `$['say "hi"']`},
		{[]Step{key(`back\slash`)}, nil, `$['back\\slash']`},
		{[]Step{key("tab\there\n\x00\x1f\x7f")}, nil, "$['tab\\there\\n\\u0000\\u001f\x7f']"},
		{[]Step{key("\b\f\r")}, nil, `$['\b\f\r']`},
		{[]Step{key("")}, nil, "$['']"},
		{[]Step{key("é")}, nil, "$['é']"},
		{[]Step{key("1st")}, nil, "$['1st']"},
		{[]Step{key("a-b")}, nil, "$['a-b']"},
		{[]Step{key("_x9")}, nil, "$._x9"},
		{[]Step{key("bad\xffutf8")}, nil, "$['bad\uFFFDutf8']"},
		{[]Step{index(0), key("a")}, nil, "$[0].a"},
	} {
		if got := Render(c.steps, c.at); got != c.want {
			t.Errorf("Render(%+v, %v) = %q, want %q", c.steps, c.at, got, c.want)
		}
	}
}

// A location shows at most ShownChars characters of the caller's keys, the cut marked with "…".
func TestRenderCutsLongKeys(t *testing.T) {
	long := strings.Repeat("k", 200)
	got := Render([]Step{key(long), key("next"), index(2)}, nil)
	if want := "$['" + strings.Repeat("k", ShownChars-1) + "…']['…'][2]"; got != want {
		t.Errorf("Render(long key) = %q, want %q", got, want)
	}
	exact := strings.Repeat("é", ShownChars)
	if got, want := Render([]Step{key(exact)}, nil), "$['"+exact+"']"; got != want {
		t.Errorf("Render(key of ShownChars) = %q, want %q", got, want)
	}
}

func TestBareAndDisplay(t *testing.T) {
	for _, c := range []struct{ path, bare string }{
		{"$", ""},
		{"$.a.b", "a.b"},
		{"$['a b'].c", "['a b'].c"},
		{"$[0].a", "[0].a"},
	} {
		if got := Bare(c.path); got != c.bare {
			t.Errorf("Bare(%q) = %q, want %q", c.path, got, c.bare)
		}
		if got := Display(c.bare); got != c.path {
			t.Errorf("Display(%q) = %q, want %q", c.bare, got, c.path)
		}
	}
}

// What a report writes, ParsePath reads back to the same steps, whatever the keys hold.
func TestRenderRoundTrip(t *testing.T) {
	for _, steps := range [][]Step{
		{key("unit price")},
		{key("items"), index(0), key("unit price")},
		{key("a.b"), key("[x]"), key(`"q"`), key("it's"), key(`\`), key("\x00\n\t")},
		{key("")},
		{index(3), all},
		{key("日本"), key("emoji 😀")},
	} {
		field := Field(steps, nil)
		p, err := ParsePath(field)
		if err != nil || !reflect.DeepEqual(p.Steps, steps) {
			t.Errorf("Field(%+v) = %q, which parses to %+v (%v)", steps, field, p.Steps, err)
		}
	}
}

func TestParseSingleQuotedKeys(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Step
	}{
		{`['a b']`, []Step{key("a b")}},
		{`items[]['unit price']`, []Step{key("items"), all, key("unit price")}},
		{`['it\'s']`, []Step{key("it's")}},
		{`['say "hi"']`, []Step{key(`say "hi"`)}},
		{`['\u00e9\ud83d\ude00\/']`, []Step{key("é😀/")}},
		{`["a\"b"]`, []Step{key(`a"b`)}},
	} {
		p, err := ParsePath(c.in)
		if err != nil || !reflect.DeepEqual(p.Steps, c.want) {
			t.Errorf("ParsePath(%q) = %+v (%v), want %+v", c.in, p.Steps, err, c.want)
		}
	}
	for _, in := range []string{`['a`, `['a\q']`, `['\ud83d']`, `['\u12']`, "['a\x01']", `['a"]`, `["a']`} {
		if p, err := ParsePath(in); err == nil {
			t.Errorf("ParsePath(%q) = %+v, want an error", in, p.Steps)
		}
	}
}

// FuzzRender: any steps render to a path that parses back to them, when no key is cut.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"a", "unit price", "it's", `"`, `\`, "\x00", "é", "", "a.b[0]"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, k string, i int) {
		if strings.ToValidUTF8(k, "\uFFFD") != k || len([]rune(k)) > ShownChars {
			return
		}
		steps := []Step{key(k), index(max(i, 0)), key(k)}
		if len([]rune(k))*2 > ShownChars {
			steps = steps[:2]
		}
		field := Field(steps, nil)
		p, err := ParsePath(field)
		if err != nil || !reflect.DeepEqual(p.Steps, steps) {
			t.Fatalf("Field(%+v) = %q, which parses to %+v (%v)", steps, field, p.Steps, err)
		}
	})
}
