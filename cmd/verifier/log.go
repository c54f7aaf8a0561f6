package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// Limits of the log commands' reads from a service.
const (
	// logFetchTimeout bounds one request to the log's service.
	logFetchTimeout = 10 * time.Second
	// maxLogAnswer bounds one answer read: a record, a checkpoint or a tile (8 KB) is far smaller.
	maxLogAnswer = 1 << 20
	// pendingWait is how long `receipt verify --log` waits for a pending record to be sequenced:
	// the local server sequences within a second (SPEC §15), a deployment on AWS within its
	// schedule's step.
	pendingWait = 10 * time.Second
)

// cardLog is the agent card's transparencyLog (SPEC §15).
type cardLog struct {
	Origin        string `json:"origin"`
	VerifierKey   string `json:"verifierKey"`
	CheckpointURL string `json:"checkpointUrl"`
}

// logOfCard reads params.transparencyLog of the card's attestation extension.
func logOfCard(card []byte) (cardLog, error) {
	var c struct {
		Capabilities struct {
			Extensions []struct {
				URI    string `json:"uri"`
				Params struct {
					Log *cardLog `json:"transparencyLog"`
				} `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return cardLog{}, fmt.Errorf("agent card: %w", err)
	}
	for _, ext := range c.Capabilities.Extensions {
		if strings.HasPrefix(ext.URI, receipt.CardExtensionPrefix) && ext.Params.Log != nil && ext.Params.Log.VerifierKey != "" {
			return *ext.Params.Log, nil
		}
	}
	return cardLog{}, errors.New("agent card: no transparencyLog in its attestation extension")
}

// fetch GETs base+path and returns the body of a 200 answer; another status is a *statusError.
func fetch(base, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), logFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", path, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLogAnswer))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{path, resp.StatusCode}
	}
	return body, nil
}

// statusError is an answer other than 200.
type statusError struct {
	path   string
	status int
}

func (e *statusError) Error() string { return fmt.Sprintf("fetch %s: HTTP %d", e.path, e.status) }

// logRecord is what the log commands read of GET /verifications/{id}.
type logRecord struct {
	VerificationID string `json:"verification_id"`
	ReceiptHash    string `json:"receipt_hash"`
	Log            struct {
		Status         string   `json:"status"`
		Index          int64    `json:"index"`
		TreeSize       int64    `json:"tree_size"`
		Checkpoint     string   `json:"checkpoint"`
		InclusionProof []string `json:"inclusion_proof"`
	} `json:"log"`
}

// checkRecord checks that rec proves the inclusion of the receipt signed (its receipt hash)
// under a checkpoint signed by the log key, and returns the checkpoint and the index.
func checkRecord(rec logRecord, signed []byte, verifierKey string) (translog.Checkpoint, error) {
	leaf, err := translog.ReceiptHash(signed)
	if err != nil {
		return translog.Checkpoint{}, err
	}
	var id struct {
		ID string `json:"verification_id"`
	}
	_ = json.Unmarshal(signed, &id)
	if rec.VerificationID != id.ID {
		return translog.Checkpoint{}, errors.New("the record is of another verification")
	}
	if rec.ReceiptHash != fmt.Sprintf("%x", leaf[:]) {
		return translog.Checkpoint{}, errors.New("the record's receipt_hash is not this receipt's: the log holds another answer for this verification")
	}
	if rec.Log.Status == "pending" {
		return translog.Checkpoint{}, errors.New("the record is not in the log yet (pending)")
	}
	proof := make(tlog.RecordProof, len(rec.Log.InclusionProof))
	for i, p := range rec.Log.InclusionProof {
		b, err := base64.StdEncoding.DecodeString(p)
		if err != nil || len(b) != tlog.HashSize {
			return translog.Checkpoint{}, errors.New("the record's inclusion proof is malformed")
		}
		copy(proof[i][:], b)
	}
	return translog.CheckInclusion([]byte(rec.Log.Checkpoint), verifierKey, leaf, rec.Log.Index, proof)
}

// verifyInLog is the log part of `receipt verify --log` / `--proof`: the record comes from the
// service at base (waiting out a pending one) or from the file proofFile.
func verifyInLog(signed []byte, base, proofFile, verifierKey string) (translog.Checkpoint, int64, error) {
	var rec logRecord
	if proofFile != "" {
		b, err := readInput(proofFile, nil)
		if err != nil {
			return translog.Checkpoint{}, 0, fmt.Errorf("read record: %w", err)
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return translog.Checkpoint{}, 0, fmt.Errorf("record: %w", err)
		}
		cp, err := checkRecord(rec, signed, verifierKey)
		return cp, rec.Log.Index, err
	}
	var id struct {
		ID string `json:"verification_id"`
	}
	if err := json.Unmarshal(signed, &id); err != nil || id.ID == "" {
		return translog.Checkpoint{}, 0, errors.New("the receipt has no verification_id")
	}
	deadline := time.Now().Add(pendingWait)
	for {
		// The service writes a record before it delivers the answer, so a missing record is
		// final; only a pending one is waited for.
		b, err := fetch(base, "/verifications/"+url.PathEscape(id.ID))
		if err != nil {
			return translog.Checkpoint{}, 0, err
		}
		rec = logRecord{}
		if err := json.Unmarshal(b, &rec); err != nil {
			return translog.Checkpoint{}, 0, fmt.Errorf("record: %w", err)
		}
		if rec.Log.Status != "pending" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	cp, err := checkRecord(rec, signed, verifierKey)
	return cp, rec.Log.Index, err
}

const logAuditSynopsis = `  verifier log audit [--from CHECKPOINT] [--save FILE] BASE_URL
Fetches the log key from BASE_URL's agent card and the latest checkpoint, recomputes the whole
tree from the log's tiles and checks its root; with --from (an earlier signed checkpoint of the
same log, e.g. one saved by an earlier audit) it also checks that the earlier tree is a prefix
of the latest. Prints "OK: ..." and exits 0; "FAIL: <reason>" and exit 1 on a fork, a rewritten
history or a tile that does not match; exit 2 on bad usage, 3 when the service cannot be read.`

func runLog(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] != "audit" {
		fmt.Fprint(stderr, "verifier log: missing subcommand: verifier log audit ...\n"+usage)
		return exitInvalid
	}
	c := newCommand("log audit", logAuditSynopsis)
	from := c.String("from", "", "an earlier signed checkpoint `FILE` of the same log")
	save := c.String("save", "", "write the latest signed checkpoint to `FILE` once it is audited, for the next --from")
	if code, ok := c.parse(args[1:], stdout, stderr); !ok {
		return code
	}
	if c.NArg() != 1 {
		return c.misuse(stderr, "want one BASE_URL")
	}
	base := c.Arg(0)
	cardJSON, err := fetch(base, "/.well-known/agent-card.json")
	if err != nil {
		return c.errorf(stderr, exitError, "%v", err)
	}
	lg, err := logOfCard(cardJSON)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return exitFail
	}
	signed, err := fetch(base, "/log/checkpoint")
	if err != nil {
		return c.errorf(stderr, exitError, "%v", err)
	}
	cp, err := translog.OpenCheckpoint(signed, lg.VerifierKey)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return exitFail
	}
	var earlier *translog.Checkpoint
	if *from != "" {
		b, err := readInput(*from, nil)
		if err != nil {
			return c.errorf(stderr, exitError, "read --from: %v", err)
		}
		old, err := translog.OpenCheckpoint(b, lg.VerifierKey)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL: --from: %v\n", err)
			return exitFail
		}
		earlier = &old
	}
	if _, err := translog.Audit(func(path string) ([]byte, error) { return fetch(base, "/log/"+path) }, cp, earlier); err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return exitFail
	}
	if *save != "" {
		if err := os.WriteFile(*save, signed, 0o644); err != nil {
			return c.errorf(stderr, exitError, "save checkpoint: %v", err)
		}
	}
	what := fmt.Sprintf("%s: %d leaves, root %s recomputed from the tiles", cp.Origin, cp.Size, cp.Hash)
	if earlier != nil {
		what += fmt.Sprintf("; consistent with the earlier checkpoint of %d leaves", earlier.Size)
	}
	fmt.Fprintf(stdout, "OK: %s\n", what)
	return exitOK
}
