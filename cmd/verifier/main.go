// Command verifier is the Agent Output Verifier's command line: it checks requests locally
// (`check`), verifies receipts offline (`receipt verify`) and exports them as in-toto attestations
// (`receipt export`), makes signing keys (`keygen`), serves
// every route on one machine (`serve`) and calls a running service, checking and paying
// (`remote`).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// Exit codes shared by the subcommands.
const (
	exitOK      = 0 // pass, a receipt that holds, or help that was asked for
	exitFail    = 1 // a fail verdict, or a receipt that does not hold
	exitInvalid = 2 // an invalid request (the error JSON is on stdout) or bad usage
	exitError   = 3 // something else went wrong (a file that cannot be read, ...)
)

const usage = `usage:
  verifier check --key KEY [--detail full|compact] [--output json|text] [--max-body N] REQUEST.json|-
  verifier check --key KEY --schema SCHEMA.json --data DATA.json [--rules RULES.json] [--task-id ID]
  verifier receipt verify (--key PUBLIC_KEY | --card FILE_OR_URL) [--context verify|score|reputation] [--request REQUEST.json] RECEIPT.json|-
  verifier receipt export --format in-toto --key KEY [--card FILE_OR_URL] [--out FILE] RECEIPT.json|-
  verifier receipt export --format in-toto --from BASE_URL/verifications/ID [--out FILE]
  verifier receipt verify (--log BASE_URL | --card FILE_OR_URL --proof RECORD.json) [--request REQUEST.json] RECEIPT.json|-
  verifier log audit [--from CHECKPOINT] [--save FILE] BASE_URL
  verifier keygen (--out NAME.key.json [--kms-key-id ID] | --secret NAME) [--version V]
  verifier serve [--addr 127.0.0.1:8080] [--data DIR]
  verifier remote (verify|deliverable) --url URL [--pay-key FILE] [--pay-solana-key FILE --solana-rpc URL] [--max-price USD] [--timeout D] REQUEST.json|-
  verifier remote score --url URL [--pay-key FILE] [--pay-solana-key FILE --solana-rpc URL] [--max-price USD] [--timeout D] AGENT_ID
  verifier remote reputation --url URL [--limit N] [--cursor C] [--timeout D] AGENT_ID
  verifier version

Run 'verifier COMMAND -h' for a command's flags. Exit codes: 0 pass (or OK), 1 fail,
2 invalid request or bad usage, 3 any other error.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "verifier: missing command\n"+usage)
		return exitInvalid
	}
	switch args[0] {
	case "check":
		return runCheck(args[1:], stdin, stdout, stderr)
	case "receipt":
		switch {
		case len(args) >= 2 && args[1] == "verify":
			return runReceiptVerify(args[2:], stdin, stdout, stderr)
		case len(args) >= 2 && args[1] == "export":
			return runReceiptExport(args[2:], stdin, stdout, stderr)
		}
		fmt.Fprint(stderr, "verifier receipt: missing subcommand: verifier receipt verify|export ...\n"+usage)
		return exitInvalid
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "log":
		return runLog(args[1:], stdout, stderr)
	case "keygen":
		return runKeygen(args[1:], stdout, stderr)
	case "remote":
		return runRemote(args[1:], stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "verifier %s (%s, %s/%s)\n", wire.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "verifier: unknown command %q\n%s", args[0], usage)
	return exitInvalid
}

// command is one subcommand's flags and the lines of usage that introduce them. Every
// subcommand reports the same way: errors on stderr after "verifier NAME: ", bad usage with exit
// 2 and the command's own usage, -h on stdout with exit 0.
type command struct {
	name     string // "check", "receipt verify", ...
	synopsis string // the usage lines, without the flags
	*flag.FlagSet
}

func newCommand(name, synopsis string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are reported by parse, once
	fs.Usage = func() {}
	return &command{name: name, synopsis: synopsis, FlagSet: fs}
}

// parse parses args. When it returns false the command ends with the returned exit code: 0 after
// -h (the usage went to stdout), 2 after a flag error (reported on stderr).
func (c *command) parse(args []string, stdout, stderr io.Writer) (int, bool) {
	err := c.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.printUsage(stdout)
		return exitOK, false
	case err != nil:
		return c.misuse(stderr, "%v", err), false
	}
	return exitOK, true
}

// printUsage writes the synopsis and every flag with its meaning.
func (c *command) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage:\n%s\nflags:\n", c.synopsis)
	c.SetOutput(w)
	c.PrintDefaults()
	c.SetOutput(io.Discard)
}

// misuse reports bad usage: what is wrong, and where the usage is. Exit code 2.
func (c *command) misuse(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "verifier %s: %s\nrun 'verifier %s -h' for usage\n", c.name, fmt.Sprintf(format, args...), c.name)
	return exitInvalid
}

// errorf reports an error that is not bad usage, on one line. It returns code.
func (c *command) errorf(stderr io.Writer, code int, format string, args ...any) int {
	fmt.Fprintf(stderr, "verifier %s: %s\n", c.name, oneLine(fmt.Sprintf(format, args...)))
	return code
}

// oneLine keeps a message on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// readInput reads a file, or stdin for "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}
