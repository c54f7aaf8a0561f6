package httpapi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// tooComplexBody is the reviewer's case: 16 levels of $defs, each an allOf of two $refs to the
// level below, over {"type":"integer"}, with the valid output 1, for agent.
func tooComplexBody(agent string) string {
	var b strings.Builder
	b.WriteString(`{"$defs":{"d0":{"type":"integer"}`)
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, `,"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i-1, i-1)
	}
	b.WriteString(`},"$ref":"#/$defs/d16"}`)
	return `{"task_id":"t","agent_id":"` + agent + `","expected_schema":` + b.String() + `,"submitted_output":1}`
}

// rulesTooComplexBody has 200 rules over an array of 20,000 numbers for agent, within the free
// body size: the rules' work budget for that output (100,000 plus 8 per value) ends at the 14th.
func rulesTooComplexBody(agent string) string {
	rules := strings.TrimSuffix(strings.Repeat(`{"type":"gte","field":"[]","value":0},`, 200), ",")
	return `{"task_id":"t","agent_id":"` + agent + `","expected_schema":true,"submitted_output":[` +
		strings.TrimSuffix(strings.Repeat("1,", 20_000), ",") + `],"rules":[` + rules + `]}`
}

// A schema that exhausts the evaluation budget is the error schema_too_complex (422), and rules
// that exhaust theirs rules_too_complex, on the free path and the paid one alike: the free
// allowance is not consumed, a payment is neither settled nor kept (the same payment buys the
// next answer), and nothing enters the agent's history.
func TestSchemaTooComplexIsNotChargedOrRecorded(t *testing.T) {
	for _, c := range []struct {
		name  string
		body  func(agent string) string
		code  apperr.Code
		field string
	}{
		{"schema", tooComplexBody, apperr.SchemaTooComplex, "expected_schema"},
		{"rules", rulesTooComplexBody, apperr.RulesTooComplex, "rules["},
	} {
		t.Run(c.name, func(t *testing.T) { testTooComplexNotCharged(t, c.body, c.code, c.field) })
	}
}

func testTooComplexNotCharged(t *testing.T, tooComplexBody func(string) string, code apperr.Code, field string) {
	payer := &fakePayer{valid: true, settleOK: true}
	e := newPayEnv(t, openBolt, 2, payer)
	const agent = "seller-complex"
	check := func(what string, status int, m map[string]any) {
		t.Helper()
		fields, _ := m["fields"].([]any)
		if status != 422 || m["code"] != string(code) || m["charged"] != false || m["retryable"] != false ||
			m["result"] != nil || len(fields) != 1 || !strings.Contains(fmt.Sprint(fields[0]), field) {
			t.Fatalf("%s: %d %v, want 422 %s naming %s", what, status, m, code, field)
		}
	}
	for i := range 3 {
		resp, m := post(t, e.srv.URL+"/verify/schema", tooComplexBody(agent))
		check(fmt.Sprintf("free call %d", i), resp.StatusCode, m)
		if h := resp.Header.Get("Free-Allowance-Remaining"); h != "" {
			t.Errorf("free call %d: Free-Allowance-Remaining %s on an error", i, h)
		}
	}
	used, err := e.st.AllowanceUsed(context.Background(), e.svc.CallerID("127.0.0.1"), e.clock.Now().Format("2006-01-02"))
	if err != nil || used != 0 {
		t.Fatalf("allowance used %d, %v; want 0", used, err)
	}
	// The paid path: refused, the payment released unsettled and good for the next request.
	sig := paymentHeader(t, testRequirement, 1)
	resp, m := post(t, e.srv.URL+"/verify/deliverable", tooComplexBody(agent), x402.HeaderPaymentSignature, sig)
	check("paid call", resp.StatusCode, m)
	if payer.settles.Load() != 0 || resp.Header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("paid call: %d settlements, PAYMENT-RESPONSE %q", payer.settles.Load(), resp.Header.Get(x402.HeaderPaymentResponse))
	}
	ok := strings.Replace(okBody, "seller-9", agent, 1)
	if resp, m := post(t, e.srv.URL+"/verify/schema", ok, x402.HeaderPaymentSignature, sig); resp.StatusCode != 200 || m["result"] != "pass" || payer.settles.Load() != 1 {
		t.Fatalf("the same payment afterwards: %d %v", resp.StatusCode, m)
	}
	// Both free calls are still there.
	if resp, m := post(t, e.srv.URL+"/verify/schema", ok); resp.StatusCode != 200 || resp.Header.Get("Free-Allowance-Remaining") != "1" {
		t.Fatalf("free call after the refusals: %d %v, remaining %q; want 1 of 2 left", resp.StatusCode, m["code"], resp.Header.Get("Free-Allowance-Remaining"))
	}
	// Only the two answers delivered are in the agent's history.
	page, _, err := e.st.History(context.Background(), agent, 10, "")
	if err != nil || len(page) != 2 {
		t.Fatalf("history: %d entries, %v; want the 2 delivered answers", len(page), err)
	}
	for _, v := range page {
		if v.Result != "pass" {
			t.Errorf("history holds a %s", v.Result)
		}
	}
}
