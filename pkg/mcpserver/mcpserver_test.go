package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// fakePayer stands in for the facilitator; the real one (anvil, the @x402 facilitator) runs in
// internal/e2e.
type fakePayer struct {
	verifies, settles atomic.Int32
	invalid           bool
	settleFails       bool
}

var requirement = x402.Requirements{Scheme: "exact", Network: "eip155:8453", Amount: "20000",
	Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
	MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}

func (f *fakePayer) Requirements(_ context.Context, price string) ([]x402.Requirements, error) {
	r := requirement
	r.Amount, _ = x402.USDToAtomic(price)
	return []x402.Requirements{r}, nil
}

func (f *fakePayer) Verify(context.Context, x402.PaymentPayload, x402.Requirements) (x402.VerifyResponse, error) {
	f.verifies.Add(1)
	return x402.VerifyResponse{IsValid: !f.invalid, InvalidReason: "invalid_exact_evm_payload_signature", Payer: "0xpayer"}, nil
}

func (f *fakePayer) Settle(context.Context, x402.PaymentPayload, x402.Requirements) (x402.SettleResponse, error) {
	f.settles.Add(1)
	if f.settleFails {
		return x402.SettleResponse{Success: false, ErrorReason: "insufficient_funds", Network: "eip155:8453"}, nil
	}
	return x402.SettleResponse{Success: true, Transaction: "0xtx", Network: "eip155:8453", Payer: "0xpayer"}, nil
}

// payment is a PaymentPayload object for amount, as a client puts it in _meta["x402/payment"].
func payment(amount string, nonce int) map[string]any {
	r := requirement
	r.Amount = amount
	b, _ := json.Marshal(x402.PaymentPayload{X402Version: 2, Accepted: r, Payload: map[string]any{
		"signature": "0x" + strings.Repeat("1", 130),
		"authorization": map[string]any{"from": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "to": r.PayTo, "value": amount,
			"validAfter": "0", "validBefore": "9999999999", "nonce": fmt.Sprintf("0x%064x", nonce)},
	}})
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// env is a service with the MCP server mounted beside the REST routes, on a loopback listener.
type env struct {
	svc   *service.Service
	st    *bolt.Store
	url   string
	payer *fakePayer
	clock *testclock.Clock // the service's and the store's
}

type option func(*service.Deps)

func withPayer(p *fakePayer) option { return func(d *service.Deps) { d.Payer = p } }
func withLimit(n int) option        { return func(d *service.Deps) { d.Pricing.FreeCallsPerDay = n } }

func newEnv(t testing.TB, opts ...option) *env {
	t.Helper()
	// The service and its store read one test clock.
	clock := testclock.New(testclock.Epochs()[0])
	st, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), bolt.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := service.Deps{
		Now:     clock.Now,
		Store:   st,
		Pricing: service.Pricing{FreeCallsPerDay: 1000, FreeMaxBody: 64 << 10, PriceVerify: "0.02", PriceScore: "0.01"},
	}
	for _, o := range opts {
		o(&d)
	}
	svc := testsvc.New(t, d)
	srv := httptest.NewServer(httpapi.Handler(svc, New(svc).Mount))
	t.Cleanup(srv.Close)
	e := &env{svc: svc, st: st, url: srv.URL, clock: clock}
	e.payer, _ = svc.Payer().(*fakePayer)
	return e
}

// result is a tools/call result as it travels.
type result struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

// sc decodes structuredContent.
func (r result) sc(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.StructuredContent, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", r.StructuredContent, err)
	}
	return m
}

func (r result) meta(t *testing.T, key string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Meta[key], &m); err != nil {
		t.Fatalf("_meta[%q] = %s: %v", key, r.Meta[key], err)
	}
	return m
}

// post sends body to url as JSON with headers in pairs and returns the answer.
func post(t *testing.T, url string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return testhttp.Do(t, http.MethodPost, url, body, hdr...)
}

var rpcID atomic.Int64

