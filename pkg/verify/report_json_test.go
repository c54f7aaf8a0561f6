package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// assertCanonicalReport holds the report's own encoders to the general ones: its wire form to
// JSON's reflection over the struct and its tags, and its canonical form to the general
// canonicalizer applied to the wire form (the signer signs the former, verifiers rebuild the
// latter).
func assertCanonicalReport(t testing.TB, rep *Report) {
	t.Helper()
	wire, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	reflected, err := jsonv2.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wire, reflected) {
		t.Fatalf("wire forms differ\nencoder:   %s\nreflection: %s", wire, reflected)
	}
	want, err := receipt.Canonicalize(wire)
	if err != nil {
		t.Fatalf("canonicalize the wire form: %v", err)
	}
	got, err := rep.canonicalJSON(nil)
	if err != nil {
		t.Fatalf("the report's canonical encoder refused a report: %v\n%s", err, wire)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical forms differ\nencoder:        %s\ncanonicalizer:  %s", got, want)
	}
	// Finish writes both forms in one call, which skips looking at the strings a second time.
	bothWire, bothCanon, err, canonErr := rep.bothJSON(nil, nil)
	if err != nil || canonErr != nil || !bytes.Equal(bothWire, wire) || !bytes.Equal(bothCanon, want) {
		t.Fatalf("bothJSON differs (%v, %v)\nwire:      %s\ncanonical: %s", err, canonErr, bothWire, bothCanon)
	}
}

