package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/client"
)

// The variables `verifier remote` reads when the flags are not given: envPayKey the hex
// secp256k1 private key of the paying EVM account (--pay-key), envPaySolanaKey the paying Solana
// account's key (--pay-solana-key: a hex seed or a solana-keygen keypair) and envSolanaRPC the
// Solana JSON-RPC URL that payer reads a recent blockhash from (--solana-rpc).
const (
	envPayKey       = "VERIFIER_PAY_KEY"
	envPaySolanaKey = "VERIFIER_PAY_SOLANA_KEY"
	envSolanaRPC    = "VERIFIER_SOLANA_RPC"
)

// remoteSynopsis is each call's usage.
var remoteSynopsis = map[string]string{
	"verify":      "  verifier remote verify --url URL [--pay-key FILE] [--pay-solana-key FILE --solana-rpc URL] [--max-price USD] [--timeout D] REQUEST.json|-",
	"deliverable": "  verifier remote deliverable --url URL [--pay-key FILE] [--pay-solana-key FILE --solana-rpc URL] [--max-price USD] [--timeout D] REQUEST.json|-",
	"score":       "  verifier remote score --url URL [--pay-key FILE] [--pay-solana-key FILE --solana-rpc URL] [--max-price USD] [--timeout D] AGENT_ID",
	"reputation":  "  verifier remote reputation --url URL [--limit N] [--cursor C] [--timeout D] AGENT_ID",
}

