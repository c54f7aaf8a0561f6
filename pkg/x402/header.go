package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The payment header names of x402 over HTTP (SPEC §8). Go canonicalizes header keys, so reading
// is case-insensitive.
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
)

// ErrMalformedHeader is wrapped by every header decoding error, so that a caller can answer
// payment_invalid without looking at the details (which name no secret and echo no input).
var ErrMalformedHeader = errors.New("malformed x402 header")

// EncodeHeader is how every x402 header value is written: the JSON of v (EncodeJSON) in standard,
// padded base64, which is what the @x402 packages produce and expect.
func EncodeHeader(v any) (string, error) {
	b, err := EncodeJSON(v)
	if err != nil {
		return "", fmt.Errorf("encode x402 header: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// EncodeJSON is the JSON of v as the x402 headers carry it: HTML characters are not escaped, so it
// is the same bytes JSON.stringify would give for the same field order. Parts of a header encoded
// ahead of time (a json.RawMessage in v) must be encoded with it to come out the same.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodePaymentSignature reads a PAYMENT-SIGNATURE header into a PaymentPayload and checks it has
// the shape x402 v2 requires (the same rules as @x402/core's PaymentPayloadV2Schema): version 2,
// a complete accepted requirement and a payload object. It never panics and reads at most
// MaxHeaderBytes.
func DecodePaymentSignature(h string) (PaymentPayload, error) {
	var p PaymentPayload
	if err := decodeHeader(h, &p); err != nil {
		return PaymentPayload{}, err
	}
	if err := p.validate(); err != nil {
		return PaymentPayload{}, malformed("payment payload: %s", err)
	}
	return p, nil
}

// DecodePaymentRequired reads a PAYMENT-REQUIRED header, as a client (or a test of this
// service's own answers) does, and checks it against x402 v2's PaymentRequired rules.
func DecodePaymentRequired(h string) (PaymentRequired, error) {
	var p PaymentRequired
	if err := decodeHeader(h, &p); err != nil {
		return PaymentRequired{}, err
	}
	if err := p.validate(); err != nil {
		return PaymentRequired{}, malformed("payment required: %s", err)
	}
	return p, nil
}

// DecodeSettleResponse reads a PAYMENT-RESPONSE header. Only "success" is required: a failed
// settlement may carry little else.
func DecodeSettleResponse(h string) (SettleResponse, error) {
	var out struct {
		SettleResponse
		Success *bool `json:"success"`
	}
	if err := decodeHeader(h, &out); err != nil {
		return SettleResponse{}, err
	}
	if out.Success == nil {
		return SettleResponse{}, malformed("settle response: success is missing")
	}
	out.SettleResponse.Success = *out.Success
	return out.SettleResponse, nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformedHeader}, args...)...)
}

// decodeHeader undoes EncodeHeader into v. It accepts padded and unpadded standard base64 (the
// @x402 decoders do too) and surrounding spaces, and exactly one JSON object.
func decodeHeader(h string, v any) error {
	if len(h) > MaxHeaderBytes {
		return malformed("longer than %d bytes", MaxHeaderBytes)
	}
	h = strings.TrimSpace(h)
	if h == "" {
		return malformed("empty")
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(h, "=") && len(h)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	raw, err := enc.Strict().DecodeString(h)
	if err != nil {
		return malformed("not standard base64")
	}
	return decodeObject(raw, v)
}

// decodeObject reads raw, which must be exactly one JSON object, into v, keeping numbers as
// json.Number.
func decodeObject(raw []byte, v any) error {
	// Only objects: null or a bare value would decode into zero values that merely look valid.
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return malformed("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return malformed("invalid JSON: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return malformed("data after the JSON object")
	}
	return nil
}

// jsonProblem names what is wrong with the JSON without quoting it.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q has the wrong type", te.Field)
	}
	return "cannot be read"
}

// validate applies @x402/core's PaymentPayloadV2Schema rules.
func (p *PaymentPayload) validate() error {
	if p.X402Version != Version {
		return fmt.Errorf("x402Version must be %d", Version)
	}
	if p.Resource != nil && p.Resource.URL == "" {
		return errors.New("resource.url is empty")
	}
	if err := p.Accepted.validate(); err != nil {
		return fmt.Errorf("accepted: %w", err)
	}
	if p.Payload == nil {
		return errors.New("payload must be an object")
	}
	return nil
}

// validate applies @x402/core's PaymentRequiredV2Schema rules.
func (p *PaymentRequired) validate() error {
	if p.X402Version != Version {
		return fmt.Errorf("x402Version must be %d", Version)
	}
	if p.Resource.URL == "" {
		return errors.New("resource.url is empty")
	}
	if len(p.Accepts) == 0 {
		return errors.New("accepts is empty")
	}
	for i := range p.Accepts {
		if err := p.Accepts[i].validate(); err != nil {
			return fmt.Errorf("accepts[%d]: %w", i, err)
		}
	}
	return nil
}

// validate applies @x402/core's PaymentRequirementsV2Schema rules: every field present, the
// network in CAIP-2 form, a positive timeout.
func (r *Requirements) validate() error {
	for _, f := range []struct{ name, v string }{
		{"scheme", r.Scheme}, {"network", r.Network}, {"amount", r.Amount}, {"asset", r.Asset}, {"payTo", r.PayTo},
	} {
		if f.v == "" {
			return fmt.Errorf("%s is empty", f.name)
		}
	}
	if len(r.Network) < 3 || !strings.Contains(r.Network, ":") {
		return errors.New("network is not a CAIP-2 id")
	}
	if r.MaxTimeoutSeconds <= 0 {
		return errors.New("maxTimeoutSeconds must be positive")
	}
	return nil
}
