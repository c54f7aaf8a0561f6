package client_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agent-output-verifier/verifier/infra/x402/x402test"
	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/client"
	"github.com/agent-output-verifier/verifier/pkg/intoto"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// droppingProxy forwards everything to target, except that the answer to the first paid request
// is never delivered: the request reaches the service (which verifies, settles and answers), and
// the client's connection is then closed, as a timeout would leave it. It keeps every
// PAYMENT-SIGNATURE it forwarded.
type droppingProxy struct {
	mu       sync.Mutex
	dropped  bool
	payments []string
}

func (d *droppingProxy) start(t *testing.T, target string) *httptest.Server {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sig := r.Header.Get(x402.HeaderPaymentSignature)
		d.mu.Lock()
		drop := sig != "" && !d.dropped
		if sig != "" {
			d.payments = append(d.payments, sig)
		}
		d.dropped = d.dropped || drop
		d.mu.Unlock()
		if !drop {
			rp.ServeHTTP(w, r)
			return
		}
		rp.ServeHTTP(httptest.NewRecorder(), r) // the service answers; the answer is lost
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestReceiptsThatTravelOnLocalChain (SPEC §16) on the local chain, with the real facilitator:
//   - a paid answer's signed payment member matches the payer's own EIP-3009 authorization and
//     the requirement paid, and the authorization is spent on chain by the settlement;
//   - the paid call whose answer was lost is sent again by the client under the same payment
//     identifier and answered from the store: one authorization signed, the payer's balance
//     moved once;
//   - the same payment identifier with another body is refused 409, and nothing more moves.
func TestReceiptsThatTravelOnLocalChain(t *testing.T) {
	chain := x402test.Start(t)
	srv := startServer(t, map[string]string{
		"VERIFIER_FREE_CALLS_PER_DAY": "0",
		"X402_FACILITATOR_URL":        chain.Facilitator,
		"X402_PAY_TO_EVM":             chain.Payee,
		"X402_NETWORKS":               x402test.Network,
	})
	ctx := context.Background()
	evm, err := client.NewEVMPayer(chain.PayerKey)
	if err != nil {
		t.Fatal(err)
	}
	payer := &recordingPayer{Payer: evm}
	var d droppingProxy
	front := d.start(t, srv.URL)
	c := newClient(t, front.URL, client.WithPayer(payer))
	l := x402test.NewLedger(t, chain.Balance, chain.Payer, chain.Payee)

	v, err := c.VerifySchema(ctx, passRequest("travel-paid"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.payments) != 2 || d.payments[0] != d.payments[1] {
		t.Fatalf("the client sent %d paid requests; want the lost one and its retry, with one payment", len(d.payments))
	}
	if payer.count() != 1 || v.Payment == nil || v.Payment.Identifier == "" || v.Payment.Settlement == nil || !v.Payment.Settlement.Success {
		t.Fatalf("paid call: signed %d, payment %+v", payer.count(), v.Payment)
	}
	l.Moved(t, verifyPrice) // once, for two deliveries of the request

	auth := payer.signed[0]["authorization"].(map[string]any)
	nonce := auth["nonce"].(string)
	b := v.PaymentBinding
	if b == nil || b.Scheme != "exact" || b.Network != x402test.Network || b.Amount != "20000" ||
		!strings.EqualFold(b.PayTo, chain.Payee) || !strings.EqualFold(b.Payer, chain.Payer) ||
		b.Authorization != strings.ToLower(nonce) || !strings.EqualFold(auth["from"].(string), b.Payer) || !strings.EqualFold(auth["to"].(string), b.PayTo) ||
		auth["value"] != b.Amount {
		t.Fatalf("payment member %+v does not match the signed authorization %v", b, auth)
	}
	if hash, _ := x402.RequirementsHash(v.Payment.Requirements); b.RequirementsHash != hash {
		t.Errorf("requirements_hash %s, want %s", b.RequirementsHash, hash)
	}
	if !chain.AuthorizationUsed(t, chain.Payer, nonce) {
		t.Fatal("the authorization named in the receipt is not spent on chain")
	}

	// The same payment and identifier with another body: 409, nothing verified or moved.
	other, _ := json.Marshal(passRequest("travel-other"))
	resp, body := testhttp.Do(t, "POST", srv.URL+client.RouteVerifySchema, other, x402.HeaderPaymentSignature, d.payments[0])
	var e struct{ Code string }
	json.Unmarshal(body, &e)
	if resp.StatusCode != http.StatusConflict || e.Code != "payment_identifier_conflict" {
		t.Fatalf("conflicting body: %d %s", resp.StatusCode, body)
	}
	// The same request again, straight to the service: the kept answer, byte for byte.
	same, _ := json.Marshal(passRequest("travel-paid"))
	resp, body = testhttp.Do(t, "POST", srv.URL+client.RouteVerifySchema, same, x402.HeaderPaymentSignature, d.payments[0])
	if resp.StatusCode != 200 || string(body) != string(v.Body) {
		t.Fatalf("the same request again: %d %s", resp.StatusCode, body)
	}
	l.Moved(t, verifyPrice)

	// The stored record carries the settlement of the chain's transaction, and its in-toto
	// attestation, once the leaf is in the log, verifies under the receipt key and names the task
	// (the agent's public history lists it) and the output.
	if _, err := srv.svc.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	resp, body = testhttp.Do(t, "GET", srv.URL+"/verifications/"+v.VerificationID, nil)
	var rec struct {
		TaskID     string               `json:"task_id"`
		Settlement *x402.SettleResponse `json:"settlement"`
	}
	if err := json.Unmarshal(body, &rec); err != nil || resp.StatusCode != 200 || rec.Settlement == nil {
		t.Fatalf("record: %d %s", resp.StatusCode, body)
	}
	if s := rec.Settlement; !s.Success || s.Transaction != v.Payment.Settlement.Transaction || s.Transaction == "" ||
		s.Network != x402test.Network || !strings.EqualFold(s.Payer, chain.Payer) || rec.TaskID != "travel-paid" {
		t.Errorf("the record's settlement %+v (task %q), want the paid answer's %+v", s, rec.TaskID, v.Payment.Settlement)
	}
	resp, body = testhttp.Do(t, "GET", srv.URL+"/verifications/"+v.VerificationID+"/attestation", nil)
	var env struct {
		Payload    string `json:"payload"`
		Signatures []struct {
			KeyID string `json:"keyid"`
			Sig   string `json:"sig"`
		} `json:"signatures"`
	}
	if err := json.Unmarshal(body, &env); err != nil || resp.StatusCode != 200 || len(env.Signatures) != 1 {
		t.Fatalf("attestation: %d %s", resp.StatusCode, body)
	}
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	key := srv.svc.Keys().Current
	if env.Signatures[0].KeyID != key.Version || !ed25519.Verify(key.Public().Key, intoto.PAE(intoto.PayloadType, payload), sig) {
		t.Fatal("the attestation does not verify under the receipt key")
	}
	var st struct {
		Subject []struct {
			Name   string            `json:"name"`
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
	}
	json.Unmarshal(payload, &st)
	if len(st.Subject) != 1 || st.Subject[0].Name != "travel-paid" || st.Subject[0].Digest["sha256"] != v.OutputHash {
		t.Errorf("attestation subject %+v", st.Subject)
	}
}
