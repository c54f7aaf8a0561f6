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
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// The tools' names (SPEC §10); their x402 resource URLs are mcp://tool/<name>.
const (
	ToolVerify  = "verify_schema"
	ToolRecord  = "get_verification_record"
	ToolReceipt = "get_receipt"
)

// recordResourceDescription describes get_verification_record in payment requirements (the
// verify tool's is service.VerifyDescription, as REST's).
const (
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
			"client IP shared with the REST API, then $" + s.svc.Pricing().PriceVerify + " per call in USDC via x402 (see the server's instructions). " +
			"Invalid arguments are never charged.",
		InputSchema:  json.RawMessage(wire.RequestSchemaJSON()),
		OutputSchema: outputSchema(wire.ResponseSchemaJSON()),
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
			s.svc.Pricing().PriceScore + " in USDC via x402 (see the server's instructions).",
		InputSchema:  json.RawMessage(recordInputSchemaJSON),
		OutputSchema: outputSchema(json.RawMessage(service.ScoreSchemaJSON)),
		Annotations: &mcp.ToolAnnotations{
			Title:          "Get an agent's verification record",
			ReadOnlyHint:   true,
			IdempotentHint: true,
			OpenWorldHint:  &closed,
		},
	}, s.recovering(ToolRecord, s.verificationRecord))
	if !s.svc.LogEnabled() {
		return
	}
	srv.AddTool(&mcp.Tool{
		Name:  ToolReceipt,
		Title: "Get a verification's stored record",
		Description: "The stored record of a verification (the document of GET /verifications/{verification_id}): its " +
			"receipt_hash (the SHA-256 of the RFC 8785 form of the whole signed answer), verdict, hashes and settlement, and, " +
			"once sequenced into the public receipt log, its index, the signed checkpoint and the inclusion proof " +
			"(log.status pending before that: ask again in a second). Free.",
		InputSchema:  json.RawMessage(receiptInputSchemaJSON),
		OutputSchema: outputSchema(json.RawMessage(service.RecordSchemaJSON)),
		Annotations: &mcp.ToolAnnotations{
			Title:          "Get a verification's stored record",
			ReadOnlyHint:   true,
			IdempotentHint: true,
			OpenWorldHint:  &closed,
		},
	}, s.recovering(ToolReceipt, s.getReceipt))
}

// toolNames are the tools addTools registers for svc: get_receipt only where a receipt log is
// kept.
func toolNames(svc *service.Service) []string {
	if svc.LogEnabled() {
		return []string{ToolVerify, ToolRecord, ToolReceipt}
	}
	return []string{ToolVerify, ToolRecord}
}

// getReceipt is the get_receipt tool: GET /verifications/{verification_id} over MCP, through the
// same service.VerificationRecord.
func (s *Server) getReceipt(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	fail := func(err error) (*mcp.CallToolResult, error) {
		e := s.svc.PublicError(Path+" "+ToolReceipt, err)
		noteTool(ctx, ToolReceipt, service.Outcome{Kind: service.Refused, Err: e})
		return errorResult(e, nil), nil
	}
	var in struct {
		ID *string `json:"verification_id"`
	}
	args := req.Params.Arguments
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if t := bytes.TrimSpace(args); len(t) == 0 || t[0] != '{' || dec.Decode(&in) != nil || dec.More() {
		return fail(apperr.Field("arguments", "must be an object with exactly one field, verification_id", `Send {"verification_id": "<the receipt's verification_id>"}.`))
	}
	if in.ID == nil {
		return fail(apperr.Field("verification_id", "is required", "Name the verification whose record you want."))
	}
	rec, err := s.svc.VerificationRecord(ctx, *in.ID)
	if err != nil {
		return fail(err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fail(err)
	}
	noteTool(ctx, ToolReceipt, service.Outcome{Kind: service.Answered, VerificationID: rec.VerificationID, Result: rec.Result})
	return success(b, nil), nil
}

// recovering turns a panic in a tool into the generic internal error result. The SDK runs tools
// on goroutines of its own, outside the router's recovery, where a panic would end the process.
func (s *Server) recovering(tool string, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				e := s.svc.PublicError(Path+" "+tool, fmt.Errorf("panic: %s", slog.AnyValue(p).String()))
				noteTool(ctx, tool, service.Outcome{Kind: service.Refused, Err: e})
				res, err = errorResult(e, nil), nil
			}
		}()
		return h(ctx, req)
	}
}

// mcpWords are MCP's texts in the service's answers: arguments and _meta.
var mcpWords = &edge.Words{
	Probe:              "Call with a verification request as arguments; this tool is paid with x402 past the free allowance.",
	OverFreeSize:       "Arguments over %d bytes are not covered by the free allowance; pay to verify this one.",
	ScorePaid:          "This agent's trust score is paid: pay with x402 in _meta[\"x402/payment\"] and call again.",
	PaymentField:       "_meta.x402/payment",
	NoPaymentsFix:      "Call again without a payment.",
	UndecodablePayment: "The _meta[\"x402/payment\"] of this call is not an x402 v2 PaymentPayload object. Nothing was charged.",
}

