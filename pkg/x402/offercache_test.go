package x402

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// countingSigner is a remote key's signer (a KMS in miniature) that signs with a local Ed25519
// key and counts its signatures.
type countingSigner struct {
	priv  ed25519.PrivateKey
	signs atomic.Int64
}

func (c *countingSigner) Sign(_ context.Context, msg []byte) ([]byte, error) {
	c.signs.Add(1)
	return ed25519.Sign(c.priv, msg), nil
}

func (*countingSigner) MaxMessage() int { return 0 }

// remoteOfferReceipt is an OfferReceipt signing with a remote key whose signatures are counted.
func remoteOfferReceipt(t testing.TB) (*OfferReceipt, *countingSigner, ed25519.PublicKey) {
	t.Helper()
	s := &countingSigner{priv: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32))}
	pub := s.priv.Public().(ed25519.PublicKey)
	o, err := NewOfferReceipt(receipt.RemoteKey("v5", pub, s), "https://verifier.example.com")
	if err != nil {
		t.Fatal(err)
	}
	return o, s, pub
}

var twoNetworks = []Requirements{
	{Scheme: SchemeExact, Network: NetworkBase, Amount: "20000", Asset: usdcBase, PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", MaxTimeoutSeconds: 60},
	{Scheme: SchemeExact, Network: NetworkSolana, Amount: "20000", Asset: usdcSolana, PayTo: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", MaxTimeoutSeconds: 60},
}

// signedOffers is Offers' JWS list, each verified with pub, and each offer's payload.
func signedOffers(t *testing.T, o *OfferReceipt, pub ed25519.PublicKey, resource string, accepts []Requirements, now time.Time) ([]string, []OfferPayload) {
	t.Helper()
	ext, err := o.Offers(context.Background(), resource, accepts, now)
	if err != nil {
		t.Fatalf("offers for %s: %v", resource, err)
	}
	offers := ext["info"].(map[string]any)["offers"].([]SignedOffer)
	if len(offers) != len(accepts) {
		t.Fatalf("%d offers for %d requirements", len(offers), len(accepts))
	}
	jws := make([]string, len(offers))
	payloads := make([]OfferPayload, len(offers))
	for i, off := range offers {
		if off.AcceptIndex != i || off.Format != FormatJWS {
			t.Errorf("offer %d: acceptIndex %d format %q", i, off.AcceptIndex, off.Format)
		}
		_, raw, err := VerifyJWS(off.Signature, pub)
		if err != nil {
			t.Fatalf("offer %d: %v", i, err)
		}
		if err := json.Unmarshal(raw, &payloads[i]); err != nil {
			t.Fatal(err)
		}
		r := accepts[i]
		if p := payloads[i]; p.ResourceURL != resource || p.Network != r.Network || p.Amount != r.Amount || p.PayTo != r.PayTo || p.Asset != r.Asset {
			t.Errorf("offer %d signs %+v, not the terms of %+v for %s", i, p, r, resource)
		}
		jws[i] = off.Signature
	}
	return jws, payloads
}

// An offer is signed once and handed out again while at least OfferReuseMargin of its validity
// remains, then signed again; other terms or another resource are signed on their own.
func TestOffersAreKeptWhileValid(t *testing.T) {
	o, s, pub := remoteOfferReceipt(t)
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const resource = "https://verifier.example.com/verify/schema"
	first, p := signedOffers(t, o, pub, resource, twoNetworks, t0)
	if s.signs.Load() != 2 || p[0].ValidUntil != t0.Add(OfferValidity).Unix() {
		t.Fatalf("first probe: %d signatures, validUntil %d; want 2 and now + %v", s.signs.Load(), p[0].ValidUntil, OfferValidity)
	}
	// Up to the last instant that leaves the margin, the same offers, still valid long enough.
	for _, at := range []time.Time{t0, t0.Add(time.Second), t0.Add(OfferValidity - OfferReuseMargin)} {
		again, p := signedOffers(t, o, pub, resource, twoNetworks, at)
		if s.signs.Load() != 2 || again[0] != first[0] || again[1] != first[1] {
			t.Fatalf("probe at +%v: %d signatures, offers changed %v; want the kept ones", at.Sub(t0), s.signs.Load(), again[0] != first[0])
		}
		for i := range p {
			if left := time.Unix(p[i].ValidUntil, 0).Sub(at); left < OfferReuseMargin {
				t.Errorf("probe at +%v: offer %d handed out with %v left, under the margin %v", at.Sub(t0), i, left, OfferReuseMargin)
			}
		}
	}
	// Past it, signed again, valid for OfferValidity from then.
	later := t0.Add(OfferValidity - OfferReuseMargin + time.Second)
	renewed, p := signedOffers(t, o, pub, resource, twoNetworks, later)
	if s.signs.Load() != 4 || renewed[0] == first[0] || p[0].ValidUntil != later.Add(OfferValidity).Unix() {
		t.Fatalf("probe past the margin: %d signatures, validUntil %d; want 4 and a new offer valid until %d", s.signs.Load(), p[0].ValidUntil, later.Add(OfferValidity).Unix())
	}
	// Another resource, or other terms, are other offers.
	signedOffers(t, o, pub, "https://verifier.example.com/score/agent-1", twoNetworks, later)
	dearer := append([]Requirements(nil), twoNetworks...)
	dearer[1].Amount = "30000"
	signedOffers(t, o, pub, resource, dearer, later)
	if got := s.signs.Load(); got != 4+2+1 {
		t.Errorf("%d signatures, want 7: two for the new resource, one for the changed amount", got)
	}
}

// Offers signed by many callers at once are all verifiable and the kept ones are shared (run
// under -race). Four callers missing four resources of two offers at the same moment take at
// most the whole burst, so none is rationed.
func TestOffersConcurrently(t *testing.T) {
	o, s, pub := remoteOfferReceipt(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const callers, resources = 4, 4
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range 50 {
				ext, err := o.Offers(context.Background(), fmt.Sprintf("https://verifier.example.com/score/agent-%d", (g+i)%resources), twoNetworks, now)
				if err != nil {
					t.Error(err)
					return
				}
				for _, off := range ext["info"].(map[string]any)["offers"].([]SignedOffer) {
					if _, _, err := VerifyJWS(off.Signature, pub); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	// Callers that miss at the same moment may each sign; never more than once per caller.
	if got := s.signs.Load(); got < resources*2 || got > callers*resources*2 {
		t.Errorf("%d signatures for %d resources of 2 offers by %d callers", got, resources, callers)
	}
}

// The kept offers are bounded: past maxKeptOffers the least recently used is dropped, and the
// offers handed out since are kept.
func TestKeptOffersAreBounded(t *testing.T) {
	c := newOfferCache()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	until := now.Add(OfferValidity)
	terms := func(i int) OfferPayload {
		return OfferPayload{ResourceURL: fmt.Sprintf("https://v.example/score/a-%d", i)}
	}
	for i := range maxKeptOffers {
		c.put(terms(i), fmt.Sprint("jws-", i), until)
	}
	if _, ok := c.get(terms(0), now); !ok { // 0 is now the most recently used, 1 the least
		t.Fatal("a kept offer is not handed out")
	}
	c.put(terms(maxKeptOffers), "jws-new", until)
	if c.kept() != maxKeptOffers {
		t.Fatalf("%d offers kept, want the bound %d", c.kept(), maxKeptOffers)
	}
	for i, want := range map[int]bool{0: true, 1: false, 2: true, maxKeptOffers: true} {
		if jws, ok := c.get(terms(i), now); ok != want || (ok && jws != fmt.Sprint("jws-", i) && i != maxKeptOffers) {
			t.Errorf("offer %d: kept %v (%q), want %v", i, ok, jws, want)
		}
	}
	// Through Offers too, however many resources a caller names (a local key: no ration).
	o, _ := testOfferReceipt(t)
	for i := range maxKeptOffers + 100 {
		if _, err := o.Offers(context.Background(), terms(i).ResourceURL, twoNetworks[:1], now); err != nil {
			t.Fatal(err)
		}
	}
	if o.offers.kept() != maxKeptOffers {
		t.Errorf("%d offers kept after %d resources, want %d", o.offers.kept(), maxKeptOffers+100, maxKeptOffers)
	}
}

// A remote key signs afresh at most freshOffersBurst offers at once and freshOffersPerSecond
// after that; past the ration a 402 goes without offers (ErrOffersRationed) while kept offers
// are still handed out. A local key is not rationed.
func TestFreshOffersAreRationed(t *testing.T) {
	o, s, pub := remoteOfferReceipt(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	agent := func(i int) string { return fmt.Sprintf("https://verifier.example.com/score/agent-%d", i) }
	for i := range freshOffersBurst / len(twoNetworks) {
		signedOffers(t, o, pub, agent(i), twoNetworks, now)
	}
	_, err := o.Offers(context.Background(), agent(-1), twoNetworks, now)
	if !errors.Is(err, ErrOffersRationed) || s.signs.Load() != freshOffersBurst {
		t.Fatalf("past the burst: %v after %d signatures; want ErrOffersRationed after %d", err, s.signs.Load(), freshOffersBurst)
	}
	signedOffers(t, o, pub, agent(0), twoNetworks, now) // kept: costs nothing
	// One second later, freshOffersPerSecond more: one resource's two offers, then none.
	now = now.Add(time.Second)
	signedOffers(t, o, pub, agent(-1), twoNetworks, now)
	if _, err := o.Offers(context.Background(), agent(-2), twoNetworks, now); !errors.Is(err, ErrOffersRationed) {
		t.Errorf("a second resource in the same second: %v, want ErrOffersRationed", err)
	}
	if got := s.signs.Load(); got != freshOffersBurst+freshOffersPerSecond {
		t.Errorf("%d signatures, want %d", got, freshOffersBurst+freshOffersPerSecond)
	}
	local, key := testOfferReceipt(t)
	for i := range 4 * freshOffersBurst {
		signedOffers(t, local, key.Public().Key, agent(i), twoNetworks, now)
	}
}

// BenchmarkOffers is the offers of one 402 answer for two networks, handed out again (the
// probe's usual case), and, for comparison, signed afresh at each call.
func BenchmarkOffers(b *testing.B) {
	o, _ := testOfferReceipt(b)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const resource = "https://verifier.example.com/verify/schema"
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := o.Offers(context.Background(), resource, twoNetworks, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("signed", func(b *testing.B) {
		o, _ := testOfferReceipt(b)
		b.ReportAllocs()
		at := now
		for b.Loop() {
			at = at.Add(OfferValidity) // every kept offer is past its margin
			if _, err := o.Offers(context.Background(), resource, twoNetworks, at); err != nil {
				b.Fatal(err)
			}
		}
		if got := o.offers.kept(); got != len(twoNetworks) {
			b.Fatalf("%d offers kept", got)
		}
	})
}
