package client

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Sentinel errors, for errors.Is. Each typed error below wraps one of them.
var (
	// ErrPaymentRequired: the service asked for a payment the client did not (or could not) make.
	ErrPaymentRequired = errors.New("payment required")
	// ErrNoPayableOffer: none of the service's payment requirements is one the payer supports on
	// a network and asset the client can price (USDC on a network pkg/x402 knows).
	ErrNoPayableOffer = errors.New("no payment requirement the payer supports at a known USDC price")
	// ErrSpendingCap: paying would exceed the cap per call or the client's budget; nothing was
	// signed.
	ErrSpendingCap = errors.New("spending cap")
	// ErrReceipt: a signed answer did not verify. The answer must not be relied on.
	ErrReceipt = errors.New("receipt check failed")
	// ErrAnswerMismatch: a validly signed answer is not the answer to the request that was sent
	// (another task, agent or rule enforcement than asked for).
	ErrAnswerMismatch = errors.New("the signed answer does not match the request")
)

// APIError is an error answer in the service's envelope (SPEC §7). It unwraps to the equivalent
// *apperr.Error, so apperr.As works on it too.
type APIError struct {
	Code        apperr.Code
	Message     string
	Status      int // the envelope's status (the HTTP status when the body was not an envelope)
	Retryable   bool
	Charged     bool
	RetryAfter  time.Duration // from retry_after, or the Retry-After header; 0 when neither
	Limit       int64         // the body limit of a 413
	NextActions []apperr.NextAction
	Fields      []apperr.FieldProblem
	// Allowance is what the answer's Free-Allowance-* headers reported, if anything.
	Allowance *Allowance
}

// Error names the code, the status and the service's message.
func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("verifier: HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("verifier: %s (%d): %s", e.Code, e.Status, e.Message)
}

// Unwrap returns the envelope as the service's own error type.
func (e *APIError) Unwrap() error {
	ae := &apperr.Error{
		Code: e.Code, Message: e.Message, Retryable: e.Retryable, Charged: e.Charged,
		RetryAfter: int(e.RetryAfter / time.Second), Limit: e.Limit, NextAction: e.NextActions, Fields: e.Fields,
	}
	return ae.WithKind(apperr.KindOf(e.Code, e.Status))
}

// PaymentRequiredError is a 402 answer the client did not get past: no payer is configured, none
// of the offers can be paid (Cause is ErrNoPayableOffer), or a payment was sent and refused (Paid
// is true; Code says why, such as payment_replayed or payment_verification_failed). It wraps
// ErrPaymentRequired and Cause.
type PaymentRequiredError struct {
	// Code is the answer's machine code: payment_required, free_trial_exhausted, or a payment
	// error code.
	Code    apperr.Code
	Message string
	// Required is the decoded PAYMENT-REQUIRED: what the resource is and how it may be paid.
	Required x402.PaymentRequired
	// FreeTrial is the caller's free allowance state from the answer's body, nil without one.
	FreeTrial *FreeTrial
	// Paid tells whether the client sent a payment with the refused request.
	Paid bool
	// Settlement is the failed settlement (PAYMENT-RESPONSE), when settling was what failed.
	Settlement *x402.SettleResponse
	// Allowance is what the answer's Free-Allowance-* headers reported, if anything.
	Allowance *Allowance
	// Cause is why the client did not pay, when it had a payer.
	Cause error
}

// Error names the code, the service's message and why the client did not pay.
func (e *PaymentRequiredError) Error() string {
	var b strings.Builder
	b.WriteString("verifier: payment required")
	if e.Code != "" {
		b.WriteString(" (" + string(e.Code) + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Cause != nil {
		b.WriteString(": not paid: " + e.Cause.Error())
	}
	return b.String()
}

// Unwrap lets errors.Is find ErrPaymentRequired and the cause.
func (e *PaymentRequiredError) Unwrap() []error {
	if e.Cause != nil {
		return []error{ErrPaymentRequired, e.Cause}
	}
	return []error{ErrPaymentRequired}
}

// SpendingCapError is a payment the client refused to make because the price is over the cap per
// call (Scope "call") or over what is left of the client's budget (Scope "client"). Nothing was
// signed. It wraps ErrSpendingCap.
type SpendingCapError struct {
	Scope string // "call" or "client"
	Price string // USD asked
	Cap   string // USD allowed (for "client": what was left of the budget)
	// Required is the payment requirement that was refused.
	Required x402.PaymentRequired
}

// Error names the price and the cap it is over.
func (e *SpendingCapError) Error() string {
	if e.Scope == "client" {
		return fmt.Sprintf("verifier: price %s USD is over what is left of the client's budget (%s USD); nothing was signed", e.Price, e.Cap)
	}
	return fmt.Sprintf("verifier: price %s USD is over the cap of %s USD per call; nothing was signed", e.Price, e.Cap)
}

// Unwrap lets errors.Is find ErrSpendingCap.
func (e *SpendingCapError) Unwrap() error { return ErrSpendingCap }

// ReceiptError is a signed answer that did not verify: a bad signature, an unknown key, hashes
// that are not those of the request sent, or an answer to another request. Err says which
// (errors.Is with receipt.ErrSignature, receipt.ErrUnknownKey, receipt.ErrHashMismatch,
// receipt.ErrMalformed or ErrAnswerMismatch). It wraps ErrReceipt and Err.
type ReceiptError struct {
	Route string
	Err   error
	// Body is the refused answer as received, for a report; never act on it.
	Body []byte
	// Payment is the payment made for the refused answer, if any: it was settled, so keep the
	// body and the settlement as evidence.
	Payment *Payment
}

// Error names the route, why its answer was refused and, when it was paid, the transaction.
func (e *ReceiptError) Error() string {
	msg := "verifier: the answer of " + e.Route + " was refused: " + e.Err.Error()
	if e.Payment != nil && e.Payment.Settlement != nil && e.Payment.Settlement.Transaction != "" {
		msg += " (it was paid: transaction " + e.Payment.Settlement.Transaction + ")"
	}
	return msg
}

// Unwrap lets errors.Is find ErrReceipt and the cause.
func (e *ReceiptError) Unwrap() []error { return []error{ErrReceipt, e.Err} }
