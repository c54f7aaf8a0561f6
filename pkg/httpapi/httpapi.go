// Package httpapi serves the verifier over HTTP: the same handlers behind the local server and
// behind each Lambda function, so local and cloud behave identically.
package httpapi

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/verify"
)

// DefaultDeadline bounds one request's work, well inside API Gateway's 29 s integration timeout.
const DefaultDeadline = 10 * time.Second

// Recorder is the part of the store the verify routes need: a best-effort history write.
type Recorder interface {
	RecordVerification(ctx context.Context, v store.Verification) error
}

// Pinger is the part of the store /health probes.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Service holds what the handlers share. Build it once per process (per Lambda cold start).
type Service struct {
	Engine  *verify.Engine
	Keys    receipt.KeyRing
	BaseURL string // public base URL, never taken from a request's Host header
	Store   interface {
		Recorder
		Pinger
	}
	// Allowance counts free calls and reserves payments; nil disables both (hand-built services
	// in tools and tests only: every deployment sets it).
	Allowance Allowance
	// Reputation reads agents' histories and aggregates for /reputation and /score; nil answers
	// every lookup with no_data (hand-built services in tools and tests only).
	Reputation ReputationReader
	// Payer builds payment requirements and talks to the facilitator; nil runs free-only (§8.6).
	Payer            Payer
	Pricing          Pricing
	Log              *slog.Logger
	Now              func() time.Time
	NewID            func() string
	TrustedProxyHops int
	Deadline         time.Duration
	StoreTimeout     time.Duration // per allowance or reservation call; DefaultStoreTimeout when zero
	CallerSalt       []byte        // per-deployment salt of caller ids

	records chan store.Verification // history writes waiting for StartRecording's writers
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
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) newID() string {
	if s.NewID != nil {
		return s.NewID()
	}
	return uuid.Must(uuid.NewRandomFromReader(rand.Reader)).String()
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// writeJSON writes a JSON body with status.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// PublicError is what a caller may see of err, over any transport: err itself when it is an
// *apperr.Error, otherwise a generic retryable internal error, with the cause logged under route.
func (s *Service) PublicError(route string, err error) *apperr.Error {
	if e, ok := apperr.As(err); ok {
		return e
	}
	s.log().Error("internal error", "route", route, "err", err.Error())
	e := apperr.New(apperr.Internal, "The request could not be completed. Nothing was charged; try again.")
	e.RetryAfter = 1
	return e
}

// WriteError writes err in the §7 envelope. Errors that are not *apperr.Error are internal: the
// caller gets a generic 500 and the log gets the cause.
func (s *Service) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.PublicError(r.URL.Path, err)
	if e.Retryable && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.Header().Set("Cache-Control", "no-store")
	b, _ := jsonMarshal(e)
	writeJSON(w, e.Status, b)
}

// errDeadline is returned when a request's work outlives its deadline.
var errDeadline = errors.New("deadline exceeded")
