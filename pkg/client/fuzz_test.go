package client

import (
	"encoding/base64"
	"net/http"
	"testing"
)

// FuzzReadAnswer feeds arbitrary answers to everything that reads what a server sends before any
// signature is checked: the error envelope, the 402 body and headers, the allowance headers, and
// the request/answer comparison. None may panic, whatever the bytes.
func FuzzReadAnswer(f *testing.F) {
	f.Add(402, []byte(`{"code":"free_trial_exhausted","error":"pay","free_trial":{"available":false}}`),
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"resource":{"url":"u"},"accepts":[{"scheme":"exact","network":"eip155:8453","amount":"1","asset":"a","payTo":"p","maxTimeoutSeconds":1}]}`)),
		"1", "1000", "2026-12-01T00:00:00Z")
	f.Add(503, []byte(`{"code":"service_unavailable","status":503,"retryable":true,"retry_after":2}`), "", "x", "", "")
	f.Add(200, []byte(`{"task_id":"t","agent_id":null,"result":"pass"}`), "%%%", "-1", "1e3", "yesterday")
	f.Fuzz(func(t *testing.T, status int, body []byte, prHeader, remaining, limit, resets string) {
		h := http.Header{}
		h.Set(headerPaymentRequired, prHeader)
		h.Set(headerPaymentResponse, prHeader)
		h.Set("Retry-After", remaining)
		h.Set("Free-Allowance-Remaining", remaining)
		h.Set("Free-Allowance-Limit", limit)
		h.Set("Free-Allowance-Resets", resets)
		ex := &exchange{status: status, header: h, body: body}
		if e := apiError(ex); e.Error() == "" {
			t.Fatal("empty error message")
		}
		if e := paymentRequired(ex, false, nil); e.Error() == "" {
			t.Fatal("empty error message")
		}
		parseAllowance(h)
		isEnvelope(body)
		var v Verification
		_ = matchRequest(&v, body)
	})
}