// runRemote is `verifier remote verify|deliverable|score|reputation`: one call to a running
// service through pkg/client, which checks the answer's receipt and, with a payment key, pays a
// 402 within --max-price. The answer's JSON goes to stdout and a one-line summary to stderr. Exit
// codes are check's: 0 pass (or any checked score or reputation), 1 fail, 2 an invalid request or
// bad usage, 3 anything else (unreachable, unpaid, over the cap, or an answer whose receipt does
// not verify).
func runRemote(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(stdout, "usage:\n"+remoteSynopsis["verify"]+"\n"+remoteSynopsis["score"]+"\n"+remoteSynopsis["reputation"]+"\n")
			return exitOK
		}
		fmt.Fprint(stderr, "verifier remote: missing call: verify, deliverable, score or reputation\n"+usage)
		return exitInvalid
	}
	what := args[0]
	synopsis, ok := remoteSynopsis[what]
	if !ok {
		fmt.Fprintf(stderr, "verifier remote: unknown call %q: verify, deliverable, score or reputation\n", what)
		return exitInvalid
	}
	c := newCommand("remote "+what, synopsis)
	base := c.String("url", "", "base `URL` of the service, such as https://verify.example.com")
	timeout := c.Duration("timeout", client.DefaultTimeout, "bound on the whole call, retries and payment included")
	// Only what the call can use is a flag of it: verifications and scores can be paid,
	// reputation pages.
	var payKey, paySolanaKey, solanaRPC, maxPrice, cursor *string
	var limit *int
	if what == "reputation" {
		limit = c.Int("limit", 0, "history entries per page (default: the service's)")
		cursor = c.String("cursor", "", "the next_cursor of the previous page")
	} else {
		payKey = c.String("pay-key", "", "pay 402 answers on EVM networks with the hex secp256k1 key in this `FILE` (mode 0600); default $"+envPayKey)
		paySolanaKey = c.String("pay-solana-key", "", "pay 402 answers on Solana with the key in this `FILE` (mode 0600): a hex seed or a solana-keygen keypair; default $"+envPaySolanaKey)
		solanaRPC = c.String("solana-rpc", "", "the Solana JSON-RPC `URL` the Solana payer reads a recent blockhash from; default $"+envSolanaRPC)
		maxPrice = c.String("max-price", client.DefaultMaxPrice, "the most this command signs for, in `USD`")
	}
	if code, ok := c.parse(args[1:], stdout, stderr); !ok {
		return code
	}
	arg := "REQUEST.json"
	if what == "score" || what == "reputation" {
		arg = "AGENT_ID"
	}
	switch {
	case *base == "":
		return c.misuse(stderr, "--url is required")
	case c.NArg() == 0:
		return c.misuse(stderr, "missing %s", arg)
	case c.NArg() > 1:
		return c.misuse(stderr, "one %s at a time", arg)
	}
	opts := []client.Option{client.WithTimeout(*timeout)}
	if maxPrice != nil {
		opts = append(opts, client.WithMaxPrice(*maxPrice), client.WithBudget(*maxPrice))
		payers, err := remotePayers(*payKey, *paySolanaKey, *solanaRPC)
		if err != nil {
			return c.errorf(stderr, exitInvalid, "%v", err)
		}
		if len(payers) > 0 {
			opts = append(opts, client.WithPayer(client.Payers(payers...)))
		}
	}
	api, err := client.New(*base, opts...)
	if err != nil {
		return c.errorf(stderr, exitInvalid, "%v", err)
	}
	ctx := context.Background()

	switch what {
	case "verify", "deliverable":
		body, err := readInput(c.Arg(0), stdin)
		if err != nil {
			return c.errorf(stderr, exitError, "read request: %v", err)
		}
		route := client.RouteVerifySchema
		if what == "deliverable" {
			route = client.RouteVerifyDeliverable
		}
		v, err := api.VerifyJSON(ctx, route, body)
		if err != nil {
			return c.remoteError(err, stdout, stderr)
		}
		printAnswer(stdout, v.Body)
		summary := v.Result
		if len(v.Summary.BlockingChecks) > 0 {
			summary += ": blocking " + strings.Join(v.Summary.BlockingChecks, ", ")
		}
		if v.Overall != nil {
			summary += fmt.Sprintf("; overall %g (%d/%d)", v.Overall.Ratio, v.Overall.Passed, v.Overall.Total)
		}
		fmt.Fprintln(stderr, summary+answerNotes(v.Attestation.KeyVersion, v.Answer))
		if v.Passed() {
			return exitOK
		}
		return exitFail
	case "score":
		s, err := api.Score(ctx, c.Arg(0))
		if err != nil {
			return c.remoteError(err, stdout, stderr)
		}
		printAnswer(stdout, s.Body)
		summary := "no score: " + s.Reason
		if s.Score != nil {
			summary = fmt.Sprintf("score %g (%s confidence", *s.Score, s.Confidence)
			if s.Verifications != nil {
				summary += fmt.Sprintf(", %d verifications", s.Verifications.Total)
			}
			summary += ")"
		}
		fmt.Fprintln(stderr, summary+answerNotes(s.Attestation.KeyVersion, s.Answer))
		return exitOK
	default: // reputation
		r, err := api.Reputation(ctx, c.Arg(0), &client.Page{Limit: *limit, Cursor: *cursor})
		if err != nil {
			return c.remoteError(err, stdout, stderr)
		}
		printAnswer(stdout, r.Body)
		summary := fmt.Sprintf("reputation: %d verifications (%d passed, %d failed, %d paid), %d shown",
			r.Totals.Verifications, r.Totals.Passed, r.Totals.Failed, r.Totals.Paid, len(r.History))
		if r.Reason != "" {
			summary = "reputation: " + r.Reason
		}
		if r.NextCursor != "" {
			summary += ", more with --cursor " + r.NextCursor
		}
		fmt.Fprintln(stderr, summary+answerNotes(r.Attestation.KeyVersion, r.Answer))
		return exitOK
	}
}

