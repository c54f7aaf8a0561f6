package service

import (
	"bytes"
	"context"
	"maps"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Kind is what an operation's Outcome is.
type Kind int

const (
	// Answered: Body is the signed answer, to deliver. A free verification has FreeAllowance,
	// a paid call its Settlement.
	Answered Kind = iota + 1
	// PaymentRequired: nothing was delivered; PaymentRequired says what to pay, Code why (the
	// probe, an exhausted allowance, a refused payment); a failed settlement is in Settlement.
	PaymentRequired
	// Refused: Err is the §7 error to answer. It is never internal: PublicError has made it safe.
	Refused
)

// FreeAllowance is what a free verification leaves of its client's allowance (REST's
// Free-Allowance-* headers, MCP's _meta free_allowance).
type FreeAllowance struct {
	Remaining, Limit int
	Resets           time.Time
}

// Outcome is what Verify and Score decided and produced, for a transport to render.
type Outcome struct {
	Kind            Kind
	Body            []byte
	FreeAllowance   *FreeAllowance
	Settlement      *x402.SettleResponse
	Code            apperr.Code
	PaymentRequired x402.PaymentRequired
	// FreeTrial is the client's free allowance state (SPEC §8.2) a verification's refusal reports
	// with it: set on a verification's PaymentRequired outcome and on the free-only 429.
	FreeTrial *FreeTrial
	// Prompt, when set, names the text the transport writes for what its caller sent: the
	// PaymentRequired's Error of a PaymentRequired outcome (left empty here), or the Err of a
	// Refused one (left nil here).
	Prompt Prompt
	Err    *apperr.Error
	// VerificationID and Result (pass or fail) name a delivered verification for the operator's
	// log; SettledAmount is what a paid call settled, in the asset's atomic units, on
	// Settlement.Network.
	VerificationID, Result string
	SettledAmount          string
	// Replayed says the answer is one kept under the payment's identifier (SPEC §16), delivered
	// again without being verified or settled again.
	Replayed bool
}

// Prompt names an answer whose text speaks of what the caller sent, which only its transport
// can word: REST speaks of a body and a PAYMENT-SIGNATURE header, MCP of arguments and _meta.
type Prompt int

const (
	// PromptProbe is the x402 discovery probe's payment-required message.
	PromptProbe Prompt = iota + 1
	// PromptOverFreeSize is a free call over Pricing.FreeMaxBody: payment required.
	PromptOverFreeSize
	// PromptScorePaid is a priced score asked for without a payment.
	PromptScorePaid
	// PromptUndecodablePayment is a payment the transport could not decode: payment required.
	PromptUndecodablePayment
	// PromptNoPayments is a payment sent to a deployment that takes none: a Refused outcome
	// whose 422 names the field the payment came in.
	PromptNoPayments
)

// Payment is a payment as a transport received it: decoding is the transport's (REST's base64
// header, MCP's _meta object), everything after it the service's.
type Payment struct {
	Sent    bool                // the call carried a payment
	Payload x402.PaymentPayload // decoded, when Err is nil
	Err     error               // the transport could not decode what was sent
}

// VerifyCall is one verification as a transport received it.
type VerifyCall struct {
	// Body is the verification request; empty (and no payment) is the x402 discovery probe.
	Body    []byte
	Payment Payment
	// Caller is the caller's id (CallerID of its client identity), computed once per request by
	// the transport: the free allowance counts under it and the agent's history records it.
	Caller string
	// Resource and Extensions are the x402 resource URL of the route or tool (a REST URL or
	// mcp://tool/verify_schema) and the extensions of its PaymentRequired.
	Resource   string
	Extensions map[string]any
	Route      string // names the route or tool in the log
}

// VerifyDescription describes the verify routes and tool in payment requirements.
const VerifyDescription = "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt."

// Verify admits, checks, charges and records one verification, once for every transport:
//   - probe: no body and no payment is the x402 discovery probe (payment required);
//   - size: a body over the engine's limit is a 413; a free one over FreeMaxBody is refused
//     before decoding (payment required, or 413 where nothing can be paid);
//   - decode: an invalid request is a 422 that consumes and charges nothing; a free one is also
//     checked against its schema first, the one check that can refuse a sound request;
//   - free: the check and its signature, then one call of the client's daily allowance, or,
//     when it is spent, payment required (the free-only 429 where nothing can be paid) and the
//     signed answer discarded; paid: match, replay check, facilitator
//     verification, reservation, the work, settlement (charge);
//   - record: only a delivered verification is recorded, a paid one only once settled; its
//     receipt is durable before the answer leaves (record), or the answer is not delivered.
func (s *Service) Verify(ctx context.Context, call VerifyCall) Outcome {
	if s.d.Engine == nil {
		// A wiring mistake (a program that mounts verification built without the engine), not
		// a request's: refused before anything is read, consumed or charged.
		return s.refused(call.Route, errNoEngine)
	}
	paying := call.Payment.Sent
	if len(bytes.TrimSpace(call.Body)) == 0 && !paying {
		return prompted(s.verifyPaymentRequired(ctx, call, apperr.PaymentRequired, "", s.freeTrial(ctx, call.Caller, 0, false), nil), PromptProbe)
	}
	if limit := s.d.MaxBody; int64(len(call.Body)) > limit {
		return s.refused(call.Route, apperr.TooLarge(limit))
	}
	free := !paying
	if free && int64(len(call.Body)) > s.d.Pricing.FreeMaxBody {
		// Before decoding: parsing and compiling a body the free allowance does not cover is
		// work to be paid for too.
		if s.d.Payer == nil {
			return s.refused(call.Route, apperr.TooLarge(s.d.Pricing.FreeMaxBody))
		}
		return prompted(s.verifyPaymentRequired(ctx, call, apperr.PaymentRequired, "", s.freeTrial(ctx, call.Caller, 0, false), nil), PromptOverFreeSize)
	}
	// A request for the free allowance is checked against its schema before the allowance is
	// consumed (DecodeFree): a schema too costly to evaluate is refused without counting.
	job, err := s.decode(ctx, call.Body, free)
	if err != nil {
		return s.refused(call.Route, err)
	}
	if paying {
		return s.verifyPaid(ctx, call, job)
	}
	// The report is checked and signed before the allowance is consumed: a signature that fails
	// (a remote key's call, kms-sign:) or a missed deadline then leaves the allowance as it was,
	// since the stores have no way to give a call back. What it costs is the work, one signature
	// included, for a client whose allowance turns out to be spent, whose answer is discarded.
	v, err := s.finish(ctx, job, &receipt.FreePayment)
	if err != nil {
		return s.refused(call.Route, err)
	}
	client := call.Caller
	granted, remaining, err := s.consumeFree(ctx, client)
	if err != nil {
		return s.refused(call.Route, err)
	}
	if !granted {
		ft := s.freeTrial(ctx, client, s.d.Pricing.FreeCallsPerDay, true)
		if s.d.Payer == nil {
			o := s.refused(call.Route, s.freeOnlyExhausted())
			o.FreeTrial = ft
			return o
		}
		return s.verifyPaymentRequired(ctx, call, apperr.FreeTrialExhausted, "This client's free checks for today are used up; pay with x402 to continue.", ft, nil)
	}
	if err := s.record(ctx, v, call.Caller, nil); err != nil {
		return s.refused(call.Route, err)
	}
	return Outcome{Kind: Answered, Body: v.Body, VerificationID: v.VerificationID, Result: v.Result,
		FreeAllowance: &FreeAllowance{Remaining: remaining, Limit: s.d.Pricing.FreeCallsPerDay, Resets: s.allowanceResets()}}
}

// verifyPaid is Verify's paid path after the request was validated.
func (s *Service) verifyPaid(ctx context.Context, call VerifyCall, job *Job) Outcome {
	if s.d.Payer == nil {
		return Outcome{Kind: Refused, Prompt: PromptNoPayments}
	}
	client := call.Caller
	if call.Payment.Err != nil {
		return prompted(s.verifyPaymentRequired(ctx, call, apperr.PaymentInvalid, "", s.freeTrial(ctx, client, 0, false), nil), PromptUndecodablePayment)
	}
	// A payment identifier (SPEC §16) makes the call happen at most once (verifyPaidOnce).
	pid, hasPID, err := x402.PaymentIdentifier(call.Payment.Payload)
	if err != nil {
		return s.verifyPaymentRequired(ctx, call, apperr.PaymentInvalid, "The payment's payment-identifier id is not 16 to 128 characters of letters, digits, - and _. Nothing was charged.", s.freeTrial(ctx, client, 0, false), nil)
	}
	if hasPID {
		return s.verifyPaidOnce(ctx, call, job, pid)
	}
	var v *Verification
	sr, fail, err := s.charge(ctx, call.Payment.Payload, call.Resource, s.d.Pricing.PriceVerify, func(ctx context.Context, binding receipt.Payment) (err error) {
		v, err = s.finish(ctx, job, &binding)
		return err
	}, nil)
	switch {
	case err != nil:
		return s.refused(call.Route, err)
	case fail != nil:
		return s.verifyPaymentRequired(ctx, call, fail.Code, fail.Message, s.freeTrial(ctx, client, 0, false), fail.Settlement)
	}
	if err := s.record(ctx, v, call.Caller, sr); err != nil {
		return s.refused(call.Route, err)
	}
	// x402.Match held the payment to the accepted requirements, amount included.
	return Outcome{Kind: Answered, Body: v.Body, Settlement: sr, VerificationID: v.VerificationID, Result: v.Result,
		SettledAmount: call.Payment.Payload.Accepted.Amount}
}

// verifyPaymentRequired is a verification's payment-required outcome, with the client's free
// allowance state.
func (s *Service) verifyPaymentRequired(ctx context.Context, call VerifyCall, code apperr.Code, message string, ft *FreeTrial, settlement *x402.SettleResponse) Outcome {
	ext := call.Extensions
	if s.d.Payer != nil {
		// Paid verifications are idempotent under a payment identifier (SPEC §16).
		ext = maps.Clone(ext)
		if ext == nil {
			ext = map[string]any{}
		}
		ext[x402.ExtPaymentIdentifier] = paymentIdentifierExtension()
	}
	pr, err := s.paymentRequiredFor(ctx, call.Resource, VerifyDescription, s.d.Pricing.PriceVerify, message, ext)
	if err != nil {
		return s.refused(call.Route, err)
	}
	return Outcome{Kind: PaymentRequired, Code: code, PaymentRequired: pr, FreeTrial: ft, Settlement: settlement}
}

// prompted is a payment-required outcome o whose message the transport writes (p); a refusal
// that o became on its way (no requirements) is left as it is.
func prompted(o Outcome, p Prompt) Outcome {
	if o.Kind == PaymentRequired {
		o.Prompt = p
	}
	return o
}

// refused is the outcome of err, made safe to show.
func (s *Service) refused(route string, err error) Outcome {
	return Outcome{Kind: Refused, Err: s.PublicError(route, err)}
}

// paymentIdentifierExtension is the payment-identifier advertisement, the same in every answer.
var paymentIdentifierExtension = sync.OnceValue(x402.PaymentIdentifierExtension)
