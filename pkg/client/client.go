// Package client is a Go client of the Agent Output Verifier that trusts nothing it receives
// unchecked and can pay for itself.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Defaults of a new Client.
const (
	// DefaultTimeout bounds one call, retries and payment included: a paid call settles on chain
	// within the service's own 29 s budget, so a minute leaves room for a retry.
	DefaultTimeout = 60 * time.Second
	// DefaultRetries is how many times a retryable error is retried.
	DefaultRetries = 2
	// DefaultMaxRetryWait is the longest retry_after the client waits for; a longer one (such as
	// a free-only deployment's "until midnight") is returned to the caller at once.
	DefaultMaxRetryWait = 30 * time.Second
)

// Routes the client calls.
const (
	RouteVerifySchema      = "/verify/schema"
	RouteVerifyDeliverable = "/verify/deliverable"
	routeScore             = "/score/"
	routeReputation        = "/reputation/"
	routeHealth            = "/health"
	routeAgentCard         = "/.well-known/agent-card.json"
)

// Limits, each with its reason.
const (
	// maxAnswerBytes bounds an answer read: a full verification answer caps every list at 50
	// entries of short strings, so real answers are tens of KiB; a broken or hostile server must
	// not exhaust the caller's memory.
	maxAnswerBytes = 8 << 20
	// maxAgentIDLen is the service's own limit on agent ids (SPEC §4.1).
	maxAgentIDLen = 200
	// defaultBackoff is the wait before retrying a retryable error that names no retry_after.
	defaultBackoff = time.Second
	// maxRetries bounds WithRetries: more would only hide an outage from the caller.
	maxRetries = 10
	// maxAuthorizationSeconds bounds how long a signed EIP-3009 authorization stays valid,
	// whatever a server's maxTimeoutSeconds asks: an unused authorization is spendable by whoever
	// holds it until it expires, so it should not outlive the call it pays for by much.
	maxAuthorizationSeconds = 600
	// maxKeyFileBytes bounds a key file read: a hex key is 66 bytes with its prefix and newline.
	maxKeyFileBytes = 4 << 10
	// maxQuoted bounds a server-chosen string quoted in an error message.
	maxQuoted = 64
)

// x402 header names (SPEC §8).
const (
	headerPaymentRequired  = "PAYMENT-REQUIRED"
	headerPaymentSignature = "PAYMENT-SIGNATURE"
	headerPaymentResponse  = "PAYMENT-RESPONSE"
)

// userAgent names this client to the service.
const userAgent = "agent-output-verifier-go-client/1"

// Client calls one Agent Output Verifier deployment. It is safe for concurrent use; its key cache
// and budget are shared by all calls.
//
// Every signed answer (verify, deliverable, score, reputation) is checked before the caller sees
// it: its Ed25519 attestation under the route's context, with the keys of the service's agent
// card (fetched once, cached, fetched again when an answer names a key version the cache does not
// know), and, for verifications, the output, schema, rules and request hashes recomputed from the
// very bytes the client sent. The checks use pkg/receipt's verifier, whose canonicalizer
// (gowebpki/jcs) is independent of the one the service signs with. A bad receipt is an error
// (*ReceiptError), never a silent pass.
//
// Errors are typed: *APIError carries the service's error envelope (code, status, fields,
// retryable), *PaymentRequiredError the decoded PaymentRequired and the caller's free_trial
// state, *SpendingCapError a payment refused by the caps. Calls are retried only when the
// service says the error is retryable, after its retry_after.
type Client struct {
	base      string
	http      *http.Client
	timeout   time.Duration
	retries   int
	maxWait   time.Duration
	userAgent string
	unchecked bool // WithoutReceiptChecksUnsafe
	pinned    bool // WithPublicKeys: never fetch the card for keys
	payer     Payer
	maxPrice  *big.Int // USDC atomic units per call
	budget    *big.Int // USDC atomic units per client

	mu     sync.Mutex // guards spent, keys, keyGen
	spent  *big.Int
	keys   []receipt.PublicKey
	keyGen int // bumped each time keys are replaced

	cardMu sync.Mutex // one agent card fetch at a time

	sleep func(ctx context.Context, d time.Duration) error // tests replace it
}

