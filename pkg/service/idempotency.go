package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// A payment identifier (SPEC §16) makes a paid call happen at most once. The call claims the
// identifier in the store, with its request hash and the payer its payment names, before
// anything is verified or settled; once the answer is signed, and before settlement is asked
// for, the claim keeps the answer and the payment (ClaimSettling); once settled, the settlement
// too (ClaimSettled). Another call with the identifier is answered from the claim:
//   - another request, or a payment that names another payer: 409 payment_identifier_conflict;
//   - settled: the kept answer and its settlement, nothing verified or settled again;
//   - still being worked on or settled: it waits (ClaimWait at most), then answers the outcome,
//     or a retryable 409 to send the same request again;
//   - settling whose holder is gone (its lease ran out, or its settlement went unanswered): it
//     takes the claim over and asks the facilitator to settle the FIRST payment again. Settled
//     now, or refused as settled already (the chain refuses an authorization's replay): the
//     kept answer is delivered. Refused otherwise: that refusal is answered, and still no
//     second payment is taken under the identifier.
// A claim whose call failed before settlement was asked for is released, so the client may
// send the call again; one whose holder stopped before settling is taken by the next call
// once its lease runs out.

// ClaimWait bounds how long a call waits for another call with the same payment identifier to
// finish, within the request's deadline; then it answers a retryable 409.
const ClaimWait = 15 * time.Second

// Polling a claim: the first look comes soon (a settlement on a local chain takes a second), the
// later ones back off to claimPollMax.
const (
	claimPollMin = 50 * time.Millisecond
	claimPollMax = 500 * time.Millisecond
)

// paidAnswerTTL is how long a paid answer is kept under its payment identifier (SPEC §16): as
// long as the stored verification record it answers for (Deps.RecordDays, VERIFIER_RECORD_DAYS),
// so a client can retry, or fetch its answer again, for as long as the record exists.
func (s *Service) paidAnswerTTL() time.Duration {
	return time.Duration(s.d.RecordDays) * 24 * time.Hour
}

// paidRequestHash identifies a paid request for its payment identifier: the resource (route or
// tool) and the request body byte for byte. A retry sends the same bytes; another body, even
// one meaning the same, is another request.
func paidRequestHash(resource string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(resource))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// firstPayment is what a claim keeps of its call once the answer is signed (the claim's
// Payment bytes): the payment and the requirement it was accepted for, to settle it again when
// the outcome is unknown, and the verification's facts, to record it when that settlement is
// the one that makes it paid.
type firstPayment struct {
	Payload    x402.PaymentPayload `json:"payload"`
	Accepted   x402.Requirements   `json:"accepted"`
	Checked    Checked             `json:"checked"` // Body left out: it is the claim's Response
	VerifiedAt time.Time           `json:"verified_at"`
}

// newHolder is a fresh claim holder token.
func newHolder() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// verifyPaidOnce is verifyPaid for a payment carrying the payment identifier id.
func (s *Service) verifyPaidOnce(ctx context.Context, call VerifyCall, job *Job, id string) Outcome {
	client := call.Caller
	payer, err := x402.PayerOf(call.Payment.Payload)
	if err != nil {
		return s.verifyPaymentRequired(ctx, call, apperr.PaymentInvalid, "The payment payload is malformed. Nothing was charged.", s.freeTrial(ctx, client, 0, false), nil)
	}
	reqHash := paidRequestHash(call.Resource, call.Body)
	waitUntil := time.Now().Add(ClaimWait)
	if d, ok := ctx.Deadline(); ok && d.Add(-MinSettleTime-AfterSettle).Before(waitUntil) {
		waitUntil = d.Add(-MinSettleTime - AfterSettle)
	}
	poll := claimPollMin
	for {
		mine := store.PaymentClaim{RequestHash: reqHash, Payer: payer, Holder: newHolder(), State: store.ClaimWorking,
			LeaseUntil: s.d.Now().Add(s.workLease())}
		held, claimed, err := s.claimPayment(ctx, id, mine)
		switch {
		case err != nil:
			s.d.Log.Error("payment identifier claim failed", "err", err.Error())
			return s.refused(call.Route, storeUnavailable())
		case claimed:
			return s.chargeClaimed(ctx, call, job, id, mine)
		case held.RequestHash != reqHash || held.Payer != payer:
			// Another request, or another payer's: never given the kept answer.
			return s.refused(call.Route, paymentIDConflict())
		case held.State == store.ClaimSettled:
			return s.keptOutcome(call, held)
		case held.State == store.ClaimSettling && !held.LeaseUntil.After(s.d.Now()):
			if o, done := s.resolveClaim(ctx, call, id, held); done {
				return o
			}
			continue // another call took it over first: wait for its outcome
		}
		if !time.Now().Add(poll).Before(waitUntil) {
			return s.refused(call.Route, paymentIDBusy())
		}
		select {
		case <-ctx.Done():
			return s.refused(call.Route, paymentIDBusy())
		case <-time.After(poll):
		}
		poll = min(2*poll, claimPollMax)
	}
}

