package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Payer signs x402 payments. The client asks it only about requirements the service offered, and
// only after the price passed the client's caps: a Payer signs whatever it is given.
//
// With a Payer (NewEVMPayer), a 402 answer is paid on the spot: the client picks the cheapest
// requirement the payer supports at a known USDC price, refuses it without signing anything when
// the price is over the cap per call (WithMaxPrice) or over what is left of the client's budget
// (WithBudget), and otherwise sends the request again with a signed PAYMENT-SIGNATURE.
type Payer interface {
	// Supports tells whether the payer can pay r (its scheme, network, asset and extras).
	Supports(r x402.Requirements) bool
	// Sign returns the scheme's payload paying r exactly: the "payload" member of the x402
	// PaymentPayload the client sends.
	Sign(ctx context.Context, r x402.Requirements) (map[string]any, error)
}

// Payers combines payers, say an EVM and a Solana one, into one: it supports what any of them
// supports, and the first that supports a requirement signs it. The client still picks the
// cheapest offer among all they support.
func Payers(ps ...Payer) Payer { return payers(ps) }

type payers []Payer

func (ps payers) Supports(r x402.Requirements) bool { return ps.payer(r) != nil }

func (ps payers) Sign(ctx context.Context, r x402.Requirements) (map[string]any, error) {
	p := ps.payer(r)
	if p == nil {
		return nil, fmt.Errorf("no payer supports %s on %s", short(r.Scheme), short(r.Network))
	}
	return p.Sign(ctx, r)
}

func (ps payers) payer(r x402.Requirements) Payer {
	for _, p := range ps {
		if p != nil && p.Supports(r) {
			return p
		}
	}
	return nil
}

// Default spending caps, in USD. A client with a payer pays on its own, so the defaults are
// small: five verifications at the default price per call, fifty per client.
const (
	DefaultMaxPrice = "0.10"
	DefaultBudget   = "1.00"
)

// offer is a requirement the payer supports, with its price in USDC atomic units.
type offer struct {
	req   x402.Requirements
	price *big.Int
}

// priceOf is the price of r in USDC atomic units (millionths of a dollar) when r asks for the
// USDC of a network pkg/x402 knows; ok is false for any other asset, which the client cannot
// value and so never pays under caps in dollars.
func priceOf(r x402.Requirements) (price *big.Int, ok bool) {
	usdc, known := x402.USDC(r.Network)
	if !known {
		return nil, false
	}
	same := r.Asset == usdc
	if strings.HasPrefix(r.Network, "eip155:") {
		same = strings.EqualFold(r.Asset, usdc)
	}
	if !same {
		return nil, false
	}
	n, err := uint256(r.Amount)
	if err != nil || n.Sign() == 0 {
		return nil, false
	}
	return n, true
}

// choose picks the cheapest offer the payer supports at a known USDC price.
func (c *Client) choose(pr x402.PaymentRequired) (offer, bool) {
	var best offer
	for _, r := range pr.Accepts {
		price, ok := priceOf(r)
		if !ok || !c.payer.Supports(r) {
			continue
		}
		if best.price == nil || price.Cmp(best.price) < 0 {
			best = offer{req: r, price: price}
		}
	}
	return best, best.price != nil
}

