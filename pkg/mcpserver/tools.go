package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/verify"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// The tools' names (SPEC §10); their x402 resource URLs are mcp://tool/<name>.
const (
	ToolVerify = "verify_schema"
	ToolRecord = "get_verification_record"
)

// Descriptions of the paid resources in payment requirements.
const (
	verifyResourceDescription = "Verify an AI agent's JSON output against a JSON Schema and business rules; signed receipt."
	recordResourceDescription = "Signed trust score of an AI agent from its verification history."
)

// addTools registers the tools on srv. Both use the SDK's raw handlers: the arguments are
// validated by the same decoder as the REST body, so that an invalid call gets the §7 error (a
// tool result with isError) that names the offending fields, never a protocol error, and so
// that the SDK does not re-encode the signed answers.
func (s *Server) addTools(srv *mcp.Server) {
	closed := false
	srv.AddTool(&mcp.Tool{
		Name:  ToolVerify,
		Title: "Verify agent output",
		Description: "Check JSON produced by an AI agent against a JSON Schema (drafts 4 to 2020-12, formats asserted) and " +
			"optional business rules (sum_equals, gte, lte, exists_in, unique) and numeric bounds. Answers pass or fail with " +
			"per-check ratios, errors, repair hints and next actions, plus a receipt: SHA-256 hashes of the exact data signed with " +
			"Ed25519 over RFC 8785 canonical JSON, verifiable offline with the keys in /.well-known/agent-card.json. The arguments " +
			"are exactly the body of POST /verify/schema and the result is exactly its answer. Free up to a daily allowance per " +
			"client IP shared with the REST API, then $" + s.svc.Pricing.PriceVerify + " per call in USDC via x402 (see the server's instructions). " +
			"Invalid arguments are never charged.",
		InputSchema:  json.RawMessage(verify.RequestSchemaJSON()),
		OutputSchema: outputSchema(verify.ResponseSchemaJSON()),
		Annotations: &mcp.ToolAnnotations{
			Title: "Verify agent output",
			// It reads what it is given and changes nothing of the caller's; each call is a new
			// verification (new id, a free call or a payment consumed), so it is not idempotent.
			ReadOnlyHint:   true,
			IdempotentHint: false,
			OpenWorldHint:  &closed,
		},
	}, s.recovering(ToolVerify, s.verifySchema))
	srv.AddTool(&mcp.Tool{
		Name:  ToolRecord,
		Title: "Get an agent's verification record",
		Description: "The signed trust score of an agent (the document of GET /score/{agent_id}): a 0-100 score (the lower " +
			"bound of a 95% Wilson interval over its verification history, recent and paid checks weighing more), confidence, " +
			"pass/fail totals, the last 30 days, first and last seen, distinct tasks and callers, signed with Ed25519. Unknown " +
			"agents and test- ids get a free signed answer with score null and reason no_data; a real score costs $" +
			s.svc.Pricing.PriceScore + " in USDC via x402 (see the server's instructions).",
		InputSchema:  json.RawMessage(recordInputSchemaJSON),
		OutputSchema: outputSchema(json.RawMessage(httpapi.ScoreSchemaJSON)),
		Annotations: &mcp.ToolAnnotations{
			Title:          "Get an agent's verification record",
			ReadOnlyHint:   true,
			IdempotentHint: true,
			OpenWorldHint:  &closed,
		},
	}, s.recovering(ToolRecord, s.verificationRecord))
}

// recovering turns a panic in a tool into the generic internal error result. The SDK runs tools
// on goroutines of its own, outside the router's recovery, where a panic would end the process.
func (s *Server) recovering(tool string, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = s.errorResult(tool, fmt.Errorf("panic: %s", slog.AnyValue(p).String()), nil), nil
			}
		}()
		return h(ctx, req)
	}
}