// Option configures a Client; New reports an invalid one as an error.
type Option func(*Client) error

// WithHTTPClient sends requests through h (a custom transport, proxy or TLS set-up). Its own
// Timeout, if any, applies to each request in addition to WithTimeout.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) error {
		if h == nil {
			return errors.New("WithHTTPClient: nil client")
		}
		c.http = h
		return nil
	}
}

// WithTimeout bounds each call, retries and payment included (default DefaultTimeout). The
// caller's context still applies; 0 leaves only the context.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d < 0 {
			return errors.New("WithTimeout: negative timeout")
		}
		c.timeout = d
		return nil
	}
}

// WithRetries sets how many times a retryable error is retried (default DefaultRetries), and the
// longest retry_after the client will wait for (default DefaultMaxRetryWait).
func WithRetries(n int, maxWait time.Duration) Option {
	return func(c *Client) error {
		if n < 0 || n > maxRetries {
			return fmt.Errorf("WithRetries: %d retries is outside 0..%d", n, maxRetries)
		}
		if maxWait < 0 {
			return errors.New("WithRetries: negative wait")
		}
		c.retries, c.maxWait = n, maxWait
		return nil
	}
}

// WithUserAgent replaces the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(c *Client) error {
		if strings.ContainsAny(ua, "\r\n") {
			return errors.New("WithUserAgent: line breaks in the user agent")
		}
		c.userAgent = ua
		return nil
	}
}

// WithPublicKeys pins the keys that may sign answers instead of taking them from the service's
// agent card: the card is never fetched for keys, and an answer under any other key version is
// refused. Use it when the keys are known from elsewhere than the service itself.
func WithPublicKeys(keys ...receipt.PublicKey) Option {
	return func(c *Client) error {
		if len(keys) == 0 {
			return errors.New("WithPublicKeys: no keys")
		}
		c.keys, c.pinned = append([]receipt.PublicKey(nil), keys...), true
		return nil
	}
}

// WithoutReceiptChecksUnsafe turns off every receipt check: answers are decoded as they come.
// Only for debugging a deployment whose keys are broken; an unchecked answer proves nothing.
func WithoutReceiptChecksUnsafe() Option {
	return func(c *Client) error {
		c.unchecked = true
		return nil
	}
}

// WithPayer makes the client pay 402 answers with p, within the caps.
func WithPayer(p Payer) Option {
	return func(c *Client) error {
		if p == nil {
			return errors.New("WithPayer: nil payer")
		}
		c.payer = p
		return nil
	}
}

// WithMaxPrice caps what one call may pay, in USD such as "0.05" (default DefaultMaxPrice). An
// offer above it is refused with a *SpendingCapError before anything is signed. "0" never pays.
func WithMaxPrice(usd string) Option {
	return func(c *Client) error {
		n, err := usdToAtomic(usd)
		if err != nil {
			return fmt.Errorf("WithMaxPrice: %w", err)
		}
		c.maxPrice = n
		return nil
	}
}

// WithBudget caps what the client may pay over its lifetime, in USD (default DefaultBudget).
// Every signed payment counts, whether or not it ends up settled.
func WithBudget(usd string) Option {
	return func(c *Client) error {
		n, err := usdToAtomic(usd)
		if err != nil {
			return fmt.Errorf("WithBudget: %w", err)
		}
		c.budget = n
		return nil
	}
}

// New makes a client of the deployment at baseURL (such as https://verify.example.com, or a
// path prefix under which the routes are mounted).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("client: the base URL must be an absolute http(s) URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("client: the base URL must not carry credentials, a query or a fragment")
	}
	maxPrice, _ := usdToAtomic(DefaultMaxPrice)
	budget, _ := usdToAtomic(DefaultBudget)
	c := &Client{
		base: strings.TrimRight(u.String(), "/"), http: &http.Client{}, timeout: DefaultTimeout,
		retries: DefaultRetries, maxWait: DefaultMaxRetryWait, userAgent: userAgent,
		maxPrice: maxPrice, budget: budget, spent: new(big.Int), sleep: sleepContext,
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	return c, nil
}

