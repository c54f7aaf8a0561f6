package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agent-output-verifier/verifier/internal/kmstest"
	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// kmsOffers is a service that takes payments on Base and Base Sepolia (two offers per 402
// answer) and signs with a kms-sign key inside a test KMS, logging into log, on clock.
type kmsOffers struct {
	svc   *service.Service
	kms   *kmstest.Server
	clock *testclock.Clock
	log   *bytes.Buffer
}

func newKMSOffers(t *testing.T) *kmsOffers {
	t.Helper()
	e := &kmsOffers{kms: kmstest.Start(t), clock: testclock.New(testclock.Epochs()[0]), log: &bytes.Buffer{}}
	c, err := keys.NewKMS(aws.Config{Region: "us-east-1", RetryMaxAttempts: 1, BaseEndpoint: aws.String(e.kms.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDOFFERS", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	key, err := keys.FromKMSSign(context.Background(), c.API(), "alias/verifier-receipts", "v-kms")
	if err != nil {
		t.Fatal(err)
	}
	cfg := x402.Config{FacilitatorURL: "http://127.0.0.1:9", PayToEVM: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
		Networks: []string{x402.NetworkBase, x402.NetworkBaseSepolia}}
	payer, err := x402.New(cfg, x402.NewFacilitator(cfg), nil, x402.WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	d := testsvc.Complete(service.Deps{Now: e.clock.Now, Payer: payer, Log: slog.New(slog.NewTextHandler(e.log, nil))})
	d.Keys.Current = key
	e.svc = testsvc.New(t, d)
	return e
}

// probe is a 402 answer for resource under ctx, as every route builds one.
func (e *kmsOffers) probe(t *testing.T, ctx context.Context, resource string) x402.PaymentRequired {
	t.Helper()
	pr, err := service.PaymentRequiredFor(e.svc, ctx, resource, service.ScoreDescription, e.svc.Pricing().PriceScore, "m", nil)
	if err != nil {
		t.Fatalf("402 answer: %v", err)
	}
	if len(pr.Accepts) != 2 {
		t.Fatalf("%d requirements, want Base and Base Sepolia", len(pr.Accepts))
	}
	return pr
}

// Offers are signed through the request's context: a request cancelled, or past its deadline,
// makes no KMS call that outlives it, and is still answered its 402, with the offers left out
// and the failure logged, as when the key source cannot sign. The same service signs under a
// live context, so the check can fail.
func TestOffersSignUnderTheRequestsContext(t *testing.T) {
	e := newKMSOffers(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for name, ctx := range map[string]context.Context{"cancelled": cancelled, "expired": expired} {
		e.log.Reset()
		pr := e.probe(t, ctx, e.svc.BaseURL()+"/score/agent-"+name)
		if _, ok := pr.Extensions[x402.ExtOfferReceipt]; ok {
			t.Errorf("%s: offers signed under a dead context", name)
		}
		if !strings.Contains(e.log.String(), "offers not signed") {
			t.Errorf("%s: the failure was not logged: %q", name, e.log.String())
		}
	}
	if n := e.kms.Signs(); n != 0 {
		t.Errorf("KMS signed %d times for requests that had ended", n)
	}
	pr := e.probe(t, context.Background(), e.svc.BaseURL()+"/score/agent-live")
	if _, ok := pr.Extensions[x402.ExtOfferReceipt]; !ok || e.kms.Signs() != 2 {
		t.Fatalf("live request: offers %v, %d KMS signatures; want both offers signed by KMS", pr.Extensions, e.kms.Signs())
	}
}

// offerPayloads is the offers of a 402 answer, each verified with the KMS key.
func (e *kmsOffers) offerPayloads(t *testing.T, pr x402.PaymentRequired) (jws []string, payloads []x402.OfferPayload) {
	t.Helper()
	raw, err := json.Marshal(pr.Extensions[x402.ExtOfferReceipt])
	if err != nil {
		t.Fatal(err)
	}
	var ext struct {
		Info struct{ Offers []x402.SignedOffer } `json:"info"`
	}
	if err := json.Unmarshal(raw, &ext); err != nil || len(ext.Info.Offers) != len(pr.Accepts) {
		t.Fatalf("offers %s for %d requirements (%v)", raw, len(pr.Accepts), err)
	}
	for _, off := range ext.Info.Offers {
		_, p, err := x402.VerifyJWS(off.Signature, e.kms.Public())
		if err != nil {
			t.Fatal(err)
		}
		var payload x402.OfferPayload
		if err := json.Unmarshal(p, &payload); err != nil {
			t.Fatal(err)
		}
		jws, payloads = append(jws, off.Signature), append(payloads, payload)
	}
	return jws, payloads
}

// Probes of one resource cost KMS one signature per network while the offers stay valid for
// the reuse margin: the offers handed out again verify and are still valid for at least the
// margin; past it they are signed again.
func TestProbesShareSignedOffers(t *testing.T) {
	e := newKMSOffers(t)
	resource := e.svc.BaseURL() + "/verify/schema"
	first, _ := e.offerPayloads(t, e.probe(t, context.Background(), resource))
	if e.kms.Signs() != 2 {
		t.Fatalf("first probe: %d KMS signatures, want one per network", e.kms.Signs())
	}
	e.clock.Advance(x402.OfferValidity - x402.OfferReuseMargin)
	again, payloads := e.offerPayloads(t, e.probe(t, context.Background(), resource))
	if e.kms.Signs() != 2 || !slices.Equal(again, first) {
		t.Fatalf("probe within the margin: %d KMS signatures, same offers %v; want the kept ones", e.kms.Signs(), slices.Equal(again, first))
	}
	for i, p := range payloads {
		if left := time.Unix(p.ValidUntil, 0).Sub(e.clock.Now()); left < x402.OfferReuseMargin {
			t.Errorf("kept offer %d handed out with %v left, under %v", i, left, x402.OfferReuseMargin)
		}
	}
	e.clock.Advance(time.Second)
	renewed, payloads := e.offerPayloads(t, e.probe(t, context.Background(), resource))
	if e.kms.Signs() != 4 || slices.Equal(renewed, first) || payloads[0].ValidUntil != e.clock.Now().Add(x402.OfferValidity).Unix() {
		t.Fatalf("probe past the margin: %d KMS signatures, validUntil %d; want 4 and new offers", e.kms.Signs(), payloads[0].ValidUntil)
	}
}

// A caller naming a new agent on every score probe meets the ration of fresh KMS signatures:
// its 402 answers go on, without offers, logged as a warning, while the offers already kept
// (a verify route's) are still handed out.
func TestScoreProbesAreRationed(t *testing.T) {
	e := newKMSOffers(t)
	verify := e.svc.BaseURL() + "/verify/schema"
	e.offerPayloads(t, e.probe(t, context.Background(), verify))
	rationed := 0
	for i := range 40 {
		pr := e.probe(t, context.Background(), fmt.Sprintf("%s/score/agent-%d", e.svc.BaseURL(), i))
		if _, ok := pr.Extensions[x402.ExtOfferReceipt]; !ok {
			rationed++
		}
	}
	signs := e.kms.Signs()
	if rationed == 0 || signs >= 2+40*2 || !strings.Contains(e.log.String(), "level=WARN msg=\"offers not signed\"") {
		t.Fatalf("%d of 40 new agents' probes without offers, %d KMS signatures, log %q; want the ration to hold", rationed, signs, e.log.String())
	}
	e.offerPayloads(t, e.probe(t, context.Background(), verify))
	if e.kms.Signs() != signs {
		t.Errorf("the kept verify offers were signed again")
	}
}
