package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/verify"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Payment header names (SPEC §8). Go canonicalizes header keys, so reading is case-insensitive.
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
)

// DefaultStoreTimeout bounds one allowance or payment-reservation call: a slow store becomes a
// retryable 503 well inside API Gateway's 29 s, never a hung request or a free pass.
const DefaultStoreTimeout = 3 * time.Second

func (s *Service) storeTimeout() time.Duration {
	if s.StoreTimeout > 0 {
		return s.StoreTimeout
	}
	return DefaultStoreTimeout
}

// paymentRecordTTL is how long a reserved payment id is kept: far longer than any authorization's
// validity window, so a payment can never be replayed while it could still settle.
const paymentRecordTTL = 30 * 24 * time.Hour

// Allowance is the part of the store the free allowance and payments need.
type Allowance interface {
	ConsumeAllowance(ctx context.Context, client, day string, limit int, expires time.Time) (bool, int, error)
	AllowanceUsed(ctx context.Context, client, day string) (int, error)
	ReservePayment(ctx context.Context, id string, expires time.Time) error
	ReleasePayment(ctx context.Context, id string) error
	PaymentReserved(ctx context.Context, id string) (bool, error)
}

// Pricing is what the service charges and offers free.
type Pricing struct {
	FreeCallsPerDay int
	FreeMaxBody     int64
	PriceVerify     string // USD
	PriceScore      string // USD
}

// Payer is the payment side: requirements from one price table, and a facilitator.
type Payer interface {
	Requirements(ctx context.Context, priceUSD string) ([]x402.Requirements, error)
	Verify(ctx context.Context, p x402.PaymentPayload, r x402.Requirements) (x402.VerifyResponse, error)
	Settle(ctx context.Context, p x402.PaymentPayload, r x402.Requirements) (x402.SettleResponse, error)
}

// day is the UTC day a time falls in, and the next UTC midnight after it.
func day(t time.Time) (string, time.Time) {
	t = t.UTC()
	midnight := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
	return t.Format("2006-01-02"), midnight
}

// AllowanceResets is when today's free allowance resets: the next UTC midnight by the service's
// clock, as the Free-Allowance-Resets header says it (every transport reports the same instant).
func (s *Service) AllowanceResets() time.Time {
	_, midnight := day(s.now())
	return midnight
}

// clientKey is how the allowance knows a client: the salted hash of its IP, never the IP.
func (s *Service) clientKey(r *http.Request) string {
	return s.CallerID(ClientIdentity(r, s.TrustedProxyHops))
}

// freeTrial is the caller's live free allowance state of SPEC §8.2.
func (s *Service) freeTrial(ctx context.Context, client string, used int, knownUsed bool) map[string]any {
	today, midnight := day(s.now())
	if !knownUsed && s.Allowance != nil {
		if n, err := s.Allowance.AllowanceUsed(ctx, client, today); err == nil {
			used = n
		}
	}
	limit := s.Pricing.FreeCallsPerDay
	remaining := max(limit-used, 0)
	resets := midnight.Format(time.RFC3339)
	ft := map[string]any{
		"available":                remaining > 0,
		"via":                      "mcp+rest",
		"transport":                "streamable-http",
		"url":                      s.BaseURL + "/mcp",
		"tool":                     "verify_schema",
		"calls_per_client_per_day": limit,
		"remaining_calls_today":    remaining,
		"resets_at":                resets,
		"client":                   clientRule + "; the same client's REST and MCP verification calls share one allowance",
		"rest_free":                true,
	}
	switch {
	case remaining > 0:
		ft["message"] = fmt.Sprintf("This client has %d of %d free checks left today (REST and MCP share them); they reset at %s.", remaining, limit, resets)
	case s.Payer == nil:
		// Free-only (SPEC §8.6): nothing can be paid, as the 429 free_trial_exhausted says.
		ft["message"] = fmt.Sprintf("This client's %d free checks for today are used up (REST and MCP share them); they reset at %s. This deployment takes no payments, so calls are refused until then.", limit, resets)
	default:
		ft["message"] = fmt.Sprintf("This client's %d free checks for today are used up (REST and MCP share them); they reset at %s. Payment applies until then.", limit, resets)
	}
	if remaining == 0 {
		ft["code"] = string(apperr.FreeTrialExhausted)
	}
	return ft
}

func (s *Service) setAllowanceHeaders(w http.ResponseWriter, remaining int) {
	w.Header().Set("Free-Allowance-Remaining", strconv.Itoa(remaining))
	w.Header().Set("Free-Allowance-Limit", strconv.Itoa(s.Pricing.FreeCallsPerDay))
	w.Header().Set("Free-Allowance-Resets", s.AllowanceResets().Format(time.RFC3339))
}

// verifyDescription describes the verify routes and tool in payment requirements.
const verifyDescription = "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt."