// rpc makes one JSON-RPC call to /mcp and returns its result (failing on a protocol error).
func (e *env) rpc(t *testing.T, method string, params any, hdr ...string) json.RawMessage {
	t.Helper()
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcID.Add(1), "method": method, "params": params})
	resp, b := post(t, e.url+Path, msg, append([]string{"Accept", "application/json, text/event-stream"}, hdr...)...)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%s: HTTP %d %s: %s", method, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Error != nil {
		t.Fatalf("%s: %s", method, b)
	}
	return out.Result
}

// call calls a tool with raw arguments (nil: none) and _meta (nil: none).
func (e *env) call(t *testing.T, tool string, args []byte, meta map[string]any, hdr ...string) result {
	t.Helper()
	params := map[string]any{"name": tool}
	if args != nil {
		params["arguments"] = json.RawMessage(args)
	}
	if meta != nil {
		params["_meta"] = meta
	}
	var r result
	if err := json.Unmarshal(e.rpc(t, "tools/call", params, hdr...), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("content = %+v, want one text block", r.Content)
	}
	// The text copy is the structured content, byte for byte.
	if r.Content[0].Text != string(r.StructuredContent) {
		t.Fatalf("text copy differs from structuredContent:\n%s\n%s", r.Content[0].Text, r.StructuredContent)
	}
	return r
}

// tools lists the tools and compiles each output schema.
func (e *env) tools(t *testing.T) map[string]map[string]any {
	t.Helper()
	var list struct {
		Tools []map[string]any `json:"tools"`
	}
	json.Unmarshal(e.rpc(t, "tools/list", map[string]any{}), &list)
	out := map[string]map[string]any{}
	for _, tool := range list.Tools {
		out[tool["name"].(string)] = tool
	}
	return out
}

// conforms checks structuredContent against the tool's advertised output schema, as MCP clients
// do (the TypeScript SDK's on error results too).
func conforms(t *testing.T, tool map[string]any, r result) {
	t.Helper()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("urn:test:output", tool["outputSchema"]); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("urn:test:output")
	if err != nil {
		t.Fatalf("output schema of %v does not compile: %v", tool["name"], err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.StructuredContent))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("%v: structuredContent does not match the output schema: %v\n%s", tool["name"], err, r.StructuredContent)
	}
}

// volatile are the fields two runs of the same request legitimately differ in.
var volatile = []string{"verification_id", "verified_at", "computed_at", "attestation.signature", "attestation.timestamp"}

func stable(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	for _, p := range volatile {
		parent, field := m, p
		if before, after, ok := strings.Cut(p, "."); ok {
			parent, _ = m[before].(map[string]any)
			field = after
		}
		delete(parent, field)
	}
	return m
}

