package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// paymentRecordTTL is how long a reserved payment id is kept: far longer than any authorization's
// validity window, so a payment can never be replayed while it could still settle.
const paymentRecordTTL = 30 * 24 * time.Hour

// day is the UTC day a time falls in, and the next UTC midnight after it.
func day(t time.Time) (string, time.Time) {
	t = t.UTC()
	midnight := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
	return t.Format("2006-01-02"), midnight
}

// allowanceResets is when today's free allowance resets: the next UTC midnight by the service's
// clock, as the Free-Allowance-Resets header says it (every transport reports the same instant).
func (s *Service) allowanceResets() time.Time {
	_, midnight := day(s.d.Now())
	return midnight
}

// FreeTrial is a client's free allowance state (SPEC §8.2), which a verification's refusal
// reports; each transport renders it in its own words.
type FreeTrial struct {
	Limit     int       // free calls per client per day
	Remaining int       // left today
	Resets    time.Time // the next UTC midnight
	// FreeOnly says the deployment takes no payments (SPEC §8.6): past the allowance calls are
	// refused until Resets, rather than paid for.
	FreeOnly bool
}

// freeTrial is the caller's live free allowance state of SPEC §8.2.
func (s *Service) freeTrial(ctx context.Context, client string, used int, knownUsed bool) *FreeTrial {
	today, midnight := day(s.d.Now())
	if !knownUsed {
		if n, err := s.d.Store.AllowanceUsed(ctx, client, today); err == nil {
			used = n
		}
	}
	limit := s.d.Pricing.FreeCallsPerDay
	return &FreeTrial{Limit: limit, Remaining: max(limit-used, 0), Resets: midnight, FreeOnly: s.d.Payer == nil}
}

// paymentRequiredFor builds the x402 PaymentRequired for a resource (a REST URL or an MCP tool's
// mcp://tool/<name>) at priceUSD, from the one price table behind every 402 answer, with a
// signed offer per requirement in extensions["offer-receipt"].
func (s *Service) paymentRequiredFor(ctx context.Context, resourceURL, description, priceUSD, message string, extensions map[string]any) (x402.PaymentRequired, error) {
	accepts := []x402.Requirements{} // free-only: the probe still answers, with nothing to pay
	if s.d.Payer != nil {
		var err error
		if accepts, err = s.d.Payer.Requirements(ctx, priceUSD); err != nil {
			return x402.PaymentRequired{}, fmt.Errorf("payment requirements: %w", err)
		}
	}
	if len(accepts) > 0 {
		// Every 402 answer signs its offers (SPEC §16). A key source that cannot sign leaves them
		// out, as the extension allows: the requirements alone still say what to pay. A remote
		// key's calls end with the request. Offers are kept and handed out again, and a remote
		// key's fresh signatures are rationed (x402.OfferReuseMargin): a spent ration is a
		// caller's doing, not a fault, and is logged as a warning.
		if offers, err := s.offers.Offers(ctx, resourceURL, accepts, s.d.Now()); err != nil {
			level := slog.LevelError
			if errors.Is(err, x402.ErrOffersRationed) {
				level = slog.LevelWarn
			}
			s.d.Log.Log(ctx, level, "offers not signed", "err", err.Error())
		} else {
			extensions = maps.Clone(extensions)
			if extensions == nil {
				extensions = map[string]any{}
			}
			extensions[x402.ExtOfferReceipt] = offers
		}
	}
	return x402.PaymentRequired{
		X402Version: 2,
		Error:       message,
		Resource:    x402.Resource{URL: resourceURL, MimeType: "application/json", Description: description},
		Accepts:     accepts,
		Extensions:  extensions,
	}, nil
}

// consumeFree takes one free call from client's allowance for today. A store failure is a
// retryable 503, never a free pass.
func (s *Service) consumeFree(ctx context.Context, client string) (granted bool, remaining int, err error) {
	today, midnight := day(s.d.Now())
	ctx, cancel := context.WithTimeout(ctx, s.d.StoreTimeout)
	defer cancel()
	granted, remaining, err = s.d.Store.ConsumeAllowance(ctx, client, today, s.d.Pricing.FreeCallsPerDay, midnight.Add(time.Hour))
	if err != nil {
		s.d.Log.Error("allowance store failed", "err", err.Error())
		return false, 0, storeUnavailable()
	}
	return granted, remaining, nil
}

