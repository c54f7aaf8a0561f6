package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// wireRecord is GET /verifications/{id}'s answer.
type wireRecord struct {
	VerificationID string          `json:"verification_id"`
	ReceiptHash    string          `json:"receipt_hash"`
	Result         string          `json:"result"`
	OutputHash     string          `json:"output_hash"`
	KeyVersion     string          `json:"key_version"`
	RequestHash    *string         `json:"request_hash"`
	Settlement     json.RawMessage `json:"settlement"`
	Log            struct {
		Status         string   `json:"status"`
		Index          int64    `json:"index"`
		TreeSize       int64    `json:"tree_size"`
		Checkpoint     string   `json:"checkpoint"`
		InclusionProof []string `json:"inclusion_proof"`
	} `json:"log"`
}

func getRecord(t *testing.T, base, id string) (*http.Response, wireRecord) {
	t.Helper()
	resp, b := testhttp.Do(t, "GET", base+"/verifications/"+id, nil)
	var rec wireRecord
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("record: %v: %s", err, b)
		}
	}
	return resp, rec
}

// Free and paid answers become leaves; the record says pending until the sequencer ran, then
// proves its inclusion under a checkpoint signed by the log key, which tlog.CheckRecord and
// note.Open accept; the tiles served recompute to the checkpoint, and each kind of tampering
// (a tile, the checkpoint, the record) is refused.
func TestLogRoutes(t *testing.T) {
	e := newPayEnv(t, openBolt, 2, &fakePayer{valid: true, settleOK: true})
	base := e.srv.URL
	logKey := testsvc.LogKey(testsvc.BaseURL)
	if resp, _ := testhttp.Do(t, "GET", base+"/log/checkpoint", nil); resp.StatusCode != http.StatusNotFound || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("checkpoint of an empty log: %d, Retry-After %q; want 404 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var answers [][]byte
	var ids []string
	for i := range 3 { // two free, then a paid one (the allowance is 2)
		var hdr []string
		if i == 2 {
			hdr = []string{"PAYMENT-SIGNATURE", paymentHeader(t, testRequirement, 1)}
		}
		resp, b := testhttp.Do(t, "POST", base+"/verify/schema", []byte(fmt.Sprintf(`{"task_id":"t%d","expected_schema":{"type":"number"},"submitted_output":%d,"detail":"full"}`, i, i)), hdr...)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("verification %d: %d %s", i, resp.StatusCode, b)
		}
		var v struct {
			ID string `json:"verification_id"`
		}
		json.Unmarshal(b, &v)
		answers, ids = append(answers, b), append(ids, v.ID)
	}
	resp, rec := getRecord(t, base, ids[0])
	if resp.StatusCode != http.StatusOK || rec.Log.Status != "pending" || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("before sequencing: %d %+v Retry-After %q; want pending with Retry-After 1", resp.StatusCode, rec.Log, resp.Header.Get("Retry-After"))
	}
	if n, err := e.svc.Sequence(context.Background()); err != nil || n != 3 {
		t.Fatalf("Sequence = %d, %v; want 3 leaves", n, err)
	}
	resp, cpText := testhttp.Do(t, "GET", base+"/log/checkpoint", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("checkpoint: %d %v", resp.StatusCode, resp.Header)
	}
	cp, err := translog.OpenCheckpoint(cpText, logKey.VerifierKey)
	if err != nil || cp.Size != 3 || cp.Origin != "127.0.0.1:8080/log" {
		t.Fatalf("checkpoint %q: %+v, %v", cpText, cp, err)
	}
	for i, id := range ids {
		resp, rec := getRecord(t, base, id)
		if resp.StatusCode != http.StatusOK || rec.Log.Status != "" || resp.Header.Get("Retry-After") != "" {
			t.Fatalf("record %d: %d %+v", i, resp.StatusCode, rec)
		}
		canonical, err := receipt.Canonicalize(answers[i])
		if err != nil {
			t.Fatal(err)
		}
		leaf := sha256.Sum256(canonical)
		if rec.ReceiptHash != fmt.Sprintf("%x", leaf) {
			t.Errorf("record %d: receipt_hash %s is not the SHA-256 of the answer's RFC 8785 form", i, rec.ReceiptHash)
		}
		var ans map[string]any
		json.Unmarshal(answers[i], &ans)
		if rec.Result != ans["result"] || rec.OutputHash != ans["output_hash"] || rec.RequestHash == nil || *rec.RequestHash != ans["request_hash"] || rec.KeyVersion != testsvc.Key().Version {
			t.Errorf("record %d does not carry the answer's verdict and hashes: %+v", i, rec)
		}
		paid := i == 2
		if paid != (string(rec.Settlement) != "null") {
			t.Errorf("record %d: settlement %s (paid: %v)", i, rec.Settlement, paid)
		}
		proof := make(tlog.RecordProof, len(rec.Log.InclusionProof))
		for j, p := range rec.Log.InclusionProof {
			b, err := base64.StdEncoding.DecodeString(p)
			if err != nil || len(b) != tlog.HashSize {
				t.Fatalf("proof hash %q", p)
			}
			copy(proof[j][:], b)
		}
		if _, err := translog.CheckInclusion([]byte(rec.Log.Checkpoint), logKey.VerifierKey, leaf, rec.Log.Index, proof); err != nil {
			t.Errorf("record %d: inclusion: %v", i, err)
		}
		// Tampering with the record: another leaf, another index.
		if _, err := translog.CheckInclusion([]byte(rec.Log.Checkpoint), logKey.VerifierKey, sha256.Sum256([]byte("other")), rec.Log.Index, proof); err == nil {
			t.Errorf("record %d: a proof accepted another leaf", i)
		}
		if _, err := translog.CheckInclusion([]byte(rec.Log.Checkpoint), logKey.VerifierKey, leaf, (rec.Log.Index+1)%3, proof); err == nil {
			t.Errorf("record %d: a proof accepted another index", i)
		}
	}
	// Tampering with the checkpoint: its size, or a signature by another key.
	forged := strings.Replace(string(cpText), "\n3\n", "\n4\n", 1)
	if _, err := translog.OpenCheckpoint([]byte(forged), logKey.VerifierKey); err == nil {
		t.Error("a checkpoint with its size changed was accepted")
	}
	if _, err := translog.OpenCheckpoint(cpText, testsvc.LogKey("https://other.example").VerifierKey); err == nil {
		t.Error("a checkpoint was accepted under another log's key")
	}
	fetch := func(tamper bool) func(string) ([]byte, error) {
		return func(path string) ([]byte, error) {
			resp, b := testhttp.Do(t, "GET", base+"/log/"+path, nil)
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("%s: %d", path, resp.StatusCode)
			}
			if resp.Header.Get("Cache-Control") != noCache { // three leaves: every tile is partial
				t.Errorf("%s: Cache-Control %q", path, resp.Header.Get("Cache-Control"))
			}
			if tamper && strings.Contains(path, "data") {
				b[0] ^= 1
			}
			return b, nil
		}
	}
	if _, err := translog.Audit(fetch(false), cp, nil); err != nil {
		t.Errorf("audit over HTTP: %v", err)
	}
	if _, err := translog.Audit(fetch(true), cp, nil); err == nil {
		t.Error("an audit accepted a tampered data tile")
	}
	for _, bad := range []string{"/log/tile/8/0/001", "/log/tile/8/0/000.p/4", "/log/tile/4/0/000.p/3", "/log/tile/8/data/x", "/verifications/" + strings.Repeat("a", 200), "/verifications/nope"} {
		if resp, _ := testhttp.Do(t, "GET", base+bad, nil); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("GET %s: %d, want 404 or 422", bad, resp.StatusCode)
		}
	}
	// Every answer's record is written before the answer leaves, so an unknown id is final: 404
	// without Retry-After, saying it was never issued or expired (the id itself is not echoed).
	resp, b := testhttp.Do(t, "GET", base+"/verifications/never-recorded-id", nil)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Retry-After") != "" ||
		!strings.Contains(string(b), "never issued here") || strings.Contains(string(b), "never-recorded-id") {
		t.Errorf("unknown id: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
}

// failingReceipts is a bolt store whose receipt writes fail while fail is set.
type failingReceipts struct {
	*bolt.Store
	fail atomic.Bool
}

func (f *failingReceipts) RecordReceipt(ctx context.Context, r store.Receipt) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return f.Store.RecordReceipt(ctx, r)
}

