// Package service is the application, free of any transport: what happens to a request once a
// transport has read it. It admits a verification (the x402 discovery probe, the size limits,
// decoding, then the free allowance or a payment, or a refusal), checks and signs it, charges
// the payment and records the delivered verification in the agent's history; it prices, charges
// and signs trust scores, signs reputation pages, and keeps the client identity and caller ids.
// Every operation returns an outcome value (an Outcome, a signed document or an *apperr.Error),
// which REST (pkg/httpapi) and MCP (pkg/mcpserver) render in their own terms: neither decides
// anything this package decides, and a decision that involves money exists here alone.
//
// The package imports no net/http (TestLayering holds it to that).
package service

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/translog"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// DefaultDeadline bounds one request's work, well inside API Gateway's 29 s integration timeout.
const DefaultDeadline = 10 * time.Second

// DefaultStoreTimeout bounds one allowance or payment-reservation call: a slow store becomes a
// retryable 503 well inside API Gateway's 29 s, never a hung request or a free pass.
const DefaultStoreTimeout = 3 * time.Second

// Store is the part of a store.Store the service uses: the free allowance and payment
// reservations, history recording, the reputation reads and the health probe.
type Store interface {
	ConsumeAllowance(ctx context.Context, client, day string, limit int, expires time.Time) (bool, int, error)
	AllowanceUsed(ctx context.Context, client, day string) (int, error)
	ReservePayment(ctx context.Context, id string, expires time.Time) error
	ReleasePayment(ctx context.Context, id string) error
	PaymentReserved(ctx context.Context, id string) (bool, error)
	ClaimPayment(ctx context.Context, id string, c store.PaymentClaim, expires time.Time) (store.PaymentClaim, bool, error)
	UpdatePaymentClaim(ctx context.Context, id, holder string, c store.PaymentClaim, expires time.Time) error
	ReleasePaymentClaim(ctx context.Context, id, holder string) error
	RecordVerification(ctx context.Context, v store.Verification) error
	History(ctx context.Context, agentID string, limit int, cursor string) (page []store.Verification, next string, err error)
	AgentAggregate(ctx context.Context, agentID string) (agg reputation.Aggregate, ok bool, err error)
	Ping(ctx context.Context) error
}

var _ Store = store.Store(nil)

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

// Deps are what a Service is built from. New checks them: a missing dependency is an error at
// construction, never a branch in a request's path.
type Deps struct {
	// Engine checks verification requests; nil in a program that serves no verification (the
	// score and discovery functions), whose Verify answers an internal error.
	Engine Engine
	// MaxBody is the largest request body read (413 beyond); required.
	MaxBody int64
	Keys    receipt.KeyRing
	BaseURL string // public base URL, never taken from a request's Host header; required
	Store   Store  // required: allowance, payments, recording, reputation, ping
	// Payer builds payment requirements and talks to the facilitator; nil runs free-only (SPEC
	// §8.6), the one configuration without payments.
	Payer   Payer
	Pricing Pricing
	Log     *slog.Logger     // nil: slog.Default()
	Now     func() time.Time // the one clock; required
	NewID   func() string    // verification ids; nil: random UUIDs
	// TrustedProxyHops is how many proxies in front of the service the operator trusts to write
	// X-Forwarded-For (SPEC §8.1): part of what a client is, which every transport reads alike.
	TrustedProxyHops int
	Deadline         time.Duration // per request's work; DefaultDeadline when zero
	StoreTimeout     time.Duration // per allowance or reservation call; DefaultStoreTimeout when zero
	CallerSalt       []byte        // per-deployment salt of caller ids
	// Receipts keeps the receipt log (SPEC §15): every signed answer is recorded in it; nil
	// keeps no log (a store without one).
	Receipts ReceiptLog
	// ReceiptsWithHistory, when the receipt log can write an answer's history record in its
	// receipt's own write (the local server's store), takes both at once, so that the history is
	// as durable as the receipt; nil writes the history after the receipt. Requires Receipts.
	ReceiptsWithHistory store.ReceiptWithHistory
	// Folder, when the store takes records with one write and counts them into the agents'
	// aggregates later (store/dynamo), folds each recorded agent off the answer path; nil folds
	// nothing.
	Folder Folder
	// LogKey is the log's origin and key (required with Receipts): the sequencer signs
	// checkpoints with it, the agent card publishes its verifier key.
	LogKey translog.LogKey
	// RecordDays is how long a stored receipt record is kept; DefaultRecordDays when zero.
	RecordDays int
}

