package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/keys"
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

func runReceiptVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("receipt verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyB64 := fs.String("key", "", "the Ed25519 public key, base64 of the raw 32 bytes")
	card := fs.String("card", "", "an agent card file or URL listing the service's public keys")
	ctxName := fs.String("context", "verify", "what signed this: verify, score or reputation")
	reqFile := fs.String("request", "", "the original request body: check every hash against it too")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || (*keyB64 == "") == (*card == "") {
		fmt.Fprint(stderr, usage)
		return exitInvalid
	}
	context, ok := contexts[*ctxName]
	if !ok {
		fmt.Fprintln(stderr, "verifier receipt verify: --context must be verify, score or reputation")
		return exitInvalid
	}
	signed, err := readInput(fs.Arg(0), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "verifier receipt verify: read receipt: %v\n", err)
		return exitError
	}
	var pubs []receipt.PublicKey
	if *keyB64 != "" {
		// A bare key carries no version: it stands for whatever version the receipt names.
		pk, err := keys.ParsePublicKey(attestedVersion(signed), *keyB64)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL: %v\n", err)
			return exitFail
		}
		pubs = []receipt.PublicKey{pk}
	} else {
		cardJSON, err := loadCard(*card)
		if err != nil {
			fmt.Fprintf(stderr, "verifier receipt verify: %v\n", err)
			return exitError
		}
		if pubs, err = receipt.CardKeys(cardJSON); err != nil {
			fmt.Fprintf(stdout, "FAIL: agent card: %v\n", err)
			return exitFail
		}
	}
	var request []byte
	if *reqFile != "" {
		if request, err = readInput(*reqFile, stdin); err != nil {
			fmt.Fprintf(stderr, "verifier receipt verify: read request: %v\n", err)
			return exitError
		}
	}
	if context == receipt.ContextVerify {
		err = receipt.VerifyReceipt(signed, pubs, request)
	} else {
		if request != nil {
			fmt.Fprintln(stderr, "verifier receipt verify: --request applies to verify receipts only")
			return exitInvalid
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
