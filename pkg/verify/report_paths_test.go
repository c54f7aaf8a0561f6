package verify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// Keys with spaces, dots, brackets, quotes and backslashes are named in one path syntax in every
// part of a report: errors_detail and hints (the path), flags (the field), and the errors'
// messages, whether a schema keyword, a rule, a bound or a content check failed there. Each path
// reads back (ParsePath) to the place that failed.
func TestReportOnePathSyntax(t *testing.T) {
	body := []byte(`{"task_id":"paths","enforce_rules":true,"strict_content_check":true,
	  "expected_schema":{"type":"object","properties":{"items":{"type":"array","items":{"type":"object",
	    "properties":{"unit price":{"type":"number","minimum":0},"a.b[0]":{"type":"integer"},
	    "deep key":{"properties":{"a":{}}}}}}}},
	  "submitted_output":{"items":[{"unit price":-1,"a.b[0]":1.5,"say \"hi\"":"","it's\\":" TODO ","deep key":{"x y":1}}]},
	  "rules":[{"type":"gte","field":"items[].unit price","value":1}],
	  "bounds":{"items[][\"a.b[0]\"]":{"max":1}}}`)
	out, rep, err := NewEngine(wire.Limits{}).Respond(body, testEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Errors       []string `json:"errors"`
		ErrorsDetail []struct {
			Check, Path string
		} `json:"errors_detail"`
		Hints []struct {
			Check, Path string
		} `json:"hints"`
		Flags []struct {
			Check, Field string
		} `json:"flags"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	var req struct {
		Output any `json:"submitted_output"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		t.Fatal(err)
	}
	output := req.Output
	unitPrice := `$.items[0]['unit price']`
	want := map[string]string{ // check → the path it names
		"schema:minimum":       unitPrice,
		"schema:type":          `$.items[0]['a.b[0]']`,
		"consistency:gte":      unitPrice,
		"bounds:range":         `$.items[0]['a.b[0]']`,
		"content:empty_string": `$.items[0]['say "hi"']`,
		"content:placeholder":  `$.items[0]['it\'s\\']`,
		// The schema evaluator's own check, located by it and rendered by the report.
		"content:undeclared_property": `$.items[0]['deep key']`,
	}
	got := map[string]string{}
	for _, d := range doc.ErrorsDetail {
		got[d.Check] = d.Path
	}
	for check, path := range want {
		if got[check] != path {
			t.Errorf("errors_detail %s: path %q, want %q", check, got[check], path)
		}
	}
	if rep.Result != "fail" || len(doc.ErrorsDetail) < 5 {
		t.Fatalf("result %s with %d errors: %s", rep.Result, len(doc.ErrorsDetail), out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	for i, d := range doc.ErrorsDetail {
		h, f := doc.Hints[i], doc.Flags[i]
		if h.Path != d.Path || jsonvalue.Display(f.Field) != d.Path && !ownField(d.Check) {
			t.Errorf("%s: errors_detail path %q, hint path %q, flag field %q", d.Check, d.Path, h.Path, f.Field)
		}
		if !strings.Contains(doc.Errors[i], " at '"+f.Field+"': ") {
			t.Errorf("%s: message %q does not name %q", d.Check, doc.Errors[i], f.Field)
		}
		// A rule's or bound's failures are filed under its own path (see ruleFailure), in the
		// same syntax.
		if ownField(d.Check) {
			if want := map[string]string{"consistency:gte": `items[]['unit price']`, "bounds:range": `items[]['a.b[0]']`}[d.Check]; f.Field != want {
				t.Errorf("%s: flag field %q, want %q", d.Check, f.Field, want)
			}
			continue
		}
		p, err := jsonvalue.ParsePath(f.Field)
		if err != nil {
			t.Errorf("%s: field %q does not parse: %v", d.Check, f.Field, err)
			continue
		}
		if p.Display() != d.Path {
			t.Errorf("%s: %q reads back as %q", d.Check, d.Path, p.Display())
		}
		if vals, missing := p.Resolve(output); missing != 0 || len(vals) != 1 {
			t.Errorf("%s: %q does not name one value in the output", d.Check, d.Path)
		}
	}
}

// ownField tells whether a check's failures are filed under the path its rule or bound names.
func ownField(check string) bool { return check == "consistency:gte" || check == "bounds:range" }
