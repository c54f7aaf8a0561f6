package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/verify"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// The peers of SPEC §14 do the whole job of one verification (parse, validate, rules, four hashes,
// report, sign, serialize) on the documents the Go benchmarks use: Node with ajv + canonicalize +
// node:crypto (infra/bench/node), Python with jsonschema + cryptography (jsonschema_bench.py) and
// the naive Go composition of the libraries (BenchmarkNaiveGo). Each one hands back a signed
// response, which checkPeer holds against the Go engine before any of its numbers is reported.

// peerRun is one peer's whole job on one document: its timing and one response it signed.
type peerRun struct {
	Us         float64 `json:"us_per_op"`
	MinUs      float64 `json:"min_us"`
	MaxUs      float64 `json:"max_us"`
	Ops        int     `json:"ops_per_round"`
	Validator  string  `json:"validator"`
	Response   string  `json:"response"`
	KeyVersion string  `json:"key_version"`
	PublicKey  string  `json:"public_key"` // base64 of the raw 32-byte Ed25519 key
}

// pythonResult is what jsonschema_bench.py prints: validation alone and the whole job.
type pythonResult struct {
	Python       string `json:"python"`
	Jsonschema   string `json:"jsonschema"`
	Cryptography string `json:"cryptography"`
	Error        string `json:"error"`
	WholeError   string `json:"whole_error"`
	Rounds       int    `json:"rounds"`
	Results      map[string]struct {
		Us        float64  `json:"us_per_op"`
		MinUs     float64  `json:"min_us"`
		MaxUs     float64  `json:"max_us"`
		Ops       int      `json:"ops_per_round"`
		Validator string   `json:"validator"`
		Whole     *peerRun `json:"whole"`
	} `json:"results"`
	skipped string // why nothing ran, when nothing did
}

// whole returns Python's whole job on the named document, or nil when it was not measured.
func (p pythonResult) whole(doc string) *peerRun {
	if p.skipped != "" || p.WholeError != "" {
		return nil
	}
	return p.Results[doc].Whole
}

// wholeSkipped says why Python's whole job was not measured, or "" when it was.
func (p pythonResult) wholeSkipped() string {
	if p.skipped != "" {
		return p.skipped
	}
	return p.WholeError
}

// nodeResult is what infra/bench/node/bench.js prints.
type nodeResult struct {
	Versions map[string]string  `json:"versions"`
	Rounds   int                `json:"rounds"`
	Results  map[string]peerRun `json:"results"`
	skipped  string             // why it did not run, when it did not
}

// peerArgs are the arguments both peer scripts take: rounds, their length, then NAME=PATH each.
func peerArgs(c config, docs []benchDocument) []string {
	args := []string{"--rounds", strconv.Itoa(c.peerRounds), "--seconds", strconv.FormatFloat(c.peerRound.Seconds(), 'f', -1, 64)}
	for _, d := range docs {
		args = append(args, d.name+"="+d.path)
	}
	return args
}

// runScript runs a peer script and decodes the JSON object it prints into v.
func runScript(ctx context.Context, dir, interpreter string, args []string, v any) error {
	cmd := exec.CommandContext(ctx, interpreter, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", interpreter, args[0], err, stderr.Bytes())
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("%s %s printed %q: %w", interpreter, filepath.Base(args[0]), out, err)
	}
	return nil
}

// runPython measures Python's jsonschema (validation alone) and Python's whole job, and checks
// every whole-job response it signed.
func runPython(ctx context.Context, c config, docs []benchDocument) (pythonResult, error) {
	var res pythonResult
	if _, err := exec.LookPath(c.python); err != nil {
		res.skipped = fmt.Sprintf("%s is not installed", c.python)
		return res, nil
	}
	script := filepath.Join(c.root, "infra", "bench", "jsonschema_bench.py")
	if err := runScript(ctx, c.root, c.python, append([]string{script}, peerArgs(c, docs)...), &res); err != nil {
		return res, err
	}
	if res.Error != "" {
		res.skipped = res.Error
		return res, nil
	}
	for _, d := range docs {
		if _, ok := res.Results[d.name]; !ok {
			return res, fmt.Errorf("jsonschema_bench.py did not measure %s", d.name)
		}
		if res.WholeError != "" {
			continue
		}
		run := res.whole(d.name)
		if run == nil {
			return res, fmt.Errorf("jsonschema_bench.py did not measure the whole job on %s", d.name)
		}
		if err := checkPeer("Python", d, *run); err != nil {
			return res, err
		}
	}
	return res, nil
}