// PaymentRequiredFor builds the x402 PaymentRequired for a resource (a REST URL or an MCP tool's
// mcp://tool/<name>) at priceUSD, from the one price table behind every 402 answer.
func (s *Service) PaymentRequiredFor(ctx context.Context, resourceURL, description, priceUSD, message string, extensions map[string]any) (x402.PaymentRequired, error) {
	accepts := []x402.Requirements{} // free-only: the probe still answers, with nothing to pay
	if s.Payer != nil {
		var err error
		if accepts, err = s.Payer.Requirements(ctx, priceUSD); err != nil {
			return x402.PaymentRequired{}, fmt.Errorf("payment requirements: %w", err)
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

// paymentRequired builds the x402 PaymentRequired for a verify route at path.
func (s *Service) paymentRequired(ctx context.Context, path, message string) (x402.PaymentRequired, error) {
	return s.PaymentRequiredFor(ctx, s.BaseURL+path, verifyDescription, s.Pricing.PriceVerify, message,
		map[string]any{"bazaar": verifyBazaar()})
}

// The bazaar extensions of the 402 answers are the same in every answer of a route, so each is
// encoded once, by x402.EncodeJSON as the PAYMENT-REQUIRED header encodes it (keys sorted, HTML
// characters left as they are): decoding the request schema and example and
// encoding the maps again was most of the cost of every 402.
var (
	verifyBazaar = sync.OnceValue(func() json.RawMessage {
		return encodeExtension(x402.BazaarExtension(http.MethodPost, verify.ExampleRequest(), verify.RequestSchema()))
	})
	scoreBazaar = sync.OnceValue(func() json.RawMessage {
		return encodeExtension(x402.BazaarExtension(http.MethodGet, nil, nil))
	})
)

func encodeExtension(ext map[string]any) json.RawMessage {
	b, err := x402.EncodeJSON(ext)
	if err != nil {
		panic("httpapi: a bazaar extension cannot be encoded: " + err.Error())
	}
	return b
}

// FreeTrial is the live free allowance state of the client with key client (see CallerID).
func (s *Service) FreeTrial(ctx context.Context, client string) map[string]any {
	return s.freeTrial(ctx, client, 0, false)
}

// ConsumeFree takes one free call from client's allowance for today. A store failure is a
// retryable 503, never a free pass.
func (s *Service) ConsumeFree(ctx context.Context, client string) (granted bool, remaining int, err error) {
	today, midnight := day(s.now())
	ctx, cancel := context.WithTimeout(ctx, s.storeTimeout())
	defer cancel()
	granted, remaining, err = s.Allowance.ConsumeAllowance(ctx, client, today, s.Pricing.FreeCallsPerDay, midnight.Add(time.Hour))
	if err != nil {
		s.log().Error("allowance store failed", "err", err.Error())
		return false, 0, storeUnavailable()
	}
	return granted, remaining, nil
}

// FreeOnlyExhausted is the answer past the allowance of a deployment that takes no payments
// (SPEC §8.6): free_trial_exhausted as a retryable 429 until the next UTC midnight, instead of
// an unpayable 402.
func (s *Service) FreeOnlyExhausted() *apperr.Error {
	e := apperr.New(apperr.FreeTrialExhausted, "This client's free checks for today are used up, and this deployment takes no payments; try again after the next UTC midnight.")
	e.Status, e.Retryable = http.StatusTooManyRequests, true
	e.NextAction = []apperr.NextAction{{Action: "retry_later"}}
	_, midnight := day(s.now())
	e.RetryAfter = max(int(midnight.Sub(s.now()).Seconds()), 1)
	return e
}

// writePaymentRequired answers 402 for a verify route: its PaymentRequired, with the caller's free
// allowance state in the body. In free-only mode (no payee), the exhausted allowance is a 429
// instead, since nothing could be paid.
func (s *Service) writePaymentRequired(w http.ResponseWriter, r *http.Request, code apperr.Code, message string, ft map[string]any, settlement *x402.SettleResponse) {
	if s.Payer == nil && code != apperr.PaymentRequired {
		s.WriteError(w, r, s.FreeOnlyExhausted())
		return
	}
	pr, err := s.paymentRequired(r.Context(), r.URL.Path, message)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	s.writePayment(w, r, pr, code, ft, settlement)
}

// writePayment answers 402 with pr in the PAYMENT-REQUIRED header and a body that repeats it with a
// machine code and, on routes that have one (ft non-nil), the caller's free allowance; a failed
// settlement goes back in PAYMENT-RESPONSE.
func (s *Service) writePayment(w http.ResponseWriter, r *http.Request, pr x402.PaymentRequired, code apperr.Code, ft map[string]any, settlement *x402.SettleResponse) {
	hdr, err := x402.EncodeHeader(pr)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	body := map[string]any{
		"x402Version": pr.X402Version, "error": pr.Error, "resource": pr.Resource, "accepts": pr.Accepts,
		"extensions": pr.Extensions, "code": string(code), "status": http.StatusPaymentRequired, "charged": false,
	}
	if ft != nil {
		body["free_trial"] = ft
	}
	if settlement != nil {
		if h, err := x402.EncodeHeader(settlement); err == nil {
			w.Header().Set(HeaderPaymentResponse, h)
		}
	}
	b, _ := json.Marshal(body)
	w.Header().Set(HeaderPaymentRequired, hdr)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusPaymentRequired, b)
}

// paymentError answers a failed payment step with the 402 shape and its code.
func (s *Service) paymentError(w http.ResponseWriter, r *http.Request, code apperr.Code, message string, settlement *x402.SettleResponse) {
	s.writePaymentRequired(w, r, code, message, s.freeTrial(r.Context(), s.clientKey(r), 0, false), settlement)
}

// errStoreUnavailable is the answer when the allowance cannot be read or written: retryable,
// and never a free pass past the limit.
func storeUnavailable() *apperr.Error {
	e := apperr.New(apperr.Unavailable, "The allowance store is unavailable. Nothing was charged; try again shortly.")
	e.RetryAfter = 2
	return e
}

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

// refuseFreeSize answers a body over the free size limit sent without a payment: 402 to pay for
// it, or 413 where nothing can be paid.
func (s *Service) refuseFreeSize(w http.ResponseWriter, r *http.Request) {
	if s.Payer == nil {
		s.WriteError(w, r, apperr.TooLarge(s.Pricing.FreeMaxBody))
		return
	}
	s.writePaymentRequired(w, r, apperr.PaymentRequired,
		fmt.Sprintf("Bodies over %d bytes are not covered by the free allowance; pay to verify this one.", s.Pricing.FreeMaxBody),
		s.freeTrial(r.Context(), s.clientKey(r), 0, false), nil)
}

// serveFree runs a verification within the caller's free allowance, or answers 402/429 when it
// is spent. The allowance is consumed only for a request that decoded cleanly.
func (s *Service) serveFree(w http.ResponseWriter, r *http.Request, job *Job) {
	client := s.clientKey(r)
	granted, remaining, err := s.ConsumeFree(r.Context(), client)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	if !granted {
		s.writePaymentRequired(w, r, apperr.FreeTrialExhausted, "This client's free checks for today are used up; pay with x402 to continue.",
			s.freeTrial(r.Context(), client, s.Pricing.FreeCallsPerDay, true), nil)
		return
	}
	v, err := s.Finish(r.Context(), job)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	s.Record(r.Context(), v, ClientIdentity(r, s.TrustedProxyHops), false)
	s.setAllowanceHeaders(w, remaining)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v.Body)
}

// PaymentFailure is a payment that was refused: answered 402 (REST) or with the
// payment-required result (MCP), carrying its code and, when settlement failed, the settlement.
type PaymentFailure struct {
	Code       apperr.Code
	Message    string
	Settlement *x402.SettleResponse
}

// Charge is the paid path of SPEC §8.3 after the request was validated, for every transport:
// match the payment against the server's own requirements for priceUSD, refuse a known replay,
// verify with the facilitator, reserve the payment id, run work, settle. Nothing is settled
// unless work succeeded, and the caller delivers nothing unless Charge returns a settlement.
// A refused payment is a *PaymentFailure; a 5xx (facilitator or store down, work failed) is an
// error.
func (s *Service) Charge(ctx context.Context, payload x402.PaymentPayload, priceUSD string, work func(context.Context) error) (*x402.SettleResponse, *PaymentFailure, error) {
	if s.Payer == nil {
		return nil, nil, apperr.Field("payment", "was sent to a deployment that takes no payments", "Send the request without a payment.")
	}
	if s.Allowance == nil {
		// Payments without a reservation store could be replayed: refuse rather than risk it.
		return nil, nil, errors.New("charge: a payer is configured without a store for payment reservations")
	}
	reqs, err := s.Payer.Requirements(ctx, priceUSD)
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
		s.log().Error("payment lookup failed", "err", err.Error())
		return nil, nil, storeUnavailable()
	} else if used {
		return nil, &PaymentFailure{Code: apperr.PaymentReplayed, Message: "This payment was already used. Nothing was charged again; sign a new payment."}, nil
	}
	vr, err := s.Payer.Verify(ctx, payload, accepted)
	if err != nil {
		s.log().Error("facilitator verify failed", "err", err.Error())
		return nil, nil, facilitatorUnavailable()
	}
	if !vr.IsValid {
		return nil, &PaymentFailure{Code: apperr.PaymentVerifyFail, Message: "The facilitator rejected the payment: " + safeReason(vr.InvalidReason) + ". Nothing was charged."}, nil
	}
	if err := s.reservePayment(ctx, id); err != nil {
		if errors.Is(err, store.ErrPaymentReplayed) {
			return nil, &PaymentFailure{Code: apperr.PaymentReplayed, Message: "This payment was already used. Nothing was charged again; sign a new payment."}, nil
		}
		s.log().Error("payment reservation failed", "err", err.Error())
		return nil, nil, storeUnavailable()
	}
	// The work must leave settlement its time, or the payment would stay reserved, unsettled,
	// in a function stopped before it answered.
	wctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, d.Add(-afterSettle-minSettleTime))
		defer cancel()
	}
	if err := work(wctx); err != nil {
		s.releasePayment(ctx, id) // never settled: the client may send the same payment again
		return nil, nil, err
	}
	// Settlement must finish even if the caller hangs up (the work is done and the payment
	// verified), but within the request's own deadline (a Lambda invocation's) less what the
	// answer needs: a function stopped while settling would have charged without answering.
	settleBy := time.Now().Add(settleTimeout)
	if d, ok := ctx.Deadline(); ok && d.Add(-afterSettle).Before(settleBy) {
		settleBy = d.Add(-afterSettle)
	}
	if time.Until(settleBy) < minSettleTime {
		// A settlement cut short has an unknown outcome: better not begun.
		s.releasePayment(ctx, id)
		return nil, nil, settleTooLate()
	}
	sctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), settleBy)
	defer cancel()
	sr, err := s.Payer.Settle(sctx, payload, accepted)
	if err != nil {
		s.log().Error("facilitator settle failed", "err", err.Error())
		return nil, nil, settlementUnknown()
	}
	if !sr.Success {
		return nil, &PaymentFailure{Code: apperr.PaymentSettleFail, Message: "The payment could not be settled: " + safeReason(sr.ErrorReason) + ". Nothing was charged.", Settlement: &sr}, nil
	}
	return &sr, nil, nil
}

