package x402

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testAuthValue = "Bearer s3cr3t-facilitator-token"

// facilitatorServer answers every call with status and body, and keeps what it received.
type facilitatorServer struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	body   string
	sleep  time.Duration
	got    []*http.Request
	bodies [][]byte
}

func newFacilitatorServer(t *testing.T, status int, body string) *facilitatorServer {
	s := &facilitatorServer{status: status, body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, r)
		s.bodies = append(s.bodies, b)
		status, body, sleep := s.status, s.body, s.sleep
		s.mu.Unlock()
		select {
		case <-time.After(sleep):
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *facilitatorServer) client() *Facilitator {
	return &Facilitator{URL: s.URL + "/", AuthHeader: "authorization: " + testAuthValue}
}

func testPayment() (PaymentPayload, Requirements) {
	p := evmPayload("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0x"+strings.Repeat("5a", 32))
	r := p.Accepted
	r.Extra = map[string]any{"name": "USD Coin", "version": "2"}
	return p, r
}

// Requests carry x402Version 2, both objects and the auth header, at the right paths.
func TestFacilitatorRequests(t *testing.T) {
	srv := newFacilitatorServer(t, 200, `{"isValid":true,"payer":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","success":true,"transaction":"0xabc","network":"eip155:8453"}`)
	f := srv.client()
	p, r := testPayment()
	vr, err := f.Verify(context.Background(), p, r)
	if err != nil || !vr.IsValid || vr.Payer == "" {
		t.Fatalf("verify: %+v, %v", vr, err)
	}
	sr, err := f.Settle(context.Background(), p, r)
	if err != nil || !sr.Success || sr.Transaction != "0xabc" || sr.Network != NetworkBase {
		t.Fatalf("settle: %+v, %v", sr, err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, path := range []string{"/verify", "/settle"} {
		req := srv.got[i]
		if req.Method != http.MethodPost || req.URL.Path != path {
			t.Errorf("request %d: %s %s", i, req.Method, req.URL.Path)
		}
		if got := req.Header.Get("Authorization"); got != testAuthValue {
			t.Errorf("%s: auth header %q", path, got)
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q", path, ct)
		}
		var body struct {
			X402Version         *int            `json:"x402Version"`
			PaymentPayload      json.RawMessage `json:"paymentPayload"`
			PaymentRequirements json.RawMessage `json:"paymentRequirements"`
		}
		if err := json.Unmarshal(srv.bodies[i], &body); err != nil {
			t.Fatal(err)
		}
		if body.X402Version == nil || *body.X402Version != 2 {
			t.Errorf("%s: x402Version %v", path, body.X402Version)
		}
		if !jsonEqual(t, body.PaymentPayload, p) || !jsonEqual(t, body.PaymentRequirements, r) {
			t.Errorf("%s: body %s", path, srv.bodies[i])
		}
	}
}

// A facilitator may reject with a non-2xx status and a valid body: that is an answer, not an
// outage.
func TestFacilitatorNon2xxWithBody(t *testing.T) {
	p, r := testPayment()
	srv := newFacilitatorServer(t, 400, `{"isValid":false,"invalidReason":"invalid_exact_evm_payload_signature","invalidMessage":"bad sig","payer":"0xf39F"}`)
	vr, err := srv.client().Verify(context.Background(), p, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := (VerifyResponse{IsValid: false, InvalidReason: "invalid_exact_evm_payload_signature", InvalidMessage: "bad sig", Payer: "0xf39F"}); vr != want {
		t.Errorf("got %+v", vr)
	}
	srv2 := newFacilitatorServer(t, 500, `{"success":false,"errorReason":"transaction_failed","transaction":"","network":"eip155:8453"}`)
	sr, err := srv2.client().Settle(context.Background(), p, r)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Success || sr.ErrorReason != "transaction_failed" || sr.Network != NetworkBase {
		t.Errorf("got %+v", sr)
	}
}

// Outages: 5xx without a body, garbage, the wrong object, timeouts, a closed port. None of the
// errors contains the auth value, even when the facilitator echoes it.
func TestFacilitatorUnavailable(t *testing.T) {
	p, r := testPayment()
	for _, c := range []struct {
		name, body string
		status     int
		sleep      time.Duration
	}{
		{"502 empty", "", 502, 0},
		{"503 html echoing the token", "<html>bad gateway for " + testAuthValue + "</html>", 503, 0},
		{"200 garbage", "not json", 200, 0},
		{"200 wrong object", `{"ok":true}`, 200, 0},
		{"200 array", `[1]`, 200, 0},
		{"401 echoing the token", `{"error":"token ` + testAuthValue + ` rejected"}`, 401, 0},
		{"too slow", `{"isValid":true,"success":true}`, 200, 300 * time.Millisecond},
		{"oversized", `{"isValid":true,"x":"` + strings.Repeat("a", maxFacilitatorBody) + `"}`, 200, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newFacilitatorServer(t, c.status, c.body)
			srv.mu.Lock()
			srv.sleep = c.sleep
			srv.mu.Unlock()
			f := srv.client()
			f.VerifyTimeout, f.SettleTimeout, f.SupportedTimeout = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
			_, err1 := f.Verify(context.Background(), p, r)
			_, err2 := f.Settle(context.Background(), p, r)
			_, err3 := f.Supported(context.Background())
			for _, err := range []error{err1, err2, err3} {
				if !errors.Is(err, ErrFacilitatorUnavailable) {
					t.Errorf("got %v, want ErrFacilitatorUnavailable", err)
					continue
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("the auth value leaked: %v", err)
				}
			}
			if c.sleep > 0 && !errors.Is(err1, context.DeadlineExceeded) {
				t.Errorf("timeout: %v", err1)
			}
		})
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	f := &Facilitator{URL: closed.URL, AuthHeader: "X-Key: " + testAuthValue}
	if _, err := f.Verify(context.Background(), p, r); !errors.Is(err, ErrFacilitatorUnavailable) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("closed port: %v", err)
	}
}

// The default timeouts are the documented ones (settle fits inside API Gateway's 29 s), and a
// zero timeout means the default, not "no time at all".
func TestFacilitatorDefaultTimeouts(t *testing.T) {
	if DefaultVerifyTimeout != 10*time.Second || DefaultSettleTimeout != 20*time.Second || DefaultSupportedTimeout != 5*time.Second {
		t.Error("defaults changed")
	}
	srv := newFacilitatorServer(t, 200, `{"isValid":true}`)
	srv.mu.Lock()
	srv.sleep = 50 * time.Millisecond
	srv.mu.Unlock()
	p, r := testPayment()
	if _, err := srv.client().Verify(context.Background(), p, r); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// Redirects to another origin are not followed, so a custom auth header never travels there.
func TestFacilitatorRedirects(t *testing.T) {
	var leaked sync.Map
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store("x", r.Header.Get("X-Api-Key"))
		io.WriteString(w, `{"kinds":[]}`)
	}))
	t.Cleanup(elsewhere.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/supported", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/supported", http.StatusFound)
	})
	mux.HandleFunc("/moved/supported", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"kinds":[{"x402Version":2,"scheme":"exact","network":"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp","extra":{"feePayer":"F"}}],"extensions":[],"signers":{}}`)
	})
	mux.HandleFunc("/same/supported", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/moved/supported", http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	f := &Facilitator{URL: srv.URL, AuthHeader: "X-Api-Key: k"}
	if _, err := f.Supported(context.Background()); !errors.Is(err, ErrFacilitatorUnavailable) {
		t.Errorf("cross-origin redirect: %v", err)
	}
	if _, ok := leaked.Load("x"); ok {
		t.Error("followed a redirect to another origin")
	}
	f.URL = srv.URL + "/same"
	s, err := f.Supported(context.Background())
	if err != nil {
		t.Fatalf("same-origin redirect: %v", err)
	}
	if fp, ok := s.FeePayer(NetworkSolana); !ok || fp != "F" {
		t.Errorf("got %+v", s)
	}
}

// GET /supported as @x402/core's facilitator answers it, recorded by record.mjs.
func TestSupportedRecorded(t *testing.T) {
	var want map[string]any
	readJSON(t, "supported-evm.json", &want)
	srv := newFacilitatorServer(t, 200, mustJSON(t, want))
	s, err := srv.client().Supported(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Kinds) != 2 || s.Kinds[0].X402Version != 2 || s.Kinds[0].Scheme != "exact" || s.Kinds[0].Network != NetworkBase || s.Kinds[1].Network != NetworkBaseSepolia {
		t.Errorf("kinds %+v", s.Kinds)
	}
	if len(s.Signers["eip155:*"]) != 1 || s.Signers["eip155:*"][0] != "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" {
		t.Errorf("signers %+v", s.Signers)
	}
	if _, ok := s.FeePayer(NetworkBase); ok {
		t.Error("EVM has no fee payer")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if r := srv.got[0]; r.Method != http.MethodGet || r.URL.Path != "/supported" || r.Header.Get("Authorization") != testAuthValue {
		t.Errorf("request %s %s auth %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
	}
}

func TestFacilitatorBadAuthHeader(t *testing.T) {
	srv := newFacilitatorServer(t, 200, `{"isValid":true}`)
	f := &Facilitator{URL: srv.URL, AuthHeader: "no colon " + testAuthValue}
	p, r := testPayment()
	_, err := f.Verify(context.Background(), p, r)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("got %v", err)
	}
}

// Concurrent calls reuse the default client's idle connections: a second round of as many
// concurrent calls as the first opens no new connection.
func TestFacilitatorKeepsConnections(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // keep the calls of a round overlapping
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"}]}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	f := &Facilitator{URL: srv.URL}
	const concurrent = 16
	round := func() {
		var wg sync.WaitGroup
		for range concurrent {
			wg.Go(func() {
				if _, err := f.Supported(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	round()
	first := opened.Load()
	round()
	if again := opened.Load() - first; again != 0 {
		t.Errorf("the second round of %d concurrent calls opened %d new connections (first round: %d)", concurrent, again, first)
	}
}
