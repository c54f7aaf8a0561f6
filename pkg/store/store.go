// Package store declares what the verifier persists and the errors its callers must tell apart.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// Store is everything the service persists: the per-client free allowance of each UTC day, the
// payments it has already accepted (so one payment never buys two answers) and the claims of x402
// payment identifiers (so one identifier never buys two calls), each agent's verification
// history, and each agent's aggregate (the running totals its trust score is computed from); a
// ReceiptLog keeps the receipt log as well. Two adapters implement it: store/bolt (one local
// file, for the local server) and store/dynamo (one DynamoDB table, on Lambda). Both pass the one
// contract suite in store/storetest, so handlers never need to know which one they talk to.
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
	// ClaimPayment claims an x402 payment identifier (SPEC §16) for c before its call is settled,
	// so that the identifier buys one call at most, whatever the concurrency. It stores c (whose
	// State must be ClaimWorking) when id has no live claim, or when the live one is a
	// ClaimWorking claim whose LeaseUntil has passed (its holder stopped before settling, so
	// nothing was charged under it); otherwise it changes nothing and returns the live claim,
	// claimed false. Of concurrent claims of one id exactly one succeeds. expires bounds how
	// long the claim is kept.
	ClaimPayment(ctx context.Context, id string, c PaymentClaim, expires time.Time) (held PaymentClaim, claimed bool, err error)
	// UpdatePaymentClaim replaces the live claim of id with c if its Holder is holder, in one
	// conditional write (c may name another holder: a take-over). Otherwise it changes nothing
	// and returns ErrClaimLost. The first answer kept under an id thus stays: only its holder
	// can change the claim. A claim over MaxPaidAnswer is refused (an error).
	UpdatePaymentClaim(ctx context.Context, id, holder string, c PaymentClaim, expires time.Time) error
	// ReleasePaymentClaim removes the live claim of id if its Holder is holder and its State is
	// ClaimWorking: the call it was made for failed before any settlement was attempted, and
	// the client may send it again. Otherwise it changes nothing (no error).
	ReleasePaymentClaim(ctx context.Context, id, holder string) error
	// PaymentClaim returns the live claim of id, with a strongly consistent read; ok is false
	// when there is none (never claimed, released, or expired).
	PaymentClaim(ctx context.Context, id string) (c PaymentClaim, ok bool, err error)
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

// ErrClaimLost is returned (wrapped) by UpdatePaymentClaim when the claim is not held by the
// caller any more (another call took it over) or is gone.
var ErrClaimLost = errors.New("the payment identifier's claim is held by another call")

// ClaimState is how far the call that holds a payment identifier's claim got.
type ClaimState string

const (
	// ClaimWorking: the call is being checked; nothing was sent to settlement, so a claim whose
	// lease passed may be taken by another call (ClaimPayment), and a failed call releases it.
	ClaimWorking ClaimState = "working"
	// ClaimSettling: the signed answer and the first payment are kept and settlement was, or is
	// about to be, asked for; its outcome is unknown until the claim is ClaimSettled. Such a
	// claim is never released: it is resolved by settling its first payment again.
	ClaimSettling ClaimState = "settling"
	// ClaimSettled: the answer was paid for; Settlement is what it was delivered with.
	ClaimSettled ClaimState = "settled"
)

// PaymentClaim is what is kept under an x402 payment identifier (SPEC §16): which call it is
// for (RequestHash, computed by the service from the resource and the request, and the Payer the
// first payment names), which call holds it (Holder, a random token, with the LeaseUntil
// instant before which it is presumed at work) and how far it got. Payment, Response and
// Settlement are the service's bytes, opaque to the store: the first payment (to settle it
// again when the outcome is unknown), the signed answer and the settlement's JSON (the
// PAYMENT-RESPONSE delivered with it).
type PaymentClaim struct {
	RequestHash string
	Payer       string
	Holder      string
	State       ClaimState
	LeaseUntil  time.Time
	Payment     []byte
	Response    []byte
	Settlement  []byte
}

// MaxPaidAnswer bounds the claim kept under one payment identifier: a DynamoDB item holds at
// most 400 KB, and a verification's answer, whose lists are capped, stays far below this.
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

// ReceiptWithHistory is a ReceiptLog that can write an answer's history record (RecordVerification)
// in the same atomic write as its receipt, so that the history of a delivered answer survives a
// crash as its receipt does, and one commit serves both. The local server's store has it; on
// DynamoDB the history record follows the receipt in a write of its own.
type ReceiptWithHistory interface {
	RecordReceiptWithHistory(ctx context.Context, r Receipt, v Verification) error
}