func seed(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "seed", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestToolsAreDescribed(t *testing.T) {
	e := newEnv(t)
	tools := e.tools(t)
	if len(tools) != 3 || tools[ToolVerify] == nil || tools[ToolRecord] == nil || tools[ToolReceipt] == nil {
		t.Fatalf("tools = %v, want %s, %s and %s", tools, ToolVerify, ToolRecord, ToolReceipt)
	}
	for name, idempotent := range map[string]bool{ToolVerify: false, ToolRecord: true, ToolReceipt: true} {
		tool := tools[name]
		ann, _ := tool["annotations"].(map[string]any)
		if tool["title"] == "" || len(fmt.Sprint(tool["description"])) < 100 || ann["title"] == "" {
			t.Errorf("%s: title %q, description %q, annotations %v", name, tool["title"], tool["description"], ann)
		}
		if ann["readOnlyHint"] != true || ann["openWorldHint"] != false || ann["idempotentHint"] != idempotent {
			t.Errorf("%s: annotations %v, want readOnlyHint, no openWorldHint, idempotentHint %v", name, ann, idempotent)
		}
		out, _ := tool["outputSchema"].(map[string]any)
		if out["type"] != "object" || len(out["anyOf"].([]any)) != 3 {
			t.Errorf("%s: outputSchema %v, want an object with the answer, error and payment branches", name, out)
		}
	}
	if got := tools[ToolVerify]["inputSchema"]; !reflect.DeepEqual(got, wire.RequestSchema()) {
		t.Errorf("verify_schema's input schema is not the REST request schema:\n%v", got)
	}
}

// verify_schema answers what POST /verify/schema answers for the same body: the signed document
// or the error envelope, apart from ids and times.
func TestVerifyMatchesREST(t *testing.T) {
	e := newEnv(t)
	tool := e.tools(t)[ToolVerify]
	ex, _ := json.Marshal(wire.ExampleRequest())
	for name, body := range map[string][]byte{
		"pass":           ex,
		"seed draft":     compact(t, seed(t, "invoice-draft.request.json")),
		"compact":        bytes.Replace(ex, []byte(`{`), []byte(`{"detail":"compact",`), 1),
		"invalid rule":   []byte(`{"task_id":"t","expected_schema":{},"submitted_output":1,"rules":[{"type":"nope","field":"a"}]}`),
		"missing":        []byte(`{}`),
		"wrong type":     []byte(`{"task_id":5,"expected_schema":{},"submitted_output":1}`),
		"file ref":       []byte(`{"task_id":"t","expected_schema":{"$ref":"file:///etc/passwd"},"submitted_output":1}`),
		"lone surrogate": []byte(`{"task_id":"t","expected_schema":{},"submitted_output":"\ud800"}`),
		"not an object":  []byte(`[1,2]`),
	} {
		t.Run(name, func(t *testing.T) {
			resp, rest := post(t, e.url+"/verify/schema", body)
			r := e.call(t, ToolVerify, body, nil)
			if r.IsError != (resp.StatusCode != http.StatusOK) {
				t.Errorf("isError %v, REST status %d", r.IsError, resp.StatusCode)
			}
			if got, want := stable(t, r.StructuredContent), stable(t, rest); !reflect.DeepEqual(got, want) {
				t.Errorf("MCP and REST differ:\nMCP  %s\nREST %s", r.StructuredContent, rest)
			}
			conforms(t, tool, r)
			if r.IsError {
				return
			}
			if err := receipt.VerifyReceipt(r.StructuredContent, []receipt.PublicKey{e.svc.Keys().Current.Public()}, body); err != nil {
				t.Errorf("the MCP answer's receipt does not verify: %v", err)
			}
		})
	}
}

// REST and MCP draw on one allowance: with 10 free calls, 6 REST and 4 MCP calls succeed and the
// next MCP call gets the payment-required result with free_trial_exhausted.
func TestSharedAllowance(t *testing.T) {
	e := newEnv(t, withLimit(10), withPayer(&fakePayer{}))
	tool := e.tools(t)[ToolVerify]
	body, _ := json.Marshal(wire.ExampleRequest())
	for i := range 6 {
		if resp, b := post(t, e.url+"/verify/deliverable", body); resp.StatusCode != 200 {
			t.Fatalf("REST call %d: %d %s", i+1, resp.StatusCode, b)
		}
	}
	for i := range 4 {
		r := e.call(t, ToolVerify, body, nil)
		if r.IsError {
			t.Fatalf("MCP call %d: %s", i+1, r.StructuredContent)
		}
		if got := r.meta(t, "free_allowance"); got["remaining"] != float64(3-i) || got["limit"] != float64(10) {
			t.Errorf("MCP call %d: free_allowance %v, want %d of 10 left", i+1, got, 3-i)
		}
	}
	r := e.call(t, ToolVerify, body, nil)
	conforms(t, tool, r)
	pr := r.sc(t)
	res, _ := pr["resource"].(map[string]any)
	accepts, _ := pr["accepts"].([]any)
	if !r.IsError || pr["x402Version"] != float64(2) || res["url"] != "mcp://tool/verify_schema" || len(accepts) != 1 {
		t.Fatalf("the 11th call: %s", r.StructuredContent)
	}
	if a := accepts[0].(map[string]any); a["amount"] != "20000" || a["payTo"] != requirement.PayTo {
		t.Errorf("accepts[0] = %v", a)
	}
	if _, err := x402.DecodePaymentRequired(base64JSON(r.StructuredContent)); err != nil {
		t.Errorf("structuredContent is not an x402 v2 PaymentRequired: %v", err)
	}
	ft := r.meta(t, "free_trial")
	if code := string(r.Meta["code"]); code != `"free_trial_exhausted"` || ft["code"] != "free_trial_exhausted" || ft["remaining_calls_today"] != float64(0) ||
		ft["calls_per_client_per_day"] != float64(10) || ft["via"] != "mcp+rest" {
		t.Errorf("_meta = code %s, free_trial %v", code, ft)
	}
	// And REST sees the same spent allowance.
	if resp, b := post(t, e.url+"/verify/schema", body); resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("REST after the allowance: %d %s", resp.StatusCode, b)
	}
	if e.payer.verifies.Load() != 0 {
		t.Errorf("the facilitator was asked %d times without a payment", e.payer.verifies.Load())
	}
}

