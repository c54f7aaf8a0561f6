// Package openapi checks the service's OpenAPI document with an OpenAPI implementation the
// project did not write (pb33f/libopenapi and libopenapi-validator): the document must validate
// as OpenAPI 3.1, and real answers of the running handlers, for every operation and every status
// they give (200, 304, 402, 404, 413, 422, 429, ...), must validate against it. It is a module of
// its own so that the validator's dependencies never enter the service's module graph (see
// README.md).
package openapi

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
	"github.com/agent-output-verifier/verifier/pkg/translog"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// requirement is what the test deployment asks to be paid.
var requirement = x402.Requirements{Scheme: "exact", Network: x402.NetworkBase, Amount: "20000",
	Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
	MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}

// payer stands in for the facilitator: a payment whose nonce ends in 1 is valid and settles,
// any other is invalid.
type payer struct{}

func (payer) Requirements(_ context.Context, price string) ([]x402.Requirements, error) {
	r := requirement
	var err error
	r.Amount, err = x402.USDToAtomic(price)
	return []x402.Requirements{r}, err
}

func (payer) Verify(_ context.Context, p x402.PaymentPayload, _ x402.Requirements) (x402.VerifyResponse, error) {
	auth, _ := p.Payload["authorization"].(map[string]any)
	nonce, _ := auth["nonce"].(string)
	return x402.VerifyResponse{IsValid: strings.HasSuffix(nonce, "1"), InvalidReason: "invalid_signature", Payer: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"}, nil
}

func (payer) Settle(context.Context, x402.PaymentPayload, x402.Requirements) (x402.SettleResponse, error) {
	return x402.SettleResponse{Success: true, Transaction: "0x" + strings.Repeat("ab", 32), Network: x402.NetworkBase, Payer: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"}, nil
}

func (payer) Config() x402.Config {
	return x402.Config{PayToEVM: requirement.PayTo, Networks: []string{x402.NetworkBase}}
}

func paymentHeader(t *testing.T, price string, nonce int) string {
	t.Helper()
	r := requirement
	r.Amount, _ = x402.USDToAtomic(price)
	h, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: r, Payload: map[string]any{
		"signature": "0x" + fmt.Sprintf("%0130d", 1),
		"authorization": map[string]any{"from": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "to": r.PayTo, "value": r.Amount,
			"validAfter": "0", "validBefore": "9999999999", "nonce": fmt.Sprintf("0x%064x", nonce)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Limits of the test deployment, small so that 402 (over the free size) and 413 are cheap to
// reach.
const (
	maxBody     = 8192
	freeMaxBody = 4096
	freeCalls   = 4
)

// deployment is a running local server (every route, /mcp included) on a loopback port.
type deployment struct {
	base string
	svc  *service.Service
	st   *bolt.Store
}

// logKey is the receipt log's key of a test deployment at base.
func logKey(t *testing.T, base string) translog.LogKey {
	t.Helper()
	k, err := translog.NewLogKey(translog.Origin(base), receipt.Key{Version: "openapi-log", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func start(t *testing.T, pay service.Payer, calls int) *deployment {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The service and its store read one test clock.
	clock := testclock.New(testclock.Epochs()[0])
	st, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), bolt.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &deployment{base: "http://" + ln.Addr().String()}
	svc, err := service.New(service.Deps{
		Engine:     engine.New(wire.Limits{MaxBody: maxBody}),
		MaxBody:    maxBody,
		Keys:       receipt.KeyRing{Current: receipt.Key{Version: "openapi-test", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}},
		BaseURL:    d.base,
		Store:      st,
		Payer:      pay,
		Pricing:    service.Pricing{FreeCallsPerDay: calls, FreeMaxBody: freeMaxBody, PriceVerify: "0.02", PriceScore: "0.01"},
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:        clock.Now,
		CallerSalt: []byte("salt"),
		Receipts:   st,
		// The local server's store writes a receipt and its history record at once.
		ReceiptsWithHistory: st,
		LogKey:              logKey(t, d.base),
	})
	if err != nil {
		t.Fatal(err)
	}
	d.svc, d.st = svc, st
	srv := httptest.NewUnstartedServer(httpapi.Handler(d.svc, mcpserver.New(d.svc).Mount, discovery.New(d.svc).Mount))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return d
}

// exchange is one request and the answer the running server gave, ready for the validator.
type exchange struct {
	name string
	req  *http.Request
	resp *http.Response
	body []byte
}

func (d *deployment) send(t *testing.T, name, method, path string, body []byte, hdr ...string) exchange {
	t.Helper()
	resp, b := testhttp.Do(t, method, d.base+path, body, hdr...)
	// The validator reads both bodies again, and the request exactly as it was sent.
	req := resp.Request
	req.Body = io.NopCloser(bytes.NewReader(body))
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return exchange{name: name, req: req, resp: resp, body: b}
}

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadDocument fetches /openapi.json and builds the validator on it.
func loadDocument(t *testing.T, d *deployment) (libopenapi.Document, validator.Validator) {
	t.Helper()
	resp, err := http.Get(d.base + discovery.PathOpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatalf("libopenapi cannot read the document: %v", err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return doc, v
}

func describe(errs []*valerrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  - %s: %s", e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s at %s (%s)", se.Reason, se.FieldPath, se.KeywordLocation)
		}
	}
	return b.String()
}

func TestDocumentIsValidOpenAPI31(t *testing.T) {
	d := start(t, payer{}, freeCalls)
	doc, v := loadDocument(t, d)
	if got := doc.GetVersion(); !strings.HasPrefix(got, "3.1") {
		t.Errorf("version %s, want 3.1", got)
	}
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("the document is not valid OpenAPI 3.1:%s", describe(errs))
	}
	// The free-only deployment's document (other descriptions, no prices) is valid too.
	_, v = loadDocument(t, start(t, nil, freeCalls))
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("the free-only document is not valid OpenAPI 3.1:%s", describe(errs))
	}
}

// Every example in the document validates against the schema it illustrates.
func TestExamplesMatchTheirSchemas(t *testing.T) {
	d := start(t, payer{}, freeCalls)
	doc, _ := loadDocument(t, d)
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	sv := schema_validation.NewSchemaValidator()
	n := 0
	check := func(where string, mt *v3.MediaType) {
		if mt == nil || mt.Examples == nil || mt.Schema == nil {
			return
		}
		for name, ex := range mt.Examples.FromOldest() {
			var value any
			if err := ex.Value.Decode(&value); err != nil {
				t.Errorf("%s example %s: %v", where, name, err)
				continue
			}
			raw, _ := json.Marshal(value)
			if ok, errs := sv.ValidateSchemaBytes(mt.Schema.Schema(), raw); !ok {
				t.Errorf("%s example %s does not match its schema:%s", where, name, describe(errs))
			}
			n++
		}
	}
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			where := strings.ToUpper(method) + " " + path
			if op.RequestBody != nil && op.RequestBody.Content != nil {
				for ct, mt := range op.RequestBody.Content.FromOldest() {
					check(where+" request "+ct, mt)
				}
			}
			for code, r := range op.Responses.Codes.FromOldest() {
				if r.Content == nil {
					continue
				}
				for ct, mt := range r.Content.FromOldest() {
					check(where+" "+code+" "+ct, mt)
				}
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d examples checked", n)
	}
}

// Real answers of the running handlers, for every operation of the document, validate against it.
func TestResponsesMatchTheDocument(t *testing.T) {
	d := start(t, payer{}, freeCalls)
	doc, v := loadDocument(t, d)
	free := start(t, nil, 0) // free-only, with no free calls: past the allowance at once

	pass := wire.ExampleRequestJSON()
	fail := readFile(t, "testdata/seed/invoice-draft.request.json")
	compact := bytes.Replace(pass, []byte(`"enforce_rules": true`), []byte(`"enforce_rules": true, "detail": "compact"`), 1)
	invalid := []byte(`{"task_id":"t","expected_schema":{"type":"object"},"submitted_output":{},"rules":[{"type":"sum_equal","field":"a"}]}`)
	padded := func(n int) []byte {
		return []byte(`{"task_id":"big","expected_schema":{"type":"string"},"submitted_output":"` + strings.Repeat("x", n) + `"}`)
	}
	notify := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	list := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"verify_schema","arguments":` + string(bytes.TrimSpace(pass)) + `}}`)
	longID := strings.Repeat("a", wire.MaxIDLen+1)

	// The order matters: the first four verifications spend the free allowance (4 calls).
	cases := []struct {
		ex     exchange
		status int
		valid  bool // the request itself must validate too
	}{
		{d.send(t, "verify pass", "POST", "/verify/schema", pass), 200, true},
		{d.send(t, "verify fail", "POST", "/verify/schema", fail), 200, true},
		{d.send(t, "verify compact", "POST", "/verify/schema", compact), 200, true},
		{d.send(t, "deliverable pass", "POST", "/verify/deliverable", pass), 200, true},
		{d.send(t, "verify past the allowance", "POST", "/verify/schema", pass), 402, true},
		{d.send(t, "deliverable past the allowance", "POST", "/verify/deliverable", pass), 402, true},
		{d.send(t, "verify paid", "POST", "/verify/schema", pass, "PAYMENT-SIGNATURE", paymentHeader(t, "0.02", 1)), 200, true},
		{d.send(t, "verify refused payment", "POST", "/verify/schema", pass, "PAYMENT-SIGNATURE", paymentHeader(t, "0.02", 2)), 402, true},
		{d.send(t, "verify undecodable payment", "POST", "/verify/schema", pass, "PAYMENT-SIGNATURE", "not-base64!"), 402, true},
		{d.send(t, "verify probe", "POST", "/verify/schema", nil), 402, false},
		{d.send(t, "verify over the free size", "POST", "/verify/schema", padded(freeMaxBody)), 402, true},
		{d.send(t, "verify too large", "POST", "/verify/schema", padded(maxBody)), 413, false},
		{d.send(t, "verify invalid", "POST", "/verify/schema", invalid), 422, false},
		{d.send(t, "deliverable invalid", "POST", "/verify/deliverable", []byte(`[]`)), 422, false},
		{free.send(t, "verify free-only exhausted", "POST", "/verify/schema", pass), 429, true},
		{d.send(t, "score with a record", "GET", "/score/seller-invoice-agent", nil), 402, true},
		{d.send(t, "score paid", "GET", "/score/seller-invoice-agent", nil, "PAYMENT-SIGNATURE", paymentHeader(t, "0.01", 0x11)), 200, true},
		{d.send(t, "score no data", "GET", "/score/"+discovery.ExampleAgentUnknown, nil), 200, true},
		{d.send(t, "score test- id", "GET", "/score/test-agent", nil), 200, true},
		{d.send(t, "score id too long", "GET", "/score/"+longID, nil), 422, false},
		{d.send(t, "reputation", "GET", "/reputation/seller-invoice-agent?limit=2", nil), 200, true},
		{d.send(t, "reputation no data", "GET", "/reputation/nobody", nil), 200, true},
		{d.send(t, "reputation bad limit", "GET", "/reputation/nobody?limit=0", nil), 422, false},
		{d.send(t, "reputation bad cursor", "GET", "/reputation/seller-invoice-agent?cursor=bogus", nil), 422, true},
		{d.send(t, "mcp tools/list", "POST", "/mcp", list), 200, true},
		{d.send(t, "mcp tools/call", "POST", "/mcp", call), 200, true},
		{d.send(t, "mcp notification", "POST", "/mcp", notify), 202, true},
		{d.send(t, "mcp not JSON-RPC", "POST", "/mcp", []byte(`{"hello":1}`)), 400, false},
		{d.send(t, "health", "GET", "/health", nil), 200, true},
		{d.send(t, "agent card", "GET", "/.well-known/agent-card.json", nil), 200, true},
		{d.send(t, "agent card (legacy)", "GET", "/.well-known/agent.json", nil), 200, true},
		{d.send(t, "x402 manifest", "GET", "/.well-known/x402", nil), 200, true},
		{d.send(t, "DID document", "GET", "/.well-known/did.json", nil), 200, true},
		{d.send(t, "api catalog", "GET", "/.well-known/api-catalog", nil), 200, true},
		{d.send(t, "api catalog HEAD", "HEAD", "/.well-known/api-catalog", nil), 200, true},
		{d.send(t, "openapi", "GET", "/openapi.json", nil), 200, true},
		{d.send(t, "docs", "GET", "/docs", nil), 200, true},
		{d.send(t, "llms.txt", "GET", "/llms.txt", nil), 200, true},
		{d.send(t, "llms-full.txt", "GET", "/llms-full.txt", nil), 200, true},
		{d.send(t, "index", "GET", "/", nil), 200, true},
		{d.send(t, "index JSON", "GET", "/", nil, "Accept", "application/json"), 200, true},
	}
	// The receipt log: a record while pending, then (with a full tile's worth of leaves recorded
	// beside the answers above) the record with its proof, the checkpoint and the tiles.
	type logCase = struct {
		ex     exchange
		status int
		valid  bool
	}
	var first struct {
		ID string `json:"verification_id"`
	}
	json.Unmarshal(cases[0].ex.body, &first)
	cases = append(cases, logCase{d.send(t, "record pending", "GET", "/verifications/"+first.ID, nil), 200, true})
	cases = append(cases, logCase{d.send(t, "checkpoint of an empty log", "GET", "/log/checkpoint", nil), 404, true})
	cases = append(cases, logCase{d.send(t, "attestation pending", "GET", "/verifications/"+first.ID+"/attestation", nil), 404, true})
	for i := range 256 {
		id := fmt.Sprintf("openapi-filler-%03d", i)
		if err := d.st.RecordReceipt(context.Background(), store.Receipt{VerificationID: id, ReceiptHash: sha256.Sum256([]byte(id)),
			Result: "pass", Expires: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.svc.Sequence(context.Background()); err != nil {
		t.Fatal(err)
	}
	head, err := d.st.LogHead(context.Background())
	if err != nil || head.Size <= 256 || head.Size%256 == 0 {
		t.Fatalf("log head %d, %v: want a full tile and a partial one", head.Size, err)
	}
	w := head.Size % 256
	cases = append(cases,
		logCase{d.send(t, "record", "GET", "/verifications/"+first.ID, nil), 200, true},
		logCase{d.send(t, "record unknown", "GET", "/verifications/never-issued", nil), 404, true},
		logCase{d.send(t, "record id too long", "GET", "/verifications/"+strings.Repeat("a", 129), nil), 422, false},
		logCase{d.send(t, "attestation", "GET", "/verifications/"+first.ID+"/attestation", nil), 200, true},
		logCase{d.send(t, "attestation unknown", "GET", "/verifications/never-issued/attestation", nil), 404, true},
		logCase{d.send(t, "checkpoint", "GET", "/log/checkpoint", nil), 200, true},
		logCase{d.send(t, "tile", "GET", "/log/tile/8/0/000", nil), 200, true},
		logCase{d.send(t, "data tile", "GET", "/log/tile/8/data/000", nil), 200, true},
		logCase{d.send(t, "partial tile", "GET", fmt.Sprintf("/log/tile/8/0/001.p/%d", w), nil), 200, true},
		logCase{d.send(t, "partial data tile", "GET", fmt.Sprintf("/log/tile/8/data/001.p/%d", w), nil), 200, true},
		logCase{d.send(t, "tile beyond the tree", "GET", "/log/tile/8/0/002", nil), 404, true},
	)
	// Conditional requests: 304 with the ETag of a first answer.
	for _, p := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/did.json", "/.well-known/api-catalog", "/openapi.json", "/docs", "/llms.txt", "/llms-full.txt"} {
		first := d.send(t, p, "GET", p, nil)
		cases = append(cases, struct {
			ex     exchange
			status int
			valid  bool
		}{d.send(t, p+" not modified", "GET", p, nil, "If-None-Match", first.resp.Header.Get("ETag")), 304, true})
	}

	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	exercised := map[string]bool{}
	statuses := map[int]bool{}
	for _, c := range cases {
		ex := c.ex
		if ex.resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", ex.name, ex.resp.StatusCode, c.status, ex.body)
			continue
		}
		statuses[c.status] = true
		if ok, errs := v.ValidateHttpResponse(ex.req, ex.resp); !ok {
			t.Errorf("%s (%d): the answer does not match the document:%s\n%s", ex.name, c.status, describe(errs), clip(ex.body))
		}
		if c.valid {
			if ok, errs := v.ValidateHttpRequest(ex.req); !ok {
				t.Errorf("%s: the request does not match the document:%s", ex.name, describe(errs))
			}
		}
		exercised[operationOf(t, model, ex.req)] = true
	}
	// Every operation of the document was exercised, and every status the brief names.
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			if key := strings.ToUpper(method) + " " + path; !exercised[key] {
				t.Errorf("no answer of %s was checked", key)
			}
		}
	}

	// What the service refuses with 422, the document's request description refuses too.
	for _, c := range cases {
		switch c.ex.name {
		case "verify invalid", "deliverable invalid", "score id too long", "reputation bad limit":
			if valid, _ := v.ValidateHttpRequest(c.ex.req); valid {
				t.Errorf("%s: the service refuses the request, the document accepts it", c.ex.name)
			}
		}
	}

	// The validator is not a rubber stamp: a tampered answer, an undocumented status and a
	// missing required header are refused.
	ok := cases[0].ex
	tampered := func(status int, body []byte, dropHeader string) bool {
		resp := *ok.resp
		resp.StatusCode = status
		resp.Header = ok.resp.Header.Clone()
		resp.Header.Del(dropHeader)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		valid, _ := v.ValidateHttpResponse(ok.req, &resp)
		return valid
	}
	if tampered(200, bytes.Replace(ok.body, []byte(`"result":"pass"`), []byte(`"result":"maybe"`), 1), "") {
		t.Error("the validator accepts an answer whose result is not pass or fail")
	}
	if tampered(418, ok.body, "") {
		t.Error("the validator accepts an undocumented status")
	}
	var paid exchange
	for _, c := range cases {
		if c.ex.name == "verify past the allowance" {
			paid = c.ex
		}
	}
	resp := *paid.resp
	resp.Header = paid.resp.Header.Clone()
	resp.Header.Del("PAYMENT-REQUIRED")
	resp.Body = io.NopCloser(bytes.NewReader(paid.body))
	if valid, _ := v.ValidateHttpResponse(paid.req, &resp); valid {
		t.Error("the validator accepts a 402 without PAYMENT-REQUIRED")
	}

	// Answers that belong to no operation are the document's Error schema: 404 for paths no
	// operation matches (an unknown path, or an agent id with an unencoded '/'), 405 for other
	// methods. (A 404 never answers a path that matches an operation's template, so these are
	// validated against the schema the document gives every 404.)
	errSchema := model.Model.Components.Schemas.GetOrZero("Error").Schema()
	sv := schema_validation.NewSchemaValidator()
	for _, c := range []struct {
		method, path string
		status       int
	}{{"GET", "/no/such/route", 404}, {"GET", "/score/a/b", 404}, {"GET", "/reputation/a/b", 404}, {"GET", "/verify/schema", 405}, {"DELETE", "/health", 405}, {"GET", "/mcp", 405}} {
		ex := d.send(t, c.method+" "+c.path, c.method, c.path, nil)
		if ex.resp.StatusCode != c.status || !strings.HasPrefix(ex.resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %q, want %d JSON", c.method, c.path, ex.resp.StatusCode, ex.resp.Header.Get("Content-Type"), c.status)
			continue
		}
		if ok, errs := sv.ValidateSchemaBytes(errSchema, ex.body); !ok {
			t.Errorf("%s %s: the answer is not the Error schema:%s", c.method, c.path, describe(errs))
			continue
		}
		statuses[c.status] = true
	}
	for _, s := range []int{200, 202, 304, 402, 404, 405, 413, 422, 429} {
		if !statuses[s] {
			t.Errorf("no %d answer was checked", s)
		}
	}
}

// operationOf names the document's operation a request belongs to ("POST /verify/schema").
func operationOf(t *testing.T, model *libopenapi.DocumentModel[v3.Document], r *http.Request) string {
	t.Helper()
	var keys []string
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		if !matches(path, r.URL.Path) {
			continue
		}
		for method := range item.GetOperations().FromOldest() {
			if strings.EqualFold(method, r.Method) {
				keys = append(keys, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(keys)
	if len(keys) != 1 {
		t.Errorf("%s %s matches operations %v", r.Method, r.URL.Path, keys)
		return ""
	}
	return keys[0]
}

// matches tells whether a request path fits a path template of one-segment parameters.
func matches(template, path string) bool {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if !(strings.HasPrefix(ts[i], "{") && ps[i] != "") && ts[i] != ps[i] {
			return false
		}
	}
	return true
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}
