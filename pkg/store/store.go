// Package store declares what the verifier persists and the errors its callers must tell apart.
//
// The service keeps four things (and, in a ReceiptLog, a fifth: the receipt log of SPEC §15): the per-client free allowance of each UTC day, the payments it has
// already accepted (so one payment never buys two answers), each agent's verification history, and
// each agent's aggregate (the running totals its trust score is computed from).
// Two adapters implement Store: store/bolt (one local file, for the local server) and store/dynamo
// (one DynamoDB table, on Lambda). Both pass the one contract suite in store/storetest, so handlers
// never need to know which one they talk to.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// Store is everything the service persists.
type Store interface {
	// ConsumeAllowance atomically takes one free call for client on day (UTC "2006-01-02") if fewer
	// than limit were taken; it returns whether one was granted and how many remain after this call.
	// Never grants more than limit under any concurrency. The counter item expires (TTL) after its day;
	// an expired counter counts as absent, and an expires that has already passed is an error.
	ConsumeAllowance(ctx context.Context, client, day string, limit int, expires time.Time) (granted bool, remaining int, err error)
	// AllowanceUsed reads how many calls client used on day (0 if none), for the 402 body's live state.
	AllowanceUsed(ctx context.Context, client, day string) (int, error)
	// ReservePayment records a payment id (EVM authorization nonce / Solana tx) once; a second
	// reservation of the same id returns ErrPaymentReplayed. expires bounds how long the record is
	// kept. The decision is final when it returns; a store may make an EVM payment's record
	// durable a moment later (the embedded store does: see its ReservePayment), since the token
	// contract refuses a settled EIP-3009 authorization's replay whatever the store remembers.
	ReservePayment(ctx context.Context, id string, expires time.Time) error
	// ReleasePayment undoes a reservation of id for a payment that was never sent to settlement
	// (its work failed, or too little time was left to settle), so that the client can send the
	// same payment again. Releasing an id that is not reserved is no error. It must never be
	// called once settlement was attempted.
	ReleasePayment(ctx context.Context, id string) error
	// PaymentReserved tells whether a live reservation of id exists. It lets a replay be refused
	// as such before the facilitator is asked; ReservePayment stays the one that decides.
	PaymentReserved(ctx context.Context, id string) (bool, error)
	// KeepPaidAnswer keeps a paid call's answer under its x402 payment identifier until expires
	// (SPEC §16), so that the same call sent again is answered from the store instead of being
	// verified and settled again. The first answer kept under an id stays: keeping another under
	// a live id returns ErrPaidAnswerKept. An answer over MaxPaidAnswer is refused (an error).
	KeepPaidAnswer(ctx context.Context, id string, a PaidAnswer, expires time.Time) error
	// PaidAnswer returns the live answer kept under id; ok is false when there is none (never
	// kept, or expired).
	PaidAnswer(ctx context.Context, id string) (a PaidAnswer, ok bool, err error)
	// RecordVerification appends a delivered verification to the agent's history and adds it to the
	// agent's aggregate (reputation.Aggregate.Add), in O(1) whatever the history's length. A store
	// may take the record at once and count it later (store/dynamo folds it in, at the latest when
	// the history or the aggregate is read), so every read sees it. Recording the same
	// VerificationID for the same agent again changes neither, so a retried write never counts
	// twice; concurrent writers never lose each other's updates.
	RecordVerification(ctx context.Context, v Verification) error
	// AgentAggregate returns the agent's aggregate with one read; ok is false when nothing was
	// recorded for the agent.
	AgentAggregate(ctx context.Context, agentID string) (agg reputation.Aggregate, ok bool, err error)
	// History returns the agent's verifications newest first, at most limit, continuing after cursor
	// ("" = start); next is "" at the end. A limit above MaxHistoryPage is lowered to it.
	History(ctx context.Context, agentID string, limit int, cursor string) (page []Verification, next string, err error)
	// Ping checks the store answers (for /health), without leaking configuration in its error.
	Ping(ctx context.Context) error
	// Close releases the store's resources; the store must not be used afterwards.
	Close() error
}

