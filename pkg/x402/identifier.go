package x402

import "fmt"

// ExtPaymentIdentifier is the x402 payment-identifier extension's key (SPEC §16): a client puts
// an idempotency key in its PaymentPayload's extensions["payment-identifier"].info.id and sends
// the same one when it retries, so that a retry is answered once and paid for once.
const ExtPaymentIdentifier = "payment-identifier"

// The extension's id: 16 to 128 characters of [A-Za-z0-9_-], as the x402 specification gives it.
const (
	minPaymentIdentifier = 16
	maxPaymentIdentifier = 128
)

// PaymentIdentifierExtension is what a 402 answer, and /.well-known/x402, advertise under
// extensions["payment-identifier"]: empty info and the schema of the id, as the extension's
// specification writes it.
func PaymentIdentifierExtension() map[string]any {
	return map[string]any{
		"info": map[string]any{},
		"schema": map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type":    "object",
			"properties": map[string]any{
				"id": map[string]any{"type": "string", "minLength": minPaymentIdentifier, "maxLength": maxPaymentIdentifier,
					"pattern": "^[A-Za-z0-9_-]+$"},
			},
		},
	}
}

// PaymentIdentifier reads the payment-identifier extension's id from a payment: ok is false when
// the payment carries none. An id that is not 16 to 128 characters of [A-Za-z0-9_-] is an error
// wrapping ErrMalformedPayment (the caller answers payment_invalid); the error never repeats it.
func PaymentIdentifier(p PaymentPayload) (id string, ok bool, err error) {
	ext, present := p.Extensions[ExtPaymentIdentifier]
	if !present {
		return "", false, nil
	}
	e, _ := ext.(map[string]any)
	info, _ := e["info"].(map[string]any)
	raw, present := info["id"]
	if !present {
		return "", false, nil // the advertisement echoed without an id: no idempotency asked for
	}
	id, _ = raw.(string)
	if len(id) < minPaymentIdentifier || len(id) > maxPaymentIdentifier {
		return "", false, fmt.Errorf("%w: extensions.payment-identifier.info.id is not %d to %d characters", ErrMalformedPayment, minPaymentIdentifier, maxPaymentIdentifier)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", false, fmt.Errorf("%w: extensions.payment-identifier.info.id holds a character other than letters, digits, - and _", ErrMalformedPayment)
		}
	}
	return id, true, nil
}
