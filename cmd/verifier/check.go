package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/verify"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// localBase is the base URL a locally made receipt points at: the local server's default address.
const localBase = "http://127.0.0.1:8080"

// unsignedKeyVersion is the key_version an unsigned report names (check --unsigned).
const unsignedKeyVersion = "unsigned"

// rulesObjectMembers are the members a --rules file given as an object may hold: the request's
// checking part. Everything else of the request comes from the other flags.
const rulesObjectMembers = "rules, bounds, enforce_rules and strict_content_check"

const checkSynopsis = `  verifier check --key KEY [flags] REQUEST.json|-
  verifier check --key KEY --schema SCHEMA.json --data DATA.json [--rules RULES.json] [flags]
  verifier check --output text --schema SCHEMA.json --data DATA.json   (a verdict to read, no receipt)
REQUEST.json is a whole POST /verify/schema body. Exit 0 pass, 1 fail, 2 invalid request (the
error JSON is on stdout) or bad usage, 3 any other error. A one-line summary goes to stderr.`

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("check", checkSynopsis)
	keyArg := c.String("key", "", "sign with this `KEY`: a key file from 'verifier keygen' (preferred), or a base64 seed (visible in process listings)")
	keyVersion := c.String("key-version", "", "the key `VERSION` a base64 --key signs as (a key file names its own)")
	unsigned := c.Bool("unsigned", false, "write the JSON report without a signature: it proves nothing to anyone else")
	schemaFile := c.String("schema", "", "the JSON Schema `FILE` (with --data, instead of REQUEST.json)")
	dataFile := c.String("data", "", "the agent output `FILE` to check, or - for stdin (with --schema)")
	rulesFile := c.String("rules", "", "a `FILE` holding the rules: a JSON array of rules, or an object of "+rulesObjectMembers)
	taskID := c.String("task-id", "", "the task_id with --schema and --data (default: the data file's name)")
	detail := c.String("detail", "", "override the request's detail: full or compact")
	output := c.String("output", "json", "json (the signed report, to keep) or text (a verdict to read)")
	maxBody := c.Int64("max-body", 0, "refuse requests larger than `BYTES`, as a server would (0: no limit beyond memory)")
	base := c.String("base-url", localBase, "base `URL` named in the receipt's verify block")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	fromFiles := *schemaFile != "" || *dataFile != "" || *rulesFile != "" || *taskID != ""
	switch {
	case fromFiles && c.NArg() > 0:
		return c.misuse(stderr, "give REQUEST.json or --schema and --data, not both")
	case fromFiles && *schemaFile == "":
		return c.misuse(stderr, "--schema is required with --data")
	case fromFiles && *dataFile == "":
		return c.misuse(stderr, "--data is required with --schema")
	case !fromFiles && c.NArg() == 0:
		return c.misuse(stderr, "missing REQUEST.json (or --schema and --data)")
	case c.NArg() > 1:
		return c.misuse(stderr, "one REQUEST.json at a time")
	case *detail != "" && *detail != "full" && *detail != "compact":
		return c.misuse(stderr, "--detail must be full or compact")
	case *output != "json" && *output != "text":
		return c.misuse(stderr, "--output must be json or text")
	case *maxBody < 0:
		return c.misuse(stderr, "--max-body must be 0 (no limit) or a number of bytes")
	case *keyArg != "" && *unsigned:
		return c.misuse(stderr, "give --key or --unsigned, not both")
	case *keyArg == "" && !*unsigned && *output == "json":
		return c.misuse(stderr, "--key is required to write a receipt (make one with 'verifier keygen'), or --unsigned for a report without signature, or --output text to read the verdict")
	}

	var body []byte
	var err error
	if fromFiles {
		body, err = requestFromFiles(*schemaFile, *dataFile, *rulesFile, *taskID, stdin)
		if err != nil {
			return c.errorf(stderr, exitInvalid, "%v", err)
		}
	} else if body, err = readInput(c.Arg(0), stdin); err != nil {
		return c.errorf(stderr, exitError, "read request: %v", err)
	}

	var signer verify.Attester
	version := unsignedKeyVersion
	if *keyArg != "" {
		k, err := signingKey(*keyArg, *keyVersion, stderr)
		if err != nil {
			return c.errorf(stderr, exitInvalid, "--key: %v", err)
		}
		signer, version = k, k.Version
	} else if *unsigned {
		fmt.Fprintln(stderr, "verifier check: writing an unsigned report (--unsigned): it is no receipt, anyone could have written it")
	}
	env := verify.Envelope{
		VerificationID:  uuid.Must(uuid.NewRandomFromReader(rand.Reader)).String(),
		VerifiedAt:      time.Now(),
		VerifierVersion: wire.Version,
		Verify:          receipt.NewVerifyInfo(*base, version),
	}
	// Offline, the only ceiling is memory unless --max-body asks for a server's.
	limit := *maxBody
	if limit == 0 {
		limit = math.MaxInt64
	}
	eng := verify.NewEngine(wire.Limits{MaxBody: limit})
	req, sch, err := eng.Decode(body)
	if err != nil {
		return c.requestError(stdout, stderr, err, len(body))
	}
	if *detail != "" {
		req.Detail = verify.Detail(*detail)
	}
	out, rep, err := eng.Finish(req, sch, env, signer)
	if err != nil {
		return c.requestError(stdout, stderr, err, len(body))
	}
	if *output == "text" {
		writeText(stdout, rep)
	} else {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, out, "", "  "); err != nil {
			pretty.Reset()
			pretty.Write(out)
		}
		pretty.WriteByte('\n')
		stdout.Write(pretty.Bytes())
	}
	fmt.Fprintln(stderr, summaryLine(rep))
	if rep.Passed() {
		return exitOK
	}
	return exitFail
}

