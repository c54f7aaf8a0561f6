package mcpserver

import (
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// TestPaymentIdentifier: the payment-identifier extension over MCP (SPEC §16), as over REST: the
// payment-required result declares it; the same id with the same arguments gets the kept answer
// and settlement again without a second verification or settlement; other arguments under the
// id are the 409 payment_identifier_conflict error.
func TestPaymentIdentifier(t *testing.T) {
	payer := &fakePayer{}
	e := newEnv(t, withLimit(0), withPayer(payer))
	body := []byte(`{"task_id":"idem","expected_schema":{"type":"number"},"submitted_output":1}`)
	const id = "pay_mcp_0123456789abcdef"
	withID := func(nonce int) map[string]any {
		p := payment("20000", nonce)
		p["extensions"] = map[string]any{x402.ExtPaymentIdentifier: map[string]any{"info": map[string]any{"id": id}}}
		return map[string]any{x402.MetaPayment: p}
	}

	pr := e.call(t, ToolVerify, body, nil)
	if ext, _ := pr.sc(t)["extensions"].(map[string]any); !pr.IsError || ext[x402.ExtPaymentIdentifier] == nil {
		t.Fatalf("payment required without the extension: %s", pr.StructuredContent)
	}
	first := e.call(t, ToolVerify, body, withID(1))
	if first.IsError || first.sc(t)["result"] != "pass" || payer.settles.Load() != 1 {
		t.Fatalf("first paid call: %s", first.StructuredContent)
	}
	again := e.call(t, ToolVerify, body, withID(2))
	if again.IsError || string(again.StructuredContent) != string(first.StructuredContent) {
		t.Fatalf("retry:\n got  %s\n want %s", again.StructuredContent, first.StructuredContent)
	}
	if sr := again.meta(t, x402.MetaPaymentResponse); sr["transaction"] != "0xtx" {
		t.Errorf("retry settlement = %v", sr)
	}
	if payer.verifies.Load() != 1 || payer.settles.Load() != 1 {
		t.Fatalf("the retry was verified or settled: verifies %d, settles %d", payer.verifies.Load(), payer.settles.Load())
	}
	conflict := e.call(t, ToolVerify, []byte(`{"task_id":"other","expected_schema":{"type":"number"},"submitted_output":2}`), withID(3))
	if got := conflict.sc(t); !conflict.IsError || got["code"] != "payment_identifier_conflict" || got["status"] != float64(409) || payer.verifies.Load() != 1 {
		t.Fatalf("conflict: %s", conflict.StructuredContent)
	}
}
