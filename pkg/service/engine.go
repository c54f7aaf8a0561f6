package service

import (
	"errors"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// Engine is the checking engine as the service uses it: it decodes a request body into a
// Checkable, whose checks run and whose report is signed later, once the request is admitted. It
// is an interface so that the engine, and the JSON Schema library it links, are handed in only
// by the programs that verify (the local server, the verify and MCP functions, through
// pkg/service/engine): the score and discovery functions build a service without one, and never
// link them.
type Engine interface {
	// Decode validates a request body and compiles its schema. Its errors are the request's
	// 422s and 413s (*apperr.Error), which charge and consume nothing.
	Decode(body []byte) (Checkable, error)
}

// Checkable is a decoded request whose schema is compiled.
type Checkable interface {
	// StopWhen makes the checks stop, with ErrStopped, once done is closed.
	StopWhen(done <-chan struct{})
	// CheckSchema validates the output against the schema, once; its only error that is not
	// ErrStopped is the refusal of a schema or rules too costly to evaluate (schema_too_complex,
	// rules_too_complex).
	CheckSchema() error
	// Finish runs every check and signs the report with key.
	Finish(env Envelope, key receipt.Key) (Checked, error)
}

// Envelope is what the service adds to a report: its identity, time and verify block.
type Envelope struct {
	VerificationID  string
	VerifiedAt      time.Time
	VerifierVersion string
	Verify          receipt.VerifyInfo
	// Payment is what bought the answer, signed with it (SPEC §16).
	Payment *receipt.Payment
	// HashReceipt asks the engine for the answer's receipt hash (Checked.ReceiptHash), which it
	// computes while signing at a fraction of a parse's cost: the receipt log keeps the answer.
	HashReceipt bool
}

// Checked is a finished check: the signed response and what the history records of it.
type Checked struct {
	Body           []byte // the signed response
	VerificationID string
	TaskID         string
	AgentID        *string // nil when the request named no agent
	Result         string  // pass or fail
	OverallRatio   float64
	// Hashes are the answer's output_hash, schema_hash, rules_hash and request_hash (this one
	// only in a full-detail answer), and KeyVersion the key that signed it: the stored record of
	// the receipt log takes them without parsing the answer again.
	Hashes     receipt.Hashes
	KeyVersion string
	// EnforceRules says the rules and bounds could block the verdict: the in-toto attestation
	// of the stored record names the rules level then (SPEC §16).
	EnforceRules bool
	// ReceiptHash is the SHA-256 of Body's RFC 8785 form, the receipt log's leaf, when the engine
	// computed it while signing (HasReceiptHash); otherwise the log hashes Body itself.
	ReceiptHash    [32]byte
	HasReceiptHash bool
}

// ErrStopped is an engine's answer for checks stopped before they finished (StopWhen): no
// verdict, never charged.
var ErrStopped = errors.New("service: the check was stopped before it finished")

// errNoEngine answers a verification in a service built without an engine.
var errNoEngine = errors.New("service: verification requested of a service built without an engine")
