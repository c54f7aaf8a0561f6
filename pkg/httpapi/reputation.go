package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/verify"
)

// ReputationReader is the part of the store the reputation and score routes read.
type ReputationReader interface {
	History(ctx context.Context, agentID string, limit int, cursor string) (page []store.Verification, next string, err error)
	AgentAggregate(ctx context.Context, agentID string) (agg reputation.Aggregate, ok bool, err error)
}

// Limits of GET /reputation/{agent_id}.
const (
	// DefaultReputationPage is the page size without ?limit.
	DefaultReputationPage = 50
	// MaxReputationPage bounds ?limit: a page of 100 records is about 20 KB, which keeps the
	// signed answer quick to canonicalize and sign.
	MaxReputationPage = 100
	// maxCursorLen bounds ?cursor before the store decodes it; the store's own cursors are under
	// 800 characters.
	maxCursorLen = 1024
)

// The path prefixes of the two agent routes; {agent_id} is the rest of the path.
const (
	reputationPrefix = "/reputation/"
	scorePrefix      = "/score/"
)

// MountReputation adds GET /reputation/{agent_id} to rt.
func (s *Service) MountReputation(rt *Router) {
	rt.Handle(http.MethodGet, reputationPrefix, s.handleReputation)
}

// isTestAgent tells whether id is in the reserved test- namespace, which is never recorded
// (SPEC §4.1), so lookups of it always answer no_data without touching the store.
func isTestAgent(id string) bool { return strings.HasPrefix(id, "test-") }

// CheckAgentID refuses an agent id no verification could have recorded, with the 422 that names
// the field: verify.CheckAgentID, the check the verify request makes of agent_id, so that every
// route and tool takes exactly the ids a verification can record.
func CheckAgentID(id string) error {
	if problem, fix := verify.CheckAgentID(id); problem != "" {
		return apperr.Field("agent_id", problem, fix)
	}
	return nil
}

// agentIDFromPath reads {agent_id}, the percent-decoded path segment after prefix. A path with
// more segments is no route of this service.
func agentIDFromPath(r *http.Request, prefix string) (string, error) {
	raw, _ := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if strings.Contains(raw, "/") {
		return "", apperr.New(apperr.NotFound, "No route matches this path. The agent id is one path segment; percent-encode any '/' in it as %2F.")
	}
	id, err := url.PathUnescape(raw)
	if err != nil {
		return "", apperr.Field("agent_id", "is not a valid percent-encoded path segment", "Percent-encode the agent_id (RFC 3986) in the path.")
	}
	if err := CheckAgentID(id); err != nil {
		return "", err
	}
	return id, nil
}

// reputationQuery reads ?limit and ?cursor, refusing anything the route cannot honour with a 422
// naming the parameter.
func reputationQuery(r *http.Request) (limit int, cursor string, err error) {
	q, perr := url.ParseQuery(r.URL.RawQuery)
	if perr != nil {
		return 0, "", apperr.Field("query", "is not a valid URL query string", "Send ?limit=50&cursor=<next_cursor>, percent-encoded.")
	}
	limit = DefaultReputationPage
	limitFix := fmt.Sprintf("Send limit as an integer from 1 to %d, or leave it out for %d.", MaxReputationPage, DefaultReputationPage)
	switch vs := q["limit"]; {
	case len(vs) > 1:
		return 0, "", apperr.Field("limit", "is given more than once", limitFix)
	case len(vs) == 1:
		n, err := strconv.Atoi(vs[0])
		if err != nil || n < 1 || n > MaxReputationPage {
			return 0, "", apperr.Field("limit", fmt.Sprintf("must be an integer from 1 to %d", MaxReputationPage), limitFix)
		}
		limit = n
	}
	cursorFix := "Send back the next_cursor of the previous page unchanged, or leave cursor out for the newest page."
	switch vs := q["cursor"]; {
	case len(vs) > 1:
		return 0, "", apperr.Field("cursor", "is given more than once", cursorFix)
	case len(vs) == 1:
		if vs[0] == "" || len(vs[0]) > maxCursorLen {
			return 0, "", apperr.Field("cursor", "is not a cursor this service returned", cursorFix)
		}
		cursor = vs[0]
	}
	return limit, cursor, nil
}

// reputationUnavailable is the answer when histories or aggregates cannot be read.
func reputationUnavailable() *apperr.Error {
	e := apperr.New(apperr.Unavailable, "The reputation store is unavailable. Nothing was charged; try again shortly.")
	e.RetryAfter = 2
	return e
}