// Without a payee the spent allowance is the free-only 429 (§8.6), as an error result.
func TestFreeOnlyExhausted(t *testing.T) {
	e := newEnv(t, withLimit(1))
	tool := e.tools(t)[ToolVerify]
	body, _ := json.Marshal(wire.ExampleRequest())
	if r := e.call(t, ToolVerify, body, nil); r.IsError {
		t.Fatalf("first call: %s", r.StructuredContent)
	}
	r := e.call(t, ToolVerify, body, nil)
	conforms(t, tool, r)
	got := r.sc(t)
	if !r.IsError || got["code"] != "free_trial_exhausted" || got["status"] != float64(429) || got["retryable"] != true || got["retry_after"].(float64) < 1 {
		t.Errorf("second call: %s", r.StructuredContent)
	}
	// Nothing can be paid here: the allowance's message says so, as the 429 does.
	if ft := r.meta(t, "free_trial"); ft["available"] != false || !strings.Contains(ft["message"].(string), "takes no payments") ||
		strings.Contains(ft["message"].(string), "Payment applies") {
		t.Errorf("free_trial = %v", ft)
	}
	var init struct {
		Instructions string `json:"instructions"`
	}
	json.Unmarshal(e.rpc(t, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}}), &init)
	if !strings.Contains(init.Instructions, "takes no payments") || strings.Contains(init.Instructions, "x402/payment") {
		t.Errorf("free-only instructions: %s", init.Instructions)
	}
	// A call with no arguments is the discovery probe: payment required, nothing to pay.
	probe := e.call(t, ToolVerify, nil, nil)
	conforms(t, tool, probe)
	if pr := probe.sc(t); !probe.IsError || pr["x402Version"] != float64(2) || string(probe.Meta["code"]) != `"payment_required"` {
		t.Errorf("probe: %s %v", probe.StructuredContent, probe.Meta)
	}
}

func base64JSON(b []byte) string {
	h, _ := x402.EncodeHeader(json.RawMessage(b))
	return h
}

