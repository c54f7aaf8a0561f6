package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// cardFetchTimeout bounds how long `receipt verify --card URL` waits for the agent card.
const cardFetchTimeout = 10 * time.Second

// maxCardBytes bounds the agent card read from a file or URL.
const maxCardBytes = 1 << 20

var contexts = map[string]string{
	"verify":     receipt.ContextVerify,
	"score":      receipt.ContextScore,
	"reputation": receipt.ContextReputation,
}

const receiptVerifySynopsis = `  verifier receipt verify --key PUBLIC_KEY [--request REQUEST.json] RECEIPT.json|-
  verifier receipt verify --card FILE_OR_URL [--context verify|score|reputation] RECEIPT.json|-
  verifier receipt verify --log BASE_URL [--request REQUEST.json] RECEIPT.json|-
  verifier receipt verify --card FILE_OR_URL --proof RECORD.json [--request REQUEST.json] RECEIPT.json|-
--log takes the keys from BASE_URL's agent card, then checks that the receipt is in the service's
public receipt log (its record's inclusion proof, under a checkpoint signed by the card's log
key); --proof checks the same from a record saved from GET /verifications/{id}, without network
when the card is a file.
Prints "OK: ..." and exits 0 when the receipt holds; "FAIL: <reason>" and exit 1 when it does not;
exit 2 on bad usage, 3 when a file or the agent card cannot be read.`

func runReceiptVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCommand("receipt verify", receiptVerifySynopsis)
	keyArg := c.String("key", "", "the Ed25519 public `KEY`: a file (NAME.pub from keygen, or a key file) or the base64 of its 32 bytes")
	card := c.String("card", "", "an agent card `FILE_OR_URL` listing the service's public keys")
	ctxName := c.String("context", "verify", "what signed this: verify, score or reputation")
	reqFile := c.String("request", "", "the original request body `FILE`: check every hash against it too")
	logBase := c.String("log", "", "the service's `BASE_URL`: take the keys from its agent card and check the receipt is in its log")
	proof := c.String("proof", "", "a stored record `FILE` (GET /verifications/{id}): check the receipt's inclusion with it, under the log key of --card")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	if *logBase != "" {
		if *keyArg != "" || *card != "" || *proof != "" {
			return c.misuse(stderr, "--log takes the keys from the service's agent card: give it alone")
		}
		*card = strings.TrimRight(*logBase, "/") + "/.well-known/agent-card.json"
	}
	inLog := *logBase != "" || *proof != ""
	switch {
	case *proof != "" && *card == "":
		return c.misuse(stderr, "--proof needs --card, whose transparencyLog names the log key")
	case inLog && *ctxName != "verify":
		return c.misuse(stderr, "only verification receipts are in the log")
	case *keyArg == "" && *card == "":
		return c.misuse(stderr, "--key or --card is required")
	case *keyArg != "" && *card != "":
		return c.misuse(stderr, "give --key or --card, not both")
	case c.NArg() == 0:
		return c.misuse(stderr, "missing RECEIPT.json")
	case c.NArg() > 1:
		return c.misuse(stderr, "one RECEIPT.json at a time")
	}
	context, ok := contexts[*ctxName]
	if !ok {
		return c.misuse(stderr, "--context must be verify, score or reputation")
	}
	signed, err := readInput(c.Arg(0), stdin)
	if err != nil {
		return c.errorf(stderr, exitError, "read receipt: %v", err)
	}
	var pubs []receipt.PublicKey
	var logKey string
	if *keyArg != "" {
		// A bare key carries no version: it stands for whatever version the receipt names.
		pk, err := publicKey(*keyArg, attestedVersion(signed))
		if err != nil {
			fmt.Fprintf(stdout, "FAIL: %v\n", err)
			return exitFail
		}
		pubs = []receipt.PublicKey{pk}
	} else {
		cardJSON, err := loadCard(*card)
		if err != nil {
			return c.errorf(stderr, exitError, "%v", err)
		}
		if pubs, err = receipt.CardKeys(cardJSON); err != nil {
			fmt.Fprintf(stdout, "FAIL: agent card: %v\n", err)
			return exitFail
		}
		if inLog {
			lg, err := logOfCard(cardJSON)
			if err != nil {
				fmt.Fprintf(stdout, "FAIL: %v\n", err)
				return exitFail
			}
			logKey = lg.VerifierKey
		}
	}
	var request []byte
	if *reqFile != "" {
		if request, err = readInput(*reqFile, stdin); err != nil {
			return c.errorf(stderr, exitError, "read request: %v", err)
		}
	}
	if context == receipt.ContextVerify {
		err = receipt.VerifyReceipt(signed, pubs, request)
	} else {
		if request != nil {
			return c.misuse(stderr, "--request applies to verify receipts only")
		}
		err = receipt.VerifyAttestation(signed, context, pubs)
	}
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return exitFail
	}
	what := "signature valid"
	if request != nil {
		what += ", every hash matches the request"
	}
	if inLog {
		cp, index, err := verifyInLog(signed, *logBase, *proof, logKey)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL: receipt log: %v\n", err)
			return exitFail
		}
		what += fmt.Sprintf(", in the log %s at index %d of %d", cp.Origin, index, cp.Size)
	}
	fmt.Fprintf(stdout, "OK: %s (key %s)\n", what, attestedVersion(signed))
	return exitOK
}

// attestedVersion reads attestation.key_version, or "" when the document has none.
func attestedVersion(signed []byte) string {
	var doc struct {
		Attestation struct {
			KeyVersion string `json:"key_version"`
		} `json:"attestation"`
	}
	_ = json.Unmarshal(signed, &doc)
	return doc.Attestation.KeyVersion
}

// loadCard reads an agent card from a file, or fetches it when given an http(s) URL.
func loadCard(src string) ([]byte, error) {
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		return readInput(src, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cardFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch agent card: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch agent card: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch agent card: HTTP %d", resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxCardBytes))
}
