package x402

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// Payments is the one source of what a paid call may cost and how it may be paid: the 402
// answers, the MCP payment-required results and /.well-known/x402 are all built from its
// Requirements, so they cannot disagree. It is safe for concurrent use.
type Payments struct {
	cfg  Config
	fac  *Facilitator
	log  *slog.Logger
	now  func() time.Time // the clock of the fee payer cache: the service's one clock
	nets []network        // the offered networks, in configuration order

	fetching chan struct{} // a one-slot semaphore: one GET /supported at a time
	mu       sync.Mutex    // guards fees
	fees     feePayerCache
}

// feePayerCache remembers the facilitator's Solana fee payers. payers holds the last answer's
// fee payer per configured Solana network; failedAt is set while some were missing or the call
// failed, and then the whole answer is retried after feePayerRetryAfter.
type feePayerCache struct {
	payers    map[string]string
	fetchedAt time.Time
	failedAt  time.Time
}

// Option changes how New builds the payments.
type Option func(*Payments)

// WithClock makes the payments read time from now, the clock every other part of the service
// reads, instead of time.Now.
func WithClock(now func() time.Time) Option {
	return func(p *Payments) {
		if now != nil {
			p.now = now
		}
	}
}

// New builds the payments from a validated configuration and the facilitator client. It makes
// no network call: the Solana fee payer is fetched on first need, so a cold start never waits on
// the facilitator. f may be nil only for a free-only configuration; log may be nil.
func New(cfg Config, f *Facilitator, log *slog.Logger, opts ...Option) (*Payments, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Payments{cfg: cfg, fac: f, log: log, now: time.Now, fetching: make(chan struct{}, 1)}
	for _, o := range opts {
		o(p)
	}
	if cfg.PayToEVM != "" {
		a, err := checksumEVMAddress(cfg.PayToEVM)
		if err != nil {
			return nil, fmt.Errorf("payments: %s %w", EnvPayToEVM, err)
		}
		p.cfg.PayToEVM = a
	}
	if cfg.PayToSolana != "" {
		if err := checkSolanaAddress(cfg.PayToSolana); err != nil {
			return nil, fmt.Errorf("payments: %s %w", EnvPayToSolana, err)
		}
	}
	seen := map[string]bool{}
	for _, id := range cfg.Networks {
		n, ok := lookupNetwork(id)
		if !ok {
			return nil, fmt.Errorf("payments: unknown network %q", safeID(id))
		}
		if seen[id] {
			return nil, fmt.Errorf("payments: network %s listed twice", id)
		}
		seen[id] = true
		if (n.family == familyEVM && p.cfg.PayToEVM == "") || (n.family == familySolana && p.cfg.PayToSolana == "") {
			return nil, fmt.Errorf("payments: network %s has no payee", id)
		}
		p.nets = append(p.nets, n)
	}
	if len(p.nets) > 0 && f == nil {
		return nil, errors.New("payments: a facilitator is required when networks are offered")
	}
	p.cfg.Networks = append([]string(nil), cfg.Networks...)
	return p, nil
}

// Config returns the configuration the payments were built from (the EVM payee in checksummed
// form), for documents that describe it.
func (p *Payments) Config() Config {
	c := p.cfg
	c.Networks = append([]string(nil), p.cfg.Networks...)
	return c
}

// Requirements lists what a payment of priceUSD may look like: one entry per configured network,
// in configuration order. A Solana entry needs the facilitator's fee payer; while that cannot be
// had, the entry is left out (and the log says why, once per retry period). When that leaves
// nothing to offer, the error wraps ErrFacilitatorUnavailable and is an *apperr.Error with code
// FacilitatorDown, since no payable answer can be given. A free-only configuration gives an empty
// list.
func (p *Payments) Requirements(ctx context.Context, priceUSD string) ([]Requirements, error) {
	amount, err := USDToAtomic(priceUSD)
	if err != nil {
		return nil, fmt.Errorf("payment requirements for price %q: %w", safeID(priceUSD), err)
	}
	var fees map[string]string
	for _, n := range p.nets {
		if n.family == familySolana {
			if fees, err = p.feePayers(ctx); err != nil {
				return nil, fmt.Errorf("payment requirements: %w", err)
			}
			break
		}
	}
	out := make([]Requirements, 0, len(p.nets))
	for _, n := range p.nets {
		r := Requirements{Scheme: SchemeExact, Network: n.id, Amount: amount, Asset: n.asset, MaxTimeoutSeconds: maxTimeoutSeconds}
		switch n.family {
		case familyEVM:
			r.PayTo = p.cfg.PayToEVM
			r.Extra = map[string]any{"name": n.domainName, "version": n.domainVersion}
		case familySolana:
			fp, ok := fees[n.id]
			if !ok {
				continue
			}
			r.PayTo = p.cfg.PayToSolana
			r.Extra = map[string]any{"feePayer": fp}
		}
		out = append(out, r)
	}
	if len(out) == 0 && len(p.nets) > 0 {
		e := apperr.New(apperr.FacilitatorDown, "The payment facilitator is unavailable, so no payment can be offered right now. Nothing was charged; try again shortly.")
		e.RetryAfter = int(feePayerRetryAfter.Seconds())
		return nil, fmt.Errorf("payment requirements: no network can be offered: %w: %w", e, ErrFacilitatorUnavailable)
	}
	return out, nil
}