// The paid path of §8.4: a payment in _meta is verified, the check runs, the settlement comes back
// in _meta; a replay, a mismatched or malformed payment and a failed settlement get the
// payment-required shape and no answer.
func TestPaidCalls(t *testing.T) {
	payer := &fakePayer{}
	e := newEnv(t, withLimit(0), withPayer(payer))
	tool := e.tools(t)[ToolVerify]
	body := []byte(`{"task_id":"paid","agent_id":"seller-paid","expected_schema":{"type":"number"},"submitted_output":1}`)

	r := e.call(t, ToolVerify, body, map[string]any{x402.MetaPayment: payment("20000", 1)})
	conforms(t, tool, r)
	if r.IsError || r.sc(t)["result"] != "pass" {
		t.Fatalf("paid call: %s", r.StructuredContent)
	}
	if sr := r.meta(t, x402.MetaPaymentResponse); sr["success"] != true || sr["transaction"] != "0xtx" {
		t.Errorf("settlement = %v", sr)
	}
	hist, _, err := e.st.History(context.Background(), "seller-paid", 10, "")
	if err != nil || len(hist) != 1 || !hist[0].Paid {
		t.Errorf("history = %+v, %v; want one paid verification", hist, err)
	}

	refused := func(t *testing.T, r result, code string) map[string]any {
		t.Helper()
		conforms(t, tool, r)
		pr := r.sc(t)
		if !r.IsError || pr["x402Version"] != float64(2) || pr["result"] != nil || string(r.Meta["code"]) != `"`+code+`"` {
			t.Errorf("want payment-required %s: %s %v", code, r.StructuredContent, r.Meta)
		}
		return pr
	}
	settles := payer.settles.Load()
	refused(t, e.call(t, ToolVerify, body, map[string]any{x402.MetaPayment: payment("20000", 1)}), "payment_replayed")
	refused(t, e.call(t, ToolVerify, body, map[string]any{x402.MetaPayment: payment("10000", 2)}), "payment_requirements_mismatch")
	refused(t, e.call(t, ToolVerify, body, map[string]any{x402.MetaPayment: "eyJ4NDAyVmVyc2lvbiI6Mn0="}), "payment_invalid")
	payer.invalid = true
	refused(t, e.call(t, ToolVerify, body, map[string]any{x402.MetaPayment: payment("20000", 3)}), "payment_verification_failed")
	payer.invalid = false
	if payer.settles.Load() != settles {
		t.Errorf("a refused payment was settled")
	}

	// Invalid arguments with a payment: the 422, and the facilitator is never asked.
	verifies := payer.verifies.Load()
	bad := e.call(t, ToolVerify, []byte(`{"task_id":"t"}`), map[string]any{x402.MetaPayment: payment("20000", 4)})
	if got := bad.sc(t); !bad.IsError || got["code"] != "invalid_request" || got["charged"] != false || payer.verifies.Load() != verifies {
		t.Errorf("invalid arguments with a payment: %s", bad.StructuredContent)
	}

	// A failed settlement: no answer, the failed settlement in the PaymentRequired and in _meta.
	payer.settleFails = true
	pr := refused(t, e.call(t, ToolVerify, body, map[string]any{x402.MetaPayment: payment("20000", 5)}), "payment_settlement_failed")
	if sr, _ := pr[x402.MetaPaymentResponse].(map[string]any); sr["success"] != false {
		t.Errorf("PaymentRequired[x402/payment-response] = %v", pr[x402.MetaPaymentResponse])
	}
	r = e.call(t, ToolVerify, body, map[string]any{x402.MetaPayment: payment("20000", 6)})
	if sr := r.meta(t, x402.MetaPaymentResponse); sr["success"] != false || sr["errorReason"] != "insufficient_funds" {
		t.Errorf("_meta settlement = %v", sr)
	}
	if hist, _, _ := e.st.History(context.Background(), "seller-paid", 10, ""); len(hist) != 1 {
		t.Errorf("an unsettled call was recorded: %+v", hist)
	}
}

