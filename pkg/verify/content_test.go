package verify

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestContentStrings(t *testing.T) {
	for _, c := range []struct {
		in, check string
	}{
		// Empty and whitespace-only.
		{"", checkEmptyString},
		{"   ", checkEmptyString},
		{"\t\n\r ", checkEmptyString},
		{"\u00a0\u2003", checkEmptyString},
		// Placeholder words, alone or wrapped.
		{"TODO", checkPlaceholder},
		{"todo.", checkPlaceholder},
		{"  TBD  ", checkPlaceholder},
		{"(TBD)", checkPlaceholder},
		{"[ tbc ]", checkPlaceholder},
		{"<TBA>", checkPlaceholder},
		{"FIXME!", checkPlaceholder},
		{"xxx", checkPlaceholder},
		{"Placeholder", checkPlaceholder},
		{"CHANGEME", checkPlaceholder},
		{"TBD:", checkPlaceholder},
		{"todo…", checkPlaceholder},
		// Marked.
		{"TODO: write the summary", checkPlaceholder},
		{"fixme : later", checkPlaceholder},
		{"XXX: check the figure", checkPlaceholder},
		// Filler.
		{"Lorem ipsum dolor sit amet", checkPlaceholder},
		{"Our product is LOREM IPSUM great", checkPlaceholder},
		// Angle brackets.
		{"<customer name>", checkPlaceholder},
		{"<Name>", checkPlaceholder},
		{" <insert date here> ", checkPlaceholder},
		// Template fields.
		{"Dear {{ customer.name }},", checkPlaceholder},
		{"{{name}}", checkPlaceholder},
		{"Total: {{total_amount}} USD", checkPlaceholder},
		// Bracketed prompts.
		{"[insert date]", checkPlaceholder},
		{"Dear [Your Name],", checkPlaceholder},
		{"[Placeholder]", checkPlaceholder},
		{"Call [enter phone number] today", checkPlaceholder},
		{"[Fill in the address]", checkPlaceholder},
		// "... here" prompts.
		{"Your name here", checkPlaceholder},
		{"Your company name here.", checkPlaceholder},
		{"Insert text here", checkPlaceholder},
		{"Type here", checkPlaceholder},
		{"Description goes here", checkPlaceholder},
		// Real values that must pass.
		{"To do list for Monday", ""},
		{"Todo app", ""},
		{"TODOS", ""},
		{"todo-list", ""},
		{"Fixme up", ""},
		{"TBD by the board in March", ""},
		{"N/A", ""},
		{"n/a", ""},
		{"none", ""},
		{"-", ""},
		{"0", ""},
		{"XXXL", ""},
		{"xxx-large", ""},
		{"INV-7731", ""},
		{"CRWL-100", ""},
		{"USD", ""},
		{"<john@example.com>", ""},
		{"<https://example.com/a>", ""},
		{"a < b > c", ""},
		{"<3", ""},
		{"<>", ""},
		{"<br/>", ""},
		{"<!-- comment -->", ""},
		{"1 < 2 and 3 > 2", ""},
		{"Your order ships from here", ""},
		{"Click here", ""},
		{"We are here", ""},
		{"here", ""},
		{"Here", ""},
		{"[1]", ""},
		{"See note [2] and [a]", ""},
		{"[your account](https://example.com)", ""},
		{"Read [yourself first]", ""},
		{"{}", ""},
		{"{{}}", ""},
		{"{ {name} }", ""},
		{"{{#each items}}", ""},
		{`{"a": {"b": 1}}`, ""},
		{"function() { if (x) { y() }}", ""},
		{"The Latin phrase Lorem is a word", ""},
		{"placeholder text is not allowed", ""},
		{"Café ✓", ""},
		// Look-alikes: read as a reader sees them (NFKC, invisible characters dropped).
		{"ＴＯＤＯ", checkPlaceholder},
		{"ｔｂｄ", checkPlaceholder},
		{"（ＴＢＤ）", checkPlaceholder},
		{"ＦＩＸＭＥ：ｌａｔｅｒ", checkPlaceholder},
		{"𝐓𝐎𝐃𝐎", checkPlaceholder},
		{"ⓉⓄⒹⓄ", checkPlaceholder},
		{"T\u200bODO", checkPlaceholder},
		{"\u200bTODO\u200b", checkPlaceholder},
		{"T\u00adB\u00adD", checkPlaceholder},
		{"F\u2060I\u200cX\u200dM\ufeffE", checkPlaceholder},
		{"T\u0332O\u0332D\u0332O\u0332", checkPlaceholder},
		{"TO\u0000DO", checkPlaceholder},
		{"Ｌｏｒｅｍ　ｉｐｓｕｍ dolor", checkPlaceholder},
		{"Lorem\u200b ipsum dolor", checkPlaceholder},
		{"Dear ｛｛name｝｝", checkPlaceholder},
		{"［insert date］", checkPlaceholder},
		{"＜customer name＞", checkPlaceholder},
		{"Your\u3000name\u3000here", checkPlaceholder},
		{"\u200b", checkEmptyString},
		{"\ufeff", checkEmptyString},
		{"\u00ad", checkEmptyString},
		{"\u2060\u200c\u200d", checkEmptyString},
		{" \u200b\u3000\u200b ", checkEmptyString},
		{"\u3164", checkEmptyString},
		{"\uffa0", checkEmptyString},
		{"\u2800", checkEmptyString},
		{"\ufe0f", checkEmptyString},
		{"\u0000", checkEmptyString},
		// Real values with such characters pass.
		{"Ｔｏｄｏ app", ""},
		{"ＩＮＶ－７７３１", ""},
		{"Tödö", ""},
		{"👩\u200d💻 engineer", ""},
		{"می\u200cخواهم", ""},
		{"東京都", ""},
		{"ТОДО", ""}, // Cyrillic letters: a Russian word, not the Latin TODO
	} {
		check, detail := stringProblem(c.in)
		if check != c.check {
			t.Errorf("stringProblem(%q) = %q (%s), want %q", c.in, check, detail, c.check)
		}
		if check != "" && detail == "" {
			t.Errorf("stringProblem(%q) has no detail", c.in)
		}
	}
}