// workLease is how long a call holds a fresh claim before it must have signed its answer and
// moved on to settling: the facilitator's verification, the work, and the store calls between.
func (s *Service) workLease() time.Duration {
	return x402.DefaultVerifyTimeout + s.d.Deadline + 3*s.d.StoreTimeout
}

// chargeClaimed runs the paid call whose claim c this call holds: Charge, keeping the answer and
// payment in the claim before settling, and the settlement after.
func (s *Service) chargeClaimed(ctx context.Context, call VerifyCall, job *Job, id string, c store.PaymentClaim) Outcome {
	var v *Verification
	settling := false
	sr, fail, err := s.charge(ctx, call.Payment.Payload, call.Resource, s.d.Pricing.PriceVerify, func(ctx context.Context, binding receipt.Payment) (err error) {
		v, err = s.finish(ctx, job, &binding)
		return err
	}, func(ctx context.Context, accepted x402.Requirements, settleBy time.Time) error {
		checked := v.Checked
		checked.Body = nil
		first, err := json.Marshal(firstPayment{Payload: call.Payment.Payload, Accepted: accepted, Checked: checked, VerifiedAt: v.VerifiedAt})
		if err != nil {
			return fmt.Errorf("keep the first payment: %w", err)
		}
		next := c
		next.State, next.Payment, next.Response = store.ClaimSettling, first, v.Body
		next.LeaseUntil = s.d.Now().Add(time.Until(settleBy) + time.Second)
		if err := s.updateClaim(ctx, id, c.Holder, next); err != nil {
			if errors.Is(err, store.ErrClaimLost) {
				// This call overran its lease and another took the identifier: it settles nothing.
				return paymentIDBusy()
			}
			s.d.Log.Error("payment identifier claim not kept", "err", err.Error())
			return storeUnavailable()
		}
		c, settling = next, true
		return nil
	})
	if !settling {
		// Nothing was sent to settlement: the client may send the call again.
		s.releaseClaim(ctx, id, c.Holder)
	}
	switch {
	case err != nil:
		if e, ok := apperr.As(err); ok && e.Charged {
			// The settlement went unanswered: the next call with this identifier resolves it.
			s.endLease(ctx, id, c)
			return s.refused(call.Route, settlementUnknownKept())
		}
		return s.refused(call.Route, err)
	case fail != nil:
		if settling {
			s.endLease(ctx, id, c)
		}
		return s.verifyPaymentRequired(ctx, call, fail.Code, fail.Message, s.freeTrial(ctx, call.Caller, 0, false), fail.Settlement)
	}
	// The claim is marked settled only once the receipt is durable: a receipt not recorded
	// leaves it settling with its lease ended, and the next call with the identifier settles
	// the first payment again (refused as settled already), records the receipt and delivers.
	if err := s.record(ctx, v, call.Caller, sr); err != nil {
		s.endLease(ctx, id, c)
		return s.refused(call.Route, err)
	}
	s.settleClaim(ctx, id, c, sr)
	// x402.Match held the payment to the accepted requirements, amount included.
	return Outcome{Kind: Answered, Body: v.Body, Settlement: sr, VerificationID: v.VerificationID, Result: v.Result,
		SettledAmount: call.Payment.Payload.Accepted.Amount}
}