// servePaid is the REST side of Charge for the verify routes.
func (s *Service) servePaid(w http.ResponseWriter, r *http.Request, job *Job, header string) {
	if s.Payer == nil {
		s.WriteError(w, r, apperr.Field("PAYMENT-SIGNATURE", "was sent to a deployment that takes no payments", "Send the request without a payment."))
		return
	}
	payload, err := x402.DecodePaymentSignature(header)
	if err != nil {
		s.paymentError(w, r, apperr.PaymentInvalid, "The PAYMENT-SIGNATURE header could not be decoded as an x402 v2 payment. Nothing was charged.", nil)
		return
	}
	var v *Verification
	sr, fail, err := s.Charge(r.Context(), payload, s.Pricing.PriceVerify, func(ctx context.Context) (err error) {
		v, err = s.Finish(ctx, job)
		return err
	})
	switch {
	case err != nil:
		s.WriteError(w, r, err)
		return
	case fail != nil:
		s.paymentError(w, r, fail.Code, fail.Message, fail.Settlement)
		return
	}
	s.Record(r.Context(), v, ClientIdentity(r, s.TrustedProxyHops), true)
	if h, err := x402.EncodeHeader(sr); err == nil {
		w.Header().Set(HeaderPaymentResponse, h)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v.Body)
}

