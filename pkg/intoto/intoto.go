// Package intoto renders a verification as supply-chain tools read attestations (SPEC §16): an
// in-toto Statement v1 whose predicate is SLSA's Verification Summary Attestation v1, in a DSSE
// envelope signed with the receipt key. It is a function of a verification's record-like facts,
// with no I/O: the service serves it for a stored record, and `verifier receipt export --format
// in-toto` writes it for a receipt file.
package intoto

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The names the statement and envelope use.
const (
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is in-toto's Statement v1.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType is SLSA's Verification Summary Attestation v1.
	PredicateType = "https://slsa.dev/verification_summary/v1"
	// LevelSchema is what every verification checked: the output against its JSON Schema.
	LevelSchema = "AOV_SCHEMA_V1"
	// LevelRules is added when the business rules and bounds were enforced (they could block).
	LevelRules = "AOV_RULES_V1"
)

// Verification is what the attestation says of one verification: the facts a receipt (and the
// stored record of SPEC §15) carries.
type Verification struct {
	VerificationID  string
	TaskID          string
	Result          string // pass or fail
	VerifiedAt      string // RFC 3339, as the receipt writes it
	VerifierVersion string
	OutputHash      string // hex SHA-256 of the output's RFC 8785 form
	RulesHash       string // hex SHA-256 of {bounds, rules}'s RFC 8785 form
	EnforceRules    bool
}

// SubjectName is the subject name of a stored record's statement: the task id when the record
// holds one (a verification its agent's public history lists, SPEC §9), otherwise
// verification:<id>, since a public record holds no caller data (SPEC §15).
func SubjectName(taskID, verificationID string) string {
	if taskID != "" {
		return taskID
	}
	return "verification:" + verificationID
}

// FromReceipt reads the facts of a verification from its signed answer (a /verify response). It
// does not check the signature: the caller verifies the receipt first.
func FromReceipt(receipt []byte) (Verification, error) {
	var r struct {
		VerificationID  string `json:"verification_id"`
		TaskID          string `json:"task_id"`
		Result          string `json:"result"`
		VerifiedAt      string `json:"verified_at"`
		VerifierVersion string `json:"verifier_version"`
		OutputHash      string `json:"output_hash"`
		RulesHash       string `json:"rules_hash"`
		EnforceRules    bool   `json:"enforce_rules"`
	}
	if err := json.Unmarshal(receipt, &r); err != nil {
		return Verification{}, fmt.Errorf("read receipt: %w", err)
	}
	v := Verification(r)
	return v, v.validate()
}

func (v Verification) validate() error {
	switch {
	case v.VerificationID == "" || v.TaskID == "" || v.VerifiedAt == "":
		return errors.New("verification: verification_id, task_id and verified_at are required")
	case v.Result != "pass" && v.Result != "fail":
		return errors.New("verification: result is neither pass nor fail")
	case len(v.OutputHash) != 64 || len(v.RulesHash) != 64:
		return errors.New("verification: output_hash and rules_hash must be hex SHA-256")
	}
	return nil
}

// Statement is the in-toto Statement v1 of v for a deployment at baseURL: the output as subject
// (named by the task, digested by output_hash), the VSA predicate with the rules as policy.
func Statement(v Verification, baseURL string) ([]byte, error) {
	if err := v.validate(); err != nil {
		return nil, err
	}
	result := "PASSED"
	if v.Result != "pass" {
		result = "FAILED"
	}
	levels := []string{LevelSchema}
	if v.EnforceRules {
		levels = append(levels, LevelRules)
	}
	record := baseURL + "/verifications/" + v.VerificationID
	st := map[string]any{
		"_type":         StatementType,
		"subject":       []any{map[string]any{"name": v.TaskID, "digest": map[string]string{"sha256": v.OutputHash}}},
		"predicateType": PredicateType,
		"predicate": map[string]any{
			"verifier":           map[string]any{"id": baseURL, "version": map[string]string{"agent-output-verifier": v.VerifierVersion}},
			"timeVerified":       v.VerifiedAt,
			"resourceUri":        record,
			"policy":             map[string]any{"uri": record, "digest": map[string]string{"sha256": v.RulesHash}},
			"inputAttestations":  []any{},
			"verificationResult": result,
			"verifiedLevels":     levels,
		},
	}
	return json.Marshal(st)
}

// Signer signs bytes with the receipt key; receipt.Key is one (its Sign method).
type Signer interface {
	Sign(msg []byte) ([]byte, error)
}

// Envelope is the DSSE envelope of v's statement, signed by signer under keyID (the key version).
func Envelope(v Verification, baseURL string, signer Signer, keyID string) ([]byte, error) {
	payload, err := Statement(v, baseURL)
	if err != nil {
		return nil, err
	}
	sig, err := signer.Sign(PAE(PayloadType, payload))
	if err != nil {
		return nil, fmt.Errorf("sign the attestation: %w", err)
	}
	return json.Marshal(map[string]any{
		"payloadType": PayloadType,
		"payload":     base64.StdEncoding.EncodeToString(payload),
		"signatures":  []any{map[string]string{"keyid": keyID, "sig": base64.StdEncoding.EncodeToString(sig)}},
	})
}

// PAE is DSSE's pre-authentication encoding, the bytes a DSSE signature covers:
// "DSSEv1" SP len(type) SP type SP len(body) SP body.
func PAE(payloadType string, body []byte) []byte {
	b := []byte("DSSEv1 ")
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, ' ')
	return append(b, body...)
}

// EnvelopeSchemaJSON is the JSON Schema of the DSSE envelope Envelope writes, for the OpenAPI
// document of GET /verifications/{verification_id}/attestation.
const EnvelopeSchemaJSON = `{
  "type": "object",
  "description": "A DSSE envelope: payload is the standard base64 of an in-toto Statement v1 (SLSA VSA v1 predicate); each signature is Ed25519 over DSSE's PAE(payloadType, payload), keyid the receipt key's version.",
  "required": ["payloadType", "payload", "signatures"],
  "additionalProperties": false,
  "properties": {
    "payloadType": {"const": "application/vnd.in-toto+json"},
    "payload": {"type": "string", "contentEncoding": "base64"},
    "signatures": {"type": "array", "minItems": 1, "items": {
      "type": "object", "required": ["keyid", "sig"], "additionalProperties": false,
      "properties": {"keyid": {"type": "string"}, "sig": {"type": "string", "contentEncoding": "base64"}}}}
  }
}`