// get_verification_record answers what GET /score/{agent_id} answers: free no_data for unknown
// agents, a paid score otherwise.
func TestVerificationRecord(t *testing.T) {
	payer := &fakePayer{}
	e := newEnv(t, withPayer(payer))
	tool := e.tools(t)[ToolRecord]
	args := func(id string) []byte { b, _ := json.Marshal(map[string]string{"agent_id": id}); return b }

	for _, id := range []string{"nobody-yet", "test-seller"} {
		r := e.call(t, ToolRecord, args(id), nil)
		conforms(t, tool, r)
		resp, rest := testhttp.Do(t, http.MethodGet, e.url+"/score/"+id, nil)
		if r.IsError || resp.StatusCode != 200 || r.sc(t)["reason"] != "no_data" {
			t.Fatalf("%s: %s / REST %d %s", id, r.StructuredContent, resp.StatusCode, rest)
		}
		if got, want := stable(t, r.StructuredContent), stable(t, rest); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: MCP and REST differ:\nMCP  %s\nREST %s", id, r.StructuredContent, rest)
		}
		if err := receipt.VerifyAttestation(r.StructuredContent, receipt.ContextScore, []receipt.PublicKey{e.svc.Keys().Current.Public()}); err != nil {
			t.Errorf("%s: the score does not verify: %v", id, err)
		}
	}

	// A recorded agent's score is paid.
	for range 3 {
		e.call(t, ToolVerify, []byte(`{"task_id":"t","agent_id":"seller-7","expected_schema":{"type":"number"},"submitted_output":1}`), nil)
	}
	r := e.call(t, ToolRecord, args("seller-7"), nil)
	conforms(t, tool, r)
	pr := r.sc(t)
	if res, _ := pr["resource"].(map[string]any); !r.IsError || res["url"] != "mcp://tool/get_verification_record" || r.Meta["free_trial"] != nil {
		t.Fatalf("unpaid score: %s %v", r.StructuredContent, r.Meta)
	}
	if a := pr["accepts"].([]any)[0].(map[string]any); a["amount"] != "10000" {
		t.Errorf("score price %v, want 10000", a["amount"])
	}
	r = e.call(t, ToolRecord, args("seller-7"), map[string]any{x402.MetaPayment: payment("10000", 9)})
	conforms(t, tool, r)
	doc := r.sc(t)
	if r.IsError || doc["score"] == nil || doc["verifications"].(map[string]any)["total"] != float64(3) {
		t.Fatalf("paid score: %s", r.StructuredContent)
	}
	if sr := r.meta(t, x402.MetaPaymentResponse); sr["success"] != true {
		t.Errorf("settlement = %v", sr)
	}
	_, rest := testhttp.Do(t, http.MethodGet, e.url+"/score/seller-7", nil, "PAYMENT-SIGNATURE", header(t, payment("10000", 10)))
	if got, want := stable(t, r.StructuredContent), stable(t, rest); !reflect.DeepEqual(got, want) {
		t.Errorf("MCP and REST scores differ:\nMCP  %s\nREST %s", r.StructuredContent, rest)
	}

	// Arguments are checked like the REST path, in the same words where the REST route has them.
	long := strings.Repeat("a", 201)
	_, restLong := testhttp.Do(t, http.MethodGet, e.url+"/score/"+long, nil)
	for name, c := range map[string]struct {
		args  []byte
		field string
	}{
		"none": {nil, "arguments"}, "not an object": {[]byte(`"x"`), "arguments"}, "unknown field": {[]byte(`{"agent_id":"a","x":1}`), "arguments"},
		"missing": {[]byte(`{}`), "agent_id"}, "empty": {args(""), "agent_id"}, "too long": {args(long), "agent_id"},
	} {
		r := e.call(t, ToolRecord, c.args, nil)
		conforms(t, tool, r)
		got := r.sc(t)
		fields, _ := got["fields"].([]any)
		if !r.IsError || got["code"] != "invalid_request" || len(fields) != 1 || fields[0].(map[string]any)["field"] != c.field {
			t.Errorf("%s: %s", name, r.StructuredContent)
		}
		if name == "too long" && !reflect.DeepEqual(stable(t, r.StructuredContent), stable(t, restLong)) {
			t.Errorf("too long: MCP %s, REST %s", r.StructuredContent, restLong)
		}
	}
}

