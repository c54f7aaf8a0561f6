package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/verify"
)

// localBase is the base URL a locally made receipt points at: the local server's default address.
const localBase = "http://127.0.0.1:8080"

func runCheck(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyFile := fs.String("key", "", "sign the response with this key file (from `verifier keygen`)")
	detail := fs.String("detail", "", "override the request's detail: full or compact")
	base := fs.String("base-url", localBase, "base URL named in the receipt's verify block")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprint(stderr, usage)
		return exitInvalid
	}
	body, err := readInput(fs.Arg(0), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "verifier check: read request: %v\n", err)
		return exitError
	}
	if *detail != "" && *detail != "full" && *detail != "compact" {
		fmt.Fprintln(stderr, "verifier check: --detail must be full or compact")
		return exitInvalid
	}
	var signer verify.Attester
	keyVersion := "unsigned"
	if *keyFile != "" {
		k, err := keys.ReadFile(*keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "verifier check: %v\n", err)
			return exitError
		}
		signer, keyVersion = k, k.Version
	}
	env := verify.Envelope{
		VerificationID:  uuid.Must(uuid.NewRandomFromReader(rand.Reader)).String(),
		VerifiedAt:      time.Now(),
		VerifierVersion: verify.Version,
		Verify:          verify.NewVerifyInfo(*base, keyVersion),
	}
	eng := verify.NewEngine(verify.Limits{})
	req, sch, err := eng.Decode(body)
	if err != nil {
		return writeError(stdout, err)
	}
	if *detail != "" {
		req.Detail = verify.Detail(*detail)
	}
	out, rep, err := eng.Finish(req, sch, env, signer)
	if err != nil {
		return writeError(stdout, err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, out, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(out)
	}
	pretty.WriteByte('\n')
	stdout.Write(pretty.Bytes())
	if rep.Passed() {
		return exitOK
	}
	return exitFail
}

// writeError prints an engine error as the §7 envelope and returns the matching exit code.
func writeError(stdout io.Writer, err error) int {
	e, ok := apperr.As(err)
	if !ok {
		e = apperr.New(apperr.Internal, "The verification could not be completed.")
	}
	b, _ := json.MarshalIndent(e, "", "  ")
	stdout.Write(append(b, '\n'))
	if e.Status == 422 || e.Status == 413 {
		return exitInvalid
	}
	return exitError
}

var _ verify.Attester = receipt.Key{}