// requestFromFiles builds a request body from --schema, --data and --rules: the files' bytes
// are spliced in unchanged, so the receipt's hashes are those of the files' JSON, and the engine
// checks the result like any request (a typo in a rules object is an unknown field there).
func requestFromFiles(schemaFile, dataFile, rulesFile, taskID string, stdin io.Reader) ([]byte, error) {
	load := func(flagName, name string) ([]byte, error) {
		b, err := readInput(name, stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		b = bytes.TrimSpace(b)
		if !json.Valid(b) {
			return nil, fmt.Errorf("%s: %s is not JSON", flagName, name)
		}
		return b, nil
	}
	schema, err := load("--schema", schemaFile)
	if err != nil {
		return nil, err
	}
	data, err := load("--data", dataFile)
	if err != nil {
		return nil, err
	}
	if taskID == "" {
		taskID = strings.TrimSuffix(filepath.Base(dataFile), filepath.Ext(dataFile))
		if dataFile == "-" {
			taskID = "stdin"
		}
	}
	id, _ := json.Marshal(taskID)
	var b bytes.Buffer
	b.WriteString(`{"task_id":`)
	b.Write(id)
	b.WriteString(`,"expected_schema":`)
	b.Write(schema)
	b.WriteString(`,"submitted_output":`)
	b.Write(data)
	if rulesFile != "" {
		rules, err := load("--rules", rulesFile)
		if err != nil {
			return nil, err
		}
		switch rules[0] {
		case '[':
			b.WriteString(`,"rules":`)
			b.Write(rules)
		case '{':
			if inner := bytes.TrimSpace(rules[1 : len(rules)-1]); len(inner) > 0 {
				b.WriteByte(',')
				b.Write(inner)
			}
		default:
			return nil, fmt.Errorf("--rules: %s must hold a JSON array of rules or an object of %s", rulesFile, rulesObjectMembers)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// requestError prints an engine error as the error envelope on stdout, says on stderr what was
// refused, and returns the matching exit code.
func (c *command) requestError(stdout, stderr io.Writer, err error, size int) int {
	code := writeError(stdout, err)
	if e, ok := apperr.As(err); ok && e.Code == apperr.PayloadTooLarge {
		fmt.Fprintf(stderr, "verifier %s: the request is %d bytes, over --max-body %d\n", c.name, size, e.Limit)
		return code
	}
	if e, ok := apperr.As(err); ok {
		var names []string
		for _, f := range e.Fields {
			names = append(names, f.Field)
		}
		msg := "invalid request (" + string(e.Code) + ")"
		if len(names) > 0 {
			msg += ": " + strings.Join(names, ", ")
		}
		fmt.Fprintf(stderr, "verifier %s: %s; the error JSON is on stdout\n", c.name, msg)
	}
	return code
}

// writeError prints an engine error as the error envelope and returns the matching exit code.
func writeError(stdout io.Writer, err error) int {
	e, ok := apperr.As(err)
	if !ok {
		e = apperr.New(apperr.Internal, "The verification could not be completed.")
	}
	b, _ := json.MarshalIndent(e, "", "  ")
	stdout.Write(append(b, '\n'))
	if e.Status() == 422 || e.Status() == 413 {
		return exitInvalid
	}
	return exitError
}

// summaryLine is the verdict on one line for people, such as "fail: schema 22/22, integrity
// 7/8; consistency:sum_equals at $.line_items[].line_total: values sum to 129.5, expected total
// (135.0)". A compact report has no counts and flags, so its line names the blocking checks.
func summaryLine(r *verify.Report) string {
	s := r.Result
	if r.SchemaCompliance == nil {
		if len(r.Summary.BlockingChecks) > 0 {
			s += ": blocking " + strings.Join(r.Summary.BlockingChecks, ", ")
		}
		return s
	}
	s += fmt.Sprintf(": schema %d/%d, integrity %d/%d", r.SchemaCompliance.Passed, r.SchemaCompliance.Total,
		r.IntegrityChecks.Passed, r.IntegrityChecks.Total)
	for _, f := range r.Flags {
		if f.Severity == "error" {
			s += "; " + flagLine(f)
			break
		}
	}
	blocking, all := 0, 0
	if r.ErrorsTotal != nil {
		blocking = *r.ErrorsTotal
	}
	if r.FlagsTotal != nil {
		all = *r.FlagsTotal
	}
	if blocking > 1 {
		s += fmt.Sprintf(" (and %d more)", blocking-1)
	}
	if all > blocking {
		s += fmt.Sprintf("; %d not blocking (warnings, info)", all-blocking)
	}
	return s
}

// flagLine renders one flag: its check, where, and what was wrong.
func flagLine(f verify.Flag) string {
	at := "$"
	if f.Field != "" {
		at = "$." + f.Field
	}
	return f.Check + " at " + at + ": " + f.Detail
}

// writeText writes a report for people to read (--output text): the verdict, the counts, every
// flag listed in the report and what to repair.
func writeText(w io.Writer, r *verify.Report) {
	fmt.Fprintf(w, "%-10s %s\n", "result", r.Result)
	fmt.Fprintf(w, "%-10s %s\n", "task", r.TaskID)
	for _, c := range []struct {
		name string
		r    *verify.Ratio
	}{{"schema", r.SchemaCompliance}, {"integrity", r.IntegrityChecks}, {"overall", r.Overall}} {
		if c.r != nil {
			fmt.Fprintf(w, "%-10s %d/%d passed\n", c.name, c.r.Passed, c.r.Total)
		}
	}
	if len(r.Summary.BlockingChecks) > 0 {
		fmt.Fprintf(w, "%-10s %s\n", "blocking", strings.Join(r.Summary.BlockingChecks, ", "))
	}
	for _, f := range r.Flags {
		fmt.Fprintf(w, "%-10s %s\n", f.Severity, flagLine(f))
	}
	if r.FlagsOmitted != nil && *r.FlagsOmitted > 0 {
		fmt.Fprintf(w, "%-10s %d more flags not listed\n", "", *r.FlagsOmitted)
	}
	for _, h := range r.Hints {
		fmt.Fprintf(w, "%-10s %s: expected %s, found %s\n", "repair", h.Path, h.Expected, h.Found)
	}
	fmt.Fprintf(w, "%-10s %s\n", "key", r.Verify.KeyVersion)
}

var _ verify.Attester = receipt.Key{}
