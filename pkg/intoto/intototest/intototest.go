// Package intototest reads attestations as supply-chain tools do, for tests: the DSSE envelope
// with go-securesystemslib's verifier, the statement with in-toto's Go package and its predicate
// as SLSA's Verification Summary Attestation v1. Only tests import it, so neither library enters
// a program.
package intototest

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	vsa "github.com/in-toto/attestation/go/predicates/vsa/v1"
	ita1 "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agent-output-verifier/verifier/pkg/intoto"
)

// Verifier is a dsse.Verifier over one Ed25519 public key, under the key id ID.
type Verifier struct {
	ID  string
	Key ed25519.PublicKey
}

// Verify implements dsse.Verifier.
func (v Verifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(v.Key, data, sig) {
		return errors.New("bad signature")
	}
	return nil
}

// KeyID implements dsse.Verifier.
func (v Verifier) KeyID() (string, error) { return v.ID, nil }

// Public implements dsse.Verifier.
func (v Verifier) Public() crypto.PublicKey { return v.Key }

// Verify checks env's DSSE signature with go-securesystemslib: exactly one signature, by keyID,
// verifies under pub.
func Verify(env []byte, keyID string, pub ed25519.PublicKey) error {
	var e dsse.Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		return fmt.Errorf("envelope: %w", err)
	}
	v, err := dsse.NewEnvelopeVerifier(Verifier{ID: keyID, Key: pub})
	if err != nil {
		return err
	}
	accepted, err := v.Verify(context.Background(), &e)
	if err != nil {
		return err
	}
	if len(accepted) != 1 || accepted[0].KeyID != keyID {
		return fmt.Errorf("accepted %+v, want one signature by %s", accepted, keyID)
	}
	return nil
}

// Open verifies env (Verify), checks its payload type, and parses its payload as an in-toto
// Statement v1 that validates, and the statement's predicate as a VSA v1. It returns the
// statement, the summary, and the predicate's JSON (in-toto's VSA message has no verifier.version,
// which SLSA's specification defines, so callers read that member from the JSON).
func Open(t testing.TB, env []byte, keyID string, pub ed25519.PublicKey) (*ita1.Statement, *vsa.VerificationSummary, []byte) {
	t.Helper()
	if err := Verify(env, keyID, pub); err != nil {
		t.Fatalf("DSSE: %v: %s", err, env)
	}
	var e dsse.Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	if e.PayloadType != intoto.PayloadType {
		t.Errorf("payloadType %q, want %q", e.PayloadType, intoto.PayloadType)
	}
	payload, err := e.DecodeB64Payload()
	if err != nil {
		t.Fatal(err)
	}
	var st ita1.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		t.Fatalf("not an in-toto statement: %v: %s", err, payload)
	}
	if err := st.Validate(); err != nil {
		t.Fatalf("not a valid in-toto statement: %v", err)
	}
	pred, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		t.Fatal(err)
	}
	var summary vsa.VerificationSummary
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(pred, &summary); err != nil {
		t.Fatalf("the predicate is not a VSA v1: %v", err)
	}
	return &st, &summary, pred
}
