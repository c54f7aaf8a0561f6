// Command verifier is the Agent Output Verifier's command line: it checks requests locally
// (`check`), verifies receipts offline (`receipt verify`), makes signing keys (`keygen`), serves
// every route on one machine (`serve`) and calls a running service, checking and paying
// (`remote`).
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes shared by the subcommands.
const (
	exitOK      = 0 // pass, or a receipt that holds
	exitFail    = 1 // a fail verdict, or a receipt that does not hold
	exitInvalid = 2 // an invalid request (the error JSON is on stdout) or bad usage
	exitError   = 3 // something else went wrong (a file that cannot be read, ...)
)

const usage = `usage:
  verifier serve [--addr 127.0.0.1:8080] [--data DIR]
  verifier check [--key FILE] [--detail full|compact] [--base-url URL] REQUEST.json|-
  verifier receipt verify (--key BASE64 | --card FILE_OR_URL) [--context verify|score|reputation] [--request REQUEST.json] RECEIPT.json|-
  verifier keygen (--out FILE [--kms-key-id ID] | --secret NAME) [--version V]
  verifier remote (verify|deliverable) --url URL [--pay-key FILE] [--pay-solana-key FILE --solana-rpc URL] [--max-price USD] [--timeout D] REQUEST.json|-
  verifier remote score --url URL [--pay-key FILE] [--pay-solana-key FILE --solana-rpc URL] [--max-price USD] AGENT_ID
  verifier remote reputation --url URL [--limit N] [--cursor C] AGENT_ID
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitInvalid
	}
	switch args[0] {
	case "check":
		return runCheck(args[1:], stdin, stdout, stderr)
	case "receipt":
		if len(args) < 2 || args[1] != "verify" {
			fmt.Fprint(stderr, usage)
			return exitInvalid
		}
		return runReceiptVerify(args[2:], stdin, stdout, stderr)
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "keygen":
		return runKeygen(args[1:], stdout, stderr)
	case "remote":
		return runRemote(args[1:], stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "verifier: unknown command %q\n%s", args[0], usage)
	return exitInvalid
}

// readInput reads a file, or stdin for "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}
