package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/intoto"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// storedRecord is what `receipt export --from` reads of GET /verifications/{id}: the facts its
// attestation states.
type storedRecord struct {
	VerificationID  string  `json:"verification_id"`
	TaskID          *string `json:"task_id"`
	Result          string  `json:"result"`
	VerifiedAt      string  `json:"verified_at"`
	VerifierVersion *string `json:"verifier_version"`
	OutputHash      string  `json:"output_hash"`
	RulesHash       string  `json:"rules_hash"`
	EnforceRules    bool    `json:"enforce_rules"`
}

// verification is what the record's attestation must state (SPEC §16).
func (r storedRecord) verification() (intoto.Verification, error) {
	at, err := time.Parse(time.RFC3339Nano, r.VerifiedAt)
	if err != nil {
		return intoto.Verification{}, fmt.Errorf("the record's verified_at: %w", err)
	}
	v := intoto.Verification{VerificationID: r.VerificationID, Result: r.Result, VerifiedAt: receipt.FormatTime(at),
		OutputHash: r.OutputHash, RulesHash: r.RulesHash, EnforceRules: r.EnforceRules}
	var task string
	if r.TaskID != nil {
		task = *r.TaskID
	}
	v.TaskID = intoto.SubjectName(task, r.VerificationID)
	if r.VerifierVersion != nil {
		v.VerifierVersion = *r.VerifierVersion
	}
	return v, nil
}

// fetchAttestation fetches the attestation of the stored record at recordURL
// (BASE_URL/verifications/ID), waiting while the record is pending, and checks it: a DSSE
// signature by one of the agent card's keys under its version, and a statement that is exactly
// the one the record states. It returns the envelope as served; nil, with FAIL printed on
// stdout, when the check fails; an error when the service cannot be read.
func fetchAttestation(recordURL string, stdout io.Writer) ([]byte, error) {
	base, id, ok := strings.Cut(recordURL, "/verifications/")
	if u, err := url.Parse(base); !ok || err != nil || (u.Scheme != "http" && u.Scheme != "https") || id == "" || strings.Contains(id, "/") {
		return nil, errors.New("--from: give the record's URL, BASE_URL/verifications/ID")
	}
	card, err := loadCard(base + agentCardPath)
	if err != nil {
		return nil, err
	}
	keys, err := receipt.CardKeys(card)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: agent card: %v\n", err)
		return nil, nil
	}
	path := "/verifications/" + id
	envelope, err := fetchWhilePending(base, path+"/attestation")
	if err != nil {
		return nil, err
	}
	raw, err := fetch(base, path)
	if err != nil {
		return nil, err
	}
	var rec storedRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if err := checkAttestation(envelope, rec, base, keys); err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return nil, nil
	}
	return envelope, nil
}

// fetchWhilePending fetches base+path, asking again while the service answers 404 (a record not
// written or not sequenced yet) for up to pendingWait, as `receipt verify --log` waits.
func fetchWhilePending(base, path string) ([]byte, error) {
	deadline := time.Now().Add(pendingWait)
	for {
		b, err := fetch(base, path)
		var se *statusError
		if errors.As(err, &se) && se.status == http.StatusNotFound && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return b, err
	}
}

// checkAttestation checks that envelope is a DSSE envelope signed by one of keys under its
// version, whose payload is the in-toto statement rec states for the service at base.
func checkAttestation(envelope []byte, rec storedRecord, base string, keys []receipt.PublicKey) error {
	var env struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
		Signatures  []struct {
			KeyID string `json:"keyid"`
			Sig   string `json:"sig"`
		} `json:"signatures"`
	}
	if err := json.Unmarshal(envelope, &env); err != nil {
		return fmt.Errorf("attestation: not a DSSE envelope: %w", err)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil || env.PayloadType != intoto.PayloadType {
		return errors.New("attestation: not an in-toto payload")
	}
	signed := false
	for _, s := range env.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			continue
		}
		for _, k := range keys {
			if k.Version == s.KeyID && ed25519.Verify(k.Key, intoto.PAE(env.PayloadType, payload), sig) {
				signed = true
			}
		}
	}
	if !signed {
		return errors.New("attestation: no signature verifies under the agent card's keys")
	}
	v, err := rec.verification()
	if err != nil {
		return err
	}
	want, err := intoto.Statement(v, base)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if !bytes.Equal(payload, want) {
		return errors.New("attestation: the statement is not the one the stored record states")
	}
	return nil
}
