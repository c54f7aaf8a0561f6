package service

import (
	"context"
	"encoding/json"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// ScoreDescription describes GET /score in payment requirements and the x402 manifest.
const ScoreDescription = "Signed trust score of an AI agent from its verification record (SPEC §9)."

// ScoreCounts are an agent's verification counts over all time.
type ScoreCounts struct {
	Total  int64 `json:"total"`
	Passed int64 `json:"passed"`
	Failed int64 `json:"failed"`
	Paid   int64 `json:"paid"`
}

// WindowCounts are an agent's verifications of the last 30 UTC days.
type WindowCounts struct {
	Total  int64 `json:"total"`
	Passed int64 `json:"passed"`
	Failed int64 `json:"failed"`
}

// ScoreSchemaJSON is the JSON Schema of the score document with its attestation (GET
// /score/{agent_id}, and the MCP tool get_verification_record's answer): the one description the
// OpenAPI document and the tool's output schema share. Like the verification answer's
// (pkg/verify), it uses only keywords that draft-07 and 2020-12 validators read alike.
const ScoreSchemaJSON = `{
  "type": "object",
  "description": "An agent's trust score, signed with the trust-score context. score, the rates and the times are null, with reason no_data, for unknown and test- agents.",
  "required": ["agent_id", "score", "confidence", "verifications", "last_30_days", "pass_rate", "mean_overall_ratio",
    "first_seen", "last_seen", "distinct_tasks", "distinct_callers", "method", "computed_at", "verify", "attestation"],
  "properties": {
    "agent_id": {"type": "string"},
    "score": {"type": ["number", "null"], "minimum": 0, "maximum": 100, "description": "100 x the lower bound of the 95% Wilson interval of the weighted pass rate (recent and paid verifications weigh more)."},
    "reason": {"type": "string", "enum": ["no_data", "insufficient_data"], "description": "Why score is null: nothing recorded (or a test- id), or too little weight left to score."},
    "confidence": {"type": "string", "enum": ["low", "medium", "high"], "description": "By effective verifications: low below 10, medium below 100, high from 100."},
    "verifications": {"type": "object", "required": ["total", "passed", "failed", "paid"], "properties": {
      "total": {"type": "integer"}, "passed": {"type": "integer"}, "failed": {"type": "integer"}, "paid": {"type": "integer"}}},
    "last_30_days": {"type": "object", "required": ["total", "passed", "failed"], "properties": {
      "total": {"type": "integer"}, "passed": {"type": "integer"}, "failed": {"type": "integer"}}},
    "pass_rate": {"type": ["number", "null"]},
    "mean_overall_ratio": {"type": ["number", "null"]},
    "first_seen": {"type": ["string", "null"]},
    "last_seen": {"type": ["string", "null"]},
    "distinct_tasks": {"type": "integer"},
    "distinct_callers": {"type": "integer"},
    "method": {"type": "string", "description": "Versioned name of the score formula."},
    "computed_at": {"type": "string"},
    "verify": ` + receipt.VerifyInfoSchemaJSON + `,
    "attestation": ` + receipt.AttestationSchemaJSON + `
  }
}`

// ScoreDocumentBody is GET /score/{agent_id} without its attestation, in wire order (SPEC §9).
// Score is null exactly when Reason is set ("no_data": nothing recorded, or a test- id); the rates
// and times are null then too.
type ScoreDocumentBody struct {
	AgentID          string             `json:"agent_id"`
	Score            *float64           `json:"score"`
	Reason           string             `json:"reason,omitempty"`
	Confidence       string             `json:"confidence"`
	Verifications    ScoreCounts        `json:"verifications"`
	Last30Days       WindowCounts       `json:"last_30_days"`
	PassRate         *float64           `json:"pass_rate"`
	MeanOverallRatio *float64           `json:"mean_overall_ratio"`
	FirstSeen        *string            `json:"first_seen"`
	LastSeen         *string            `json:"last_seen"`
	DistinctTasks    int64              `json:"distinct_tasks"`
	DistinctCallers  int64              `json:"distinct_callers"`
	Method           string             `json:"method"`
	ComputedAt       string             `json:"computed_at"`
	Verify           receipt.VerifyInfo `json:"verify"`
}

// agentRecord is one read of an agent's aggregate: found is false for unknown and test- ids.
type agentRecord struct {
	agentID string
	agg     reputation.Aggregate
	found   bool
}

// lookupAgent reads the agent's aggregate with one read (none for test- ids). A store failure is a
// retryable 503 that charges nothing.
func (s *Service) lookupAgent(ctx context.Context, agentID string) (agentRecord, error) {
	agentID, err := AgentID(agentID)
	if err != nil {
		return agentRecord{}, err
	}
	rec := agentRecord{agentID: agentID}
	if isTestAgent(agentID) {
		return rec, nil
	}
	agg, found, err := s.d.Store.AgentAggregate(ctx, agentID)
	if err != nil {
		s.d.Log.Error("read aggregate failed", "err", err.Error())
		return agentRecord{}, reputationUnavailable()
	}
	rec.agg, rec.found = agg, found && agg.Verifications > 0
	return rec, nil
}

// scoreLookup is one read of an agent's aggregate: whether its score is paid for and, from that
// same read, its signed document. GET /score and the MCP tool get_verification_record price and
// answer from one lookup, so a verification recorded in between can neither make a paid score
// free nor change what was priced.
type scoreLookup struct {
	svc *Service
	rec agentRecord
}

// lookupScore reads agentID's aggregate once (not at all for test- ids). An invalid id is a 422
// naming agent_id, a store failure a retryable 503.
func (s *Service) lookupScore(ctx context.Context, agentID string) (scoreLookup, error) {
	rec, err := s.lookupAgent(ctx, agentID)
	if err != nil {
		return scoreLookup{}, err
	}
	return scoreLookup{svc: s, rec: rec}, nil
}

// priced tells whether the score must be paid for: the agent has a score and the deployment takes
// payments (SPEC §8.6: without a payee, /score is free). Unknown agents and test- ids are free (a
// signed no_data answer).
func (l scoreLookup) priced() bool { return l.rec.found && l.svc.d.Payer != nil }

// document is the signed GET /score/{agent_id} document, computed now from the lookup's read and
// signed with the trust-score context. It does no payment accounting: callers charge first when
// priced says so.
func (l scoreLookup) document(ctx context.Context) ([]byte, error) {
	return l.svc.scoreDocument(ctx, l.rec)
}

// scoreDocument builds and signs the score of rec as of now.
func (s *Service) scoreDocument(ctx context.Context, rec agentRecord) ([]byte, error) {
	now := s.d.Now()
	a := rec.agg
	if !rec.found {
		a = reputation.Aggregate{}
	}
	sc := a.ScoreAt(now)
	last, lastPassed := a.LastDays(now)
	doc := ScoreDocumentBody{
		AgentID: rec.agentID, Score: sc.Value, Reason: sc.Reason, Confidence: sc.Confidence,
		Verifications:   ScoreCounts{Total: a.Verifications, Passed: a.Passed, Failed: a.Failed, Paid: a.Paid},
		Last30Days:      WindowCounts{Total: last, Passed: lastPassed, Failed: last - lastPassed},
		DistinctTasks:   a.Tasks.Estimate(),
		DistinctCallers: a.Callers.Estimate(),
		Method:          reputation.Method,
		ComputedAt:      receipt.FormatTime(now),
		Verify:          receipt.NewVerifyInfo(s.d.BaseURL, s.d.Keys.Current.Version),
	}
	if a.Verifications > 0 {
		pass, mean := a.PassRate(), a.MeanOverallRatio()
		doc.PassRate, doc.MeanOverallRatio = &pass, &mean
		doc.FirstSeen, doc.LastSeen = formatTime(a.FirstSeen), formatTime(a.LastSeen)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// The attestation's timestamp is computed_at, as a verification's is its verified_at.
	return s.d.Keys.Current.WithContext(ctx).Attest(receipt.ContextScore, body, doc.ComputedAt)
}

// ScorePaymentRequired is the x402 PaymentRequired of GET /score/{agent_id}: PriceScore, resource

// ScoreCall is one trust score request as a transport received it.
type ScoreCall struct {
	AgentID string
	Payment Payment
	// Resource, Description and Extensions make the x402 PaymentRequired of the route or tool.
	Resource, Description string
	Extensions            map[string]any
	Route                 string // names the route or tool in the log
}

// Score answers a trust score request, once for every transport: a free signed no_data answer
// for unknown and test- ids (and every answer of a deployment without a payee); otherwise
// PriceScore through x402, with no free allowance. Price and answer come from one read of the
// aggregate, and nothing is settled unless the signed score was built.
func (s *Service) Score(ctx context.Context, call ScoreCall) Outcome {
	lookup, err := s.lookupScore(ctx, call.AgentID)
	if err != nil {
		return s.refused(call.Route, err)
	}
	if !lookup.priced() {
		body, err := lookup.document(ctx)
		if err != nil {
			return s.refused(call.Route, err)
		}
		return Outcome{Kind: Answered, Body: body}
	}
	if !call.Payment.Sent {
		return prompted(s.scorePaymentRequired(ctx, call, apperr.PaymentRequired, "", nil), PromptScorePaid)
	}
	if call.Payment.Err != nil {
		return prompted(s.scorePaymentRequired(ctx, call, apperr.PaymentInvalid, "", nil), PromptUndecodablePayment)
	}
	var body []byte
	sr, fail, err := s.charge(ctx, call.Payment.Payload, call.Resource, s.d.Pricing.PriceScore, func(ctx context.Context, _ receipt.Payment) (err error) {
		body, err = lookup.document(ctx)
		return err
	}, nil)
	switch {
	case err != nil:
		return s.refused(call.Route, err)
	case fail != nil:
		return s.scorePaymentRequired(ctx, call, fail.Code, fail.Message, fail.Settlement)
	}
	return Outcome{Kind: Answered, Body: body, Settlement: sr, SettledAmount: call.Payment.Payload.Accepted.Amount}
}

// scorePaymentRequired is a score's payment-required outcome: there is no free allowance to
// report, since scores have none.
func (s *Service) scorePaymentRequired(ctx context.Context, call ScoreCall, code apperr.Code, message string, settlement *x402.SettleResponse) Outcome {
	pr, err := s.paymentRequiredFor(ctx, call.Resource, call.Description, s.d.Pricing.PriceScore, message, call.Extensions)
	if err != nil {
		return s.refused(call.Route, err)
	}
	return Outcome{Kind: PaymentRequired, Code: code, PaymentRequired: pr, Settlement: settlement}
}