// nodeDir is the npm project of the Node peer, installed from its lock file by `make bench`.
var nodeDir = filepath.Join("infra", "bench", "node")

// runNode measures Node's whole job and checks every response it signed.
func runNode(ctx context.Context, c config, docs []benchDocument) (nodeResult, error) {
	var res nodeResult
	if _, err := exec.LookPath(c.node); err != nil {
		res.skipped = fmt.Sprintf("%s is not installed", c.node)
		return res, nil
	}
	dir := filepath.Join(c.root, nodeDir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		return res, fmt.Errorf("the Node peer's packages are not installed (make %s/node_modules/.installed, which `make bench` runs): %w", nodeDir, err)
	}
	args := append([]string{filepath.Join(dir, "bench.js")}, peerArgs(c, docs)...)
	if err := runScript(ctx, dir, c.node, args, &res); err != nil {
		return res, err
	}
	for _, d := range docs {
		run, ok := res.Results[d.name]
		if !ok {
			return res, fmt.Errorf("the Node peer did not measure %s", d.name)
		}
		if err := checkPeer("Node", d, run); err != nil {
			return res, err
		}
	}
	return res, nil
}

// checkEnvelope is what the engine is given when checkPeer asks it for the result it would return.
var checkEnvelope = verify.Envelope{
	VerificationID:  "00000000-0000-4000-8000-000000000000",
	VerifiedAt:      time.Date(2026, 10, 14, 19, 12, 5, 645221000, time.UTC),
	VerifierVersion: "bench",
	Verify:          receipt.NewVerifyInfo("http://127.0.0.1:8080", "bench"),
}

// checkPeer holds the response a peer signed for doc against the Go engine, so that no number is
// reported for a job done wrong: its four hashes must be the engine's, its result the engine's, and
// the receipt must pass the independent receipt verifier (signature under the peer's public key,
// hashes recomputed from the request).
func checkPeer(who string, doc benchDocument, run peerRun) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s peer on %s: %s", who, doc.name, fmt.Sprintf(format, a...))
	}
	eng := verify.NewEngine(wire.Limits{})
	req, _, err := eng.Decode(doc.body)
	if err != nil {
		return fail("the Go engine refuses the document: %v", err)
	}
	_, rep, err := eng.Respond(doc.body, checkEnvelope, nil)
	if err != nil {
		return fail("the Go engine: %v", err)
	}
	var got struct {
		Result      string `json:"result"`
		OutputHash  string `json:"output_hash"`
		SchemaHash  string `json:"schema_hash"`
		RulesHash   string `json:"rules_hash"`
		RequestHash string `json:"request_hash"`
	}
	if err := json.Unmarshal([]byte(run.Response), &got); err != nil {
		return fail("its response is not JSON: %v", err)
	}
	for _, h := range []struct{ name, got, want string }{
		{"output_hash", got.OutputHash, req.Hashes.Output},
		{"schema_hash", got.SchemaHash, req.Hashes.Schema},
		{"rules_hash", got.RulesHash, req.Hashes.Rules},
		{"request_hash", got.RequestHash, req.Hashes.Request},
	} {
		if h.got != h.want {
			return fail("%s is %q, the Go engine computes %q", h.name, h.got, h.want)
		}
	}
	if got.Result != rep.Result {
		return fail("result is %q, the Go engine's is %q", got.Result, rep.Result)
	}
	pub, err := receipt.ParsePublicKey(run.KeyVersion, run.PublicKey)
	if err != nil {
		return fail("%v", err)
	}
	if err := receipt.VerifyReceipt([]byte(run.Response), []receipt.PublicKey{pub}, doc.body); err != nil {
		return fail("its receipt does not verify: %v", err)
	}
	if run.Us <= 0 || run.Ops < 1 {
		return fail("no timing (%.3f µs per operation over %d operations)", run.Us, run.Ops)
	}
	return nil
}
