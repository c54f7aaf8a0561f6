package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/verify"
)

// VerifyPaths are the two names of the one verification route; they behave byte for byte alike.
var VerifyPaths = []string{"/verify/schema", "/verify/deliverable"}

// MountVerify adds the verify routes to rt.
func (s *Service) MountVerify(rt *Router) {
	for _, p := range VerifyPaths {
		rt.Handle(http.MethodPost, p, s.handleVerify)
	}
}

// readBody reads at most limit bytes; a longer body is a 413 naming the limit.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, apperr.Field("body", "could not be read", "Send the body again.")
	}
	if int64(len(body)) > limit {
		return nil, apperr.TooLarge(limit)
	}
	return body, nil
}

// Verification is a finished check: the signed response and the report it was made from.
type Verification struct {
	Body       []byte
	Report     *verify.Report
	Req        *verify.Request
	VerifiedAt time.Time
}

// RunVerification decodes, checks and signs one request body within the service's deadline. The
// MCP tool and the REST routes both use it, so their answers are the same.
func (s *Service) RunVerification(ctx context.Context, body []byte) (*Verification, error) {
	ctx, cancel := context.WithTimeout(ctx, s.deadline())
	defer cancel()
	type result struct {
		v   *Verification
		err error
	}
	done := make(chan result, 1)
	go func() {
		req, sch, err := s.Engine.Decode(body)
		if err != nil {
			done <- result{err: err}
			return
		}
		now := s.now()
		env := verify.Envelope{
			VerificationID: s.newID(), VerifiedAt: now, VerifierVersion: verify.Version,
			Verify: verify.NewVerifyInfo(s.BaseURL, s.Keys.Current.Version),
		}
		out, rep, err := s.Engine.Finish(req, sch, env, s.Keys.Current)
		done <- result{v: &Verification{Body: out, Report: rep, Req: req, VerifiedAt: now}, err: err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		e := apperr.New(apperr.DeadlineExceeded, "The verification did not finish within its deadline. Nothing was charged; try again or send a smaller request.")
		e.RetryAfter = 1
		return nil, e
	}
}

// recordTimeout bounds the best-effort history write.
const recordTimeout = 2 * time.Second

func (s *Service) deadline() time.Duration {
	if s.Deadline > 0 {
		return s.Deadline
	}
	return DefaultDeadline
}

func (s *Service) handleVerify(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r, s.Engine.Limits().MaxBody)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	v, err := s.RunVerification(r.Context(), body)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	s.Record(r.Context(), v, ClientIP(r, s.TrustedProxyHops), false)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v.Body)
}

// Record adds a delivered verification to its agent's history, best-effort: a store failure is
// logged and never fails or delays the answer beyond the write itself. test- ids and anonymous
// verifications are never recorded.
func (s *Service) Record(ctx context.Context, v *Verification, clientIP string, paid bool) {
	if s.Store == nil || v.Req.AgentID == nil || strings.HasPrefix(*v.Req.AgentID, "test-") {
		return
	}
	rec := store.Verification{
		AgentID: *v.Req.AgentID, VerificationID: v.Report.VerificationID, TaskID: v.Req.TaskID,
		Result: v.Report.Result, OverallRatio: v.Report.OverallRatio(), VerifiedAt: v.VerifiedAt,
		Paid: paid, CallerID: s.CallerID(clientIP),
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := s.Store.RecordVerification(ctx, rec); err != nil && !errors.Is(err, context.Canceled) {
		s.log().Warn("record verification failed", "verification_id", rec.VerificationID, "err", err.Error())
	}
}
