package x402

import "encoding/json"

// MCP transport keys (x402 v2 MCP transport): the client's PaymentPayload travels in the tool
// call's params._meta under MetaPayment, and the settlement comes back in the result's _meta
// under MetaPaymentResponse.
const (
	MetaPayment         = "x402/payment"
	MetaPaymentResponse = "x402/payment-response"
)

// MCPResourceURL is the resource URL of an MCP tool in payment requirements, mcp://tool/<name>.
func MCPResourceURL(tool string) string { return "mcp://tool/" + tool }

// DecodePaymentPayload reads a PaymentPayload sent as a JSON object (the MCP transport's
// _meta["x402/payment"], which is not base64) with the checks DecodePaymentSignature applies to
// the header: at most MaxHeaderBytes, exactly one object, and x402 v2's PaymentPayload rules. It
// never panics; its errors wrap ErrMalformedHeader and quote nothing of the input.
func DecodePaymentPayload(raw json.RawMessage) (PaymentPayload, error) {
	if len(raw) > MaxHeaderBytes {
		return PaymentPayload{}, malformed("longer than %d bytes", MaxHeaderBytes)
	}
	var p PaymentPayload
	if err := decodeObject(raw, &p); err != nil {
		return PaymentPayload{}, err
	}
	if err := p.validate(); err != nil {
		return PaymentPayload{}, malformed("payment payload: %s", err)
	}
	return p, nil
}