// verifySchema is the verify_schema tool: POST /verify/schema over MCP, decision for decision.
// Absent arguments are the discovery probe (payment required, as the REST empty body); invalid
// arguments are a §7 error that consumes and charges nothing; a payment in _meta takes the paid
// path; everything else draws on the free allowance the REST routes share.
func (s *Server) verifySchema(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	who := caller(ctx)
	client := s.svc.CallerID(who)
	args := req.Params.Arguments
	payment, paying := req.Params.Meta[x402.MetaPayment]
	if absent(args) && !paying {
		return s.paymentRequired(ctx, ToolVerify, client, apperr.PaymentRequired,
			"Call with a verification request as arguments; this tool is paid with x402 past the free allowance.", nil), nil
	}
	if int64(len(args)) > s.svc.Engine.Limits().MaxBody {
		return s.errorResult(ToolVerify, apperr.TooLarge(s.svc.Engine.Limits().MaxBody), nil), nil
	}
	if !paying && s.svc.Allowance != nil && int64(len(args)) > s.svc.Pricing.FreeMaxBody {
		// Before decoding, as on REST: parsing and compiling what the free allowance does not
		// cover is work to be paid for too.
		if s.svc.Payer == nil {
			return s.errorResult(ToolVerify, apperr.TooLarge(s.svc.Pricing.FreeMaxBody), nil), nil
		}
		return s.paymentRequired(ctx, ToolVerify, client, apperr.PaymentRequired,
			fmt.Sprintf("Arguments over %d bytes are not covered by the free allowance; pay to verify this one.", s.svc.Pricing.FreeMaxBody), nil), nil
	}
	// As on REST, a call for the free allowance is checked against its schema before the
	// allowance is consumed (DecodeFree): a schema too costly to evaluate is refused without counting.
	decode := s.svc.Decode
	if !paying && s.svc.Allowance != nil {
		decode = s.svc.DecodeFree
	}
	job, err := decode(ctx, args)
	if err != nil {
		return s.errorResult(ToolVerify, err, nil), nil
	}
	switch {
	case paying:
		var v *httpapi.Verification
		res := s.charge(ctx, ToolVerify, client, payment, s.svc.Pricing.PriceVerify, func(ctx context.Context) ([]byte, error) {
			var err error
			v, err = s.svc.Finish(ctx, job)
			if err != nil {
				return nil, err
			}
			return v.Body, nil
		})
		if v != nil && !res.IsError {
			s.svc.Record(ctx, v, who, true)
		}
		return res, nil
	case s.svc.Allowance == nil:
		// No allowance accounting (services built by hand in tools and tests).
		v, err := s.svc.Finish(ctx, job)
		if err != nil {
			return s.errorResult(ToolVerify, err, nil), nil
		}
		s.svc.Record(ctx, v, who, false)
		return success(v.Body, nil), nil
	}
	granted, remaining, err := s.svc.ConsumeFree(ctx, client)
	if err != nil {
		return s.errorResult(ToolVerify, err, nil), nil
	}
	if !granted {
		if s.svc.Payer == nil {
			return s.errorResult(ToolVerify, s.svc.FreeOnlyExhausted(), mcp.Meta{"free_trial": s.svc.FreeTrial(ctx, client)}), nil
		}
		return s.paymentRequired(ctx, ToolVerify, client, apperr.FreeTrialExhausted,
			"This client's free checks for today are used up; pay with x402 to continue.", nil), nil
	}
	v, err := s.svc.Finish(ctx, job)
	if err != nil {
		return s.errorResult(ToolVerify, err, nil), nil
	}
	s.svc.Record(ctx, v, who, false)
	// What the REST answer says in its Free-Allowance-* headers.
	return success(v.Body, mcp.Meta{"free_allowance": map[string]any{
		"remaining": remaining, "limit": s.svc.Pricing.FreeCallsPerDay, "resets_at": s.svc.AllowanceResets().Format(time.RFC3339),
	}}), nil
}

// verificationRecord is the get_verification_record tool: GET /score/{agent_id} over MCP. A
// score that costs nothing (no data yet, or a deployment without payments) is answered at once;
// a priced one needs a payment in _meta.
func (s *Server) verificationRecord(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	client := s.svc.CallerID(caller(ctx))
	agentID, err := decodeRecordArgs(req.Params.Arguments)
	if err != nil {
		return s.errorResult(ToolRecord, err, nil), nil
	}
	lookup, err := s.scores.LookupScore(ctx, agentID)
	if err != nil {
		return s.errorResult(ToolRecord, err, nil), nil
	}
	if !lookup.Priced() {
		doc, err := lookup.Document()
		if err != nil {
			return s.errorResult(ToolRecord, err, nil), nil
		}
		return success(doc, nil), nil
	}
	payment, paying := req.Params.Meta[x402.MetaPayment]
	if !paying {
		return s.paymentRequired(ctx, ToolRecord, client, apperr.PaymentRequired,
			"This agent's trust score is paid: pay with x402 in _meta[\"x402/payment\"] and call again.", nil), nil
	}
	return s.charge(ctx, ToolRecord, client, payment, s.svc.Pricing.PriceScore, func(ctx context.Context) ([]byte, error) {
		return lookup.Document()
	}), nil
}