// remotePayers loads the EVM payment key from --pay-key, else from $VERIFIER_PAY_KEY, and the
// Solana one from --pay-solana-key, else from $VERIFIER_PAY_SOLANA_KEY; none is no payer.
func remotePayers(evmFile, solanaFile, solanaRPC string) ([]client.Payer, error) {
	var ps []client.Payer
	switch {
	case evmFile != "":
		p, err := client.LoadEVMPayer(evmFile)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	case strings.TrimSpace(os.Getenv(envPayKey)) != "":
		p, err := client.EVMPayerFromEnv(envPayKey)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	if solanaRPC == "" {
		solanaRPC = os.Getenv(envSolanaRPC)
	}
	switch {
	case solanaFile != "":
		p, err := client.LoadSolanaPayer(solanaFile, solanaRPC)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	case strings.TrimSpace(os.Getenv(envPaySolanaKey)) != "":
		p, err := client.SolanaPayerFromEnv(envPaySolanaKey, solanaRPC)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// answerNotes is the summary's tail: the receipt, the payment, the allowance.
func answerNotes(keyVersion string, a client.Answer) string {
	s := "; receipt verified (key " + keyVersion + ")"
	if p := a.Payment; p != nil {
		s += "; paid " + p.USD + " USD"
		if p.Settlement != nil && p.Settlement.Transaction != "" {
			s += " (transaction " + p.Settlement.Transaction + " on " + p.Settlement.Network + ")"
		}
	}
	if al := a.Allowance; al != nil {
		s += fmt.Sprintf("; free allowance %d/%d left until %s", al.Remaining, al.Limit, al.Resets.Format(time.RFC3339))
	}
	return s
}

// printAnswer writes the signed answer indented (the receipt still verifies: signatures cover the
// canonical form, not the spacing).
func printAnswer(stdout io.Writer, body []byte) {
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(body)
	}
	pretty.WriteByte('\n')
	stdout.Write(pretty.Bytes())
}

// remoteError reports a failed call: error answers as JSON on stdout, a one-line reason on
// stderr, and the exit code (2 for the service's 422 and 413, 3 for everything else).
func (c *command) remoteError(err error, stdout, stderr io.Writer) int {
	var (
		ae  *client.APIError
		pe  *client.PaymentRequiredError
		ce  *client.SpendingCapError
		re  *client.ReceiptError
		out any
	)
	code := exitError
	switch {
	case errors.As(err, &ae):
		out = ae.Unwrap()
		if ae.Status == 422 || ae.Status == 413 {
			code = exitInvalid
		}
	case errors.As(err, &ce):
		out = map[string]any{"code": "spending_cap", "scope": ce.Scope, "price_usd": ce.Price, "cap_usd": ce.Cap, "payment_required": ce.Required}
	case errors.As(err, &pe):
		out = map[string]any{"code": pe.Code, "message": pe.Message, "paid": pe.Paid, "payment_required": pe.Required,
			"free_trial": pe.FreeTrial, "settlement": pe.Settlement}
	case errors.As(err, &re):
		return c.errorf(stderr, exitError, "answer refused: %v", err)
	}
	if out != nil {
		b, _ := json.MarshalIndent(out, "", "  ")
		if ae != nil {
			b = withStatus(b, ae.Status)
		}
		stdout.Write(append(b, '\n'))
	}
	// The client's own "client: " prefix would make two prefixes on one line.
	return c.errorf(stderr, code, "%s", strings.TrimPrefix(err.Error(), "client: "))
}

// withStatus sets the top-level "status" of an indented error envelope to the HTTP status the
// answer came with: the envelope's own status is its code's (apperr's table), and an answer that
// was not the service's envelope (a proxy's 502 page) is printed with the status it had. A JSON
// string cannot hold the member's unescaped form, so its first occurrence is the envelope's own.
func withStatus(envelope []byte, status int) []byte {
	i := bytes.Index(envelope, []byte(`"status": `))
	if i < 0 || status == 0 {
		return envelope
	}
	start := i + len(`"status": `)
	end := start
	for end < len(envelope) && envelope[end] >= '0' && envelope[end] <= '9' {
		end++
	}
	return slices.Concat(envelope[:start], strconv.AppendInt(nil, int64(status), 10), envelope[end:])
}
