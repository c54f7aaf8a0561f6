package schemacheck

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// Each draft's format set is exactly the formats that draft defines, which the suite's required
// format.json of the draft names one by one; every one is asserted (the library and the walker
// share its checker), and a format of a later draft is refused under an earlier one.
func TestSchemaDraftFormats(t *testing.T) {
	for _, d := range schSuiteDrafts {
		groups := schLoadSuiteFile(t, filepath.Join(schSuiteDir, d.dir, "format.json"))
		var want []string
		for _, g := range groups {
			if f, ok := g.Schema.(map[string]any)["format"].(string); ok && !slices.Contains(want, f) {
				want = append(want, f)
			}
		}
		slices.Sort(want)
		version := schemaDraftVersion(d.draft)
		if got := slices.Sorted(slices.Values(schemaDraftFormats[version])); !slices.Equal(got, want) {
			t.Errorf("%s: formats %q, the draft defines %q", d.dir, got, want)
		}
		url := schDraftURLs[slices.IndexFunc(schDraftURLs, func(u string) bool { return schemaDialectVersion(u) == version })]
		for _, name := range want {
			sch, err := Compile(map[string]any{"$schema": url, "format": name}, false)
			if err != nil {
				t.Fatalf("%s under %s: %v", name, d.dir, err)
			}
			if sch.lib.Format == nil || sch.root.s.Format != sch.lib.Format {
				t.Errorf("%s under %s: not asserted", name, d.dir)
			}
		}
	}
	for _, c := range []struct{ draft, format string }{
		{"http://json-schema.org/draft-04/schema#", "uri-reference"}, {"http://json-schema.org/draft-06/schema#", "iri"},
		{"http://json-schema.org/draft-07/schema#", "uuid"}, {"http://json-schema.org/draft-07/schema#", "duration"},
		{"https://json-schema.org/draft/2020-12/schema", "semver"}, {"https://json-schema.org/draft/2020-12/schema", "period"},
	} {
		_, err := Compile(map[string]any{"$schema": c.draft, "format": c.format}, false)
		if e, ok := apperr.As(err); !ok || e.Status() != 422 || !strings.Contains(e.Fields[0].Fix, strings.Join(schemaDraftFormats[schemaDialectVersion(c.draft)], ", ")) {
			t.Errorf("%s under %s: got %v, want the unknown-format 422 listing the draft's formats", c.format, c.draft, err)
		}
	}
	// An embedded resource with its own $schema has its own draft's formats.
	embedded := map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "properties": map[string]any{
		"a": map[string]any{"$id": "http://example.com/a", "$schema": "https://json-schema.org/draft/2020-12/schema", "format": "uuid"}}}
	if _, err := Compile(embedded, false); err != nil {
		t.Errorf("a 2020-12 resource inside a draft-7 schema: %v", err)
	}
}

var schDraftURLs = []string{"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema",
	"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-04/schema#"}