// Service is the application. Build it once per process (per Lambda cold start) with New; it is
// safe for concurrent use.
type Service struct {
	d Deps

	// offers signs the x402 offer-receipt extension's offers and receipts (SPEC §16); nil when
	// the deployment takes no payments.
	offers *x402.OfferReceipt
	// attestations keeps stored records' signed in-toto envelopes and rations fresh ones.
	attestations attestations
	// phases runs the engine's phases on kept workers, at most maxPhases at once.
	phases *phasePool

	records chan recordJob // history and receipt writes waiting for StartRecording's writers
	// recording guards records: a request still running when the writers stop (a shutdown that
	// outlived its grace) writes its record itself instead of sending on a closed channel.
	recording struct {
		sync.RWMutex
		stopped bool
	}
	// folding tracks foldLater's background folds: again holds the agents with a fold running,
	// true when it must run once more; wg lets a stop wait for them.
	folding struct {
		sync.Mutex
		again map[string]bool
		wg    sync.WaitGroup
	}
	// health is the last /health probe and when it ran (Health).
	health struct {
		sync.Mutex
		report HealthReport
		at     time.Time
		probed bool
	}
}

// New checks d and builds the service. Every dependency but the payer (nil is free-only), the
// logger and the id source (each with a default) is required.
func New(d Deps) (*Service, error) {
	switch {
	case d.MaxBody <= 0:
		return nil, errors.New("service: no body limit")
	case d.Store == nil:
		return nil, errors.New("service: no store")
	case d.Now == nil:
		return nil, errors.New("service: no clock")
	case d.BaseURL == "":
		return nil, errors.New("service: no base URL")
	case d.Pricing.FreeCallsPerDay < 0 || d.Pricing.FreeMaxBody < 0:
		return nil, errors.New("service: negative free allowance")
	case d.Receipts != nil && d.LogKey.VerifierKey == "":
		return nil, errors.New("service: a receipt log without a log key")
	case d.ReceiptsWithHistory != nil && d.Receipts == nil:
		return nil, errors.New("service: receipts with history without a receipt log")
	case d.TrustedProxyHops < 0:
		return nil, errors.New("service: negative trusted proxy hops")
	}
	if err := d.Keys.Validate(); err != nil {
		return nil, errors.New("service: key ring: " + err.Error())
	}
	if d.Payer != nil && (d.Pricing.PriceVerify == "" || d.Pricing.PriceScore == "") {
		return nil, errors.New("service: a payer without prices")
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.NewID == nil {
		d.NewID = func() string { return uuid.Must(uuid.NewRandomFromReader(rand.Reader)).String() }
	}
	if d.Deadline <= 0 {
		d.Deadline = DefaultDeadline
	}
	if d.RecordDays <= 0 {
		d.RecordDays = DefaultRecordDays
	}
	if d.StoreTimeout <= 0 {
		d.StoreTimeout = DefaultStoreTimeout
	}
	s := &Service{d: d, attestations: newAttestations(), phases: newPhasePool()}
	if d.Payer != nil {
		var err error
		if s.offers, err = x402.NewOfferReceipt(d.Keys.Current, d.BaseURL); err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
	}
	return s, nil
}

// WithKeys is a new service like s that signs with and publishes keys (a key rotation, which a
// deployment makes by restarting with the new ring). It shares s's store; its history writers
// and folds are its own.
func (s *Service) WithKeys(keys receipt.KeyRing) (*Service, error) {
	d := s.d
	d.Keys = keys
	return New(d)
}

// MaxBody is the largest request body the service reads; every transport refuses more with 413.
func (s *Service) MaxBody() int64 { return s.d.MaxBody }

// Keys is the key ring the service signs with and publishes.
func (s *Service) Keys() receipt.KeyRing { return s.d.Keys }

// BaseURL is the deployment's public base URL.
func (s *Service) BaseURL() string { return s.d.BaseURL }

// Pricing is what the service charges and offers free.
func (s *Service) Pricing() Pricing { return s.d.Pricing }

// Payer is the payment side, nil for a free-only deployment; discovery documents read its
// configuration from it.
func (s *Service) Payer() Payer { return s.d.Payer }

// FreeOnly reports whether the deployment takes no payments (SPEC §8.6).
func (s *Service) FreeOnly() bool { return s.d.Payer == nil }

// Log is the service's logger.
func (s *Service) Log() *slog.Logger { return s.d.Log }

// TrustedProxyHops is how many X-Forwarded-For hops name the client (see Deps).
func (s *Service) TrustedProxyHops() int { return s.d.TrustedProxyHops }

// PublicError is what a caller may see of err, over any transport: err itself when it is an
// *apperr.Error, otherwise a generic retryable internal error, with the cause logged under route.
func (s *Service) PublicError(route string, err error) *apperr.Error {
	if e, ok := apperr.As(err); ok {
		return e
	}
	if errors.Is(err, receipt.ErrSignerUnavailable) {
		// A remote key (kms-sign:) that did not sign: the work was done but nothing is
		// delivered, so nothing is charged, consumed or recorded (Verify signs first).
		s.d.Log.Error("signing failed", "route", route, "err", err.Error())
		return signingUnavailable()
	}
	s.d.Log.Error("internal error", "route", route, "err", err.Error())
	e := apperr.New(apperr.Internal, "The request could not be completed. Nothing was charged; try again.")
	e.RetryAfter = 1
	return e
}

// signingUnavailable is the answer when the signing key's service did not sign.
func signingUnavailable() *apperr.Error {
	e := apperr.New(apperr.Unavailable, "The answer could not be signed: the signing service is unavailable. Nothing was charged; try again.")
	e.RetryAfter = 1
	return e
}

// ErrPanic is the answer to a request whose handling panicked.
var ErrPanic = apperr.New(apperr.Internal, "The request could not be completed. Nothing was charged; try again.")

// healthProbeTimeout bounds the store probe of /health.
const healthProbeTimeout = 2 * time.Second

// healthCacheTTL is how long one probe answers /health: a load balancer or canary polling every
// second costs the store one probe per few seconds, while an outage shows within them.
const healthCacheTTL = 5 * time.Second

// HealthReport is what /health says: whether the store and the signing key answer.
type HealthReport struct {
	Store bool // the store answered a probe
	Key   bool // the signing key signed a probe that its public key verifies
}

// OK says every part answered.
func (h HealthReport) OK() bool { return h.Store && h.Key }

// healthProbeContext is the attestation context of the key probe; no receipt carries it.
const healthProbeContext = "agent-output-verifier/health-probe/v1"

// Health probes the store and the signing key, at most once per healthCacheTTL of the service's
// clock (concurrent callers share the probe). Causes go to the log only, since they may name
// tables, endpoints or key sources.
func (s *Service) Health(ctx context.Context) HealthReport {
	s.health.Lock()
	defer s.health.Unlock()
	now := s.d.Now()
	if s.health.probed && now.Sub(s.health.at) >= 0 && now.Sub(s.health.at) < healthCacheTTL {
		return s.health.report
	}
	ctx, cancel := context.WithTimeout(ctx, healthProbeTimeout)
	defer cancel()
	r := HealthReport{Store: true, Key: true}
	if err := s.d.Store.Ping(ctx); err != nil {
		s.d.Log.Warn("health: store probe failed", "err", err.Error())
		r.Store = false
	}
	signed, err := s.d.Keys.Current.WithContext(ctx).Attest(healthProbeContext, []byte(`{"probe":true}`), receipt.FormatTime(now))
	if err == nil {
		err = receipt.VerifyAttestation(signed, healthProbeContext, []receipt.PublicKey{s.d.Keys.Current.Public()})
	}
	if err != nil {
		s.d.Log.Warn("health: key probe failed", "err", err.Error())
		r.Key = false
	}
	s.health.report, s.health.at, s.health.probed = r, now, true
	return r
}
