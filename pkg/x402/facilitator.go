package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ErrFacilitatorUnavailable is wrapped by every facilitator failure that says nothing about the
// payment itself (transport errors, timeouts, answers that cannot be read). The caller answers 503
// facilitator_unavailable: retryable, and nothing was charged.
var ErrFacilitatorUnavailable = errors.New("facilitator unavailable")

// Facilitator is the client of an x402 facilitator's HTTP API (POST /verify, POST /settle, GET
// /supported). The zero timeouts mean the defaults; a nil HTTP means a client of its own.
type Facilitator struct {
	URL        string       // base URL without the trailing /verify
	AuthHeader string       // optional "Name: value" sent on every call; never logged or returned
	HTTP       *http.Client // nil: a default client that follows only same-origin redirects

	VerifyTimeout    time.Duration // default DefaultVerifyTimeout
	SettleTimeout    time.Duration // default DefaultSettleTimeout
	SupportedTimeout time.Duration // default DefaultSupportedTimeout
}

// NewFacilitator builds the facilitator client from the payment configuration.
func NewFacilitator(cfg Config) *Facilitator {
	return &Facilitator{URL: cfg.FacilitatorURL, AuthHeader: cfg.AuthHeader}
}

// SupportedKind is one (version, scheme, network) the facilitator can verify and settle, with
// the extras the scheme needs (on Solana, the fee payer that signs for the transaction fees).
type SupportedKind struct {
	X402Version int            `json:"x402Version"`
	Scheme      string         `json:"scheme"`
	Network     string         `json:"network"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// Supported is the facilitator's GET /supported answer, in @x402/core's shape.
type Supported struct {
	Kinds      []SupportedKind     `json:"kinds"`
	Extensions []string            `json:"extensions,omitempty"`
	Signers    map[string][]string `json:"signers,omitempty"`
}

// FeePayer returns the fee payer the facilitator names for x402 v2 exact payments on network,
// which Solana requirements must carry in extra.feePayer.
func (s Supported) FeePayer(network string) (string, bool) {
	for _, k := range s.Kinds {
		if k.X402Version != Version || k.Scheme != SchemeExact || k.Network != network {
			continue
		}
		if fp, ok := k.Extra["feePayer"].(string); ok && fp != "" {
			return fp, true
		}
	}
	return "", false
}

// Verify asks the facilitator whether p is a valid payment for r (r must be the server's own
// requirement, from Match). An invalid payment is a VerifyResponse with IsValid false, not an
// error; errors wrap ErrFacilitatorUnavailable.
func (f *Facilitator) Verify(ctx context.Context, p PaymentPayload, r Requirements) (VerifyResponse, error) {
	var out struct {
		VerifyResponse
		IsValid *bool `json:"isValid"`
	}
	if err := f.post(ctx, "verify", orDefault(f.VerifyTimeout, DefaultVerifyTimeout), p, r, &out, func() bool { return out.IsValid != nil }); err != nil {
		return VerifyResponse{}, err
	}
	out.VerifyResponse.IsValid = *out.IsValid
	return out.VerifyResponse, nil
}

// Settle asks the facilitator to execute the verified payment p for r. A settlement that failed
// on chain is a SettleResponse with Success false, not an error; errors wrap
// ErrFacilitatorUnavailable (the payment's fate is then unknown to the caller, and nothing is
// delivered).
func (f *Facilitator) Settle(ctx context.Context, p PaymentPayload, r Requirements) (SettleResponse, error) {
	var out struct {
		SettleResponse
		Success *bool `json:"success"`
	}
	if err := f.post(ctx, "settle", orDefault(f.SettleTimeout, DefaultSettleTimeout), p, r, &out, func() bool { return out.Success != nil }); err != nil {
		return SettleResponse{}, err
	}
	out.SettleResponse.Success = *out.Success
	return out.SettleResponse, nil
}

// Supported fetches GET /supported: which networks the facilitator serves and, for Solana, its
// fee payer. Any failure wraps ErrFacilitatorUnavailable.
func (f *Facilitator) Supported(ctx context.Context) (Supported, error) {
	ctx, cancel := context.WithTimeout(ctx, orDefault(f.SupportedTimeout, DefaultSupportedTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.endpoint("supported"), nil)
	if err != nil {
		return Supported{}, fmt.Errorf("facilitator supported: build request: %w", err)
	}
	status, body, err := f.do(req)
	if err != nil {
		return Supported{}, fmt.Errorf("facilitator supported: %w: %w", ErrFacilitatorUnavailable, err)
	}
	var out struct {
		Supported
		Kinds *[]SupportedKind `json:"kinds"`
	}
	if status/100 != 2 || json.Unmarshal(body, &out) != nil || out.Kinds == nil {
		return Supported{}, fmt.Errorf("facilitator supported: %w: HTTP %d: %s", ErrFacilitatorUnavailable, status, f.excerpt(body))
	}
	out.Supported.Kinds = *out.Kinds
	return out.Supported, nil
}

// post sends {"x402Version":2,"paymentPayload":p,"paymentRequirements":r} to path and reads the
// answer into out. Any status is accepted when the body is the expected JSON object (complete()
// reports whether its required field was present): facilitators answer a rejected payment with
// 400 and a valid body.
func (f *Facilitator) post(ctx context.Context, path string, timeout time.Duration, p PaymentPayload, r Requirements, out any, complete func() bool) error {
	body, err := json.Marshal(struct {
		X402Version         int            `json:"x402Version"`
		PaymentPayload      PaymentPayload `json:"paymentPayload"`
		PaymentRequirements Requirements   `json:"paymentRequirements"`
	}{Version, p, r})
	if err != nil {
		return fmt.Errorf("facilitator %s: encode request: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.endpoint(path), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("facilitator %s: build request: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	status, resp, err := f.do(req)
	if err != nil {
		return fmt.Errorf("facilitator %s: %w: %w", path, ErrFacilitatorUnavailable, err)
	}
	if json.Unmarshal(resp, out) != nil || !complete() {
		return fmt.Errorf("facilitator %s: %w: HTTP %d: %s", path, ErrFacilitatorUnavailable, status, f.excerpt(resp))
	}
	return nil
}

// do sends req with the auth header and reads at most maxFacilitatorBody bytes of the answer.
// Transport errors are returned with the auth value removed, in case a proxy echoed it.
func (f *Facilitator) do(req *http.Request) (int, []byte, error) {
	req.Header.Set("Accept", "application/json")
	if f.AuthHeader != "" {
		name, value, err := parseAuthHeader(f.AuthHeader)
		if err != nil {
			return 0, nil, fmt.Errorf("auth header %w", err)
		}
		req.Header.Set(name, value)
	}
	resp, err := f.client().Do(req)
	if err != nil {
		msg := f.redact(err.Error())
		if cerr := req.Context().Err(); cerr != nil {
			return 0, nil, fmt.Errorf("%s: %w", msg, cerr) // keeps errors.Is(err, context.DeadlineExceeded)
		}
		return 0, nil, errors.New(msg)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFacilitatorBody+1))
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %s", f.redact(err.Error()))
	}
	if len(body) > maxFacilitatorBody {
		return 0, nil, fmt.Errorf("answer longer than %d bytes", maxFacilitatorBody)
	}
	return resp.StatusCode, body, nil
}

func (f *Facilitator) endpoint(path string) string {
	return strings.TrimRight(f.URL, "/") + "/" + path
}

// defaultHTTP refuses redirects to another origin: the auth header may be a custom one that Go's
// client would otherwise forward to any host the facilitator redirects to. Its transport keeps
// enough idle connections to the one facilitator host for concurrent paid calls: Go's default of
// two made nearly every call under load open (and, over TLS, handshake) a new connection.
var defaultHTTP = &http.Client{CheckRedirect: sameOriginRedirect, Transport: facilitatorTransport()}

// maxIdleFacilitatorConns bounds the idle keep-alive connections kept to the facilitator.
const maxIdleFacilitatorConns = 64

func facilitatorTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = maxIdleFacilitatorConns
	t.MaxIdleConnsPerHost = maxIdleFacilitatorConns
	return t
}

func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("too many redirects")
	}
	if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

func (f *Facilitator) client() *http.Client {
	if f.HTTP != nil {
		return f.HTTP
	}
	return defaultHTTP
}

// excerpt keeps the start of an unreadable answer for the log: printable, short, and without the
// auth value.
func (f *Facilitator) excerpt(body []byte) string {
	s := strings.Join(strings.Fields(f.redact(string(body))), " ")
	if s == "" {
		return "<empty answer>"
	}
	s = f.redact(s)
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= excerptLen {
			b.WriteString("...")
			break
		}
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// redact removes the auth header's value from text bound for errors and logs.
func (f *Facilitator) redact(s string) string {
	if f.AuthHeader == "" {
		return s
	}
	if _, value, err := parseAuthHeader(f.AuthHeader); err == nil && value != "" {
		s = strings.ReplaceAll(s, value, "[redacted]")
	}
	return s
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