// An unknown format name is a 422 (SPEC §4.2: formats are asserted) wherever a subschema can be,
// in every draft, naming each place and listing the known names; a property, a const, enum,
// default or examples value, or an unknown keyword's value that happens to hold a "format" member
// is data, not a keyword, and is not judged.
func TestSchemaUnknownFormat(t *testing.T) {
	cases := []struct {
		name, schema string
		at           []string // the locations named, in order; none: the schema compiles
	}{
		{"at the root", `{"format":"emial"}`, []string{"expected_schema.format"}},
		{"a known name in the wrong case", `{"format":"Email"}`, []string{"expected_schema.format"}},
		{"a library extension no draft defines", `{"format":"semver"}`, []string{"expected_schema.format"}},
		{"empty", `{"format":""}`, []string{"expected_schema.format"}},
		{"under a property", `{"properties":{"email":{"type":"string","format":"emial"}}}`, []string{"expected_schema.properties.email.format"}},
		{"under a property called format", `{"properties":{"format":{"format":"dat"}}}`, []string{"expected_schema.properties.format.format"}},
		{"deep in applicators", `{"allOf":[{"anyOf":[{"not":{"items":{"format":"ipv5"}}}]}],"if":{"format":"email"},"then":{"format":"uri"},"else":{"format":"url"}}`,
			[]string{"expected_schema.allOf[0].anyOf[0].not.items.format", "expected_schema.else.format"}},
		{"in $defs never referenced", `{"$defs":{"a":{"format":"datetime"}}}`, []string{"expected_schema['$defs'].a.format"}},
		{"in every map and list keyword", `{"prefixItems":[{"format":"a1"}],"patternProperties":{"^x":{"format":"a2"}},"dependentSchemas":{"y":{"format":"a3"}},` +
			`"propertyNames":{"format":"a4"},"contains":{"format":"a5"},"unevaluatedProperties":{"format":"a6"},"additionalProperties":{"format":"a7"},"contentSchema":{"format":"a8"}}`,
			[]string{"expected_schema.additionalProperties.format", "expected_schema.contains.format", "expected_schema.contentSchema.format",
				"expected_schema.dependentSchemas.y.format", `expected_schema.patternProperties['^x'].format`, "expected_schema.prefixItems[0].format",
				"expected_schema.propertyNames.format", "expected_schema.unevaluatedProperties.format"}},
		{"draft 4 definitions and items arrays", `{"$schema":"http://json-schema.org/draft-04/schema#","definitions":{"a":{"format":"zz"}},"items":[{"format":"date-time"},{"format":"date"}]}`,
			[]string{"expected_schema.definitions.a.format", "expected_schema.items[1].format"}},
		{"draft 7 dependencies", `{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"a":["b"],"c":{"format":"qq"}},"additionalItems":{"format":"rr"}}`,
			[]string{"expected_schema.additionalItems.format", "expected_schema.dependencies.c.format"}},
		{"draft 2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","items":[{"format":"x"}]}`, []string{"expected_schema.items[0].format"}},
		{"draft 6", `{"$schema":"http://json-schema.org/draft-06/schema#","properties":{"a":{"format":"x"}}}`, []string{"expected_schema.properties.a.format"}},
		{"a referenced unknown keyword's value is a subschema", `{"x-meta":{"format":"emial"},"$ref":"#/x-meta"}`, []string{"expected_schema['x-meta'].format"}},
		{"a reference inside an embedded resource", `{"$defs":{"r":{"$id":"http://example.com/r","x":{"format":"nope"},"$ref":"#/x"}},"$ref":"http://example.com/r"}`,
			[]string{"expected_schema['$defs'].r.x.format"}},
		{"a reference's target referring on", `{"$ref":"#/x-a","x-a":{"$ref":"#/x-b"},"x-b":{"format":"nope"}}`, []string{"expected_schema['x-b'].format"}},
		// Data, not keywords.
		{"a property called format", `{"properties":{"format":{"type":"string"}},"required":["format"]}`, nil},
		{"const, enum, default, examples", `{"const":{"format":"emial"},"enum":[{"format":"x"}],"default":{"format":"y"},"examples":[{"format":"z"}]}`, nil},
		{"data under an unknown keyword", `{"x-meta":{"format":"emial"},"properties":{"a":{"x-ui":{"format":"big"}}}}`, nil},
		{"a property name under patternProperties", `{"patternProperties":{"format":{"format":"date"}}}`, nil},
		{"every known format", `{"allOf":[` + strings.Join(slices.Collect(func(yield func(string) bool) {
			for _, f := range schemaDraftFormats[2020] {
				if !yield(`{"format":"` + f + `"}`) {
					return
				}
			}
		}), ",") + `]}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var doc any
			if err := json.Unmarshal([]byte(c.schema), &doc); err != nil {
				t.Fatal(err)
			}
			_, err := Compile(doc, false)
			if c.at == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.InvalidRequest || e.Status() != 422 {
				t.Fatalf("got %v, want a 422", err)
			}
			var got []string
			for _, f := range e.Fields {
				if f.Field != "expected_schema" || !strings.Contains(f.Fix, strings.Join(schemaDraftFormats[schemaDraftAt(doc, nil, 2020)], ", ")) {
					t.Errorf("field %+v: want expected_schema with the known formats in the fix", f)
				}
				loc, ok := strings.CutPrefix(f.Problem, "has a format the verifier does not know at ")
				if !ok {
					t.Errorf("problem %q", f.Problem)
				}
				got = append(got, loc)
			}
			if !slices.Equal(got, c.at) {
				t.Errorf("named %q, want %q", got, c.at)
			}
			for _, name := range []string{"emial", "ipv5", "datetime", "nope"} {
				if strings.Contains(c.schema, `"`+name+`"`) && strings.Contains(e.Message+strings.Join(got, ""), name) {
					t.Errorf("the error echoes the caller's format name %q: %s", name, e.Message)
				}
			}
		})
	}
}