// equalFoldWord answers as strings.EqualFold for every word it is given, including strings whose
// non-ASCII letters fold to ASCII ones (the Kelvin sign to k, the long s to s) and so match a
// longer or shorter spelling, and trimEnding as strings.TrimRight with its cut set.
func TestContentFoldShortcuts(t *testing.T) {
	words := []string{"here", "goes", "your", "key", "ask"}
	for _, list := range [][]string{placeholders.Whole, placeholders.Marked, placeholders.HereLeads} {
		words = append(words, list...)
	}
	for _, w := range words {
		if w == "" || w[0] < 'a' || w[0] > 'z' || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz ") != "" {
			t.Errorf("placeholder word %q is not lower-case ASCII letters starting with one", w)
		}
	}
	strs := []string{"", "t", "T", "k", "\u212a", "\u212aEY", "\u212aey", "ke\u212a", "\u017fk", "a\u017fk", "A\u017fK",
		"TODO", "todo", "ToDo", "todO ", "tod", "CHANGE ME", "change  me", "Placeholder", "HERE", "goes", "Your",
		"\xe2", "\xff\xfe", "\u00e9", "écrire", "INV-7731", "USD", "CRWL-100", "0", "[", "@todo", "`type"}
	for _, w := range words {
		for _, s := range strs {
			if got, want := equalFoldWord(s, w), strings.EqualFold(s, w); got != want {
				t.Errorf("equalFoldWord(%q, %q) = %v, want %v", s, w, got, want)
			}
		}
	}
	for _, s := range []string{"", ".", "…", "TODO…", "TODO.…!: ", "TODO …", "a\xe2\x80\xa6", "a\x80\xa6", "a\xe2\x80",
		"\xa6", "…\xe2\x80\xa6.", "x\u2026\u2026", "x\u2025", "x\u2027", "TBD:", "done!", " . "} {
		if got, want := trimEnding(s), strings.TrimRight(s, ".!:… "); got != want {
			t.Errorf("trimEnding(%q) = %q, want %q", s, got, want)
		}
	}
}

// Hostile strings are answered in linear time: the matchers never rescan from every position.
func TestContentPlaceholderLinear(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("{{", 200000), strings.Repeat("{{a", 100000) + "}}", strings.Repeat("[insert", 50000),
		strings.Repeat("[your ", 50000) + "](x)", strings.Repeat("l", 300000) + "lorem ipsu",
		strings.Repeat("}}", 200000), strings.Repeat("[", 300000) + "]",
	} {
		stringProblem(s) // a quadratic matcher would take minutes here
	}
}