func header(t *testing.T, p map[string]any) string {
	t.Helper()
	h, err := x402.EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The transport pitfalls: clients that accept only one content type or none, methods the
// stateless transport has no use for, foreign Host headers, and the SDK's plain-text refusals,
// which come back in the error envelope.
func TestTransport(t *testing.T) {
	e := newEnv(t)
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for _, accept := range []string{"application/json", "application/json, text/event-stream", "*/*", "", "application/json;q=0.9"} {
		resp, b := post(t, e.url+Path, list, "Accept", accept)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Contains(b, []byte(ToolVerify)) {
			t.Errorf("Accept %q: %d %s %.200s", accept, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	// A client that accepts only an event stream gets one event with the answer.
	resp, b := post(t, e.url+Path, list, "Accept", "text/event-stream")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Accept text/event-stream: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) != 1 || !strings.Contains(data[0], `"id":1`) || !strings.Contains(data[0], ToolVerify) {
		t.Errorf("event stream data %v", data)
	}

	for name, c := range map[string]struct {
		method, ctype, host string
		body                []byte
		status              int
		code                string
	}{
		"GET":              {http.MethodGet, "", "", nil, 405, "method_not_allowed"},
		"DELETE":           {http.MethodDelete, "", "", nil, 405, "method_not_allowed"},
		"not JSON-RPC":     {http.MethodPost, "application/json", "", []byte(`garbage`), 400, "invalid_request"},
		"empty body":       {http.MethodPost, "application/json", "", []byte(``), 400, "invalid_request"},
		"wrong media type": {http.MethodPost, "text/plain", "", list, 415, "invalid_request"},
		"rebinding Host":   {http.MethodPost, "application/json", "evil.example:8080", list, 403, "forbidden"},
		"too large":        {http.MethodPost, "application/json", "", bytes.Repeat([]byte(" "), int(wire.DefaultLimits.MaxBody)+rpcOverhead+1), 413, "payload_too_large"},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, e.url+Path, bytes.NewReader(c.body))
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.host != "" {
				req.Host = c.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var env struct {
				Code   string `json:"code"`
				Status int    `json:"status"`
			}
			json.Unmarshal(b, &env)
			if resp.StatusCode != c.status || env.Code != c.code || env.Status != c.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%d %s %s, want %d %s", resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.code)
			}
			if c.status == 405 && resp.Header.Get("Allow") != "POST" {
				t.Errorf("Allow = %q, want POST", resp.Header.Get("Allow"))
			}
			if c.host != "" && bytes.Contains(b, []byte("evil")) {
				t.Errorf("the refusal echoes the Host: %s", b)
			}
		})
	}
	// A notification is accepted without an answer.
	if resp, b := post(t, e.url+Path, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "Accept", "application/json"); resp.StatusCode != 202 {
		t.Errorf("notification: %d %s", resp.StatusCode, b)
	}
	// Browsers may call the endpoint: the preflight names POST and the MCP headers.
	req, _ := http.NewRequest(http.MethodOptions, e.url+Path, nil)
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Methods") != "POST" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Mcp-Protocol-Version") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

// A reverse proxy in front of a loopback-bound server sends the public host: that one is allowed,
// any other is not.
func TestPublicHostBehindProxy(t *testing.T) {
	e := newEnv(t, func(d *service.Deps) { d.BaseURL = "https://verifier.example.com" })
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for host, want := range map[string]int{"verifier.example.com": 200, "Verifier.Example.com:443": 200, "localhost:9": 200, "[::1]:9": 200, "other.example.com": 403} {
		req, _ := http.NewRequest(http.MethodPost, e.url+Path, bytes.NewReader(list))
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	// Behind API Gateway (no listener address in the context) the Host is API Gateway's.
	s := New(e.svc)
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(list))
	req.Host = "a1b2c3.execute-api.us-east-1.amazonaws.com"
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("API Gateway host: %d %s", rec.Code, rec.Body)
	}
}

// The free allowance follows the client address of the HTTP request, X-Forwarded-For only as far
// as proxies are trusted, exactly as on the REST routes.
func TestAllowanceIsPerClient(t *testing.T) {
	e := newEnv(t, withLimit(1), withPayer(&fakePayer{}), func(d *service.Deps) { d.TrustedProxyHops = 1 })
	body, _ := json.Marshal(wire.ExampleRequest())
	for _, ip := range []string{"198.51.100.1", "198.51.100.2"} {
		if r := e.call(t, ToolVerify, body, nil, "X-Forwarded-For", ip); r.IsError {
			t.Errorf("%s's first call: %s", ip, r.StructuredContent)
		}
	}
	if r := e.call(t, ToolVerify, body, nil, "X-Forwarded-For", "198.51.100.1"); !r.IsError || string(r.Meta["code"]) != `"free_trial_exhausted"` {
		t.Errorf("198.51.100.1's second call: %s", r.StructuredContent)
	}
	if resp, _ := post(t, e.url+"/verify/schema", body, "X-Forwarded-For", "198.51.100.2"); resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("198.51.100.2's REST call after its MCP call: %d", resp.StatusCode)
	}
}

