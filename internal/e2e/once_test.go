package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/infra/mcp/mcptest"
	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/pkg/client"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Fault modes of faultProxy's /settle.
const (
	passSettle = iota
	dropAfterSettle
	hangAfterSettle
)

// faultProxy stands between the server and the real facilitator: every call is forwarded, and
// in a fault mode a /settle's answer, after the facilitator settled, is dropped (the connection
// closed) or held until release is closed. It never makes up an answer.
type faultProxy struct {
	url     string
	mode    atomic.Int32
	settles atomic.Int32 // /settle calls forwarded
	release chan struct{}
}

func startFaultProxy(t *testing.T, facilitator string) *faultProxy {
	p := &faultProxy{release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, facilitator+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if r.URL.Path == "/settle" {
			p.settles.Add(1)
			switch p.mode.Load() {
			case hangAfterSettle:
				select {
				case <-p.release:
				case <-r.Context().Done():
				}
				fallthrough
			case dropAfterSettle:
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// onceWorld is a paid-only server, its facilitator behind a faultProxy, and the real chain.
type onceWorld struct {
	chain    *x402test.Chain
	proxy    *faultProxy
	url      string
	rest     x402.Requirements // the REST route's requirement
	resource x402.Resource
	payers   map[string]*client.EVMPayer
}

func newOnceWorld(t *testing.T) *onceWorld {
	chain := x402test.Start(t)
	proxy := startFaultProxy(t, chain.Facilitator)
	srv := startServer(t, paidOnly(proxy.url, "X402_PAY_TO_EVM", chain.Payee, x402test.Network))
	probe, _ := post(t, srv.URL+"/verify/schema", nil)
	prJSON, err := base64.StdEncoding.DecodeString(probe.Header.Get(x402.HeaderPaymentRequired))
	var pr x402.PaymentRequired
	if err == nil {
		err = json.Unmarshal(prJSON, &pr)
	}
	if err != nil || len(pr.Accepts) != 1 || pr.Extensions[x402.ExtPaymentIdentifier] == nil {
		t.Fatalf("probe: %v %+v", err, pr)
	}
	w := &onceWorld{chain: chain, proxy: proxy, url: srv.URL, rest: pr.Accepts[0], resource: pr.Resource, payers: map[string]*client.EVMPayer{}}
	for _, key := range []string{chain.PayerKey, chain.Payer2Key} {
		p, err := client.NewEVMPayer(key)
		if err != nil {
			t.Fatal(err)
		}
		w.payers[key] = p
	}
	return w
}

// payment is a freshly signed payment from key (the project's own EVM client signs the
// EIP-3009 authorization, which the facilitator verifies on chain) carrying payment identifier id.
func (w *onceWorld) payment(t *testing.T, key, id string) x402.PaymentPayload {
	payload, err := w.payers[key].Sign(context.Background(), w.rest)
	if err != nil {
		t.Error(err)
	}
	res := w.resource
	return x402.PaymentPayload{X402Version: 2, Resource: &res, Accepted: w.rest, Payload: payload,
		Extensions: map[string]any{x402.ExtPaymentIdentifier: map[string]any{"info": map[string]any{"id": id}}}}
}

// answer is one call's outcome, over either transport.
type answer struct {
	status int    // HTTP status; for MCP 200 or the error's status
	code   string // the error code, "" for an answer
	body   string // the signed answer, "" for an error
	tx     string // the settlement's transaction
	mcp    bool   // sent over MCP
}

func (w *onceWorld) rest1(t *testing.T, body []byte, p x402.PaymentPayload) answer {
	h, err := x402.EncodeHeader(p)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	req, _ := http.NewRequest(http.MethodPost, w.url+"/verify/schema", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(x402.HeaderPaymentSignature, h)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode}
	if resp.StatusCode == 200 {
		a.body = string(b)
		var sr x402.SettleResponse
		if raw, err := base64.StdEncoding.DecodeString(resp.Header.Get(x402.HeaderPaymentResponse)); err == nil {
			json.Unmarshal(raw, &sr)
		}
		a.tx = sr.Transaction
	} else {
		var m map[string]any
		json.Unmarshal(b, &m)
		a.code, _ = m["code"].(string)
	}
	return a
}

func (w *onceWorld) mcp1(t *testing.T, body []byte, p x402.PaymentPayload) answer {
	raw, _ := json.Marshal(p)
	var meta map[string]any
	json.Unmarshal(raw, &meta)
	r := mcptest.Run(t, w.url+mcpserver.Path, mcptest.Call{Name: mcpserver.ToolVerify, Arguments: body,
		Meta: map[string]any{x402.MetaPayment: meta}}).Results[0]
	var doc map[string]any
	json.Unmarshal(r.Result.StructuredContent, &doc)
	if !r.Result.IsError {
		var sr x402.SettleResponse
		json.Unmarshal(r.Result.Meta[x402.MetaPaymentResponse], &sr)
		return answer{status: 200, body: string(r.Result.StructuredContent), tx: sr.Transaction, mcp: true}
	}
	a := answer{mcp: true}
	a.code, _ = doc["code"].(string)
	if st, ok := doc["status"].(float64); ok {
		a.status = int(st)
	}
	return a
}

// concurrently sends n calls with payment identifier id at once, each with a fresh payment from
// the first payer: every mcpEvery-th over MCP, the rest over REST; body(i) is call i's body.
func (w *onceWorld) concurrently(t *testing.T, n, mcpEvery int, id string, body func(i int) []byte) []answer {
	payments := make([]x402.PaymentPayload, n)
	for i := range n {
		payments[i] = w.payment(t, w.chain.PayerKey, id)
	}
	out := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			if mcpEvery > 0 && i%mcpEvery == 0 {
				out[i] = w.mcp1(t, body(i), payments[i])
			} else {
				out[i] = w.rest1(t, body(i), payments[i])
			}
		})
	}
	close(start)
	wg.Wait()
	return out
}

// sameDocument says two JSON texts are the same document (MCP re-encodes the answer).
func sameDocument(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && jsonEqual(x, y)
}

// TestPaymentIdentifierOnceOnLocalChain: calls sharing one payment identifier, each with its own
// freshly signed payment, sent at once over REST and MCP, settle exactly once on chain (the
// payer's and payee's balances move by one price), whether their bodies are the same or all
// differ; every delivered answer is that one call's, every other call is a 409 (another body,
// or a retryable one while the first is settled); another payer never gets the kept answer.
func TestPaymentIdentifierOnceOnLocalChain(t *testing.T) {
	mcptest.Require(t)
	w := newOnceWorld(t)
	ledger := x402test.NewLedger(t, w.chain.Balance, w.chain.Payer, w.chain.Payee)
	settled := int64(0)
	for _, c := range []struct {
		n, mcpEvery int
		sameBody    bool
	}{{10, 2, true}, {10, 2, false}, {50, 5, true}, {50, 5, false}} {
		name := fmt.Sprintf("%d-same-body-%v", c.n, c.sameBody)
		id := fmt.Sprintf("pay_once_%d_%v_%d", c.n, c.sameBody, time.Now().UnixNano())
		bodyOf := func(i int) []byte {
			if c.sameBody {
				i = 0
			}
			return []byte(fmt.Sprintf(`{"task_id":"once-%s-%d","agent_id":"seller-once","expected_schema":{"type":"object"},"submitted_output":{"n":%d}}`, name, i, i))
		}
		answers := w.concurrently(t, c.n, c.mcpEvery, id, bodyOf)
		settled += price
		ledger.Moved(t, settled) // exactly one of the n payments moved money
		var delivered []answer
		for i, a := range answers {
			switch {
			case a.status == 200:
				delivered = append(delivered, a)
			case a.status == http.StatusConflict && a.code == "payment_identifier_conflict":
			default:
				t.Errorf("%s: call %d: %+v", name, i, a)
			}
		}
		if len(delivered) == 0 {
			t.Fatalf("%s: no call was answered: %+v", name, answers)
		}
		for _, a := range delivered[1:] {
			if !sameDocument(a.body, delivered[0].body) || a.tx != delivered[0].tx {
				t.Fatalf("%s: two different answers were delivered under one identifier:\n%s %s\n%s %s", name, a.body, a.tx, delivered[0].body, delivered[0].tx)
			}
		}
		if c.sameBody && len(delivered) < c.n/2 {
			t.Logf("%s: %d of %d same-body calls answered at once (the rest 409 retryable)", name, len(delivered), c.n)
		}
		// Sent again afterwards: the same body gets the kept answer, once settled; another
		// payer's payment, or another body, a 409; nothing moves.
		// (The request is the body on its route or tool: a REST route and the MCP tool under
		// one identifier are two requests, the later one a 409.)
		var winner []byte
		send := w.rest1
		for i := range c.n {
			if answers[i].status == 200 {
				winner = bodyOf(i)
				if answers[i].mcp {
					send = w.mcp1
				}
				break
			}
		}
		again := send(t, winner, w.payment(t, w.chain.PayerKey, id))
		if again.status != 200 || !sameDocument(again.body, delivered[0].body) {
			t.Fatalf("%s: the retry got %+v", name, again)
		}
		if other := send(t, winner, w.payment(t, w.chain.Payer2Key, id)); other.status != http.StatusConflict || other.code != "payment_identifier_conflict" {
			t.Fatalf("%s: another payer's retry got %+v", name, other)
		}
		ledger.Moved(t, settled)
	}
}

// TestPaymentIdentifierLostSettlementOnLocalChain: the facilitator settles but its answer never
// reaches the server (dropped, or held past the server's settlement timeout): the call answers
// that it may have been charged, and a retry with the same identifier and a NEW payment is
// resolved by settling the first payment again, which the chain refuses as used: the kept answer
// is delivered, and the new payment is never settled. Calls sent while the answer is held wait
// or get a retryable 409, and settle nothing.
func TestPaymentIdentifierLostSettlementOnLocalChain(t *testing.T) {
	mcptest.Require(t)
	w := newOnceWorld(t)
	ledger := x402test.NewLedger(t, w.chain.Balance, w.chain.Payer, w.chain.Payee)
	for i, mode := range []int32{dropAfterSettle, hangAfterSettle} {
		id := fmt.Sprintf("pay_lost_settlement_%d_%d", i, time.Now().UnixNano())
		body := []byte(fmt.Sprintf(`{"task_id":"lost-%d","agent_id":"seller-lost","expected_schema":{"type":"object"},"submitted_output":{"n":%d}}`, i, i))
		w.proxy.mode.Store(mode)
		if mode == hangAfterSettle {
			w.proxy.release = make(chan struct{})
			time.AfterFunc(heldPastSettleTimeout, func() { close(w.proxy.release) })
		}
		// While the first call's settlement is lost, others with the identifier come in.
		var during []answer
		var wg sync.WaitGroup
		if mode == hangAfterSettle {
			wg.Go(func() {
				time.Sleep(2 * time.Second)
				during = w.concurrently(t, 6, 3, id, func(int) []byte { return body })
			})
		}
		first := w.rest1(t, body, w.payment(t, w.chain.PayerKey, id))
		wg.Wait()
		if first.status != http.StatusServiceUnavailable || first.code != "facilitator_unavailable" {
			t.Fatalf("mode %d: the call whose settlement was lost got %+v", mode, first)
		}
		for j, a := range during {
			if a.status != http.StatusConflict || a.code != "payment_identifier_conflict" {
				t.Errorf("mode %d: call %d during the lost settlement got %+v", mode, j, a)
			}
		}
		ledger.Moved(t, int64(i+1)*price) // the first payment settled, and nothing else

		w.proxy.mode.Store(passSettle)
		fresh := w.payment(t, w.chain.PayerKey, id)
		before := w.proxy.settles.Load()
		retry := w.rest1(t, body, fresh)
		if retry.status != 200 || retry.body == "" {
			t.Fatalf("mode %d: the retry got %+v", mode, retry)
		}
		if n := w.proxy.settles.Load() - before; n != 1 {
			t.Fatalf("mode %d: the retry asked for %d settlements, want 1 (the first payment's, again)", mode, n)
		}
		auth, _ := fresh.Payload["authorization"].(map[string]any)
		if w.chain.AuthorizationUsed(t, auth["from"].(string), auth["nonce"].(string)) {
			t.Fatalf("mode %d: the retry's new payment was settled", mode)
		}
		ledger.Moved(t, int64(i+1)*price)
		// The resolved claim is kept: the next retry is answered from it.
		if again := w.rest1(t, body, w.payment(t, w.chain.PayerKey, id)); again.status != 200 || again.body != retry.body {
			t.Fatalf("mode %d: the second retry got %+v", mode, again)
		}
		ledger.Moved(t, int64(i+1)*price)
	}
}

// heldPastSettleTimeout holds a settlement's answer past the server's settlement timeout.
const heldPastSettleTimeout = x402.DefaultSettleTimeout + 2*time.Second

// TestPaymentIdentifierOnLocalSolana: the same on Solana, with the real @x402/svm client and
// facilitator on LiteSVM. The payer a kept answer is held to is the one the client's
// transaction names; a settlement whose answer is dropped is resolved by a retry with a new
// payment through the facilitator's own refusal of the settled transaction: one transfer moves,
// the kept answer is delivered, and concurrent calls with the id settle nothing more.
func TestPaymentIdentifierOnLocalSolana(t *testing.T) {
	sol := x402test.StartSolana(t)
	proxy := startFaultProxy(t, sol.Facilitator)
	srv := startServer(t, paidOnly(proxy.url, "X402_PAY_TO_SOLANA", sol.Payee, x402test.SolanaNetwork))
	ledger := x402test.NewLedger(t, sol.Balance, sol.PayerTokenAccount, sol.PayeeTokenAccount)
	probe, _ := post(t, srv.URL+"/verify/schema", nil)
	prJSON, err := base64.StdEncoding.DecodeString(probe.Header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("pay_solana_once_%d", time.Now().UnixNano())
	signed := func() x402.PaymentPayload {
		var p x402.PaymentPayload
		if err := json.Unmarshal(sol.SignPayment(t, prJSON).Payment, &p); err != nil {
			t.Fatal(err)
		}
		p.Extensions = map[string]any{x402.ExtPaymentIdentifier: map[string]any{"info": map[string]any{"id": id}}}
		return p
	}
	send := func(p x402.PaymentPayload, body []byte) (int, string, string) {
		h, err := x402.EncodeHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		resp, m := post(t, srv.URL+"/verify/schema", body, x402.HeaderPaymentSignature, h)
		code, _ := m["code"].(string)
		b, _ := json.Marshal(m)
		return resp.StatusCode, code, string(b)
	}
	body := []byte(`{"task_id":"sol-once","agent_id":"seller-sol-once","expected_schema":{"type":"object"},"submitted_output":{"n":1}}`)

	first := signed()
	if payer, err := x402.PayerOf(first); err != nil || payer != sol.Payer {
		t.Fatalf("PayerOf the real client's transaction = %q, %v; want %s", payer, err, sol.Payer)
	}
	proxy.mode.Store(dropAfterSettle)
	if status, code, m := send(first, body); status != http.StatusServiceUnavailable || code != "facilitator_unavailable" {
		t.Fatalf("dropped settlement answer: %d %s", status, m)
	}
	ledger.Moved(t, price)
	proxy.mode.Store(passSettle)

	payments := []x402.PaymentPayload{signed(), signed(), signed()}
	results := make([][3]string, len(payments))
	var wg sync.WaitGroup
	for i, p := range payments {
		wg.Go(func() {
			status, code, m := send(p, body)
			results[i] = [3]string{fmt.Sprint(status), code, m}
		})
	}
	wg.Wait()
	answered := 0
	for i, r := range results {
		switch {
		case r[0] == "200":
			answered++
		case r[0] == "409" && r[1] == "payment_identifier_conflict":
		default:
			t.Errorf("retry %d: %v", i, r)
		}
	}
	if answered == 0 {
		t.Fatalf("no retry got the kept answer: %v", results)
	}
	ledger.Moved(t, price)
	if status, _, m := send(signed(), body); status != 200 {
		t.Fatalf("a later retry: %d %s", status, m)
	}
	ledger.Moved(t, price)
}
