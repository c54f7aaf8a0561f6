package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// VerifyPaths are the two names of the one verification route; they behave byte for byte alike.
var VerifyPaths = []string{"/verify/schema", "/verify/deliverable"}

// restWords are REST's texts in the service's answers: a body and a PAYMENT-SIGNATURE header.
var restWords = &edge.Words{
	Probe:              "Send a verification request; this route is paid with x402 past the free allowance.",
	OverFreeSize:       "Bodies over %d bytes are not covered by the free allowance; pay to verify this one.",
	ScorePaid:          "This agent has a trust score; pay with x402 to read it.",
	PaymentField:       x402.HeaderPaymentSignature,
	NoPaymentsFix:      "Send the request without a payment.",
	UndecodablePayment: "The PAYMENT-SIGNATURE header could not be decoded as an x402 v2 payment. Nothing was charged.",
}

// MountVerify adds the verify routes to rt.
func MountVerify(rt *edge.Router, svc *service.Service) {
	a := api{svc}
	for _, p := range VerifyPaths {
		// The x402 resource of each path is built once, not per request.
		resource := svc.BaseURL() + p
		rt.Handle(http.MethodPost, p, func(w http.ResponseWriter, r *http.Request) { a.handleVerify(w, r, resource) })
	}
}

// payment reads the PAYMENT-SIGNATURE header: decoding is the transport's, the rest the
// service's.
func payment(r *http.Request) service.Payment {
	h := r.Header.Get(x402.HeaderPaymentSignature)
	if h == "" {
		return service.Payment{}
	}
	p, err := x402.DecodePaymentSignature(h)
	return service.Payment{Sent: true, Payload: p, Err: err}
}

// handleVerify is POST /verify/schema and /verify/deliverable: the body and payment go to
// service.Verify, whose outcome is rendered as status, headers and body.
func (a api) handleVerify(w http.ResponseWriter, r *http.Request, resource string) {
	body, err := edge.ReadBody(r, a.svc.MaxBody())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	o := a.svc.Verify(r.Context(), service.VerifyCall{
		Body: body, Payment: payment(r), Caller: a.svc.CallerID(edge.ClientIdentity(r, a.svc.TrustedProxyHops())),
		Resource: resource, Extensions: verifyExtensions(), Route: r.URL.Path,
	})
	a.render(w, r, o, true)
}

// render writes an outcome: 200 with the signed body (and the allowance or settlement headers),
// 402 with PAYMENT-REQUIRED, or the error envelope. freeTrial says whether a 402 body reports the
// caller's free allowance (the verify routes do; /score has none).
func (a api) render(w http.ResponseWriter, r *http.Request, o service.Outcome, freeTrial bool) {
	o = restWords.Word(o, a.svc.Pricing().FreeMaxBody)
	edge.Note(w, o)
	switch o.Kind {
	case service.Answered:
		if fa := o.FreeAllowance; fa != nil {
			w.Header().Set("Free-Allowance-Remaining", strconv.Itoa(fa.Remaining))
			w.Header().Set("Free-Allowance-Limit", strconv.Itoa(fa.Limit))
			w.Header().Set("Free-Allowance-Resets", fa.Resets.Format(time.RFC3339))
		}
		if o.Settlement != nil {
			if h, err := x402.EncodeHeader(o.Settlement); err == nil {
				w.Header().Set(x402.HeaderPaymentResponse, h)
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		edge.WriteJSON(w, http.StatusOK, o.Body)
	case service.PaymentRequired:
		ft := edge.FreeTrial(o.FreeTrial, a.svc.BaseURL())
		if !freeTrial {
			ft = nil
		}
		a.writePayment(w, r, o.PaymentRequired, o.Code, ft, o.Settlement)
	default:
		edge.WriteError(w, o.Err)
	}
}

// writePayment answers 402 with pr in the PAYMENT-REQUIRED header and a body that repeats it with a
// machine code and, on routes that have one (ft non-nil), the caller's free allowance; a failed
// settlement goes back in PAYMENT-RESPONSE.
func (a api) writePayment(w http.ResponseWriter, r *http.Request, pr x402.PaymentRequired, code apperr.Code, ft map[string]any, settlement *x402.SettleResponse) {
	hdr, err := x402.EncodeHeader(pr)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body := map[string]any{
		"x402Version": pr.X402Version, "error": pr.Error, "resource": pr.Resource, "accepts": pr.Accepts,
		"extensions": pr.Extensions, "code": string(code), "status": http.StatusPaymentRequired, "charged": false,
	}
	if ft != nil {
		body["free_trial"] = ft
	}
	if settlement != nil {
		if h, err := x402.EncodeHeader(settlement); err == nil {
			w.Header().Set(x402.HeaderPaymentResponse, h)
		}
	}
	b, _ := json.Marshal(body)
	w.Header().Set(x402.HeaderPaymentRequired, hdr)
	w.Header().Set("Cache-Control", "no-store")
	edge.WriteJSON(w, http.StatusPaymentRequired, b)
}

// The bazaar extensions of the 402 answers are the same in every answer of a route, so each is
// encoded once, by x402.EncodeJSON as the PAYMENT-REQUIRED header encodes it (keys sorted, HTML
// characters left as they are): decoding the request schema and example and
// encoding the maps again was most of the cost of every 402.
var (
	verifyBazaar = sync.OnceValue(func() json.RawMessage {
		return encodeExtension(x402.BazaarExtension(http.MethodPost, wire.ExampleRequest(), wire.RequestSchema()))
	})
	scoreBazaar = sync.OnceValue(func() json.RawMessage {
		return encodeExtension(x402.BazaarExtension(http.MethodGet, nil, nil))
	})
	// The extensions maps are shared by every answer and never written.
	verifyExtensions = sync.OnceValue(func() map[string]any { return map[string]any{"bazaar": verifyBazaar()} })
	scoreExtensions  = sync.OnceValue(func() map[string]any { return map[string]any{"bazaar": scoreBazaar()} })
)

func encodeExtension(ext map[string]any) json.RawMessage {
	b, err := x402.EncodeJSON(ext)
	if err != nil {
		panic(fmt.Sprintf("httpapi: a bazaar extension cannot be encoded: %v", err))
	}
	return b
}