func TestContentCheck(t *testing.T) {
	var output any
	decodeJSON(t, []byte(`{
		"title": "Report",
		"notes": ["", "TODO: fill in", "fine"],
		"ids": [9007199254740993, 1, 0.1],
		"nested": {"z": "   ", "a": {"amount": 1.00000000000000000001}}
	}`), &output)

	t.Run("not strict", func(t *testing.T) {
		got, info := CheckContent(output, false)
		wantFailures := []checkShown{
			{Check: checkEmptyString, Path: "$.nested.z", Field: "nested.z", Expected: "a non-empty string",
				Found: `string "   "`, Detail: "the string is only whitespace"},
			{Check: checkEmptyString, Path: "$.notes[0]", Field: "notes[0]", Expected: "a non-empty string",
				Found: `string ""`, Detail: "the string is empty"},
			{Check: checkPlaceholder, Path: "$.notes[1]", Field: "notes[1]", Expected: "real content, not placeholder text",
				Found: `string "TODO: fill in"`, Detail: "the string is placeholder text (a TODO marker)"},
		}
		if got.Total != 5 || got.Passed != 2 || !reflect.DeepEqual(shownAll(got.Failures), wantFailures) {
			t.Errorf("got total %d passed %d failures\n%+v\nwant total 5 passed 2\n%+v", got.Total, got.Passed, got.Failures, wantFailures)
		}
		wantInfo := []string{"$.ids[0]", "$.nested.a.amount"}
		if len(info.Failures) != 2 || info.Failed() != 2 {
			t.Fatalf("info = %+v, want %v", info, wantInfo)
		}
		for i, f := range info.Failures {
			if f.Check != checkInexactNumber || shownOf(f).Path != wantInfo[i] {
				t.Errorf("info[%d] = %+v, want %s at %s", i, f, checkInexactNumber, wantInfo[i])
			}
		}
		if want := "number 9007199254740993 does not survive IEEE-754 double precision: it reads as 9007199254740992, so its output_hash cannot tell it from that number"; shownOf(info.Failures[0]).Detail != want {
			t.Errorf("detail %q", shownOf(info.Failures[0]).Detail)
		}
	})

	t.Run("strict", func(t *testing.T) {
		got, info := CheckContent(output, true)
		if info.Failed() != 0 {
			t.Errorf("strict info = %+v, want none", info)
		}
		if got.Total != 9 || got.Passed != 4 || len(got.Failures) != 5 {
			t.Fatalf("got total %d passed %d failures %+v, want 9, 4 and 5 failures", got.Total, got.Passed, got.Failures)
		}
		var checks []string
		for _, f := range got.Failures {
			checks = append(checks, f.Check+" "+shownOf(f).Path)
		}
		want := []string{
			"content:inexact_number $.ids[0]", "content:inexact_number $.nested.a.amount",
			"content:empty_string $.nested.z", "content:empty_string $.notes[0]", "content:placeholder $.notes[1]",
		}
		if !reflect.DeepEqual(checks, want) {
			t.Errorf("got %q\nwant %q", checks, want)
		}
	})

	t.Run("root values", func(t *testing.T) {
		got, _ := CheckContent("TBD", true)
		if got.Total != 1 || len(got.Failures) != 1 || shownOf(got.Failures[0]).Path != "$" || shownOf(got.Failures[0]).Field != "" {
			t.Errorf("got %+v", got)
		}
		got, info := CheckContent(json.Number("1"), false)
		if got.Total != 0 || info.Failed() != 0 {
			t.Errorf("a number outside strict mode counts nothing: got %+v %+v", got, info)
		}
		got, _ = CheckContent(map[string]any{"a.b": []any{"", nil, true}}, false)
		if got.Total != 1 || shownOf(got.Failures[0]).Path != `$['a.b'][0]` || shownOf(got.Failures[0]).Field != `['a.b'][0]` {
			t.Errorf("got %+v", got)
		}
	})
}

// The seed invoice is clean: 4 strings, and in strict mode its 5 numbers too.
func TestContentSeedInvoice(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seed", "invoice-draft.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Output any `json:"submitted_output"`
	}
	decodeJSON(t, data, &req)
	for _, c := range []struct {
		strict bool
		total  int
	}{{false, 4}, {true, 9}} {
		got, info := CheckContent(req.Output, c.strict)
		if got.Total != c.total || got.Passed != c.total || info.Failed() != 0 {
			t.Errorf("strict %v: got %+v %+v, want %d passing checks", c.strict, got, info, c.total)
		}
	}
}

func BenchmarkContentInvoice200(b *testing.B) {
	output, _ := benchInvoiceOutput(200)
	for _, strict := range []bool{false, true} {
		name := "lenient"
		if strict {
			name = "strict"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				CheckContent(output, strict)
			}
		})
	}
}