// reserve takes price from the budget before anything is signed, or refuses with a
// *SpendingCapError. Spending is counted when an authorization is signed, not when it settles:
// a signed authorization can be settled by whoever holds it until it expires, so it is spent as
// far as the budget is concerned.
func (c *Client) reserve(price *big.Int, pr x402.PaymentRequired) error {
	if price.Cmp(c.maxPrice) > 0 {
		return &SpendingCapError{Scope: "call", Price: usd(price), Cap: usd(c.maxPrice), Required: pr}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	left := new(big.Int).Sub(c.budget, c.spent)
	if price.Cmp(left) > 0 {
		return &SpendingCapError{Scope: "client", Price: usd(price), Cap: usd(left), Required: pr}
	}
	c.spent.Add(c.spent, price)
	return nil
}

// release gives back a reservation whose authorization was never signed.
func (c *Client) release(price *big.Int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spent.Sub(c.spent, price)
}

// paymentFor turns a 402's PaymentRequired into a signed PAYMENT-SIGNATURE header, within the
// caps. It returns the payment to report on the answer.
func (c *Client) paymentFor(ctx context.Context, pr x402.PaymentRequired) (string, *Payment, error) {
	o, ok := c.choose(pr)
	if !ok {
		return "", nil, ErrNoPayableOffer
	}
	if err := c.reserve(o.price, pr); err != nil {
		return "", nil, err
	}
	payload, err := c.payer.Sign(ctx, o.req)
	if err != nil {
		c.release(o.price)
		return "", nil, fmt.Errorf("sign payment: %w", err)
	}
	resource := pr.Resource
	pp := x402.PaymentPayload{X402Version: x402.Version, Resource: &resource, Accepted: o.req, Payload: payload}
	var id string
	if _, ok := pr.Extensions[x402.ExtPaymentIdentifier]; ok {
		// The service answers a retry under the same id from its store (SPEC §16).
		id = newPaymentIdentifier()
		pp.Extensions = map[string]any{x402.ExtPaymentIdentifier: map[string]any{"info": map[string]any{"id": id}}}
	}
	// The payment member the answer must carry: what was signed, for the requirement paid. A
	// payload it cannot be read from is sent all the same (the service refuses it as
	// payment_invalid); an answer to it would match no binding and be refused.
	binding, _ := x402.Binding(pp, o.req, "")
	header, err := x402.EncodeHeader(pp)
	if err != nil {
		// The signed authorization is not sent anywhere, but it exists: keep it counted.
		return "", nil, fmt.Errorf("encode payment: %w", err)
	}
	return header, &Payment{Requirements: o.req, USD: usd(o.price), Identifier: id, Binding: binding}, nil
}

// newPaymentIdentifier is a fresh payment-identifier id: "pay_" and 128 random bits in hex, as
// the extension's specification recommends.
func newPaymentIdentifier() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "pay_" + hex.EncodeToString(b[:])
}

// checkBinding holds a paid answer's payment member to the payment the client made: the scheme,
// network, asset, amount and payee of the requirement it paid, the authorization it signed, the
// requirements' hash and, where the client knows it (EVM: the authorization's from), the payer.
// Addresses are compared without regard to case on EVM, where checksumming only changes case.
func checkBinding(got *receipt.Payment, p *Payment) error {
	if got == nil || got.FreeAllowance {
		return errors.New("the paid answer does not say it was paid (payment member missing or free)")
	}
	want := p.Binding
	same := func(a, b string) bool { return a == b }
	if strings.HasPrefix(want.Network, "eip155:") {
		same = strings.EqualFold
	}
	for _, f := range []struct {
		name      string
		got, want string
		exact     bool
	}{
		{"scheme", got.Scheme, want.Scheme, true}, {"network", got.Network, want.Network, true},
		{"amount", got.Amount, want.Amount, true}, {"asset", got.Asset, want.Asset, false},
		{"pay_to", got.PayTo, want.PayTo, false}, {"authorization", got.Authorization, want.Authorization, true},
		{"requirements_hash", got.RequirementsHash, want.RequirementsHash, true},
	} {
		if f.exact && f.got != f.want || !f.exact && !same(f.got, f.want) {
			return fmt.Errorf("the answer's payment.%s is not what the client paid", f.name)
		}
	}
	if want.Payer != "" && !same(got.Payer, want.Payer) {
		return errors.New("the answer's payment.payer is not the client's address")
	}
	return nil
}

// Spent is how much the client has signed for so far, in USD.
func (c *Client) Spent() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return usd(c.spent)
}

// usd formats USDC atomic units as USD.
func usd(atomic *big.Int) string {
	s, err := x402.AtomicToUSD(atomic.String())
	if err != nil {
		return atomic.String() + " atomic units"
	}
	return s
}

// usdToAtomic parses a USD cap; "0" is allowed (never pay).
func usdToAtomic(s string) (*big.Int, error) {
	if whole, frac, dot := strings.Cut(s, "."); whole != "" && strings.Trim(whole, "0") == "" &&
		strings.Trim(frac, "0") == "" && (!dot || frac != "") {
		return new(big.Int), nil
	}
	a, err := x402.USDToAtomic(s)
	if err != nil {
		return nil, err
	}
	n, _ := new(big.Int).SetString(a, 10)
	return n, nil
}
