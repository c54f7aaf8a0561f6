package schemacheck

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The official JSON-Schema-Test-Suite, run through CompileSchema and Check: the verdict (any
// failure in the schema tally or none) must agree with the suite's "valid", and the walker must
// agree with the library on every case, optional files included.
const schSuiteDir = "../../../testdata/JSON-Schema-Test-Suite/tests"

// schSuiteDrafts are the suite's directories of the drafts the verifier supports, with the draft
// each one's schemas are compiled under when they do not name one with $schema.
var schSuiteDrafts = []struct {
	dir   string
	draft *jsonschema.Draft
}{
	{"draft4", jsonschema.Draft4}, {"draft6", jsonschema.Draft6}, {"draft7", jsonschema.Draft7},
	{"draft2019-09", jsonschema.Draft2019}, {"draft2020-12", jsonschema.Draft2020},
}

// schSuiteSkipBase are the suite's files, by name in every draft, whose expectations do not apply
// to this service, with why. Each is still run: its groups must get the answer the reason gives.
var schSuiteSkipBase = map[string]string{
	// Remote references are refused by design (SPEC §4.1): every group must fail to compile.
	"refRemote.json": "remote refs are refused by design",
	// The service asserts formats (SPEC §4.2); the required format.json expects annotations
	// only. optional/format/*.json applies instead.
	"format.json": "formats are assertions here; optional/format applies",
	// Needs custom meta-schemas loaded from http://localhost:1234 (refused by design).
	"vocabulary.json": "needs a custom metaschema from a remote URL",
	// A format unknown to the draft in use is refused with a 422 by design, since formats are
	// asserted: every group must fail to compile with it.
	"unknown.json": "unknown formats are refused by design",
}

// schSuiteSkip tells whether rel is one of schSuiteSkipBase's files: the required refRemote,
// format and vocabulary files, and optional/format/unknown.json.
func schSuiteSkip(rel string) bool {
	base := filepath.Base(rel)
	if _, ok := schSuiteSkipBase[base]; !ok {
		return false
	}
	optional := strings.Contains(rel, "/optional/")
	return optional == (base == "unknown.json") && (!optional || strings.Contains(rel, "/optional/format/"))
}

type schSuiteGroup struct {
	Description string `json:"description"`
	Schema      any    `json:"schema"`
	Tests       []struct {
		Description string `json:"description"`
		Data        any    `json:"data"`
		Valid       bool   `json:"valid"`
	} `json:"tests"`
}

func schLoadSuiteFile(t testing.TB, path string) []schSuiteGroup {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.UseNumber()
	var groups []schSuiteGroup
	if err := dec.Decode(&groups); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return groups
}

// schSuiteFiles lists the suite's files of one draft: required ones, optional/format and the
// optional ECMA-262 regex files when verdicts count, every optional file too for the differential
// check.
func schSuiteFiles(t testing.TB, draft string, allOptional bool) []string {
	t.Helper()
	var files []string
	root := filepath.Join(schSuiteDir, draft)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		rel, _ := filepath.Rel(schSuiteDir, p)
		rel = filepath.ToSlash(rel)
		optional := strings.Contains(rel, "/optional/")
		if optional && !allOptional && !strings.Contains(rel, "/optional/format/") && !schSuiteRegexFile(rel) {
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// schSuiteRegexFile tells whether rel is one of the optional files on ECMA-262 regular
// expressions (their syntax and meaning in pattern and patternProperties), whose verdicts count:
// patterns are ECMA-262 here.
func schSuiteRegexFile(rel string) bool {
	return strings.HasSuffix(rel, "/optional/ecmascript-regex.json") || strings.HasSuffix(rel, "/optional/non-bmp-regex.json")
}

// schSuiteDraft is the draft a suite file's schemas default to.
func schSuiteDraft(rel string) *jsonschema.Draft {
	dir, _, _ := strings.Cut(rel, "/")
	for _, d := range schSuiteDrafts {
		if d.dir == dir {
			return d.draft
		}
	}
	panic("no draft for " + rel)
}

func schUsesRemote(schema any) bool {
	b, _ := json.Marshal(schema)
	return strings.Contains(string(b), "localhost:1234") || strings.Contains(string(b), "$schema\":\"http://localhost")
}

// schFormatsDoc is the checked-in list of the optional/format cases where the verifier's verdict
// differs from the suite's, each with its reason.
const schFormatsDoc = "../../../docs/FORMATS.md"

// schFormatMinAgreement is the share of the optional/format cases that must agree with the suite,
// per draft and in all: the bar, with every case that does not named in schFormatsDoc.
const schFormatMinAgreement = 0.995

// schListedDisagreements reads schFormatsDoc's table of disagreements (between its two markers):
// one row per case, "| file | group | test | reason |", file being the suite path under tests/.
func schListedDisagreements(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(schFormatsDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(b), "<!-- disagreements:begin -->")
	table, _, ok2 := strings.Cut(rest, "<!-- disagreements:end -->")
	if !ok1 || !ok2 {
		t.Fatalf("%s: no disagreements table between its markers", schFormatsDoc)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "| `") {
			continue // the header, its rule, blank lines
		}
		cells := schTableCells(line)
		if len(cells) != 4 || cells[3] == "" {
			t.Fatalf("%s: row %q: want | file | group | test | reason |", schFormatsDoc, line)
		}
		key := strings.Trim(cells[0], "`") + " / " + cells[1] + " / " + cells[2]
		if _, dup := listed[key]; dup {
			t.Fatalf("%s: %s is listed twice", schFormatsDoc, key)
		}
		listed[key] = cells[3]
	}
	return listed
}

// schTableCells splits a Markdown table row into its trimmed cells; "\|" is a bar inside a cell.
func schTableCells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// TestSchemaSuite runs every draft's required tests and optional/format tests through the engine
// (the walker and the library both, which must always agree). Every required case agrees with
// the suite; of the optional/format cases at least schFormatMinAgreement per draft do, and each one
// that does not is listed in docs/FORMATS.md with its reason: the test fails on a disagreement not
// listed there and on a listed case that no longer disagrees.
func TestSchemaSuite(t *testing.T) {
	listed := schListedDisagreements(t)
	seen := map[string]bool{}
	var run, agreed, skipped, refused int
	for _, d := range schSuiteDrafts {
		var fmtRun, fmtAgreed int
		for _, rel := range schSuiteFiles(t, d.dir, false) {
			groups := schLoadSuiteFile(t, filepath.Join(schSuiteDir, rel))
			isFormat := strings.Contains(rel, "/optional/format/")
			if schSuiteSkip(rel) {
				for _, g := range groups {
					skipped += len(g.Tests)
					switch {
					case strings.HasSuffix(rel, "refRemote.json"):
						// Refused by design: every group must fail to compile with the 422.
						_, err := compileSchema(g.Schema, false, schSuiteDraft(rel))
						schAssertRefused(t, rel+" / "+g.Description, g.Schema, err)
					case isFormat:
						_, err := compileSchema(g.Schema, false, schSuiteDraft(rel))
						if e, ok := apperr.As(err); !ok || e.Code != apperr.InvalidRequest || !strings.Contains(e.Message, "format the verifier does not know") {
							t.Errorf("%s / %s: compile: %v, want the unknown-format 422", rel, g.Description, err)
						}
					}
				}
				continue
			}
			for _, g := range groups {
				gkey := rel + " / " + g.Description
				sch, err := compileSchema(g.Schema, strict(rel), schSuiteDraft(rel))
				if err != nil {
					schAssertRefused(t, gkey, g.Schema, err)
					refused += len(g.Tests)
					t.Logf("refused by design (remote ref): %s", gkey)
					continue
				}
				for _, tc := range g.Tests {
					key := gkey + " / " + tc.Description
					run++
					if isFormat {
						fmtRun++
					}
					r := sch.crossCheck(tc.Data)
					if r.walkerValid != r.libValid {
						t.Errorf("%s: walker says valid=%v, library says %v", key, r.walkerValid, r.libValid)
					}
					got := len(r.schema.Failures) == 0
					if got == tc.Valid {
						agreed++
						if isFormat {
							fmtAgreed++
						}
						continue
					}
					if _, ok := listed[key]; ok && isFormat {
						seen[key] = true
						continue
					}
					t.Errorf("%s: valid=%v, suite says %v (failures %v)", key, got, tc.Valid, r.schema.Failures)
				}
			}
		}
		rate := float64(fmtAgreed) / float64(fmtRun)
		t.Logf("%s optional/format: %d of %d cases agree with the suite (%.2f%%)", d.dir, fmtAgreed, fmtRun, 100*rate)
		if fmtRun == 0 || rate < schFormatMinAgreement {
			t.Errorf("%s optional/format: %d of %d agree, want at least %.1f%%", d.dir, fmtAgreed, fmtRun, 100*schFormatMinAgreement)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(listed)) {
		if !seen[key] {
			t.Errorf("%s lists %s (%s), which no longer disagrees (or no longer exists): remove it", schFormatsDoc, key, listed[key])
		}
	}
	t.Logf("suite: %d cases run: %d agree with the suite, %d listed in %s; %d cases in skipped files, %d in groups refused by design (remote refs)",
		run, agreed, len(seen), schFormatsDoc, skipped, refused)
}

// schAssertRefused checks that a suite schema that failed to compile needs a remote document and
// got the documented 422 for it.
func schAssertRefused(t *testing.T, key string, schema any, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: a schema needing a remote document compiled", key)
		return
	}
	e, ok := apperr.As(err)
	if !ok || e.Code != apperr.InvalidRequest || len(e.Fields) != 1 || e.Fields[0].Field != "expected_schema" ||
		!strings.Contains(e.Fields[0].Problem, "outside itself") || !schUsesRemote(schema) {
		t.Errorf("%s: compile: %v", key, err)
	}
}

// strict turns on content assertion for the optional content tests only; the required content.json
// of 2020-12 expects contentMediaType and friends to be annotations.
func strict(rel string) bool { return strings.HasSuffix(rel, "optional/content.json") }

// TestSchemaSuiteDisagreements runs every suite case, optional files included, in both modes and
// fails if the walker and the library ever disagree on validity.
func TestSchemaSuiteDisagreements(t *testing.T) {
	cases, disagreements := 0, 0
	for _, d := range schSuiteDrafts {
		for _, rel := range schSuiteFiles(t, d.dir, true) {
			for _, g := range schLoadSuiteFile(t, filepath.Join(schSuiteDir, rel)) {
				for _, st := range []bool{false, true} {
					sch, err := compileSchema(g.Schema, st, schSuiteDraft(rel))
					if err != nil {
						continue
					}
					for _, tc := range g.Tests {
						cases++
						r := sch.crossCheck(tc.Data)
						if r.walkerValid != r.libValid {
							disagreements++
							t.Errorf("%s / %s / %s (strict=%v): walker valid=%v, library valid=%v", rel, g.Description, tc.Description, st, r.walkerValid, r.libValid)
						}
					}
				}
			}
		}
	}
	t.Logf("%d suite cases checked differentially, %d disagreements", cases, disagreements)
	if cases < 3000 {
		t.Errorf("only %d cases ran; is the suite missing?", cases)
	}
}