// freeOnlyExhausted is the answer past the allowance of a deployment that takes no payments
// (SPEC §8.6): free_trial_exhausted as a retryable 429 until the next UTC midnight, instead of
// an unpayable 402.
func (s *Service) freeOnlyExhausted() *apperr.Error {
	e := apperr.New(apperr.FreeTrialExhausted, "This client's free checks for today are used up, and this deployment takes no payments; try again after the next UTC midnight.").WithKind(apperr.FreeOnly)
	e.Retryable = true
	e.NextAction = []apperr.NextAction{{Action: "retry_later"}}
	_, midnight := day(s.d.Now())
	e.RetryAfter = max(int(midnight.Sub(s.d.Now()).Seconds()), 1)
	return e
}

// storeUnavailable is the answer when the allowance cannot be read or written: retryable, and
// never a free pass past the limit.
func storeUnavailable() *apperr.Error {
	e := apperr.New(apperr.Unavailable, "The allowance store is unavailable. Nothing was charged; try again shortly.")
	e.RetryAfter = 2
	return e
}

// facilitatorUnavailable is the answer when the facilitator cannot be reached: retryable, since
// nothing was charged.
func facilitatorUnavailable() *apperr.Error {
	e := apperr.New(apperr.FacilitatorDown, "The payment facilitator is unavailable. Nothing was charged; try again shortly.")
	e.RetryAfter = 5
	return e
}

// settlementUnknown is the answer when settlement was asked for but not answered: the
// facilitator may have executed the payment, so the error says it may have been charged and is
// not retryable, lest a client pay again for the same work. The payment stays reserved.
func settlementUnknown() *apperr.Error {
	e := apperr.New(apperr.FacilitatorDown, "The payment facilitator did not answer the settlement, so this payment may have been charged; no result is delivered and the payment cannot be used again here. Check whether it settled (the payer's balance, or the authorization or transaction on chain) before paying for this work again.")
	e.Retryable, e.Charged = false, true
	e.NextAction = []apperr.NextAction{{Action: "check_payment"}}
	return e
}

// settleTooLate is the answer when too little of the request's time was left to settle: nothing
// was sent to the facilitator and the reservation was released, so the same payment may be sent
// again.
func settleTooLate() *apperr.Error {
	e := apperr.New(apperr.FacilitatorDown, "Too little of this request's time was left to settle the payment, so it was not settled. Nothing was charged; send the request again (the same payment may be used).")
	e.RetryAfter = 1
	return e
}

// PaymentFailure is a payment that was refused: answered 402 (REST) or with the
// payment-required result (MCP), carrying its code and, when settlement failed, the settlement.
type PaymentFailure struct {
	Code       apperr.Code
	Message    string
	Settlement *x402.SettleResponse
}

// charge is the paid path of SPEC §8.3 after the request was validated, for every transport:
// match the payment against the server's own requirements for priceUSD, refuse a known replay,
// verify with the facilitator, reserve the payment id, run work, settle. work gets the payment's
// binding (SPEC §16), for the answer it signs. Nothing is settled unless work succeeded, and the
// caller delivers nothing unless charge returns a settlement, which carries the signed receipt
// of the offer-receipt extension for resourceURL (the PaymentRequired's resource, so that it
// matches the offers).
// A refused payment is a *PaymentFailure; a 5xx (facilitator or store down, work failed) is an
// error. settling, when not nil, is called just before settlement.

// settlingFunc is told, once the work is done and settlement is about to be asked for, which of
// the server's requirements the payment was accepted for and by when settlement must end. An
// error ends the call unsettled: the payment's reservation is released and the error answered.
type settlingFunc func(ctx context.Context, accepted x402.Requirements, settleBy time.Time) error