// charge runs work as a paid call with the PaymentPayload from _meta (SPEC §8.4): the shared
// Charge matches, verifies, reserves, runs work and settles; only a settled call returns work's
// answer, with the settlement in _meta["x402/payment-response"]. A refused payment returns the
// payment-required result and no answer.
func (s *Server) charge(ctx context.Context, tool, client string, payment any, price string, work func(context.Context) ([]byte, error)) *mcp.CallToolResult {
	if s.svc.Payer == nil {
		return s.errorResult(tool, apperr.Field("_meta.x402/payment", "was sent to a deployment that takes no payments", "Call again without a payment."), nil)
	}
	raw, err := json.Marshal(payment)
	if err != nil {
		raw = nil
	}
	payload, err := x402.DecodePaymentPayload(raw)
	if err != nil {
		return s.paymentRequired(ctx, tool, client, apperr.PaymentInvalid,
			"The _meta[\"x402/payment\"] of this call is not an x402 v2 PaymentPayload object. Nothing was charged.", nil)
	}
	var answer []byte
	settled, failed, err := s.svc.Charge(ctx, payload, price, func(ctx context.Context) (err error) {
		answer, err = work(ctx)
		return err
	})
	switch {
	case err != nil:
		return s.errorResult(tool, err, nil)
	case failed != nil:
		return s.paymentRequired(ctx, tool, client, failed.Code, failed.Message, failed.Settlement)
	}
	return success(answer, mcp.Meta{x402.MetaPaymentResponse: settled})
}

// paymentRequired is the x402 MCP payment-required result (SPEC §8.4): isError, the
// PaymentRequired for mcp://tool/<tool> as structuredContent and, the same JSON, as text; _meta
// carries the code and, for verify_schema, the caller's free allowance state. After a failed settlement the
// settlement goes with it, in the PaymentRequired (as the x402 MCP transport describes) and in
// _meta["x402/payment-response"].
func (s *Server) paymentRequired(ctx context.Context, tool, client string, code apperr.Code, message string, settlement *x402.SettleResponse) *mcp.CallToolResult {
	price, description := s.svc.Pricing.PriceVerify, verifyResourceDescription
	if tool == ToolRecord {
		price, description = s.svc.Pricing.PriceScore, recordResourceDescription
	}
	pr, err := s.svc.PaymentRequiredFor(ctx, x402.MCPResourceURL(tool), description, price, message, nil)
	if err != nil {
		return s.errorResult(tool, err, nil)
	}
	var doc map[string]any
	b, _ := json.Marshal(pr)
	json.Unmarshal(b, &doc)
	meta := mcp.Meta{"code": string(code)}
	if tool == ToolVerify {
		// The score has no free allowance to report, as its REST 402 has none.
		meta["free_trial"] = s.svc.FreeTrial(ctx, client)
	}
	if settlement != nil {
		doc[x402.MetaPaymentResponse] = settlement
		meta[x402.MetaPaymentResponse] = settlement
	}
	b, _ = json.Marshal(doc)
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(b), Content: text(b), Meta: meta}
}

// errorResult is a §7 error as a tool result: isError, the envelope as structuredContent and,
// the same JSON, as text. Errors that are not *apperr.Error are logged and answered generically.
func (s *Server) errorResult(tool string, err error, meta mcp.Meta) *mcp.CallToolResult {
	e := s.svc.PublicError(Path+" "+tool, err)
	b, _ := json.Marshal(e)
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(b), Content: text(b), Meta: meta}
}

// success is a tool's answer: the signed document as structuredContent, byte for byte, and as
// text for clients that read only content.
func success(doc []byte, meta mcp.Meta) *mcp.CallToolResult {
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(doc), Content: text(doc), Meta: meta}
}

func text(b []byte) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: string(b)}} }

// absent reports whether a call carried no arguments at all (the probe), as opposed to an
// empty or invalid object (a 422).
func absent(args json.RawMessage) bool {
	t := bytes.TrimSpace(args)
	return len(t) == 0 || string(t) == "null"
}

// decodeRecordArgs reads get_verification_record's arguments, {"agent_id": "..."}, as strictly
// as the REST bodies: an object, no unknown fields, and an id GET /score/{agent_id} would take.
func decodeRecordArgs(args json.RawMessage) (string, error) {
	var in struct {
		AgentID *string `json:"agent_id"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if t := bytes.TrimSpace(args); len(t) == 0 || t[0] != '{' || dec.Decode(&in) != nil || dec.More() {
		return "", apperr.Field("arguments", "must be an object with exactly one field, agent_id", `Send {"agent_id": "<the agent's id>"}.`)
	}
	if in.AgentID == nil {
		return "", apperr.Field("agent_id", "is required", "Name the agent whose record you want.")
	}
	// The same refusals, in the same words, as GET /score/{agent_id}.
	if err := httpapi.CheckAgentID(*in.AgentID); err != nil {
		return "", err
	}
	return *in.AgentID, nil
}