// resolveClaim resolves a settling claim whose holder is gone: it takes the claim over and asks
// the facilitator to settle the claim's first payment again. done is false when another call
// took the claim over first.
func (s *Service) resolveClaim(ctx context.Context, call VerifyCall, id string, held store.PaymentClaim) (o Outcome, done bool) {
	var first firstPayment
	if err := json.Unmarshal(held.Payment, &first); err != nil {
		s.d.Log.Error("payment identifier claim unreadable", "err", err.Error())
		return s.refused(call.Route, storeUnavailable()), true
	}
	sctx, settleBy, cancel, ok := settleContext(ctx)
	defer cancel()
	if !ok {
		return s.refused(call.Route, paymentIDBusy()), true
	}
	next := held
	next.Holder, next.LeaseUntil = newHolder(), s.d.Now().Add(time.Until(settleBy)+time.Second)
	if err := s.updateClaim(ctx, id, held.Holder, next); err != nil {
		if errors.Is(err, store.ErrClaimLost) {
			return Outcome{}, false
		}
		s.d.Log.Error("payment identifier take-over failed", "err", err.Error())
		return s.refused(call.Route, storeUnavailable()), true
	}
	sr, err := s.d.Payer.Settle(sctx, first.Payload, first.Accepted)
	switch {
	case err != nil:
		s.d.Log.Error("facilitator settle failed", "err", err.Error())
		s.endLease(ctx, id, next)
		return s.refused(call.Route, settlementUnknownKept()), true
	case !sr.Success && x402.SettledBefore(sr.ErrorReason):
		// The first settlement had gone through; its transaction is on chain, not known here.
		sr = x402.SettleResponse{Success: true, Payer: held.Payer, Network: first.Accepted.Network}
	case !sr.Success:
		s.endLease(ctx, id, next)
		msg := "The first payment sent with this payment identifier could not be settled: " + safeReason(sr.ErrorReason) +
			". Nothing was charged, and no other payment is taken under this identifier: send the same request with a new payment identifier to pay again."
		return s.verifyPaymentRequired(ctx, call, apperr.PaymentSettleFail, msg, s.freeTrial(ctx, call.Caller, 0, false), &sr), true
	}
	s.attachReceipt(sctx, &sr, call.Resource, first.Accepted.Network, held.Payer)
	checked := first.Checked
	checked.Body = held.Response
	v := &Verification{Checked: checked, VerifiedAt: first.VerifiedAt}
	if err := s.record(ctx, v, call.Caller, &sr); err != nil {
		s.endLease(ctx, id, next)
		return s.refused(call.Route, err), true
	}
	s.settleClaim(ctx, id, next, &sr)
	return Outcome{Kind: Answered, Body: held.Response, Settlement: &sr, VerificationID: v.VerificationID, Result: v.Result,
		SettledAmount: first.Accepted.Amount}, true
}

// keptOutcome is a settled claim's answer delivered again: nothing verified, settled or
// recorded again.
func (s *Service) keptOutcome(call VerifyCall, c store.PaymentClaim) Outcome {
	var sr x402.SettleResponse
	if err := json.Unmarshal(c.Settlement, &sr); err != nil {
		s.d.Log.Error("paid answer unreadable", "err", err.Error())
		return s.refused(call.Route, storeUnavailable())
	}
	var head struct {
		VerificationID string `json:"verification_id"`
		Result         string `json:"result"`
	}
	_ = json.Unmarshal(c.Response, &head) // for the log only
	// SettledAmount stays empty: this answer settled nothing, and the revenue was counted once.
	return Outcome{Kind: Answered, Body: c.Response, Settlement: &sr, VerificationID: head.VerificationID, Result: head.Result, Replayed: true}
}

