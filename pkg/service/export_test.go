package service

import (
	"context"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// FreshAttestationsBurst is the attestation ration's burst, for the external tests that spend it.
const FreshAttestationsBurst = freshAttestationsBurst

// The unexported steps of the application, for its external tests.

// ScoreLookup is scoreLookup.
type ScoreLookup = scoreLookup

// LookupScore is s.lookupScore.
func LookupScore(s *Service, ctx context.Context, agentID string) (ScoreLookup, error) {
	return s.lookupScore(ctx, agentID)
}

// Priced is l.priced.
func Priced(l ScoreLookup) bool { return l.priced() }

// Document is l.document.
func Document(l ScoreLookup, ctx context.Context) ([]byte, error) { return l.document(ctx) }

// Charge is s.charge without a settling step.
func Charge(s *Service, ctx context.Context, payload x402.PaymentPayload, resourceURL, priceUSD string, work func(context.Context, receipt.Payment) error) (*x402.SettleResponse, *PaymentFailure, error) {
	return s.charge(ctx, payload, resourceURL, priceUSD, work, nil)
}

// WaitForFolds is s.waitForFolds.
func WaitForFolds(s *Service) { s.waitForFolds() }

// PaymentRequiredFor is s.paymentRequiredFor.
func PaymentRequiredFor(s *Service, ctx context.Context, resourceURL, description, priceUSD, message string, extensions map[string]any) (x402.PaymentRequired, error) {
	return s.paymentRequiredFor(ctx, resourceURL, description, priceUSD, message, extensions)
}

// PaidAnswerTTL is s.paidAnswerTTL.
func PaidAnswerTTL(s *Service) time.Duration { return s.paidAnswerTTL() }
