package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzToolArguments sends arbitrary arguments and _meta to both tools' handlers, as the SDK
// hands them over after parsing the JSON-RPC message: no input may panic (the handlers run here
// without the recovery wrapper) or become a protocol error, and every answer is one JSON document:
// the signed answer, a §7 error naming a code, or x402's payment requirement.
func FuzzToolArguments(f *testing.F) {
	f.Add(seed(f, "invoice-draft.request.json"), []byte(`{}`))
	f.Add([]byte(`{"task_id":"t","expected_schema":{"type":"string"},"submitted_output":1}`), []byte(`null`))
	f.Add([]byte(`{"agent_id":"agent-1"}`), []byte(`{"x402/payment":{"x402Version":2}}`))
	f.Add([]byte(`null`), []byte(`{"x402/payment":"not an object"}`))
	f.Add([]byte(`{"task_id":`), []byte(`[]`))
	e := newEnv(f, withPayer(&fakePayer{}))
	s := New(e.svc)
	f.Fuzz(func(t *testing.T, args, meta []byte) {
		var m mcp.Meta
		if json.Unmarshal(meta, &m) != nil {
			m = nil
		}
		for tool, h := range map[string]mcp.ToolHandler{ToolVerify: s.verifySchema, ToolRecord: s.verificationRecord} {
			res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: args, Meta: m}})
			if err != nil || res == nil {
				t.Fatalf("%s: protocol error %v", tool, err)
			}
			doc, ok := res.StructuredContent.(json.RawMessage)
			if !ok || !json.Valid(doc) {
				t.Fatalf("%s: structured content %T is not one JSON document", tool, res.StructuredContent)
			}
			if res.IsError {
				// Either the §7 error or x402's PaymentRequired (the MCP transport's 402).
				var env struct {
					Code        string            `json:"code"`
					X402Version int               `json:"x402Version"`
					Accepts     []json.RawMessage `json:"accepts"`
				}
				if json.Unmarshal(doc, &env) != nil || env.Code == "" && (env.X402Version != 2 || len(env.Accepts) == 0) {
					t.Fatalf("%s: error result that is neither a §7 error nor a payment requirement: %s", tool, doc)
				}
			}
		}
	})
}