func (s *Service) charge(ctx context.Context, payload x402.PaymentPayload, resourceURL, priceUSD string, work func(context.Context, receipt.Payment) error, settling settlingFunc) (*x402.SettleResponse, *PaymentFailure, error) {
	if s.d.Payer == nil {
		// Verify and Score refuse a payment to a free-only deployment before charging.
		return nil, nil, errors.New("service: charge in a deployment that takes no payments")
	}
	reqs, err := s.d.Payer.Requirements(ctx, priceUSD)
	if err != nil {
		return nil, nil, err
	}
	accepted, err := x402.Match(payload, reqs)
	if err != nil {
		return nil, &PaymentFailure{Code: apperr.PaymentMismatch, Message: "The payment does not match any of this route's requirements (scheme, network, amount, asset, payTo). Nothing was charged."}, nil
	}
	id, err := x402.PaymentID(payload)
	if err != nil {
		return nil, &PaymentFailure{Code: apperr.PaymentInvalid, Message: "The payment payload is malformed. Nothing was charged."}, nil
	}
	// A payment already used is refused as such before the facilitator is asked (it would call
	// a spent authorization merely invalid); the reservation below still decides races.
	if used, err := s.paymentReserved(ctx, id); err != nil {
		s.d.Log.Error("payment lookup failed", "err", err.Error())
		return nil, nil, storeUnavailable()
	} else if used {
		return nil, &PaymentFailure{Code: apperr.PaymentReplayed, Message: "This payment was already used. Nothing was charged again; sign a new payment."}, nil
	}
	vr, err := s.d.Payer.Verify(ctx, payload, accepted)
	if err != nil {
		s.d.Log.Error("facilitator verify failed", "err", err.Error())
		return nil, nil, facilitatorUnavailable()
	}
	if !vr.IsValid {
		return nil, &PaymentFailure{Code: apperr.PaymentVerifyFail, Message: "The facilitator rejected the payment: " + safeReason(vr.InvalidReason) + ". Nothing was charged."}, nil
	}
	binding, err := x402.Binding(payload, accepted, vr.Payer)
	if err == nil && binding.Payer == "" {
		err = errors.New("the payer is unknown")
	}
	if err != nil {
		return nil, &PaymentFailure{Code: apperr.PaymentInvalid, Message: "The payment payload is malformed. Nothing was charged."}, nil
	}
	if err := s.reservePayment(ctx, id); err != nil {
		if errors.Is(err, store.ErrPaymentReplayed) {
			return nil, &PaymentFailure{Code: apperr.PaymentReplayed, Message: "This payment was already used. Nothing was charged again; sign a new payment."}, nil
		}
		s.d.Log.Error("payment reservation failed", "err", err.Error())
		return nil, nil, storeUnavailable()
	}
	// The work must leave settlement its time, or the payment would stay reserved, unsettled,
	// in a function stopped before it answered.
	wctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, d.Add(-AfterSettle-MinSettleTime))
		defer cancel()
	}
	if err := work(wctx, binding); err != nil {
		s.releasePayment(ctx, id) // never settled: the client may send the same payment again
		return nil, nil, err
	}
	sctx, settleBy, cancel, ok := settleContext(ctx)
	defer cancel()
	if !ok {
		// A settlement cut short has an unknown outcome: better not begun.
		s.releasePayment(ctx, id)
		return nil, nil, settleTooLate()
	}
	if settling != nil {
		if err := settling(sctx, accepted, settleBy); err != nil {
			s.releasePayment(ctx, id) // never sent to settlement
			return nil, nil, err
		}
	}
	sr, err := s.d.Payer.Settle(sctx, payload, accepted)
	if err != nil {
		s.d.Log.Error("facilitator settle failed", "err", err.Error())
		return nil, nil, settlementUnknown()
	}
	if !sr.Success {
		return nil, &PaymentFailure{Code: apperr.PaymentSettleFail, Message: "The payment could not be settled: " + safeReason(sr.ErrorReason) + ". Nothing was charged.", Settlement: &sr}, nil
	}
	s.attachReceipt(sctx, &sr, resourceURL, accepted.Network, binding.Payer)
	return &sr, nil, nil
}

