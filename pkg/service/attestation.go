package service

import (
	"context"
	"fmt"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/intoto"
	"github.com/agent-output-verifier/verifier/pkg/kept"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// A stored record's attestation (GET /verifications/{id}/attestation) is free and anyone may ask
// for it, so the signatures it costs are bounded: with a kms-sign key each one is a billed
// kms:Sign call, counted against the KMS request quota the paid answers' receipts share. An
// envelope is a function of the record and the key (Ed25519 is deterministic), so a signed one is
// kept and handed out again, and the envelopes a remote key signs afresh are rationed, with
// pkg/kept's LRU and ration as the x402 offers are.
const (
	// maxKeptAttestations bounds the envelopes kept: about 1.5 KB each (a statement of hashes and
	// URLs, base64, and a signature), a few megabytes in all, while a buyer and the seller
	// fetching the attestations of recent verifications find them kept.
	maxKeptAttestations = 4096
	// freshAttestationsPerSecond and freshAttestationsBurst ration a remote key's fresh
	// envelope signatures per process: a caller walking verification ids costs at most this
	// many kms:Sign calls a second, a few percent of KMS's default Ed25519 quota, while the
	// burst covers a client fetching the attestations of a batch it just verified.
	freshAttestationsPerSecond = 5
	freshAttestationsBurst     = 50
)

// keptAttestation is a signed envelope, the key version that signed it and when its record
// expires (an expired record's attestation is not handed out).
type keptAttestation struct {
	keyVersion string
	expires    time.Time
	envelope   []byte
}

// attestations are the kept envelopes and the ration of fresh ones.
type attestations struct {
	kept  *kept.LRU[string, keptAttestation]
	fresh *kept.Ration
}

func newAttestations() attestations {
	return attestations{
		kept:  kept.NewLRU[string, keptAttestation](maxKeptAttestations),
		fresh: kept.NewRation(freshAttestationsPerSecond, freshAttestationsBurst),
	}
}

// errAttestationPending answers while the record's leaf waits for the log: an attestation is
// handed out only for a receipt already in the public log.
// It is a not_found that is retryable, after Retry-After: 1 as a pending record says.
func errAttestationPending() *apperr.Error {
	e := apperr.New(apperr.NotFound, "The verification's receipt is not in the receipt log yet; its attestation is served once it is, within a second or so. Try again.")
	e.Retryable, e.RetryAfter = true, 1
	e.NextAction = []apperr.NextAction{{Action: "retry_later"}}
	return e
}

// errAttestationsRationed answers when a remote key's fresh envelope signatures are spent.
func errAttestationsRationed() *apperr.Error {
	e := apperr.New(apperr.RateLimited, "Too many attestations were signed just now; try again in a second.")
	e.RetryAfter = 1
	return e
}

// RecordVerification is what the attestation of a stored record states: its subject is named
// by intoto.SubjectName.
func RecordVerification(r Record) intoto.Verification {
	return intoto.Verification{
		VerificationID: r.VerificationID, TaskID: intoto.SubjectName(r.TaskID, r.VerificationID), Result: r.Result,
		VerifiedAt: receipt.FormatTime(r.VerifiedAt), VerifierVersion: r.VerifierVersion,
		OutputHash: r.OutputHash, RulesHash: r.RulesHash, EnforceRules: r.EnforceRules,
	}
}

// Attestation is the DSSE envelope of the in-toto statement (SLSA VSA v1) of verification id's
// stored record, signed with the current receipt key under ctx (SPEC §16). It answers as
// VerificationRecord does for an unknown or expired id; while the record's leaf is pending it
// answers a retryable not_found.
func (s *Service) Attestation(ctx context.Context, id string) ([]byte, error) {
	if s.d.Receipts == nil {
		return nil, errNoLog
	}
	if err := CheckVerificationID(id); err != nil {
		return nil, err
	}
	key := s.d.Keys.Current
	now := s.d.Now()
	if a, ok := s.attestations.kept.Get(id); ok && a.keyVersion == key.Version && now.Before(a.expires) {
		return a.envelope, nil
	}
	rec, err := s.VerificationRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.Pending() {
		return nil, errAttestationPending()
	}
	if key.IsRemote() && !s.attestations.fresh.Take(1, now) {
		return nil, errAttestationsRationed()
	}
	env, err := intoto.Envelope(RecordVerification(rec), s.d.BaseURL, key.WithContext(ctx), key.Version)
	if err != nil {
		return nil, fmt.Errorf("attestation of %s: %w", id, err)
	}
	s.attestations.kept.Put(id, keptAttestation{keyVersion: key.Version, expires: rec.Expires, envelope: env})
	return env, nil
}
