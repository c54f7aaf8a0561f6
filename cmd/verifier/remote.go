package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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

// runRemote is `verifier remote verify|deliverable|score|reputation`: one call to a running
// service through pkg/client, which checks the answer's receipt and, with a payment key, pays a
// 402 within --max-price. The answer's JSON goes to stdout and a one-line summary to stderr. Exit
// codes are check's: 0 pass (or any checked score or reputation), 1 fail, 2 an invalid request or
// bad usage, 3 anything else (unreachable, unpaid, over the cap, or an answer whose receipt does
// not verify).
func runRemote(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitInvalid
	}
	what := args[0]
	fs := flag.NewFlagSet("remote "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "", "base URL of the service, such as https://verify.example.com")
	payKey := fs.String("pay-key", "", "pay 402 answers on EVM networks with the hex secp256k1 key in this file (mode 0600); default $"+envPayKey)
	paySolanaKey := fs.String("pay-solana-key", "", "pay 402 answers on Solana with the key in this file (mode 0600): a hex seed or a solana-keygen keypair; default $"+envPaySolanaKey)
	solanaRPC := fs.String("solana-rpc", "", "the Solana JSON-RPC URL the Solana payer reads a recent blockhash from; default $"+envSolanaRPC)
	maxPrice := fs.String("max-price", client.DefaultMaxPrice, "the most this command signs for, in USD")
	timeout := fs.Duration("timeout", client.DefaultTimeout, "bound on the whole call, retries and payment included")
	limit := fs.Int("limit", 0, "reputation: history entries per page (default: the service's)")
	cursor := fs.String("cursor", "", "reputation: the next_cursor of the previous page")
	switch what {
	case "verify", "deliverable", "score", "reputation":
	default:
		fmt.Fprintf(stderr, "verifier remote: unknown call %q\n%s", what, usage)
		return exitInvalid
	}
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 || *base == "" {
		fmt.Fprint(stderr, usage)
		return exitInvalid
	}
	opts := []client.Option{client.WithTimeout(*timeout), client.WithMaxPrice(*maxPrice), client.WithBudget(*maxPrice)}
	payers, err := remotePayers(*payKey, *paySolanaKey, *solanaRPC)
	if err != nil {
		fmt.Fprintf(stderr, "verifier remote: %v\n", err)
		return exitInvalid
	}
	if len(payers) > 0 {
		opts = append(opts, client.WithPayer(client.Payers(payers...)))
	}
	c, err := client.New(*base, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "verifier remote: %v\n", err)
		return exitInvalid
	}
	ctx := context.Background()

	switch what {
	case "verify", "deliverable":
		body, err := readInput(fs.Arg(0), stdin)
		if err != nil {
			fmt.Fprintf(stderr, "verifier remote: read request: %v\n", err)
			return exitError
		}
		route := client.RouteVerifySchema
		if what == "deliverable" {
			route = client.RouteVerifyDeliverable
		}
		v, err := c.VerifyJSON(ctx, route, body)
		if err != nil {
			return remoteError(err, stdout, stderr)
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
		s, err := c.Score(ctx, fs.Arg(0))
		if err != nil {
			return remoteError(err, stdout, stderr)
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
		r, err := c.Reputation(ctx, fs.Arg(0), &client.Page{Limit: *limit, Cursor: *cursor})
		if err != nil {
			return remoteError(err, stdout, stderr)
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
func remoteError(err error, stdout, stderr io.Writer) int {
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
		fmt.Fprintln(stderr, "REFUSED:", oneLine(err.Error()))
		return exitError
	}
	if out != nil {
		b, _ := json.MarshalIndent(out, "", "  ")
		stdout.Write(append(b, '\n'))
	}
	fmt.Fprintln(stderr, "error:", oneLine(err.Error()))
	return code
}

// oneLine keeps a message on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