// Arguments past the absolute limit are refused with the 413 envelope, past the free limit they
// need a payment, as REST bodies do.
func TestArgumentLimits(t *testing.T) {
	e := newEnv(t, withPayer(&fakePayer{}), func(d *service.Deps) {
		d.Engine, d.MaxBody = engine.New(wire.Limits{MaxBody: 4096}), 4096
		d.Pricing.FreeMaxBody = 1024
	})
	pad := func(n int) []byte {
		return []byte(`{"task_id":"t","expected_schema":{},"submitted_output":"` + strings.Repeat("x", n) + `"}`)
	}
	if r := e.call(t, ToolVerify, pad(5000), nil); !r.IsError || r.sc(t)["code"] != "payload_too_large" || r.sc(t)["limit"] != float64(4096) {
		t.Errorf("over the absolute limit: %s", r.StructuredContent)
	}
	if r := e.call(t, ToolVerify, pad(2000), nil); !r.IsError || string(r.Meta["code"]) != `"payment_required"` {
		t.Errorf("over the free limit: %s %v", r.StructuredContent, r.Meta)
	}
	if r := e.call(t, ToolVerify, pad(100), nil); r.IsError {
		t.Errorf("within the free limit: %s", r.StructuredContent)
	}
}

// The handler for functions/mcp serves /mcp alone and answers everything else in the envelope.
func TestHandlerServesOnlyMCP(t *testing.T) {
	e := newEnv(t)
	h := Handler(e.svc)
	for path, want := range map[string]int{"/verify/schema": 404, "/": 404, Path: 405} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Errorf("GET %s: %d %s, want %d", path, rec.Code, rec.Header().Get("Content-Type"), want)
		}
	}
}

// panickingStore is a store whose aggregate reads panic.
type panickingStore struct{ service.Store }

func (panickingStore) AgentAggregate(context.Context, string) (reputation.Aggregate, bool, error) {
	panic("boom")
}

// A panic in a tool (which the SDK runs outside the router's recovery) is the generic internal
// error result, and the server stays up.
func TestToolPanicIsAnInternalError(t *testing.T) {
	e := newEnv(t, func(d *service.Deps) { d.Store = panickingStore{d.Store} })
	s := New(e.svc)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	for range 2 {
		r := e.call(t, ToolRecord, []byte(`{"agent_id":"a"}`), nil)
		got := r.sc(t)
		if !r.IsError || got["code"] != "internal_error" || got["status"] != float64(500) || got["retryable"] != true {
			t.Errorf("panicking tool: %s", r.StructuredContent)
		}
	}
}

// As on REST, a schema too costly to evaluate is the error schema_too_complex: no free call is
// taken and nothing is recorded.
func TestSchemaTooComplexOverMCP(t *testing.T) {
	e := newEnv(t, withLimit(1), withPayer(&fakePayer{}))
	var defs strings.Builder
	defs.WriteString(`"d0":{"type":"integer"}`)
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&defs, `,"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i-1, i-1)
	}
	args := []byte(`{"task_id":"t","agent_id":"seller-complex","expected_schema":{"$defs":{` + defs.String() + `},"$ref":"#/$defs/d16"},"submitted_output":1}`)
	for i := range 3 {
		r := e.call(t, ToolVerify, args, nil)
		m := r.sc(t)
		if !r.IsError || m["code"] != "schema_too_complex" || m["status"] != float64(422) || m["charged"] != false || m["result"] != nil {
			t.Fatalf("call %d: %s", i, r.StructuredContent)
		}
	}
	body, _ := json.Marshal(wire.ExampleRequest())
	r := e.call(t, ToolVerify, body, nil)
	if r.IsError || r.meta(t, "free_allowance")["remaining"] != float64(0) {
		t.Fatalf("the one free call after the refusals: %s", r.StructuredContent)
	}
	if page, _, err := e.st.History(context.Background(), "seller-complex", 10, ""); err != nil || len(page) != 0 {
		t.Errorf("history: %d entries, %v; want none", len(page), err)
	}
}
