package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

var testEnv = Envelope{
	VerificationID:  "00000000-0000-4000-8000-000000000000",
	VerifiedAt:      time.Date(2026, 10, 14, 19, 12, 5, 645221000, time.UTC),
	VerifierVersion: "test",
	Verify:          receipt.NewVerifyInfo("http://127.0.0.1:8080", "test-key"),
}

// comparable drops what legitimately differs between two runs of the same request: ids, time,
// version, the verify block and the signature.
func comparable(t *testing.T, doc []byte, drop ...string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range append([]string{"verification_id", "verified_at", "verifier_version", "verify", "attestation"}, drop...) {
		delete(m, k)
	}
	return m
}

// The seed's invoice draft gives the live service's answer, field for field.
func TestSeedInvoiceDraft(t *testing.T) {
	out, rep, err := NewEngine(wire.Limits{}).Respond(seedFile(t, "invoice-draft.request.json"), testEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result != "fail" || rep.SchemaCompliance.Passed != 22 || rep.SchemaCompliance.Total != 22 {
		t.Fatalf("result %s, schema %+v; want fail, 22/22", rep.Result, rep.SchemaCompliance)
	}
	got := comparable(t, out)
	want := comparable(t, seedFile(t, "invoice-draft.response.json"))
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("report differs from the seed's\ngot:  %s\nwant: %s", g, w)
	}
	// The wire order of the members is the seed's too.
	if !bytes.HasPrefix(out, []byte(`{"summary":{"result":"fail","blocking_checks":["consistency:sum_equals"]},"next_actions":[{"action":"repair_and_reverify","using":"hints"},{"action":"withhold_payment","for":"buyer"}],"result":"fail","verification_id":`)) {
		t.Errorf("member order differs: %.200s", out)
	}
}