// Verify asks the facilitator to verify p against r, the server's own requirement from Match.
// Payments delegates so that one value serves as the HTTP and MCP layers' payment side.
func (p *Payments) Verify(ctx context.Context, pp PaymentPayload, r Requirements) (VerifyResponse, error) {
	if p.fac == nil {
		return VerifyResponse{}, fmt.Errorf("verify: %w: no facilitator configured", ErrFacilitatorUnavailable)
	}
	return p.fac.Verify(ctx, pp, r)
}

// Settle asks the facilitator to settle p against r, the server's own requirement from Match.
func (p *Payments) Settle(ctx context.Context, pp PaymentPayload, r Requirements) (SettleResponse, error) {
	if p.fac == nil {
		return SettleResponse{}, fmt.Errorf("settle: %w: no facilitator configured", ErrFacilitatorUnavailable)
	}
	return p.fac.Settle(ctx, pp, r)
}

// feePayers returns the facilitator's fee payer per configured Solana network, from the cache or
// from one GET /supported. Concurrent callers share one call; a caller whose context ends while
// waiting gets its context's error.
func (p *Payments) feePayers(ctx context.Context) (map[string]string, error) {
	if m, ok := p.cachedFeePayers(); ok {
		return m, nil
	}
	select {
	case p.fetching <- struct{}{}: // free: fetch even if ctx has ended, see below
	default:
		select {
		case p.fetching <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() { <-p.fetching }()
	if m, ok := p.cachedFeePayers(); ok { // fetched by the caller we waited for
		return m, nil
	}
	// The answer serves every later request, so one caller hanging up must not cancel it; the
	// facilitator client's own timeout bounds it.
	sup, err := p.fac.Supported(context.WithoutCancel(ctx))

	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	wasFailing := !p.fees.failedAt.IsZero()
	payers := map[string]string{}
	var missing []string
	for _, n := range p.nets {
		if n.family != familySolana {
			continue
		}
		fp, ok := "", false
		if err == nil {
			fp, ok = sup.FeePayer(n.id)
		}
		switch {
		case !ok:
			missing = append(missing, n.id)
		case checkSolanaAddress(fp) != nil:
			missing = append(missing, n.id)
			p.log.Warn("x402: the facilitator's Solana fee payer is not a valid address; leaving the network out of payment requirements", "network", n.id)
		default:
			payers[n.id] = fp
		}
	}
	p.fees = feePayerCache{payers: payers, fetchedAt: now}
	switch {
	case err != nil:
		p.fees.failedAt = now
		p.log.Warn("x402: facilitator GET /supported failed; Solana is left out of payment requirements until it answers",
			"networks", strings.Join(missing, ","), "retry_in", feePayerRetryAfter.String(), "err", err.Error())
	case len(missing) > 0:
		p.fees.failedAt = now
		p.log.Warn("x402: the facilitator names no fee payer for exact x402 v2 payments on these Solana networks; they are left out of payment requirements",
			"networks", strings.Join(missing, ","), "retry_in", feePayerRetryAfter.String())
	case wasFailing:
		p.log.Info("x402: facilitator fee payer available again; Solana is offered", "networks", strings.Join(slices.Sorted(maps.Keys(payers)), ","))
	}
	return payers, nil
}

// cachedFeePayers returns the cached fee payers while they may be used without asking again:
// within feePayerTTL of a complete answer, or within feePayerRetryAfter of a failed or incomplete
// one (then holding whatever that answer had).
func (p *Payments) cachedFeePayers() (map[string]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	switch {
	case !p.fees.failedAt.IsZero():
		return p.fees.payers, now.Sub(p.fees.failedAt) < feePayerRetryAfter
	case !p.fees.fetchedAt.IsZero():
		return p.fees.payers, now.Sub(p.fees.fetchedAt) < feePayerTTL
	}
	return nil, false
}

// Match finds the server's own requirement that the client says it accepted: same scheme,
// network, amount, asset and payTo (EVM addresses compared without regard to case, since
// checksumming only changes case; Solana's base58 is case-sensitive). The server's copy is
// returned and is what must go to the facilitator, never the client's, whose other fields (extra,
// timeout) are the client's to invent. No match is an *apperr.Error with code PaymentMismatch.
//
// Everything a client sends is untrusted: headers are bounded and validated before use, the
// client's copy of the requirements is only ever used to find the server's own copy, here, and the
// facilitator always receives the server's copy.
func Match(p PaymentPayload, reqs []Requirements) (Requirements, error) {
	a := p.Accepted
	for _, r := range reqs {
		if a.Scheme != r.Scheme || a.Network != r.Network || a.Amount != r.Amount {
			continue
		}
		same := func(x, y string) bool { return x == y }
		if strings.HasPrefix(r.Network, familyEVM+":") {
			same = strings.EqualFold
		}
		if !same(a.Asset, r.Asset) || !same(a.PayTo, r.PayTo) {
			continue
		}
		r.Extra = maps.Clone(r.Extra)
		return r, nil
	}
	return Requirements{}, apperr.New(apperr.PaymentMismatch,
		"The payment does not match any of this route's requirements (scheme, network, amount, asset, payTo). Nothing was charged; pay one of the entries of the current PAYMENT-REQUIRED answer.")
}