// BaseURL is the deployment the client calls.
func (c *Client) BaseURL() string { return c.base }

// VerifySchema sends req to POST /verify/schema and returns the checked verification.
func (c *Client) VerifySchema(ctx context.Context, req Request) (*Verification, error) {
	return c.verifyRequest(ctx, RouteVerifySchema, req)
}

// VerifyDeliverable sends req to POST /verify/deliverable, the same check under another name.
func (c *Client) VerifyDeliverable(ctx context.Context, req Request) (*Verification, error) {
	return c.verifyRequest(ctx, RouteVerifyDeliverable, req)
}

func (c *Client) verifyRequest(ctx context.Context, route string, req Request) (*Verification, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("client: encode request: %w", err)
	}
	return c.VerifyJSON(ctx, route, body)
}

// VerifyJSON sends a request body as it is to route (RouteVerifySchema or
// RouteVerifyDeliverable): the way to send a request file byte for byte. The receipt's hashes are
// recomputed from body.
func (c *Client) VerifyJSON(ctx context.Context, route string, body []byte) (*Verification, error) {
	if route != RouteVerifySchema && route != RouteVerifyDeliverable {
		return nil, fmt.Errorf("client: %s is not a verify route", short(route))
	}
	// An empty body is the x402 discovery probe: it would be answered 402 and, with a payer, paid
	// for nothing.
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("client: empty request body")
	}
	cl := call{method: http.MethodPost, path: route, body: body, context: receipt.ContextVerify, request: body, payable: true}
	ex, payment, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var v Verification
	if err := c.accept(ctx, cl, ex, payment, &v); err != nil {
		return nil, err
	}
	if !c.unchecked {
		if err := matchRequest(&v, body); err != nil {
			return nil, &ReceiptError{Route: route, Err: err, Body: ex.body, Payment: payment}
		}
		if payment != nil {
			if err := checkBinding(v.PaymentBinding, payment); err != nil {
				return nil, &ReceiptError{Route: route, Err: err, Body: ex.body, Payment: payment}
			}
		}
	}
	v.Answer = ex.answer(payment)
	return &v, nil
}

// Score asks GET /score/{agent_id} for the agent's signed trust score, paying for it when the
// service asks (a score that exists costs money; "no_data" answers are free).
func (c *Client) Score(ctx context.Context, agentID string) (*Score, error) {
	if err := checkAgentID(agentID); err != nil {
		return nil, err
	}
	cl := call{method: http.MethodGet, path: routeScore + url.PathEscape(agentID), context: receipt.ContextScore, payable: true}
	ex, payment, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var s Score
	if err := c.accept(ctx, cl, ex, payment, &s); err != nil {
		return nil, err
	}
	if !c.unchecked && s.AgentID != agentID {
		return nil, &ReceiptError{Route: routeLabel(cl.path), Err: fmt.Errorf("%w: the score is of another agent_id", ErrAnswerMismatch), Body: ex.body, Payment: payment}
	}
	s.Answer = ex.answer(payment)
	return &s, nil
}