// settleClaim keeps the settlement in the claim c (held by c.Holder). A failure is logged and
// does not change the answer, which was paid for and is delivered: the claim stays settling,
// and the next call with the identifier resolves it by settling the first payment again, which
// the chain refuses as settled already.
func (s *Service) settleClaim(ctx context.Context, id string, c store.PaymentClaim, sr *x402.SettleResponse) {
	settlement, err := json.Marshal(sr)
	if err == nil {
		next := c
		next.State, next.Settlement = store.ClaimSettled, settlement
		err = s.updateClaim(ctx, id, c.Holder, next)
	}
	if err != nil {
		s.d.Log.Error("paid answer not kept", "err", err.Error())
	}
}

// endLease ends the lease of a settling claim whose settlement was refused or went unanswered,
// so that the next call with the identifier resolves it at once instead of waiting.
func (s *Service) endLease(ctx context.Context, id string, c store.PaymentClaim) {
	next := c
	next.LeaseUntil = s.d.Now()
	if err := s.updateClaim(ctx, id, c.Holder, next); err != nil {
		s.d.Log.Warn("payment identifier lease not ended", "err", err.Error())
	}
}

func (s *Service) claimPayment(ctx context.Context, id string, c store.PaymentClaim) (store.PaymentClaim, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d.StoreTimeout)
	defer cancel()
	return s.d.Store.ClaimPayment(ctx, id, c, s.d.Now().Add(s.paidAnswerTTL()))
}

// updateClaim writes c over the claim held by holder; it runs to its end even if the caller
// hung up, since a settled answer's claim must be kept.
func (s *Service) updateClaim(ctx context.Context, id, holder string, c store.PaymentClaim) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.StoreTimeout)
	defer cancel()
	return s.d.Store.UpdatePaymentClaim(ctx, id, holder, c, s.d.Now().Add(s.paidAnswerTTL()))
}

// releaseClaim releases a claim whose call sent nothing to settlement. A failure is logged: the
// claim's lease then runs out, and the next call takes it.
func (s *Service) releaseClaim(ctx context.Context, id, holder string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.StoreTimeout)
	defer cancel()
	if err := s.d.Store.ReleasePaymentClaim(ctx, id, holder); err != nil {
		s.d.Log.Error("payment identifier claim not released", "err", err.Error())
	}
}

func paymentIDConflict() *apperr.Error {
	return apperr.New(apperr.PaymentIDConflict, "This payment identifier was already used for another request or by another payer. Nothing was verified or charged; use a new payment identifier for a new request.")
}

// paymentIDBusy is the answer when another call with the same payment identifier is still being
// worked on or settled past the wait: retryable, and this call took no payment.
func paymentIDBusy() *apperr.Error {
	e := apperr.New(apperr.PaymentIDConflict, "Another call with this payment identifier is still being verified or settled. Nothing was charged for this call; send the same request with the same payment identifier again to get that call's answer.")
	e.Retryable, e.RetryAfter = true, 2
	e.NextAction = []apperr.NextAction{{Action: "retry_later"}}
	return e
}

// settlementUnknownKept is settlementUnknown for a call with a payment identifier: the payment
// may have been charged, and the same request with the same identifier gets the answer once the
// outcome is resolved, without a second payment.
func settlementUnknownKept() *apperr.Error {
	e := apperr.New(apperr.FacilitatorDown, "The payment facilitator did not answer the settlement, so this payment may have been charged. Send the same request with the same payment identifier again: the first payment's outcome is resolved then, its answer delivered if it was paid, and no second payment is taken under this identifier.")
	e.Charged, e.RetryAfter = true, 5
	e.NextAction = []apperr.NextAction{{Action: "retry_later"}}
	return e
}