// reportShapes are request bodies that give every shape of report: the schema-count and rules
// cases of testdata, each full and compact, strict and lenient, enforced and not, plus outputs
// whose paths and values need escaping and outputs that overflow every list cap.
func reportShapes(t testing.TB) [][]byte {
	t.Helper()
	type doc struct {
		Schema   json.RawMessage `json:"schema"`
		Instance json.RawMessage `json:"instance"`
		Output   json.RawMessage `json:"output"`
		Rules    json.RawMessage `json:"rules"`
		Bounds   json.RawMessage `json:"bounds"`
	}
	var docs []doc
	files, _ := filepath.Glob("testdata/schema-count/*.json")
	for _, f := range files {
		var d doc
		if err := json.Unmarshal(mustRead(t, f), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	for _, f := range []string{"testdata/rules/rules.json", "testdata/rules/bounds.json"} {
		var ds []doc
		if err := json.Unmarshal(mustRead(t, f), &ds); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, ds...)
	}
	many := make([]string, 0, 120)
	for i := range 120 {
		many = append(many, fmt.Sprintf(`"k\"%d\u2028é\u0001😀":%d`, i, i))
	}
	docs = append(docs,
		doc{Schema: json.RawMessage(`{"type":"object","additionalProperties":{"type":"string","maxLength":1}}`),
			Output: json.RawMessage(`{` + strings.Join(many, ",") + `}`)},
		doc{Schema: json.RawMessage(`{"type":"array","items":{"type":"integer","maximum":3}}`),
			Output: json.RawMessage(`[1,2,3,4,5,6,7,8,9,10,"<&>",null,{"a\\b":"\t"}]`),
			Rules:  json.RawMessage(`[{"type":"unique","field":"[]"},{"type":"sum_equals","field":"[]","equals":1e3}]`)},
		doc{Schema: json.RawMessage(`{"type":"object","properties":{"note":{"type":"string"}}}`),
			Output: json.RawMessage(`{"note":"TODO: lorem ipsum","extra":"","名前":"N/A"}`)},
	)

	var bodies [][]byte
	for _, d := range docs {
		out := d.Output
		if out == nil {
			out = d.Instance
		}
		schema := d.Schema
		if schema == nil {
			schema = json.RawMessage(`true`)
		}
		for _, variant := range []string{
			`"detail":"full"`, `"detail":"compact"`, `"strict_content_check":true`,
			`"enforce_rules":true,"agent_id":"agent-\u00e9"`, `"enforce_rules":true,"strict_content_check":true,"detail":"compact","agent_id":null`,
		} {
			b := fmt.Appendf(nil, `{"task_id":"t-\"1\"","expected_schema":%s,"submitted_output":%s,%s`, schema, out, variant)
			if d.Rules != nil {
				b = fmt.Appendf(b, `,"rules":%s`, d.Rules)
			}
			if d.Bounds != nil {
				b = fmt.Appendf(b, `,"bounds":%s`, d.Bounds)
			}
			bodies = append(bodies, append(b, '}'))
		}
	}
	return bodies
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReportCanonicalEncoder(t *testing.T) {
	eng := NewEngine(wire.Limits{})
	var checked int
	for _, body := range append(reportShapes(t), seedFile(t, "invoice-draft.request.json")) {
		req, sch, err := eng.Decode(body)
		if err != nil {
			continue // the rules cases include requests the decoder refuses
		}
		// Each report in the three payment shapes: none (signed outside the service), the free
		// allowance, and a payment (SPEC §16).
		for _, p := range testPayments {
			env := testEnv
			env.Payment = p
			rep, err := eng.Check(req, sch, env)
			if err != nil {
				t.Fatal(err)
			}
			assertCanonicalReport(t, rep)
			checked++
			// The same report as a limited key's fitting leaves it, saying it was shortened.
			if checked%7 == 0 {
				rep.Shortened = &Shortened{Reason: ShortenedForSigningKey, MaxSignedBytes: 4096}
				assertCanonicalReport(t, rep)
			}
		}
	}
	if checked < 900 {
		t.Errorf("only %d reports compared", checked)
	}
}

// The parts written once and reused (the verify block, the next_actions lists) come out as the
// general encoders write them: reports alternate between two verify blocks, one of them with
// strings that need escaping, and a report with a list of next_actions of its own.
func TestReportRecurringParts(t *testing.T) {
	eng := NewEngine(wire.Limits{})
	req, sch, err := eng.Decode(seedFile(t, "invoice-draft.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	other := testEnv
	other.Verify = receipt.NewVerifyInfo("http://127.0.0.1:1/\"tab\there\u00e9", "key \"2\"")
	for i := range 4 {
		env := testEnv
		if i%2 == 1 {
			env = other
		}
		rep, err := eng.Check(req, sch, env)
		if err != nil {
			t.Fatal(err)
		}
		assertCanonicalReport(t, rep)
		if rep.Verify != env.Verify {
			t.Fatalf("report %d has verify block %+v, want %+v", i, rep.Verify, env.Verify)
		}
		rep.NextActions = []Action{{Action: "repair_and_reverify", Using: "hints"}, {Action: "x\"y", For: "\u00e9"}}
		assertCanonicalReport(t, rep)
	}
}

// testPayments are the payment members of SPEC §16: none, free, paid (with a payer that needs
// escaping, so that the payment member's strings take the escaping path too).
var testPayments = []*receipt.Payment{nil, &receipt.FreePayment, {
	Scheme: "exact", Network: "eip155:8453", Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
	Amount: "20000", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", Payer: "0x857b\"\u00e9",
	RequirementsHash: strings.Repeat("ab", 32), Authorization: "0x" + strings.Repeat("01", 32),
}}

// The signed envelope is built from the encoder's bytes and verifies with the independent
// verifier, which rebuilds the canonical form from the wire form.
func TestRespondSignsTheCanonicalForm(t *testing.T) {
	key := receipt.Key{Version: "test-key", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}
	eng := NewEngine(wire.Limits{})
	signed := 0
	for i, body := range reportShapes(t)[:60] {
		env := testEnv
		env.Payment = testPayments[i%len(testPayments)]
		out, _, err := eng.Respond(body, env, key)
		if err != nil {
			continue
		}
		if err := receipt.VerifyReceipt(out, []receipt.PublicKey{key.Public()}, body); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		signed++
	}
	if signed < 40 {
		t.Errorf("only %d receipts verified", signed)
	}
}

// The ratio writer's integer path writes every ratio ratioOf can give as the shortest-digits
// search does, and anything else goes that way too.
func TestRatioDigits(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		c := jsonWriter{}
		c.ratio(f)
		inRange := f == 0 || f >= 1e-6 && f < 1e21
		if want := strconv.AppendFloat(nil, f, 'f', -1, 64); !bytes.Equal(c.b, want) || (c.err == nil) != inRange {
			t.Fatalf("ratio %v written %s (%v), want %s", f, c.b, c.err, want)
		}
	}
	for k := range 1_000_001 {
		check(float64(k) / 1e6)
	}
	for total := 1; total <= 400; total++ {
		for passed := 0; passed <= total; passed++ {
			check(ratioOf(passed, total).Ratio)
		}
	}
	for _, f := range []float64{0.1 + 0.2, 0.9999995, 1e-7 * 3, math.Nextafter(0.5, 1), math.Nextafter(0.875, 0)} {
		check(f)
	}
}