func (f *failingReceipts) RecordReceiptWithHistory(ctx context.Context, r store.Receipt, v store.Verification) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return f.Store.RecordReceiptWithHistory(ctx, r, v)
}

// An answer leaves only once its receipt is recorded: while the receipt log's store refuses the
// write, a free call is a retryable 503 and a paid (settled) one a 503 saying it was charged,
// neither carrying the answer nor recording the agent's history; once the store takes writes
// again, every answer's record is there the moment the answer is (no 404 in between).
func TestReceiptWriteFailureWithholdsAnswer(t *testing.T) {
	var st *failingReceipts
	e := newPayEnv(t, func(t testing.TB, now func() time.Time) store.Store {
		st = &failingReceipts{Store: openBolt(t, now).(*bolt.Store)}
		return st
	}, 1, &fakePayer{valid: true, settleOK: true})
	// The receipt's write is retried within the store timeout before the answer is withheld.
	e.rebuild(t, func(d *service.Deps) { d.StoreTimeout = 300 * time.Millisecond })
	base := e.srv.URL
	st.fail.Store(true)
	body := `{"task_id":"t-withheld","agent_id":"seller-withheld","expected_schema":{"type":"number"},"submitted_output":1}`
	resp, b := testhttp.Do(t, "POST", base+"/verify/schema", []byte(body))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || strings.Contains(string(b), "verification_id") ||
		!strings.Contains(string(b), `"retryable":true`) || !strings.Contains(string(b), `"charged":false`) {
		t.Errorf("free call with the receipt unrecorded: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	resp, b = testhttp.Do(t, "POST", base+"/verify/schema", []byte(body), "PAYMENT-SIGNATURE", paymentHeader(t, testRequirement, 1))
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(b), "verification_id") ||
		!strings.Contains(string(b), `"charged":true`) || !strings.Contains(string(b), "check_payment") {
		t.Errorf("paid call with the receipt unrecorded: %d, %s", resp.StatusCode, b)
	}
	if page, _, err := e.st.History(context.Background(), "seller-withheld", 10, ""); err != nil || len(page) != 0 {
		t.Errorf("history of withheld answers: %d records, %v; want none", len(page), err)
	}
	st.fail.Store(false)
	for i := range 20 {
		resp, b := testhttp.Do(t, "POST", base+"/verify/schema", []byte(body), "PAYMENT-SIGNATURE", paymentHeader(t, testRequirement, 10+i))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("paid call %d: %d %s", i, resp.StatusCode, b)
		}
		var v struct {
			ID string `json:"verification_id"`
		}
		json.Unmarshal(b, &v)
		if resp, _ := getRecord(t, base, v.ID); resp.StatusCode != http.StatusOK {
			t.Fatalf("record of an answer just delivered: %d, want 200", resp.StatusCode)
		}
	}
}
