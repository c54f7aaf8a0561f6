package receipt

// Payment is the "payment" member of a signed verification (SPEC §16): what bought the answer,
// inside the signature, so that a buyer holding the receipt can prove the verdict was the one it
// paid for. A free answer says only FreeAllowance; a paid one names the requirements the server
// accepted and the payment that met them, every field of which is known before settlement (the
// settlement's transaction goes to the stored record instead).
type Payment struct {
	FreeAllowance bool   `json:"free_allowance,omitzero"`
	Scheme        string `json:"scheme,omitzero"`
	Network       string `json:"network,omitzero"`
	Asset         string `json:"asset,omitzero"`
	Amount        string `json:"amount,omitzero"`
	PayTo         string `json:"pay_to,omitzero"`
	Payer         string `json:"payer,omitzero"`
	// RequirementsHash is the lowercase hex SHA-256 of the RFC 8785 form of the
	// PaymentRequirements the server accepted (its own copy, not the client's).
	RequirementsHash string `json:"requirements_hash,omitzero"`
	// Authorization is the EVM authorization nonce or the Solana transaction's signature.
	Authorization string `json:"authorization,omitzero"`
}

// FreePayment is the payment member of an answer the free allowance paid for.
var FreePayment = Payment{FreeAllowance: true}

// PaymentSchemaJSON is the JSON Schema of the payment member: one of its two shapes.
const PaymentSchemaJSON = `{
  "type": "object",
  "description": "What bought this answer, inside the signature: {free_allowance: true}, or the accepted x402 requirements and the payment that met them.",
  "oneOf": [
    {"required": ["free_allowance"], "properties": {"free_allowance": {"const": true}}},
    {"required": ["scheme", "network", "asset", "amount", "pay_to", "payer", "requirements_hash", "authorization"],
     "properties": {
       "scheme": {"type": "string"}, "network": {"type": "string", "description": "CAIP-2 network."},
       "asset": {"type": "string"}, "amount": {"type": "string", "description": "Atomic units of the asset."},
       "pay_to": {"type": "string"}, "payer": {"type": "string"},
       "requirements_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the RFC 8785 form of the PaymentRequirements the server accepted."},
       "authorization": {"type": "string", "description": "The EVM authorization nonce, or the Solana transaction signature."}}}
  ]
}`