// LongestRequest is how long a request may legitimately take: a paid one's store calls, the
// facilitator's verification, the work and settlement, each at its bound. A server's write
// timeout and shutdown grace must not cut it short.
const LongestRequest = 3*DefaultStoreTimeout + x402.DefaultVerifyTimeout + DefaultDeadline + settleTimeout

// Settlement's share of a paid request's time.
const (
	// settleTimeout bounds settlement well inside API Gateway's 29 s.
	settleTimeout = 20 * time.Second
	// afterSettle is what a paid request keeps of its deadline after settling: the history
	// write (a Lambda function records before it answers) and the answer.
	afterSettle = recordTimeout + time.Second
	// minSettleTime is the least time settlement is started with. Settling on Base or Solana
	// takes a few seconds; with less left, the request answers a retryable error instead.
	minSettleTime = 8 * time.Second
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
	ctx, cancel := context.WithTimeout(ctx, s.storeTimeout())
	defer cancel()
	return s.Allowance.PaymentReserved(ctx, id)
}

// releasePayment undoes the reservation of a payment that was never sent to settlement. A
// failure leaves the payment reserved (it can then not be used again here, and nothing was
// charged); it is logged and does not change the answer.
func (s *Service) releasePayment(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.storeTimeout())
	defer cancel()
	if err := s.Allowance.ReleasePayment(ctx, id); err != nil {
		s.log().Error("payment release failed", "err", err.Error())
	}
}

func (s *Service) reservePayment(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.storeTimeout())
	defer cancel()
	return s.Allowance.ReservePayment(ctx, id, s.now().Add(paymentRecordTTL))
}