// A schema the engine has seen is found by its bytes and reused (neither decoded nor
// canonicalized again): the answers equal a fresh engine's, byte for byte, for the same bytes, for
// another spelling of the same schema, and under the strict flag, which compiles on its own.
func TestEngineKnownSchema(t *testing.T) {
	seed := seedFile(t, "invoice-draft.request.json")
	var req map[string]json.RawMessage
	if err := json.Unmarshal(seed, &req); err != nil {
		t.Fatal(err)
	}
	respelled := map[string]json.RawMessage{}
	for k, v := range req {
		respelled[k] = v
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, req["expected_schema"], "", "   "); err != nil {
		t.Fatal(err)
	}
	respelled["expected_schema"] = indented.Bytes()
	strict := map[string]json.RawMessage{"strict_content_check": json.RawMessage("true")}
	for k, v := range req {
		strict[k] = v
	}
	body := func(m map[string]json.RawMessage) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bodies := [][]byte{seed, body(respelled), seed, body(strict), body(respelled), body(strict)}

	eng := NewEngine(wire.Limits{})
	for i, b := range bodies {
		warm, _, err := eng.Respond(b, testEnv, nil)
		if err != nil {
			t.Fatal(err)
		}
		cold, _, err := NewEngine(wire.Limits{}).Respond(b, testEnv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(warm, cold) {
			t.Errorf("request %d: the warm engine answers otherwise than a fresh one\nwarm: %s\ncold: %s", i, warm, cold)
		}
		r, _, err := eng.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if r.compiled == nil {
			t.Errorf("request %d: the schema was not found by its bytes", i)
		}
	}
	if n := eng.cache.Len(); n != 2 {
		t.Errorf("%d compiled schemas cached, want 2 (plain and strict)", n)
	}
}

// The corrected invoice passes; compact detail gives the seed's compact shape.
func TestSeedInvoiceFinal(t *testing.T) {
	body := strings.Replace(string(seedFile(t, "invoice-draft.request.json")), `"total": 135.0`, `"total": 129.5`, 1)
	body = strings.Replace(body, `"invoice-7731-draft"`, `"invoice-7731-final"`, 1)
	body = strings.Replace(body, `"detail": "full"`, `"detail": "compact"`, 1)
	out, rep, err := NewEngine(wire.Limits{}).Respond([]byte(body), testEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() {
		t.Fatalf("result %s, want pass", rep.Result)
	}
	// The seed's final request used a schema whose bytes the seed does not show, so its
	// schema_hash cannot be reproduced; everything else must match.
	got := comparable(t, out, "schema_hash")
	want := comparable(t, seedFile(t, "invoice-final.response.json"), "schema_hash")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compact report differs from the seed's\ngot:  %v\nwant: %v", got, want)
	}
}

func TestSignedReportVerifies(t *testing.T) {
	key := receipt.Key{Version: "test-key", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}
	body := seedFile(t, "invoice-draft.request.json")
	out, _, err := NewEngine(wire.Limits{}).Respond(body, testEnv, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := receipt.VerifyReceipt(out, []receipt.PublicKey{key.Public()}, body); err != nil {
		t.Fatalf("receipt does not verify: %v", err)
	}
	tampered := bytes.Replace(out, []byte(`"passed":22`), []byte(`"passed":21`), 1)
	if err := receipt.VerifyReceipt(tampered, []receipt.PublicKey{key.Public()}, body); err == nil {
		t.Fatal("a tampered receipt verified")
	}
}

func TestRatioAndCaps(t *testing.T) {
	if got := ratioOf(29, 30); got.Ratio != 0.966667 {
		t.Errorf("ratio 29/30 = %v", got.Ratio)
	}
	if got := ratioOf(0, 0); got.Ratio != 1 {
		t.Errorf("ratio 0/0 = %v, want 1", got.Ratio)
	}
}

// TestReportListsCapped: a Tally keeps the first ListCap failures and counts the rest, and the
// report's lists show the first ListCap entries of the failures in report order (schema, rules,
// bounds, content, info; hints of blocking failures first) with the rest counted: exactly as if
// every failure had been kept and every list cut afterwards, whichever groups block and however
// many failures each has around the cap.
func TestReportListsCapped(t *testing.T) {
	// fails is n failures of one group, their checks taking turns among checks: as a Tally
	// records them, and all of them.
	fails := func(n int, checks ...string) (Tally, []Failure) {
		var tl Tally
		var all []Failure
		for i := range n {
			c := checks[i*len(checks)/max(n, 1)] // the later checks appear only past the cap
			f := Failure{Check: c, At: []jsonvalue.Step{{Kind: jsonvalue.StepKey, Key: c}, {Kind: jsonvalue.StepIndex, Index: i}},
				Kind: textKind{"e", fmt.Sprint(i), "d" + fmt.Sprint(i)}}
			tl.Fail(f)
			all = append(all, f)
		}
		return tl, all
	}
	type group struct {
		all      []Failure
		source   string
		blocking bool
		severity string
	}
	// want lists every failure, then cuts each list at ListCap: the reading buildReport must match.
	want := func(groups []group) (errs []string, flags []Flag, hints []Hint, blocking []string) {
		var later []Hint
		blocking = []string{}
		for _, g := range groups {
			for _, f := range g.all {
				x := shownOf(f)
				flags = append(flags, Flag{Check: x.Check, Field: x.Field, Severity: g.severity, Detail: x.Detail})
				h := Hint{Source: g.source, Check: x.Check, Path: x.Path, Expected: x.Expected, Found: x.Found}
				if !g.blocking {
					if g.severity != "info" {
						later = append(later, h)
					}
					continue
				}
				if !slices.Contains(blocking, x.Check) {
					blocking = append(blocking, x.Check)
				}
				errs = append(errs, messagePrefix(g.source)+": "+x.Check+" at '"+fieldOrRoot(x.Field)+"': "+x.Detail)
				hints = append(hints, h)
			}
		}
		return errs, flags, append(hints, later...), blocking
	}
	sev := func(blocking bool) string {
		if blocking {
			return "error"
		}
		return "warning"
	}
	cut := func(n int) int { return min(n, ListCap) }
	for _, sizes := range [][5]int{{0, 0, 0, 0, 0}, {3, 2, 1, 1, 1}, {49, 1, 1, 0, 2}, {50, 50, 0, 0, 0}, {120, 30, 5, 7, 4}, {0, 70, 0, 60, 3}, {10, 0, 0, 0, 90}, {51, 200, 51, 51, 51}} {
		for _, enforce := range []bool{false, true} {
			for _, strict := range []bool{false, true} {
				var f Findings
				var all [5][]Failure
				f.Schema, all[0] = fails(sizes[0], "schema:type", "schema:enum")
				f.Rules, all[1] = fails(sizes[1], "consistency:sum_equals", "consistency:unique", "consistency:gte")
				f.Bounds, all[2] = fails(sizes[2], "bounds:range")
				f.Content, all[3] = fails(sizes[3], "content:placeholder", "content:empty_string")
				f.Info, all[4] = fails(sizes[4], "content:inexact_number")
				f.Enforce, f.Strict = enforce, strict
				for i, tl := range []Tally{f.Schema, f.Rules, f.Bounds, f.Content, f.Info} {
					if len(tl.Failures) != cut(sizes[i]) || tl.Failed() != sizes[i] {
						t.Fatalf("a tally of %d failures keeps %d and counts %d", sizes[i], len(tl.Failures), tl.Failed())
					}
				}
				rep := buildReport(&Request{}, f, Envelope{})
				errs, flags, hints, blocking := want([]group{
					{all[0], sourceSchema, true, "error"}, {all[1], sourceIntegrity, enforce, sev(enforce)},
					{all[2], sourceIntegrity, enforce, sev(enforce)}, {all[3], sourceContent, strict, sev(strict)},
					{all[4], sourceContent, false, "info"},
				})
				name := fmt.Sprintf("%v enforce=%v strict=%v", sizes, enforce, strict)
				if !slices.Equal(rep.Errors, errs[:cut(len(errs))]) || *rep.ErrorsTotal != len(errs) || *rep.ErrorsOmitted != len(errs)-cut(len(errs)) {
					t.Errorf("%s: errors %d shown of %d (%d omitted), want %d of %d", name, len(rep.Errors), *rep.ErrorsTotal, *rep.ErrorsOmitted, cut(len(errs)), len(errs))
				}
				if len(rep.ErrorsDetail) != cut(len(errs)) || *rep.ErrorsDetailTotal != len(errs) || (len(errs) > 0 && rep.ErrorsDetail[0].Message != errs[0]) {
					t.Errorf("%s: errors_detail %d shown of %d", name, len(rep.ErrorsDetail), *rep.ErrorsDetailTotal)
				}
				if !slices.Equal(rep.Flags, flags[:cut(len(flags))]) || *rep.FlagsTotal != len(flags) || *rep.FlagsOmitted != len(flags)-cut(len(flags)) {
					t.Errorf("%s: flags %d shown of %d, want %d of %d", name, len(rep.Flags), *rep.FlagsTotal, cut(len(flags)), len(flags))
				}
				if !slices.Equal(rep.Hints, hints[:cut(len(hints))]) || *rep.HintsTotal != len(hints) || *rep.HintsOmitted != len(hints)-cut(len(hints)) {
					t.Errorf("%s: hints %d shown of %d, want %d of %d", name, len(rep.Hints), *rep.HintsTotal, cut(len(hints)), len(hints))
				}
				if !slices.Equal(rep.Summary.BlockingChecks, blocking) || (rep.Result == "fail") != (len(blocking) > 0) {
					t.Errorf("%s: blocking %v result %s, want %v", name, rep.Summary.BlockingChecks, rep.Result, blocking)
				}
				if rep.Errors == nil || rep.Flags == nil || rep.Hints == nil || rep.ErrorsDetail == nil {
					t.Errorf("%s: a null list", name)
				}
			}
		}
	}
	// Merging keeps the first ListCap of both, in order, and the check names only the dropped have.
	a, allA := fails(40, "content:placeholder")
	b, allB := fails(30, "content:placeholder", "content:empty_string")
	a.Add(b)
	merged := append(allA, allB...)
	if !slices.Equal(shownAll(a.Failures), shownAll(merged[:ListCap])) || a.Failed() != 70 || !slices.Equal(a.appendChecks(nil), []string{"content:placeholder", "content:empty_string"}) {
		t.Errorf("merged tally: %d kept, %d failed, checks %v", len(a.Failures), a.Failed(), a.appendChecks(nil))
	}
}

// benchInvoice is the seed invoice with n line items, each consistent with the total.
func benchInvoice(b *testing.B, n int) []byte {
	b.Helper()
	var req map[string]any
	if err := json.Unmarshal(seedFile(b, "invoice-draft.request.json"), &req); err != nil {
		b.Fatal(err)
	}
	if n > 0 {
		items := make([]any, n)
		for i := range items {
			items[i] = map[string]any{"sku": "SKU-" + strings.Repeat("9", i%7+1), "qty": i%5 + 1, "line_total": 10.25}
		}
		out := req["submitted_output"].(map[string]any)
		out["line_items"] = items
		out["total"] = 10.25 * float64(n)
	}
	body, _ := json.Marshal(req)
	return body
}

// BenchmarkVerifySeedInvoice is one whole signed verification of the seed invoice with the
// schema already compiled: decode, validate and count, rules, four hashes, report, sign.
func BenchmarkVerifySeedInvoice(b *testing.B) {
	key := receipt.Key{Version: "bench", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}
	for _, n := range []int{0, 200} {
		body := benchInvoice(b, n)
		eng := NewEngine(wire.Limits{})
		if _, _, err := eng.Respond(body, testEnv, key); err != nil {
			b.Fatal(err)
		}
		b.Run(itemsName(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, _, err := eng.Respond(body, testEnv, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyUncachedSchema is the same job when every request brings a new schema.
func BenchmarkVerifyUncachedSchema(b *testing.B) {
	key := receipt.Key{Version: "bench", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}
	body := benchInvoice(b, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := NewEngine(wire.Limits{}).Respond(body, testEnv, key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareValidate is the baseline of SPEC §14: santhosh-tekuri's own parse of the same
// request document and validation of its submitted_output against the already compiled schema.
func BenchmarkBareValidate(b *testing.B) {
	for _, n := range []int{0, 200} {
		var req struct {
			Schema json.RawMessage `json:"expected_schema"`
			Output json.RawMessage `json:"submitted_output"`
		}
		body := benchInvoice(b, n)
		if err := json.Unmarshal(body, &req); err != nil {
			b.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(req.Schema))
		if err != nil {
			b.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource("urn:bench", doc); err != nil {
			b.Fatal(err)
		}
		sch, err := c.Compile("urn:bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(itemsName(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				if err := sch.Validate(doc.(map[string]any)["submitted_output"]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itemsName(n int) string {
	if n == 0 {
		return "seed"
	}
	return "items=200"
}

// countingKind counts how often a report writes it.
type countingKind struct{ written *int }

func (k countingKind) Texts() (string, string, string) { *k.written++; return "e", "f", "d" }

// A report writes a failure only when one of its lists shows it, and once however many lists
// show it: a compact report writes none, and a failure kept in a tally but past every list's
// ListCap is never written.
func TestFailuresWrittenOnlyWhenListed(t *testing.T) {
	for _, c := range []struct {
		enforce, strict bool
		listed          int // distinct failures the lists show
	}{
		// Flags show 30 schema and 20 rule failures; hints the same ones.
		{false, false, 50},
		// errors, errors_detail, flags and hints all show 30 schema and 20 rule failures.
		{true, false, 50},
		// Flags show 30 schema and 20 rule failures, errors 30 schema and 20 content ones.
		{false, true, 70},
	} {
		var counts [5][]int
		tally := func(g int, check string, n int) Tally {
			counts[g] = make([]int, n)
			var tl Tally
			for i := range n {
				if !tl.failCounted(check) {
					tl.Fail(Failure{Check: check, At: []jsonvalue.Step{{Kind: jsonvalue.StepIndex, Index: i}}, Kind: countingKind{&counts[g][i]}})
				}
			}
			return tl
		}
		f := Findings{
			Schema: tally(0, "schema:type", 30), Rules: tally(1, "consistency:gte", 80), Bounds: tally(2, "bounds:range", 10),
			Content: tally(3, "content:placeholder", 70), Info: tally(4, "content:inexact_number", 5),
			Enforce: c.enforce, Strict: c.strict,
		}
		written := func() (once, more int) {
			for _, g := range counts {
				for _, n := range g {
					once += min(n, 1)
					more += max(n-1, 0)
				}
			}
			return once, more
		}
		f.Compact = true
		buildReport(&Request{}, f, Envelope{})
		if once, _ := written(); once != 0 {
			t.Errorf("enforce=%v strict=%v: a compact report wrote %d failures", c.enforce, c.strict, once)
		}
		f.Compact = false
		rep := buildReport(&Request{}, f, Envelope{})
		if len(rep.Flags) != ListCap || len(rep.Hints) != ListCap {
			t.Fatalf("enforce=%v strict=%v: %d flags, %d hints", c.enforce, c.strict, len(rep.Flags), len(rep.Hints))
		}
		if once, more := written(); once != c.listed || more != 0 {
			t.Errorf("enforce=%v strict=%v: %d failures written, %d of them again; want %d, each once", c.enforce, c.strict, once, more, c.listed)
		}
	}
}