// paymentOf reads _meta["x402/payment"]: decoding the object is the transport's, the rest the
// service's.
func paymentOf(meta mcp.Meta) service.Payment {
	p, sent := meta[x402.MetaPayment]
	if !sent {
		return service.Payment{}
	}
	raw, err := json.Marshal(p)
	if err != nil {
		raw = nil
	}
	payload, err := x402.DecodePaymentPayload(raw)
	return service.Payment{Sent: true, Payload: payload, Err: err}
}

// verifySchema is the verify_schema tool: POST /verify/schema over MCP, through the same
// service.Verify. Absent arguments are the discovery probe (as the REST empty body); invalid
// arguments are a §7 error that consumes and charges nothing; a payment in _meta takes the paid
// path; everything else draws on the free allowance the REST routes share.
func (s *Server) verifySchema(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, pay := req.Params.Arguments, paymentOf(req.Params.Meta)
	if absent(args) && !pay.Sent {
		args = nil // the probe
	}
	o := s.svc.Verify(ctx, service.VerifyCall{
		Body: args, Payment: pay, Caller: s.caller(ctx),
		Resource: x402.MCPResourceURL(ToolVerify), Route: Path + " " + ToolVerify,
	})
	o = mcpWords.Word(o, s.svc.Pricing().FreeMaxBody)
	noteTool(ctx, ToolVerify, o)
	if o.Kind == service.Answered && o.FreeAllowance != nil {
		// What the REST answer says in its Free-Allowance-* headers.
		fa := o.FreeAllowance
		return success(o.Body, mcp.Meta{"free_allowance": map[string]any{
			"remaining": fa.Remaining, "limit": fa.Limit, "resets_at": fa.Resets.Format(time.RFC3339),
		}}), nil
	}
	return s.render(ToolVerify, o), nil
}

// verificationRecord is the get_verification_record tool: GET /score/{agent_id} over MCP, through
// the same service.Score. A score that costs nothing (no data yet, or a deployment without
// payments) is answered at once; a priced one needs a payment in _meta.
func (s *Server) verificationRecord(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	agentID, err := decodeRecordArgs(req.Params.Arguments)
	if err != nil {
		e := s.svc.PublicError(Path+" "+ToolRecord, err)
		noteTool(ctx, ToolRecord, service.Outcome{Kind: service.Refused, Err: e})
		return errorResult(e, nil), nil
	}
	o := s.svc.Score(ctx, service.ScoreCall{
		AgentID: agentID, Payment: paymentOf(req.Params.Meta),
		Resource: x402.MCPResourceURL(ToolRecord), Description: recordResourceDescription,
		Route: Path + " " + ToolRecord,
	})
	o = mcpWords.Word(o, s.svc.Pricing().FreeMaxBody)
	noteTool(ctx, ToolRecord, o)
	return s.render(ToolRecord, o), nil
}

// render is an outcome as a tool result: the signed answer (a paid one with its settlement in
// _meta["x402/payment-response"]), the payment-required result, or the §7 error.
func (s *Server) render(tool string, o service.Outcome) *mcp.CallToolResult {
	switch o.Kind {
	case service.Answered:
		var meta mcp.Meta
		if o.Settlement != nil {
			meta = mcp.Meta{x402.MetaPaymentResponse: o.Settlement}
		}
		return success(o.Body, meta)
	case service.PaymentRequired:
		return paymentRequired(o, edge.FreeTrial(o.FreeTrial, s.svc.BaseURL()))
	}
	var meta mcp.Meta
	if o.FreeTrial != nil {
		meta = mcp.Meta{"free_trial": edge.FreeTrial(o.FreeTrial, s.svc.BaseURL())}
	}
	return errorResult(o.Err, meta)
}

// paymentRequired is the x402 MCP payment-required result (SPEC §8.4): isError, the
// PaymentRequired for mcp://tool/<tool> as structuredContent and, the same JSON, as text; _meta
// carries the code and, for verify_schema, the caller's free allowance state. After a failed
// settlement the settlement goes with it, in the PaymentRequired (as the x402 MCP transport
// describes) and in _meta["x402/payment-response"]. freeTrial is o.FreeTrial as edge.FreeTrial
// renders it.
func paymentRequired(o service.Outcome, freeTrial map[string]any) *mcp.CallToolResult {
	var doc map[string]any
	b, _ := json.Marshal(o.PaymentRequired)
	json.Unmarshal(b, &doc)
	meta := mcp.Meta{"code": string(o.Code)}
	if freeTrial != nil {
		// The score has no free allowance to report, as its REST 402 has none.
		meta["free_trial"] = freeTrial
	}
	if o.Settlement != nil {
		doc[x402.MetaPaymentResponse] = o.Settlement
		meta[x402.MetaPaymentResponse] = o.Settlement
	}
	b, _ = json.Marshal(doc)
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(b), Content: text(b), Meta: meta}
}

// errorResult is the §7 error e as a tool result.
func errorResult(e *apperr.Error, meta mcp.Meta) *mcp.CallToolResult {
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
	return service.AgentID(*in.AgentID)
}
