package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// PaidAnswerTTL is how long a paid answer is kept under its payment identifier (SPEC §16): as
// long as the stored verification record it answers for (Deps.RecordDays, VERIFIER_RECORD_DAYS),
// so a client can retry, or fetch its answer again, for as long as the record exists.
func (s *Service) PaidAnswerTTL() time.Duration {
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

// keptAnswer answers a paid call whose payment identifier already has an answer: the same request
// gets the kept answer and its settlement again (nothing verified, settled or recorded again),
// another request a 409. done is false when nothing is kept under id.
func (s *Service) keptAnswer(ctx context.Context, call VerifyCall, id, reqHash string) (o Outcome, done bool) {
	sctx, cancel := context.WithTimeout(ctx, s.d.StoreTimeout)
	defer cancel()
	a, ok, err := s.d.Store.PaidAnswer(sctx, id)
	switch {
	case err != nil:
		s.d.Log.Error("paid answer lookup failed", "err", err.Error())
		return s.refused(call.Route, storeUnavailable()), true
	case !ok:
		return Outcome{}, false
	case a.RequestHash != reqHash:
		return s.refused(call.Route, paymentIDConflict()), true
	}
	var sr x402.SettleResponse
	if err := json.Unmarshal(a.Settlement, &sr); err != nil {
		s.d.Log.Error("paid answer unreadable", "err", err.Error())
		return s.refused(call.Route, storeUnavailable()), true
	}
	var head struct {
		VerificationID string `json:"verification_id"`
		Result         string `json:"result"`
	}
	_ = json.Unmarshal(a.Response, &head) // for the log only
	// SettledAmount stays empty: this answer settled nothing, and the revenue was counted once.
	return Outcome{Kind: Answered, Body: a.Response, Settlement: &sr, VerificationID: head.VerificationID, Result: head.Result, Replayed: true}, true
}

// keepAnswer keeps a delivered paid answer under its payment identifier. A failure is logged and
// does not change the answer, which was paid for and is delivered; a retry of it then finds its
// payment used (payment_replayed) instead of the kept answer.
func (s *Service) keepAnswer(ctx context.Context, id, reqHash string, body []byte, sr *x402.SettleResponse) {
	settlement, err := json.Marshal(sr)
	if err != nil {
		s.d.Log.Error("paid answer not kept", "err", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.d.StoreTimeout)
	defer cancel()
	err = s.d.Store.KeepPaidAnswer(ctx, id, store.PaidAnswer{RequestHash: reqHash, Response: body, Settlement: settlement}, s.d.Now().Add(s.PaidAnswerTTL()))
	if err != nil && !errors.Is(err, store.ErrPaidAnswerKept) {
		s.d.Log.Error("paid answer not kept", "err", err.Error())
	}
}

func paymentIDConflict() *apperr.Error {
	return apperr.New(apperr.PaymentIDConflict, "This payment identifier was already used for another request. Nothing was verified or charged; use a new payment identifier for a new request.")
}