// Reputation asks GET /reputation/{agent_id} for one page of the agent's signed pass/fail
// history (free). page may be nil for the first page with the service's default size.
func (c *Client) Reputation(ctx context.Context, agentID string, page *Page) (*Reputation, error) {
	if err := checkAgentID(agentID); err != nil {
		return nil, err
	}
	path := routeReputation + url.PathEscape(agentID)
	if page != nil {
		q := url.Values{}
		if page.Limit < 0 {
			return nil, errors.New("client: negative page limit")
		}
		if page.Limit > 0 {
			q.Set("limit", strconv.Itoa(page.Limit))
		}
		if page.Cursor != "" {
			q.Set("cursor", page.Cursor)
		}
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
	}
	cl := call{method: http.MethodGet, path: path, context: receipt.ContextReputation}
	ex, payment, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var r Reputation
	if err := c.accept(ctx, cl, ex, payment, &r); err != nil {
		return nil, err
	}
	if !c.unchecked && r.AgentID != agentID {
		return nil, &ReceiptError{Route: routeLabel(cl.path), Err: fmt.Errorf("%w: the history is of another agent_id", ErrAnswerMismatch), Body: ex.body}
	}
	r.Answer = ex.answer(payment)
	return &r, nil
}

// Health asks GET /health. A degraded service (503 with the health shape) is returned with its
// Status, not as an error.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	cl := call{method: http.MethodGet, path: routeHealth, alsoOK: http.StatusServiceUnavailable}
	ex, payment, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var h Health
	if err := json.Unmarshal(ex.body, &h); err != nil || h.Status == "" {
		return nil, fmt.Errorf("client: GET %s: the answer is not a health document", routeHealth)
	}
	h.Answer = ex.answer(payment)
	return &h, nil
}

// AgentCard fetches the service's agent card and its public keys, and makes those keys the ones
// the client checks answers with (unless they are pinned with WithPublicKeys).
func (c *Client) AgentCard(ctx context.Context) (*AgentCard, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	c.cardMu.Lock()
	defer c.cardMu.Unlock()
	card, err := c.fetchCard(ctx)
	if err != nil {
		return nil, err
	}
	if !c.pinned {
		c.setKeys(card.Keys)
	}
	return card, nil
}

// call is one route call as the exchange loop sees it.
type call struct {
	method, path string
	body         []byte
	context      string // the attestation context; "" for unsigned answers
	request      []byte // verify: the request whose hashes the receipt must carry
	payable      bool   // a 402 may be paid
	alsoOK       int    // a status other than 200 whose body is an answer (health's 503)
}

// exchange is one HTTP answer.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

func (ex *exchange) answer(p *Payment) Answer {
	return Answer{Status: ex.status, Header: ex.header, Body: ex.body, Allowance: parseAllowance(ex.header), Payment: p}
}

// do runs a call within the client's timeout, retrying what the service calls retryable.
func (c *Client) do(ctx context.Context, cl call) (*exchange, *Payment, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		ex, payment, err := c.attempt(ctx, cl)
		if err == nil {
			return ex, payment, nil
		}
		var ae *APIError
		if !errors.As(err, &ae) || !ae.Retryable || attempt >= c.retries {
			return nil, nil, err
		}
		wait := ae.RetryAfter
		if wait <= 0 {
			wait = defaultBackoff
		}
		if wait > c.maxWait {
			return nil, nil, err
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return nil, nil, err
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return nil, nil, fmt.Errorf("%w (gave up waiting to retry: %w)", err, serr)
		}
	}
}

// attempt sends the request once and, when the answer is a 402 the client can pay, once more
// with the payment.
func (c *Client) attempt(ctx context.Context, cl call) (*exchange, *Payment, error) {
	ex, err := c.send(ctx, cl.method, cl.path, cl.body, "")
	if err != nil {
		return nil, nil, err
	}
	var payment *Payment
	if ex.status == http.StatusPaymentRequired && cl.payable && c.payer != nil {
		pr, err := x402.DecodePaymentRequired(ex.header.Get(headerPaymentRequired))
		if err != nil {
			return nil, nil, paymentRequired(ex, false, fmt.Errorf("the PAYMENT-REQUIRED header cannot be read: %w", err))
		}
		header, p, err := c.paymentFor(ctx, pr)
		var capErr *SpendingCapError
		switch {
		case errors.As(err, &capErr):
			return nil, nil, capErr
		case err != nil:
			return nil, nil, paymentRequired(ex, false, err)
		}
		payment = p
		if ex, err = c.sendPaid(ctx, cl, header, p); err != nil {
			return nil, nil, fmt.Errorf("%w (a payment of %s USD was signed for it)", err, p.USD)
		}
		if h := ex.header.Get(headerPaymentResponse); h != "" {
			if sr, err := x402.DecodeSettleResponse(h); err == nil {
				payment.Settlement = &sr
			}
		}
	}
	switch {
	case ex.status == http.StatusOK || (cl.alsoOK != 0 && ex.status == cl.alsoOK && !isEnvelope(ex.body)):
		return ex, payment, nil
	case ex.status == http.StatusPaymentRequired:
		return nil, nil, paymentRequired(ex, payment != nil, nil)
	}
	return nil, nil, apiError(ex)
}

