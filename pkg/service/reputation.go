package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// Limits of a reputation page.
const (
	// DefaultReputationPage is the page size without ?limit.
	DefaultReputationPage = 50
	// MaxReputationPage bounds ?limit: a page of 100 records is about 20 KB, which keeps the
	// signed answer quick to canonicalize and sign.
	MaxReputationPage = 100
)

// isTestAgent tells whether id is in the reserved test- namespace, which is never recorded
// (SPEC §4.1), so lookups of it always answer no_data without touching the store.
func isTestAgent(id string) bool { return strings.HasPrefix(id, "test-") }

// AgentID reads an agent id as a verification records it (wire.AgentID: its NFC form, the check
// the verify request makes of agent_id), so that every route and tool takes exactly the ids a
// verification can record and finds them under any spelling of one name; an id none could have
// recorded is the 422 that names the field.
func AgentID(id string) (string, error) {
	norm, problem, fix := wire.AgentID(id)
	if problem != "" {
		return "", apperr.Field("agent_id", problem, fix)
	}
	return norm, nil
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
	AgentID    string             `json:"agent_id"`
	Reason     string             `json:"reason,omitempty"`
	Totals     Totals             `json:"totals"`
	FirstSeen  *string            `json:"first_seen"`
	LastSeen   *string            `json:"last_seen"`
	History    []HistoryEntry     `json:"history"`
	NextCursor *string            `json:"next_cursor"`
	Verify     receipt.VerifyInfo `json:"verify"`
}

// ReputationPage is the signed GET /reputation/{agent_id} document: the agent's totals and one
// page of its history, newest first. limit and cursor are as the route takes them.
//
// A signing key with a message limit (kms-sign:, 4096 bytes) signs a page of at most the
// entries that fit: the page is read again with that many as its limit, so that its next_cursor
// continues right after the last entry shown and the pages still cover the whole history.
func (s *Service) ReputationPage(ctx context.Context, agentID string, limit int, cursor string) ([]byte, error) {
	agentID, err := AgentID(agentID)
	if err != nil {
		return nil, err
	}
	for {
		doc, err := s.reputationDocument(ctx, agentID, limit, cursor)
		if err != nil {
			return nil, err
		}
		signed, err := s.sign(ctx, receipt.ContextReputation, doc)
		tooLarge, ok := errors.AsType[*receipt.MessageTooLargeError](err)
		if !ok || len(doc.History) <= 1 {
			return signed, err
		}
		// The fewest entries to leave out, measured on the canonical form the key signs; the
		// next read's cursor may differ in length, which the next round corrects.
		n, err := fittingEntries(doc, tooLarge)
		if err != nil {
			return nil, err
		}
		limit = max(n, 1)
	}
}

// fittingEntries is how many of doc's history entries fit in a signed message of at most
// tooLarge.Max bytes, whose overhead over the canonical document is what tooLarge tells.
func fittingEntries(doc ReputationDocument, tooLarge *receipt.MessageTooLargeError) (int, error) {
	size := func(n int) (int, error) {
		d := doc
		d.History = doc.History[:n]
		body, err := json.Marshal(d)
		if err != nil {
			return 0, err
		}
		c, err := receipt.Canonicalize(body)
		return len(c), err
	}
	full, err := size(len(doc.History))
	if err != nil {
		return 0, err
	}
	overhead := tooLarge.Size - full
	lo, hi := 0, len(doc.History) // lo fits (or is 0), hi does not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		l, err := size(mid)
		if err != nil {
			return 0, err
		}
		if overhead+l <= tooLarge.Max {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// reputationDocument reads the agent's totals and one page of its history.
func (s *Service) reputationDocument(ctx context.Context, agentID string, limit int, cursor string) (ReputationDocument, error) {
	doc := ReputationDocument{AgentID: agentID, History: []HistoryEntry{}, Verify: receipt.NewVerifyInfo(s.d.BaseURL, s.d.Keys.Current.Version)}
	if !isTestAgent(agentID) {
		// The aggregate first: a store may complete the history when it reads the aggregate
		// (records whose writer died after counting them), and the page should show them.
		agg, found, err := s.d.Store.AgentAggregate(ctx, agentID)
		if err != nil {
			s.d.Log.Error("read aggregate failed", "err", err.Error())
			return doc, reputationUnavailable()
		}
		page, next, err := s.d.Store.History(ctx, agentID, limit, cursor)
		if errors.Is(err, store.ErrBadCursor) {
			return doc, apperr.Field("cursor", "is not a cursor this service returned", "Send back the next_cursor of the previous page unchanged, or leave cursor out for the newest page.")
		}
		if err != nil {
			s.d.Log.Error("read history failed", "err", err.Error())
			return doc, reputationUnavailable()
		}
		for _, v := range page {
			doc.History = append(doc.History, HistoryEntry{
				VerificationID: v.VerificationID, TaskID: v.TaskID, Result: v.Result,
				OverallRatio: v.OverallRatio, VerifiedAt: receipt.FormatTime(v.VerifiedAt), Paid: v.Paid,
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
	return doc, nil
}

// formatTime is t as the service writes times, for a field that may be null.
func formatTime(t time.Time) *string {
	f := receipt.FormatTime(t)
	return &f
}

// sign serializes doc and attests it under context, timestamped now.
func (s *Service) sign(ctx context.Context, context string, doc any) ([]byte, error) {
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode document: %w", err)
	}
	signed, err := s.d.Keys.Current.WithContext(ctx).Attest(context, body, receipt.FormatTime(s.d.Now()))
	if err != nil {
		return nil, fmt.Errorf("sign document: %w", err)
	}
	return signed, nil
}

// handleReputation is GET /reputation/{agent_id}: free, paginated, signed with the reputation