// Totals are an agent's verification counts over all time.
type Totals struct {
	Verifications int64 `json:"verifications"`
	Passed        int64 `json:"passed"`
	Failed        int64 `json:"failed"`
	Paid          int64 `json:"paid"`
}

// HistoryEntry is one verification in GET /reputation's history.
type HistoryEntry struct {
	VerificationID string  `json:"verification_id"`
	TaskID         string  `json:"task_id"`
	Result         string  `json:"result"`
	OverallRatio   float64 `json:"overall_ratio"`
	VerifiedAt     string  `json:"verified_at"`
	Paid           bool    `json:"paid"`
}

// ReputationDocument is GET /reputation/{agent_id} without its attestation, in wire order
// (SPEC §9). An agent with nothing recorded has Reason "no_data" and empty totals and history.
type ReputationDocument struct {
	AgentID    string            `json:"agent_id"`
	Reason     string            `json:"reason,omitempty"`
	Totals     Totals            `json:"totals"`
	FirstSeen  *string           `json:"first_seen"`
	LastSeen   *string           `json:"last_seen"`
	History    []HistoryEntry    `json:"history"`
	NextCursor *string           `json:"next_cursor"`
	Verify     verify.VerifyInfo `json:"verify"`
}

// ReputationPage is the signed GET /reputation/{agent_id} document: the agent's totals and one
// page of its history, newest first. limit and cursor are as the route takes them.
func (s *Service) ReputationPage(ctx context.Context, agentID string, limit int, cursor string) ([]byte, error) {
	if err := CheckAgentID(agentID); err != nil {
		return nil, err
	}
	doc := ReputationDocument{AgentID: agentID, History: []HistoryEntry{}, Verify: verify.NewVerifyInfo(s.BaseURL, s.Keys.Current.Version)}
	if !isTestAgent(agentID) && s.Reputation != nil {
		// The aggregate first: a store may complete the history when it reads the aggregate
		// (records whose writer died after counting them), and the page should show them.
		agg, found, err := s.Reputation.AgentAggregate(ctx, agentID)
		if err != nil {
			s.log().Error("read aggregate failed", "err", err.Error())
			return nil, reputationUnavailable()
		}
		page, next, err := s.Reputation.History(ctx, agentID, limit, cursor)
		if errors.Is(err, store.ErrBadCursor) {
			return nil, apperr.Field("cursor", "is not a cursor this service returned", "Send back the next_cursor of the previous page unchanged, or leave cursor out for the newest page.")
		}
		if err != nil {
			s.log().Error("read history failed", "err", err.Error())
			return nil, reputationUnavailable()
		}
		for _, v := range page {
			doc.History = append(doc.History, HistoryEntry{
				VerificationID: v.VerificationID, TaskID: v.TaskID, Result: v.Result,
				OverallRatio: v.OverallRatio, VerifiedAt: verify.FormatTime(v.VerifiedAt), Paid: v.Paid,
			})
		}
		if next != "" {
			doc.NextCursor = &next
		}
		if found && agg.Verifications > 0 {
			doc.Totals = Totals{Verifications: agg.Verifications, Passed: agg.Passed, Failed: agg.Failed, Paid: agg.Paid}
			doc.FirstSeen, doc.LastSeen = formatTime(agg.FirstSeen), formatTime(agg.LastSeen)
		}
	}
	if doc.Totals.Verifications == 0 && len(doc.History) == 0 {
		doc.Reason = "no_data"
	}
	return s.sign(receipt.ContextReputation, doc)
}

// formatTime is t as the service writes times, for a field that may be null.
func formatTime(t time.Time) *string {
	f := verify.FormatTime(t)
	return &f
}

// sign serializes doc and attests it under context, timestamped now.
func (s *Service) sign(context string, doc any) ([]byte, error) {
	body, err := jsonMarshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode document: %w", err)
	}
	signed, err := s.Keys.Current.Attest(context, body, verify.FormatTime(s.now()))
	if err != nil {
		return nil, fmt.Errorf("sign document: %w", err)
	}
	return signed, nil
}

// handleReputation is GET /reputation/{agent_id}: free, paginated, signed with the reputation
// context.
func (s *Service) handleReputation(w http.ResponseWriter, r *http.Request) {
	id, err := agentIDFromPath(r, reputationPrefix)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	limit, cursor, err := reputationQuery(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	body, err := s.ReputationPage(r.Context(), id, limit, cursor)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, body)
}