// settleContext is the context settlement runs in, and its deadline. Settlement must finish even
// if the caller hangs up (the work is done and the payment verified), but within the request's
// own deadline (a Lambda invocation's) less what the answer needs: a function stopped while
// settling would have charged without answering. ok is false when less than MinSettleTime is
// left, too little to begin.
func settleContext(ctx context.Context) (sctx context.Context, settleBy time.Time, cancel context.CancelFunc, ok bool) {
	settleBy = time.Now().Add(SettleTimeout)
	if d, has := ctx.Deadline(); has && d.Add(-AfterSettle).Before(settleBy) {
		settleBy = d.Add(-AfterSettle)
	}
	sctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), settleBy)
	return sctx, settleBy, cancel, time.Until(settleBy) >= MinSettleTime
}

// attachReceipt puts the offer-receipt extension's signed receipt into a successful settlement:
// the payer the facilitator settled for (the verified payer when it names none), the network
// paid on and the settlement's transaction (SPEC §16 includes it: a buyer can then show the
// payment on chain). Only the server's own extensions are sent. A key source that cannot sign
// leaves the receipt out: the payment is settled and the answer must be delivered. ctx is the
// settlement's: the request's deadline, which a caller hanging up does not cut short, since the
// answer (and a payment identifier's kept answer) carries the receipt.
func (s *Service) attachReceipt(ctx context.Context, sr *x402.SettleResponse, resourceURL, network, verifiedPayer string) {
	payer := sr.Payer
	if payer == "" {
		payer = verifiedPayer
	}
	ext, err := s.offers.Receipt(ctx, resourceURL, network, payer, sr.Transaction, s.d.Now())
	if err != nil {
		s.d.Log.Error("receipt not signed", "err", err.Error())
		sr.Extensions = nil
		return
	}
	sr.Extensions = map[string]any{x402.ExtOfferReceipt: ext}
}

// LongestRequest is how long one request may take: its store calls, the facilitator's
// verification, the work and settlement, each at its bound. A server's write timeout and shutdown
// grace must not cut it short.
//
// A call with a payment identifier also claims it, keeps its answer and its settlement (three more
// store calls), and may first wait ClaimWait for another call with the same identifier.
const LongestRequest = 6*DefaultStoreTimeout + x402.DefaultVerifyTimeout + DefaultDeadline + SettleTimeout + ClaimWait

// Settlement's share of a paid request's time.
const (
	// SettleTimeout bounds settlement well inside API Gateway's 29 s.
	SettleTimeout = 20 * time.Second
	// AfterSettle is what a paid request keeps of its deadline after settling: the history
	// write (a Lambda function records before it answers) and the answer.
	AfterSettle = recordTimeout + time.Second
	// MinSettleTime is the least time settlement is started with. Settling on Base or Solana
	// takes a few seconds; with less left, the request answers a retryable error instead.
	MinSettleTime = 8 * time.Second
)

// safeReason keeps a facilitator's reason short and printable.
func safeReason(s string) string {
	if s == "" {
		return "no reason given"
	}
	out := make([]rune, 0, len(s))
	for _, c := range s {
		if len(out) >= 120 {
			break
		}
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
		}
	}
	return string(out)
}

func (s *Service) paymentReserved(ctx context.Context, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d.StoreTimeout)
	defer cancel()
	return s.d.Store.PaymentReserved(ctx, id)
}

// releasePayment undoes the reservation of a payment that was never sent to settlement. A
// failure leaves the payment reserved (it can then not be used again here, and nothing was
// charged); it is logged and does not change the answer.
func (s *Service) releasePayment(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.StoreTimeout)
	defer cancel()
	if err := s.d.Store.ReleasePayment(ctx, id); err != nil {
		s.d.Log.Error("payment release failed", "err", err.Error())
	}
}

func (s *Service) reservePayment(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.d.StoreTimeout)
	defer cancel()
	return s.d.Store.ReservePayment(ctx, id, s.d.Now().Add(paymentRecordTTL))
}
