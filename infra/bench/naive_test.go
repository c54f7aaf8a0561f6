package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// The naive Go composition of SPEC §14: the same whole job as the engine, done by putting the
// libraries together the obvious way. The request is parsed twice with encoding/json (once into raw
// members to hash, once into a tree for validation and rules), each hashed part goes through
// gowebpki/jcs's Transform on its own, santhosh-tekuri validates against a schema compiled once
// (formats asserted), rules add decimals with math/big, and crypto/ed25519 signs the envelope.
// It lives in a test file so that it is never linked into anything but this benchmark.

const (
	naiveContext    = "json-schema-verifier/verify-schema-attestation/v1"
	naiveKeyVersion = "bench"
	naiveBaseURL    = "http://127.0.0.1:8080"
	naiveTolerance  = "1e-9"
)

// naiveVerifier holds what a naive service keeps between requests: the compiled schema and the key.
type naiveVerifier struct {
	schema *jsonschema.Schema
	key    ed25519.PrivateKey
}

func newNaiveVerifier(body []byte, key ed25519.PrivateKey) (*naiveVerifier, error) {
	var req struct {
		Schema json.RawMessage `json:"expected_schema"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(req.Schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("urn:naive", doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile("urn:naive")
	if err != nil {
		return nil, err
	}
	return &naiveVerifier{schema: sch, key: key}, nil
}

type naiveRule struct {
	Type        string       `json:"type"`
	Field       *string      `json:"field"`
	EqualsField *string      `json:"equals_field"`
	Equals      *json.Number `json:"equals"`
	OtherField  *string      `json:"other_field"`
	Value       any          `json:"value"`
	InField     *string      `json:"in_field"`
	Values      any          `json:"values"`
	Tolerance   *json.Number `json:"tolerance"`
	IfPresent   bool         `json:"if_present"`
}

type naiveRequest struct {
	TaskID             string                     `json:"task_id"`
	AgentID            *string                    `json:"agent_id"`
	Output             any                        `json:"submitted_output"`
	StrictContentCheck bool                       `json:"strict_content_check"`
	Bounds             map[string]json.RawMessage `json:"bounds"`
	Rules              []naiveRule                `json:"rules"`
	EnforceRules       bool                       `json:"enforce_rules"`
}

type naiveFlag struct {
	Check    string `json:"check"`
	Field    string `json:"field"`
	Severity string `json:"severity"`
	Detail   string `json:"detail"`
}

type naiveRatio struct {
	Ratio  float64 `json:"ratio"`
	Passed int     `json:"passed"`
	Total  int     `json:"total"`
}

func ratioOf(passed, total int) naiveRatio {
	r := 1.0
	if total > 0 {
		r = math.Round(float64(passed)/float64(total)*1e6) / 1e6
	}
	return naiveRatio{r, passed, total}
}

type naiveAttestation struct {
	Algorithm  string `json:"algorithm"`
	KeyVersion string `json:"key_version"`
	Timestamp  string `json:"timestamp"`
	Signature  string `json:"signature"`
}

type naiveResponse struct {
	Summary struct {
		Result         string   `json:"result"`
		BlockingChecks []string `json:"blocking_checks"`
	} `json:"summary"`
	NextActions        []map[string]string `json:"next_actions"`
	Result             string              `json:"result"`
	VerificationID     string              `json:"verification_id"`
	TaskID             string              `json:"task_id"`
	AgentID            *string             `json:"agent_id"`
	OutputHash         string              `json:"output_hash"`
	SchemaHash         string              `json:"schema_hash"`
	RulesHash          string              `json:"rules_hash"`
	RequestHash        string              `json:"request_hash"`
	VerifiedAt         string              `json:"verified_at"`
	VerifierVersion    string              `json:"verifier_version"`
	EnforceRules       bool                `json:"enforce_rules"`
	StrictContentCheck bool                `json:"strict_content_check"`
	Errors             []string            `json:"errors"`
	Flags              []naiveFlag         `json:"flags"`
	SchemaCompliance   naiveRatio          `json:"schema_compliance"`
	IntegrityChecks    naiveRatio          `json:"integrity_checks"`
	Overall            naiveRatio          `json:"overall"`
	Verify             map[string]string   `json:"verify"`
	Attestation        *naiveAttestation   `json:"attestation,omitempty"`
}

var (
	naivePass = []map[string]string{{"action": "attach_receipt", "for": "seller"}, {"action": "proceed_to_payment", "for": "buyer"}}
	naiveFail = []map[string]string{{"action": "repair_and_reverify", "using": "hints"}, {"action": "withhold_payment", "for": "buyer"}}
)

// naiveHash is the hex SHA-256 of the RFC 8785 form of a JSON document.
func naiveHash(doc []byte) (string, error) {
	canon, err := jcs.Transform(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// naiveResolve returns the values a rule path (a.b, a[].b, a[2].b) reaches in doc, or nil and false
// when a key or index on the way is missing.
func naiveResolve(doc any, path string) ([]any, bool) {
	values := []any{doc}
	for _, part := range strings.Split(path, ".") {
		name, brackets, _ := strings.Cut(part, "[")
		next := values[:0:0]
		for _, v := range values {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			x, ok := m[name]
			if !ok {
				return nil, false
			}
			next = append(next, x)
		}
		values = next
		if brackets == "" {
			continue
		}
		for _, index := range strings.Split(strings.TrimSuffix(brackets, "]"), "][") {
			var expanded []any
			for _, v := range values {
				a, ok := v.([]any)
				if !ok {
					return nil, false
				}
				if index == "" {
					expanded = append(expanded, a...)
					continue
				}
				i, err := strconv.Atoi(index)
				if err != nil || i >= len(a) {
					return nil, false
				}
				expanded = append(expanded, a[i])
			}
			values = expanded
		}
	}
	return values, true
}

func naiveRat(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	return new(big.Rat).SetString(n.String())
}

// evaluate runs the rules. Only sum_equals is needed by the documents measured; anything else is
// refused rather than skipped, so the benchmark never reports a job it did not do.
func (v *naiveVerifier) evaluate(output any, rules []naiveRule) (passed, total int, failures []naiveFlag, err error) {
	for _, r := range rules {
		if r.Type != "sum_equals" || r.Field == nil {
			return 0, 0, nil, fmt.Errorf("rule type %q is not implemented in the naive composition", r.Type)
		}
		tol := json.Number(naiveTolerance)
		if r.Tolerance != nil {
			tol = *r.Tolerance
		}
		tolerance, _ := new(big.Rat).SetString(tol.String())
		values, found := naiveResolve(output, *r.Field)
		var target any
		targetName := ""
		if r.Equals != nil {
			target, targetName = *r.Equals, r.Equals.String()
		}
		if r.EqualsField != nil {
			t, ok := naiveResolve(output, *r.EqualsField)
			target = nil
			if ok && len(t) == 1 {
				target = t[0]
			}
			targetName = fmt.Sprintf("%s (%v)", *r.EqualsField, target)
		}
		if !found && r.IfPresent {
			continue
		}
		total++
		want, isNumber := naiveRat(target)
		detail := ""
		switch {
		case !found || !isNumber:
			detail = "field not found"
		default:
			sum := new(big.Rat)
			for _, x := range values {
				n, ok := naiveRat(x)
				if !ok {
					detail = "a value is not a number"
					break
				}
				sum.Add(sum, n)
			}
			if detail != "" {
				break
			}
			if new(big.Rat).Abs(new(big.Rat).Sub(sum, want)).Cmp(tolerance) <= 0 {
				passed++
				continue
			}
			detail = fmt.Sprintf("values sum to %s, expected %s", sum.FloatString(2), targetName)
		}
		failures = append(failures, naiveFlag{Check: "consistency:sum_equals", Field: *r.Field, Detail: detail})
	}
	return passed, total, failures, nil
}

// nullIfEmpty is raw, or null when the member is absent.
func nullIfEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// verify is one whole verification of body: the response with its attestation.
func (v *naiveVerifier) verify(body []byte) ([]byte, error) {
	// First parse: the members as sent, to hash.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	// Second parse: the tree with numbers kept as literals, for the validator and the rules.
	var req naiveRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return nil, err
	}

	var schemaErrs []naiveFlag
	if err := v.schema.Validate(req.Output); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		for _, u := range ve.BasicOutput().Errors {
			if u.Error != nil {
				schemaErrs = append(schemaErrs, naiveFlag{Check: "schema:" + u.KeywordLocation, Field: u.InstanceLocation, Severity: "error", Detail: u.Error.String()})
			}
		}
	}
	passed, total, failures, err := v.evaluate(req.Output, req.Rules)
	if err != nil {
		return nil, err
	}
	if len(req.Bounds) > 0 {
		return nil, errors.New("bounds are not implemented in the naive composition")
	}

	var resp naiveResponse
	if resp.OutputHash, err = naiveHash(raw["submitted_output"]); err != nil {
		return nil, err
	}
	if resp.SchemaHash, err = naiveHash(raw["expected_schema"]); err != nil {
		return nil, err
	}
	rulesDoc, err := json.Marshal(map[string]json.RawMessage{"bounds": nullIfEmpty(raw["bounds"]), "rules": nullIfEmpty(raw["rules"])})
	if err != nil {
		return nil, err
	}
	if resp.RulesHash, err = naiveHash(rulesDoc); err != nil {
		return nil, err
	}
	var filledRules []map[string]any
	for _, r := range req.Rules {
		tol := json.Number(naiveTolerance)
		if r.Tolerance != nil {
			tol = *r.Tolerance
		}
		filledRules = append(filledRules, map[string]any{
			"type": r.Type, "field": r.Field, "equals_field": r.EqualsField, "equals": r.Equals,
			"other_field": r.OtherField, "value": r.Value, "in_field": r.InField, "values": r.Values,
			"tolerance": tol, "if_present": r.IfPresent,
		})
	}
	requestDoc, err := json.Marshal(map[string]any{
		"task_id": req.TaskID, "agent_id": req.AgentID,
		"expected_schema": raw["expected_schema"], "submitted_output": raw["submitted_output"],
		"strict_content_check": req.StrictContentCheck, "bounds": nil, "rules": filledRules,
		"enforce_rules": req.EnforceRules,
	})
	if err != nil {
		return nil, err
	}
	if resp.RequestHash, err = naiveHash(requestDoc); err != nil {
		return nil, err
	}

	blocking := []string{}
	resp.Errors, resp.Flags = []string{}, []naiveFlag{}
	for _, f := range schemaErrs {
		resp.Flags = append(resp.Flags, f)
		resp.Errors = append(resp.Errors, "schema: "+f.Check+" at '"+f.Field+"': "+f.Detail)
		if !contains(blocking, f.Check) {
			blocking = append(blocking, f.Check)
		}
	}
	for _, f := range failures {
		f.Severity = "warning"
		if req.EnforceRules {
			f.Severity = "error"
			resp.Errors = append(resp.Errors, "enforce_rules: "+f.Check+" at '"+f.Field+"': "+f.Detail)
			if !contains(blocking, f.Check) {
				blocking = append(blocking, f.Check)
			}
		}
		resp.Flags = append(resp.Flags, f)
	}
	resp.Result, resp.NextActions = "pass", naivePass
	if len(blocking) > 0 {
		resp.Result, resp.NextActions = "fail", naiveFail
	}
	resp.Summary.Result, resp.Summary.BlockingChecks = resp.Result, blocking
	// The schema counts as one check: santhosh-tekuri does not count assertions as the engine does.
	schemaPassed := 1
	if len(schemaErrs) > 0 {
		schemaPassed = 0
	}
	resp.SchemaCompliance, resp.IntegrityChecks = ratioOf(schemaPassed, 1), ratioOf(passed, total)
	resp.Overall = ratioOf(schemaPassed+passed, 1+total)
	resp.VerificationID, resp.TaskID, resp.AgentID = checkEnvelope.VerificationID, req.TaskID, req.AgentID
	resp.VerifiedAt, resp.VerifierVersion = "2026-10-14T19:12:05.645221+00:00", "naive-go"
	resp.EnforceRules, resp.StrictContentCheck = req.EnforceRules, req.StrictContentCheck
	resp.Verify = map[string]string{
		"public_key_url": naiveBaseURL + "/.well-known/agent-card.json", "key_version": naiveKeyVersion,
		"canonicalization": "RFC 8785 (JCS)", "hash_algorithm": "SHA-256",
		"service": "Agent Output Verifier", "mcp": naiveBaseURL + "/mcp",
	}

	envelope, err := json.Marshal(map[string]any{
		"context": naiveContext, "algorithm": "Ed25519", "key_version": naiveKeyVersion,
		"attested_at": resp.VerifiedAt, "response": resp,
	})
	if err != nil {
		return nil, err
	}
	message, err := jcs.Transform(envelope)
	if err != nil {
		return nil, err
	}
	resp.Attestation = &naiveAttestation{Algorithm: "Ed25519", KeyVersion: naiveKeyVersion, Timestamp: resp.VerifiedAt,
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(v.key, message))}
	return json.Marshal(resp)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// naiveDocuments are the documents the benchmarks measure, with the Go benchmark's name of each.
func naiveDocuments(tb testing.TB) []benchDocument {
	tb.Helper()
	root, err := testproc.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	docs, err := buildBenchDocuments(root)
	if err != nil {
		tb.Fatal(err)
	}
	return docs
}

// naiveSetup builds the verifier for doc and checks its answer like every other peer's.
func naiveSetup(tb testing.TB, doc benchDocument) *naiveVerifier {
	tb.Helper()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	v, err := newNaiveVerifier(doc.body, key)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := v.verify(doc.body)
	if err != nil {
		tb.Fatal(err)
	}
	run := peerRun{Us: 1, Ops: 1, Response: string(out), KeyVersion: naiveKeyVersion,
		PublicKey: base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))}
	if err := checkPeer("naive Go", doc, run); err != nil {
		tb.Fatal(err)
	}
	return v
}

func TestNaiveGo(t *testing.T) {
	for _, doc := range naiveDocuments(t) {
		t.Run(doc.name, func(t *testing.T) { naiveSetup(t, doc) })
	}
}

// BenchmarkNaiveGo is the naive Go composition's whole job on the documents of
// BenchmarkVerifySeedInvoice (pkg/verify), for `make bench`.
func BenchmarkNaiveGo(b *testing.B) {
	for _, doc := range naiveDocuments(b) {
		v := naiveSetup(b, doc)
		b.Run(goBenchName(doc.name), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc.body)))
			for b.Loop() {
				if _, err := v.verify(doc.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
