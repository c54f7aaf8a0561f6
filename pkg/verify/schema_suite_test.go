package verify

import (
	"encoding/json"
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
const schSuiteDir = "../../testdata/JSON-Schema-Test-Suite/tests"

// schSuiteSkipFiles are whole files whose expectations do not apply to this service, with why.
var schSuiteSkipFiles = map[string]string{
	// Remote references are refused by design (SPEC §4.1): every group must fail to compile,
	// which TestSchemaSuite asserts instead of the suite's verdicts.
	"draft2020-12/refRemote.json": "remote refs are refused by design",
	"draft7/refRemote.json":       "remote refs are refused by design",
	// The service asserts formats (SPEC §4.2); the required format.json expects annotations
	// only. optional/format/*.json applies instead.
	"draft2020-12/format.json": "formats are assertions here; optional/format applies",
	"draft7/format.json":       "formats are assertions here; optional/format applies",
	// Needs custom meta-schemas loaded from http://localhost:1234 (refused by design).
	"draft2020-12/vocabulary.json": "needs a custom metaschema from a remote URL",
}

// schSuiteSkipGroups are single groups (file + description) that need something refused by design
// or hit a documented limitation.
var schSuiteSkipGroups = map[string]string{}

// schSuiteSkipTests are single tests (file + group + test description), with why.
var schSuiteSkipTests = map[string]string{}

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

// schSuiteFiles lists the suite's files of one draft: required ones and optional/format when
// verdicts count, every optional file too for the differential check.
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
		if optional && !allOptional && !strings.Contains(rel, "/optional/format/") {
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

func schSuiteDraft(rel string) *jsonschema.Draft {
	if strings.HasPrefix(rel, "draft7/") {
		return jsonschema.Draft7
	}
	return jsonschema.Draft2020
}

func schUsesRemote(schema any) bool {
	b, _ := json.Marshal(schema)
	return strings.Contains(string(b), "localhost:1234") || strings.Contains(string(b), "$schema\":\"http://localhost")
}

func TestSchemaSuite(t *testing.T) {
	var run, passed, skipped, refused int
	for _, draft := range []string{"draft2020-12", "draft7"} {
		for _, rel := range schSuiteFiles(t, draft, false) {
			groups := schLoadSuiteFile(t, filepath.Join(schSuiteDir, rel))
			if reason, ok := schSuiteSkipFiles[rel]; ok {
				if strings.Contains(reason, "refused") || strings.Contains(reason, "remote") {
					for _, g := range groups {
						if _, err := compileSchema(g.Schema, strict(rel), schSuiteDraft(rel)); err == nil && schUsesRemote(g.Schema) {
							t.Errorf("%s / %s: a schema needing a remote document compiled", rel, g.Description)
						}
					}
				}
				for _, g := range groups {
					skipped += len(g.Tests)
				}
				continue
			}
			for _, g := range groups {
				gkey := rel + " / " + g.Description
				if _, ok := schSuiteSkipGroups[gkey]; ok {
					skipped += len(g.Tests)
					continue
				}
				sch, err := compileSchema(g.Schema, strict(rel), schSuiteDraft(rel))
				if err != nil {
					if schUsesRemote(g.Schema) {
						// Refused by design: assert it is the documented 422.
						if e, ok := apperr.As(err); !ok || e.Code != apperr.InvalidRequest || e.Fields[0].Field != "expected_schema" {
							t.Errorf("%s: remote schema gave %v, want a 422 on expected_schema", gkey, err)
						}
						refused += len(g.Tests)
						continue
					}
					t.Errorf("%s: compile: %v", gkey, err)
					continue
				}
				for _, tc := range g.Tests {
					key := gkey + " / " + tc.Description
					if _, ok := schSuiteSkipTests[key]; ok {
						skipped++
						continue
					}
					run++
					r := sch.check(tc.Data)
					if r.walkerValid != r.libValid {
						t.Errorf("%s: walker says valid=%v, library says %v", key, r.walkerValid, r.libValid)
					}
					got := len(r.schema.Failures) == 0
					if got != tc.Valid {
						t.Errorf("%s: valid=%v, suite says %v (failures %v)", key, got, tc.Valid, r.schema.Failures)
						continue
					}
					passed++
				}
			}
		}
	}
	t.Logf("suite: %d cases run, %d agree with the suite, %d skipped by the documented exceptions, %d refused (remote refs)", run, passed, skipped, refused)
}

// strict turns on content assertion for the optional content tests only; the required content.json
// of 2020-12 expects contentMediaType and friends to be annotations.
func strict(rel string) bool { return strings.HasSuffix(rel, "optional/content.json") }

// TestSchemaSuiteDisagreements runs every suite case, optional files included, in both modes and
// fails if the walker and the library ever disagree on validity.
func TestSchemaSuiteDisagreements(t *testing.T) {
	cases, disagreements := 0, 0
	for _, draft := range []string{"draft2020-12", "draft7"} {
		for _, rel := range schSuiteFiles(t, draft, true) {
			for _, g := range schLoadSuiteFile(t, filepath.Join(schSuiteDir, rel)) {
				for _, st := range []bool{false, true} {
					sch, err := compileSchema(g.Schema, st, schSuiteDraft(rel))
					if err != nil {
						continue
					}
					for _, tc := range g.Tests {
						cases++
						r := sch.check(tc.Data)
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