// ErrPaymentReplayed is returned (wrapped) by ReservePayment when the payment id was already
// reserved and has not expired, so the payment layer can answer 402 payment_replayed before doing
// any work.
var ErrPaymentReplayed = errors.New("payment already used")

// ErrPaidAnswerKept is returned (wrapped) by KeepPaidAnswer when a live answer is already kept
// under the payment identifier: the first one stays.
var ErrPaidAnswerKept = errors.New("an answer is already kept under this payment identifier")

// PaidAnswer is a paid call's answer as kept under its payment identifier: what the call was
// (RequestHash, which the service computes from the resource and the request), the signed answer
// as delivered, and the settlement's JSON (the PAYMENT-RESPONSE it was delivered with).
type PaidAnswer struct {
	RequestHash string
	Response    []byte
	Settlement  []byte
}

// MaxPaidAnswer bounds the answer and settlement kept under one payment identifier: a DynamoDB
// item holds at most 400 KB, and a verification's answer, whose lists are capped, stays far below
// this.
const MaxPaidAnswer = 256 << 10

// ErrBadCursor is returned (wrapped) by History when the cursor was not produced by History: the
// caller sent garbage, which the HTTP layer answers with 422 rather than 500.
var ErrBadCursor = errors.New("invalid history cursor")

// MaxHistoryPage bounds one History page so that a single request can neither make the store read
// an agent's whole history nor build an unbounded response.
const MaxHistoryPage = 500

// Verification is one recorded verification (SPEC §9 fields).
type Verification struct {
	AgentID, VerificationID, TaskID, Result string // Result "pass"|"fail"
	OverallRatio                            float64
	VerifiedAt                              time.Time
	Paid                                    bool
	CallerID                                string // salted SHA-256 of the client IP, never the IP
}

// Observation is what the agent's aggregate counts of v.
func (v Verification) Observation() reputation.Observation {
	return reputation.Observation{
		VerifiedAt: v.VerifiedAt, Passed: v.Result == "pass", Paid: v.Paid,
		OverallRatio: v.OverallRatio, TaskID: v.TaskID, CallerID: v.CallerID,
	}
}

// Receipt is the stored record of one signed /verify/* answer (SPEC §15): hashes and the verdict,
// never the response's messages or any caller data, since verification ids are public.
type Receipt struct {
	VerificationID string
	ReceiptHash    translog.Hash // SHA-256 of the RFC 8785 form of the whole signed response
	Result         string        // pass or fail
	VerifiedAt     time.Time
	KeyVersion     string
	OutputHash     string
	SchemaHash     string
	RulesHash      string
	RequestHash    string          // "" unless the answer had full detail
	Settlement     json.RawMessage // the x402 SettlementResponse of a paid answer; nil for a free one
	// EnforceRules and VerifierVersion are verdict attributes the in-toto attestation of the
	// record states (SPEC §16: verifiedLevels, verifier.version).
	EnforceRules    bool
	VerifierVersion string
	// TaskID is held only for a verification its agent's public history already lists (an
	// agent_id not starting with test-, SPEC §9); "" for anonymous and test- verifications,
	// whose task ids stay the caller's.
	TaskID string
	// Expires is when the record may go (VERIFIER_RECORD_DAYS after VerifiedAt); its leaf, tiles
	// and checkpoints never expire.
	Expires time.Time
}

// ReceiptLog is a store that keeps the receipt log (SPEC §15): the stored records, the pending
// leaves, the tree the sequencer builds from them (translog.Storage) and the log's identity.
type ReceiptLog interface {
	translog.Storage
	translog.IdentityKeeper
	// RecordReceipt writes r and its pending leaf in one atomic write, once: recording the same
	// VerificationID again changes nothing. When it returns nil both are durable (on disk, or
	// acknowledged by DynamoDB), so that an answer delivered after it can always be proved
	// whatever crashes next; a crash before it returns leaves both or neither.
	RecordReceipt(ctx context.Context, r Receipt) error
	// Receipt reads the record of a verification id; ok is false when there is none or it expired.
	Receipt(ctx context.Context, verificationID string) (r Receipt, ok bool, err error)
}