// maxPaidResends bounds how often a paid request that got no answer (a timeout, a dropped
// connection) is sent again under its payment identifier: enough to ride out a blip, few enough
// that a service that is down is reported soon.
const maxPaidResends = 3

// paidResendWait is the pause before sending a paid request again: time for a first request
// still in flight to finish, so that the retry finds its answer kept.
const paidResendWait = time.Second

// sendPaid sends a paid request. When it gets no answer and the payment carries a payment
// identifier, it sends the same payment again (SPEC §16): the service answers a request it
// already answered from its store, without charging again, and one whose payment it never saw as
// new. A retry that finds the first still in flight is refused as payment_replayed; it waits and
// asks again.
func (c *Client) sendPaid(ctx context.Context, cl call, header string, p *Payment) (*exchange, error) {
	ex, err := c.send(ctx, cl.method, cl.path, cl.body, header)
	for resend := 0; p.Identifier != "" && resend < maxPaidResends && ctx.Err() == nil; resend++ {
		inFlight := err == nil && ex.status == http.StatusPaymentRequired && resend > 0 && paymentCode(ex) == string(apperr.PaymentReplayed)
		if err == nil && !inFlight {
			break
		}
		if serr := c.sleep(ctx, paidResendWait); serr != nil {
			break
		}
		ex, err = c.send(ctx, cl.method, cl.path, cl.body, header)
	}
	return ex, err
}

// paymentCode is the code of a 402 answer's body, "" when it has none.
func paymentCode(ex *exchange) string {
	var b struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(ex.body, &b)
	return b.Code
}

