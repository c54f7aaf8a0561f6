package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/intoto"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

const receiptExportSynopsis = `  verifier receipt export --format in-toto --key KEY [--card FILE_OR_URL] [--out FILE] RECEIPT.json|-
  verifier receipt export --format in-toto --from BASE_URL/verifications/ID [--out FILE]
Writes the verification a receipt (a /verify answer) attests as a DSSE envelope holding an in-toto
Statement v1 with SLSA's VSA v1 predicate (SPEC §16), signed with KEY under its key version: the
form supply-chain tools read. The receipt is verified first, with KEY's public half or the keys of
--card (a receipt signed before a rotation); the base URL the statement names is the one the
receipt's signed verify block names. With --from, fetches the service's own attestation of its
stored record instead (waiting while the record is pending) and checks it before writing it: the
DSSE signature against the keys of BASE_URL's agent card, the statement against the record.
Exit 1 (FAIL: ...) when the receipt or attestation does not hold, 2 on bad usage, 3 when a file
or the service cannot be read or written.`

// agentCardPath is what a receipt's verify.public_key_url ends with, after the base URL.
const agentCardPath = "/.well-known/agent-card.json"

func runReceiptExport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("receipt export", receiptExportSynopsis)
	format := c.String("format", "", "the `FORMAT` to write: in-toto (a DSSE envelope of an in-toto statement)")
	keyArg := c.String("key", "", "sign with this `KEY`: the service's key file from 'verifier keygen' (preferred), or a base64 seed (visible in process listings)")
	keyVersion := c.String("key-version", "", "the key `VERSION` a base64 --key signs as (a key file names its own)")
	card := c.String("card", "", "an agent card `FILE_OR_URL` whose keys may verify the receipt too")
	out := c.String("out", "", "write the envelope to `FILE` instead of stdout")
	from := c.String("from", "", "fetch and check the stored record's attestation at `URL` (BASE_URL/verifications/ID) instead of signing a receipt")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	switch {
	case *format != "in-toto":
		return c.misuse(stderr, "--format in-toto is required (the one format there is)")
	case *from != "" && (*keyArg != "" || *card != "" || c.NArg() != 0):
		return c.misuse(stderr, "--from takes no --key, --card or RECEIPT.json: the service signed the attestation, its agent card's keys check it")
	case *from != "":
		envelope, err := fetchAttestation(*from, stdout)
		if err != nil {
			return c.errorf(stderr, exitError, "%v", err)
		}
		if envelope == nil {
			return exitFail
		}
		return writeEnvelope(c, envelope, *out, stdout, stderr)
	case *keyArg == "":
		return c.misuse(stderr, "--key is required: the envelope is signed with the receipt key")
	case c.NArg() != 1:
		return c.misuse(stderr, "one RECEIPT.json is required")
	}
	key, err := signingKey(*keyArg, *keyVersion, stderr)
	if err != nil {
		return c.errorf(stderr, exitInvalid, "--key: %v", err)
	}
	signed, err := readInput(c.Arg(0), stdin)
	if err != nil {
		return c.errorf(stderr, exitError, "read receipt: %v", err)
	}
	pubs := []receipt.PublicKey{key.Public()}
	if *card != "" {
		cardJSON, err := loadCard(*card)
		if err != nil {
			return c.errorf(stderr, exitError, "%v", err)
		}
		cardKeys, err := receipt.CardKeys(cardJSON)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL: agent card: %v\n", err)
			return exitFail
		}
		pubs = append(pubs, cardKeys...)
	}
	if err := receipt.VerifyReceipt(signed, pubs, nil); err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return exitFail
	}
	v, err := intoto.FromReceipt(signed)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return exitFail
	}
	base, err := receiptBaseURL(signed)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return exitFail
	}
	envelope, err := intoto.Envelope(v, base, key, key.Version)
	if err != nil {
		return c.errorf(stderr, exitError, "%v", err)
	}
	return writeEnvelope(c, envelope, *out, stdout, stderr)
}

// writeEnvelope writes envelope, with a final newline, to the file out or to stdout.
func writeEnvelope(c *command, envelope []byte, out string, stdout, stderr io.Writer) int {
	envelope = append(envelope, '\n')
	var err error
	if out == "" {
		_, err = stdout.Write(envelope)
	} else {
		err = os.WriteFile(out, envelope, 0o644)
	}
	if err != nil {
		return c.errorf(stderr, exitError, "write envelope: %v", err)
	}
	return exitOK
}

// receiptBaseURL is the base URL of the service that signed a receipt: its verify block's
// public_key_url without the agent card's path (the signature covers it).
func receiptBaseURL(signed []byte) (string, error) {
	var r struct {
		Verify struct {
			PublicKeyURL string `json:"public_key_url"`
		} `json:"verify"`
	}
	_ = json.Unmarshal(signed, &r)
	base, ok := strings.CutSuffix(r.Verify.PublicKeyURL, agentCardPath)
	if !ok || base == "" {
		return "", fmt.Errorf("the receipt's verify.public_key_url does not end in %s", agentCardPath)
	}
	return base, nil
}
