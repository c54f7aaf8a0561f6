package service_test

import (
	"bytes"
	"context"
	"log/slog"
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
	pr, err := e.svc.PaymentRequiredFor(ctx, resource, service.ScoreDescription, e.svc.Pricing().PriceScore, "m", nil)
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