// send makes one HTTP request and reads the whole answer (bounded).
func (c *Client) send(ctx context.Context, method, path string, body []byte, payment string) (*exchange, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, routeLabel(path), err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if payment != "" {
		req.Header.Set(headerPaymentSignature, payment)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, routeLabel(path), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: read the answer: %w", method, routeLabel(path), err)
	}
	if len(b) > maxAnswerBytes {
		return nil, fmt.Errorf("client: %s %s: the answer is larger than %d bytes", method, routeLabel(path), maxAnswerBytes)
	}
	return &exchange{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// accept checks a successful answer's receipt and decodes it into v.
func (c *Client) accept(ctx context.Context, cl call, ex *exchange, payment *Payment, v any) error {
	if !c.unchecked {
		if err := c.checkReceipt(ctx, cl, ex.body); err != nil {
			return &ReceiptError{Route: routeLabel(cl.path), Err: err, Body: ex.body, Payment: payment}
		}
	}
	if err := json.Unmarshal(ex.body, v); err != nil {
		return fmt.Errorf("client: %s %s: decode the answer: %w", cl.method, routeLabel(cl.path), err)
	}
	return nil
}

// checkReceipt verifies a signed answer with the cached keys, refreshing them once from the
// agent card when the answer names a key version they lack.
func (c *Client) checkReceipt(ctx context.Context, cl call, body []byte) error {
	check := func(keys []receipt.PublicKey) error {
		if cl.context == receipt.ContextVerify {
			return receipt.VerifyReceipt(body, keys, cl.request)
		}
		return receipt.VerifyAttestation(body, cl.context, keys)
	}
	keys, gen, err := c.cachedKeys(ctx)
	if err != nil {
		return err
	}
	err = check(keys)
	if errors.Is(err, receipt.ErrUnknownKey) && !c.pinned {
		if keys, err = c.refreshKeys(ctx, gen); err != nil {
			return err
		}
		err = check(keys)
	}
	return err
}

// cachedKeys returns the keys to check with, fetching the agent card the first time.
func (c *Client) cachedKeys(ctx context.Context) ([]receipt.PublicKey, int, error) {
	c.mu.Lock()
	keys, gen := c.keys, c.keyGen
	c.mu.Unlock()
	if keys != nil {
		return keys, gen, nil
	}
	keys, err := c.refreshKeys(ctx, gen)
	return keys, gen, err
}

// refreshKeys fetches the agent card and replaces the keys, unless they were replaced since
// generation seen (by a concurrent call): then those newer keys are used without another fetch.
func (c *Client) refreshKeys(ctx context.Context, seen int) ([]receipt.PublicKey, error) {
	c.cardMu.Lock()
	defer c.cardMu.Unlock()
	c.mu.Lock()
	if c.keyGen != seen && c.keys != nil {
		keys := c.keys
		c.mu.Unlock()
		return keys, nil
	}
	c.mu.Unlock()
	card, err := c.fetchCard(ctx)
	if err != nil {
		return nil, err
	}
	c.setKeys(card.Keys)
	return card.Keys, nil
}

func (c *Client) setKeys(keys []receipt.PublicKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = keys
	c.keyGen++
}

// fetchCard gets and parses the agent card. It is not retried: a card that cannot be had makes
// the answer it was needed for unverifiable, which is an error the caller should see.
func (c *Client) fetchCard(ctx context.Context) (*AgentCard, error) {
	ex, err := c.send(ctx, http.MethodGet, routeAgentCard, nil, "")
	if err != nil {
		return nil, fmt.Errorf("fetch the agent card: %w", err)
	}
	if ex.status != http.StatusOK {
		return nil, fmt.Errorf("fetch the agent card: %w", apiError(ex))
	}
	keys, err := receipt.CardKeys(ex.body)
	if err != nil {
		return nil, err
	}
	var card AgentCard
	if err := json.Unmarshal(ex.body, &card); err != nil {
		return nil, fmt.Errorf("agent card: %w", err)
	}
	var ifaces struct {
		SupportedInterfaces []struct {
			URL string `json:"url"`
		} `json:"supportedInterfaces"`
	}
	if json.Unmarshal(ex.body, &ifaces) == nil && len(ifaces.SupportedInterfaces) > 0 {
		card.URL = ifaces.SupportedInterfaces[0].URL
	}
	card.Keys = keys
	card.Answer = ex.answer(nil)
	return &card, nil
}

// matchRequest checks that a validly signed verification answers the request that was sent: the
// same task, agent and switches. The hashes bind the data; these bind what the answer says about
// it (a compact answer has no request_hash, and enforce_rules decides whether a rule failure
// blocks).
func matchRequest(v *Verification, body []byte) error {
	var req struct {
		TaskID             string  `json:"task_id"`
		AgentID            *string `json:"agent_id"`
		EnforceRules       bool    `json:"enforce_rules"`
		StrictContentCheck bool    `json:"strict_content_check"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("%w: the request cannot be read back: %v", ErrAnswerMismatch, err)
	}
	switch {
	case v.TaskID != req.TaskID:
		return fmt.Errorf("%w: task_id differs", ErrAnswerMismatch)
	case (v.AgentID == nil) != (req.AgentID == nil) || (v.AgentID != nil && *v.AgentID != *req.AgentID):
		return fmt.Errorf("%w: agent_id differs", ErrAnswerMismatch)
	case v.EnforceRules != req.EnforceRules:
		return fmt.Errorf("%w: enforce_rules differs", ErrAnswerMismatch)
	case v.StrictContentCheck != req.StrictContentCheck:
		return fmt.Errorf("%w: strict_content_check differs", ErrAnswerMismatch)
	case v.Result != "pass" && v.Result != "fail":
		return fmt.Errorf("%w: result is neither pass nor fail", ErrAnswerMismatch)
	}
	return nil
}

// envelope is the service's error body (SPEC §7), as sent.
type envelope struct {
	Code        apperr.Code           `json:"code"`
	Message     string                `json:"message"`
	Status      int                   `json:"status"`
	Retryable   bool                  `json:"retryable"`
	Charged     bool                  `json:"charged"`
	RetryAfter  int                   `json:"retry_after"`
	Limit       int64                 `json:"limit"`
	NextActions []apperr.NextAction   `json:"next_actions"`
	Fields      []apperr.FieldProblem `json:"fields"`
}

func isEnvelope(body []byte) bool {
	var e envelope
	return json.Unmarshal(body, &e) == nil && e.Code != ""
}

// apiError reads an error answer. An answer that is not an envelope (a proxy's error page) keeps
// its HTTP status and is not retryable: only the service says what may be retried.
func apiError(ex *exchange) *APIError {
	var e envelope
	if err := json.Unmarshal(ex.body, &e); err != nil || e.Code == "" {
		return &APIError{Status: ex.status, Message: "the answer is not the service's error envelope", Allowance: parseAllowance(ex.header)}
	}
	ae := &APIError{
		Code: e.Code, Message: e.Message, Status: e.Status, Retryable: e.Retryable, Charged: e.Charged,
		Limit: e.Limit, NextActions: e.NextActions, Fields: e.Fields, Allowance: parseAllowance(ex.header),
	}
	if ae.Status == 0 {
		ae.Status = ex.status
	}
	switch {
	case e.RetryAfter > 0:
		ae.RetryAfter = time.Duration(e.RetryAfter) * time.Second
	default:
		if s, err := strconv.Atoi(ex.header.Get("Retry-After")); err == nil && s > 0 {
			ae.RetryAfter = time.Duration(s) * time.Second
		}
	}
	return ae
}

// paymentRequired reads a 402 answer: the PaymentRequired (from the header, or the body that
// repeats it), the code and the caller's free_trial state.
func paymentRequired(ex *exchange, paid bool, cause error) *PaymentRequiredError {
	var body struct {
		x402.PaymentRequired
		Code      apperr.Code `json:"code"`
		FreeTrial *FreeTrial  `json:"free_trial"`
	}
	_ = json.Unmarshal(ex.body, &body)
	e := &PaymentRequiredError{
		Code: body.Code, Message: body.Error, FreeTrial: body.FreeTrial, Paid: paid,
		Allowance: parseAllowance(ex.header), Cause: cause,
	}
	if pr, err := x402.DecodePaymentRequired(ex.header.Get(headerPaymentRequired)); err == nil {
		e.Required = pr
	} else {
		e.Required = body.PaymentRequired
	}
	if e.Message == "" {
		e.Message = e.Required.Error
	}
	if h := ex.header.Get(headerPaymentResponse); h != "" {
		if sr, err := x402.DecodeSettleResponse(h); err == nil {
			e.Settlement = &sr
		}
	}
	return e
}

func checkAgentID(id string) error {
	if id == "" || utf8.RuneCountInString(id) > maxAgentIDLen || !utf8.ValidString(id) {
		return fmt.Errorf("client: agent_id must be 1 to %d characters of valid UTF-8", maxAgentIDLen)
	}
	return nil
}

// routeLabel names a route in an error without the caller-chosen parts (agent ids, cursors).
func routeLabel(path string) string {
	for _, p := range []string{routeScore, routeReputation} {
		if strings.HasPrefix(path, p) {
			return p + "{agent_id}"
		}
	}
	return path
}

// short quotes a server-chosen string for an error message, cut so it cannot flood a log line.
func short(s string) string {
	if len(s) > maxQuoted {
		s = s[:maxQuoted] + "..."
	}
	return strconv.QuoteToASCII(s)
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
