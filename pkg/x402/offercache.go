package x402

import (
	"errors"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/kept"
)

// Signing offers is bounded (SPEC §16). Every 402 answer carries signed offers, and anyone may
// ask for one without paying (an empty POST is a probe); with a kms-sign key each signature is a
// kms:Sign call, billed, slow, and counted against the account's KMS request quota that the
// paid answers' receipts share. So a signed offer is kept and handed out again while it stays
// valid long enough, a bounded number of them are kept, and the signatures a remote key makes
// afresh are rationed.
const (
	// OfferValidity is how long a signed offer commits the server to its terms: twice a
	// requirement's maxTimeoutSeconds, so that an offer handed out again until OfferReuseMargin
	// of it remains still leaves a client the whole maxTimeoutSeconds to sign and send a payment.
	// It stays short because the terms (price, payee) may change with the next deployment.
	OfferValidity = 2 * maxTimeoutSeconds * time.Second
	// OfferReuseMargin is the least validity a signed offer has when it is handed out: a
	// requirement's maxTimeoutSeconds, the time a client has to pay. A kept offer with less left
	// is signed again, so each offer is signed at most once per OfferValidity - OfferReuseMargin.
	OfferReuseMargin = maxTimeoutSeconds * time.Second

	// maxKeptOffers bounds the signed offers kept. The fixed resources (the verify routes, the
	// MCP tools) need a few per network; the score route's resource names an agent, so a caller
	// choosing agent ids could otherwise grow the cache without end. An entry is its terms and
	// its JWS, a few kilobytes at most with the longest agent id: a few megabytes in all.
	maxKeptOffers = 1024
	// freshOffersPerSecond and freshOffersBurst ration the offers a remote key signs afresh (a
	// kept one handed out again costs nothing): a deployment's own resources need one signature
	// per network a minute each, and the burst covers them all at a cold start, while a caller
	// varying agent ids costs at most this many kms:Sign calls a second per process instead of
	// one per network on each of its requests. A local key's signature costs less than the
	// answer it goes in, so it is not rationed.
	freshOffersPerSecond = 2
	freshOffersBurst     = 32
)

// ErrOffersRationed is Offers' error when the offers not kept would take more fresh signatures
// than the ration has left: the 402 answer goes without offers, as when the key cannot sign.
var ErrOffersRationed = errors.New("offer-receipt: the ration of fresh offer signatures is spent")

// offerCache keeps signed offers by their terms (the payload without ValidUntil), dropping the
// least recently used past maxKeptOffers, and rations fresh signatures (pkg/kept).
type offerCache struct {
	offers *kept.LRU[OfferPayload, keptOffer]
	fresh  *kept.Ration
}

// keptOffer is a signed offer and until when it is valid.
type keptOffer struct {
	jws        string
	validUntil time.Time
}

func newOfferCache() *offerCache {
	return &offerCache{offers: kept.NewLRU[OfferPayload, keptOffer](maxKeptOffers), fresh: kept.NewRation(freshOffersPerSecond, freshOffersBurst)}
}

// get is the kept offer with terms, if it stays valid for OfferReuseMargin from now.
func (c *offerCache) get(terms OfferPayload, now time.Time) (string, bool) {
	k, ok := c.offers.Get(terms)
	if !ok || k.validUntil.Sub(now) < OfferReuseMargin {
		return "", false
	}
	return k.jws, true
}

// put keeps jws, the offer of terms valid until validUntil.
func (c *offerCache) put(terms OfferPayload, jws string, validUntil time.Time) {
	c.offers.Put(terms, keptOffer{jws: jws, validUntil: validUntil})
}

// take takes n fresh signatures from the ration at now, all or none.
func (c *offerCache) take(n int, now time.Time) bool { return c.fresh.Take(n, now) }

// kept is how many offers are kept.
func (c *offerCache) kept() int { return c.offers.Len() }
