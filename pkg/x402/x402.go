// Package x402 is the payment adapter: the x402 v2 wire types and their header codecs, the
// facilitator client, the payment configuration and the one price table from which both the 402
// answers and /.well-known/x402 are built (SPEC §8). It trusts nothing a client sends and imports
// no other adapter.
package x402

import "time"

// Version is the x402 protocol version this service speaks. Version 1 (X-PAYMENT) is not offered.
const Version = 2

// SchemeExact is the only payment scheme offered: a fixed amount per call, which is what a
// per-verification price is.
const SchemeExact = "exact"

// Limits, each with its reason.
const (
	// MaxHeaderBytes bounds a decoded header's input. A real EVM payment header is about 1.5 KiB
	// and a Solana one about 2 KiB; 64 KiB leaves room for extensions while keeping a hostile
	// header from costing more than a trivial amount of memory and CPU.
	MaxHeaderBytes = 64 << 10

	// maxFacilitatorBody bounds what is read from a facilitator answer: its answers are a few
	// hundred bytes, and a broken or hostile facilitator must not exhaust the function's memory.
	maxFacilitatorBody = 64 << 10

	// maxTimeoutSeconds is what every requirement offers: long enough for a client to sign and
	// resend, short enough that an authorization cannot sit unused for long.
	maxTimeoutSeconds = 60

	// usdcDecimals is USDC's number of decimals on every offered network.
	usdcDecimals = 6

	// maxPriceLen bounds a price string; no sane price needs more characters.
	maxPriceLen = 32

	// maxSolanaTransaction is Solana's packet data size: no valid transaction is larger, so a
	// larger "transaction" is refused before it is parsed.
	maxSolanaTransaction = 1232

	// excerptLen bounds the part of a facilitator's unparsable answer that goes into an error,
	// enough to recognise an HTML error page or a proxy's message.
	excerptLen = 200
)

// Facilitator call timeouts. Settle must finish well inside API Gateway's 29 s integration
// timeout, with time left for the check itself and the answer.
const (
	DefaultVerifyTimeout    = 10 * time.Second
	DefaultSettleTimeout    = 20 * time.Second
	DefaultSupportedTimeout = 5 * time.Second
)

// Fee payer cache periods. A facilitator's Solana fee payer is a long-lived key, so one answer is
// good for an hour; a failure is retried after 30 s so that a facilitator that recovers is
// offered again quickly without being called on every 402.
const (
	feePayerTTL        = time.Hour
	feePayerRetryAfter = 30 * time.Second
)

// Resource describes the paid resource in a PaymentRequired and, echoed by the client, in a
// PaymentPayload.
type Resource struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// Requirements is one way to pay for a resource (x402 v2 PaymentRequirements): the scheme, the
// CAIP-2 network, the amount in the asset's atomic units, the asset (token contract or mint), the
// payee, how long a payment may take, and scheme-specific extras (the EIP-712 domain on EVM, the
// facilitator's fee payer on Solana).
type Requirements struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	Amount            string         `json:"amount"`
	Asset             string         `json:"asset"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int            `json:"maxTimeoutSeconds"`
	Extra             map[string]any `json:"extra,omitempty"`
}

// PaymentRequired is the 402 answer (header PAYMENT-REQUIRED, and the MCP tool result's
// structuredContent): what the resource is and every way it may be paid for.
type PaymentRequired struct {
	X402Version int            `json:"x402Version"`
	Error       string         `json:"error"`
	Resource    Resource       `json:"resource"`
	Accepts     []Requirements `json:"accepts"`
	Extensions  map[string]any `json:"extensions,omitempty"`
}

// PaymentPayload is a client's signed payment (header PAYMENT-SIGNATURE, or MCP
// _meta["x402/payment"]): the requirement it chose (Accepted) and the scheme's signed data
// (Payload). JSON numbers inside Payload and Extensions are kept as json.Number, so forwarding the
// payload to the facilitator never rounds them.
type PaymentPayload struct {
	X402Version int            `json:"x402Version"`
	Resource    *Resource      `json:"resource,omitempty"`
	Accepted    Requirements   `json:"accepted"`
	Payload     map[string]any `json:"payload"`
	Extensions  map[string]any `json:"extensions,omitempty"`
}

// VerifyResponse is the facilitator's answer to /verify. InvalidMessage is the human-readable
// companion of InvalidReason that newer facilitators send.
type VerifyResponse struct {
	IsValid        bool   `json:"isValid"`
	InvalidReason  string `json:"invalidReason,omitempty"`
	InvalidMessage string `json:"invalidMessage,omitempty"`
	Payer          string `json:"payer,omitempty"`
}

// SettleResponse is the facilitator's answer to /settle, and the PAYMENT-RESPONSE header (MCP:
// _meta["x402/payment-response"]). ErrorMessage is the human-readable companion of ErrorReason.
type SettleResponse struct {
	Success      bool   `json:"success"`
	ErrorReason  string `json:"errorReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Payer        string `json:"payer,omitempty"`
	Transaction  string `json:"transaction"`
	Network      string `json:"network"`
	// Extensions are the server's additions to a successful settlement: the signed receipt of
	// the offer-receipt extension (SPEC §16). A facilitator's answer carries none.
	Extensions map[string]any `json:"extensions,omitempty"`
}

// Known CAIP-2 network ids (SPEC §8.2).
const (
	NetworkBase         = "eip155:8453"
	NetworkBaseSepolia  = "eip155:84532"
	NetworkSolana       = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	NetworkSolanaDevnet = "solana:EtWTRABZaYq6iMfeYKouRu166VPAvE9Eh"
	familyEVM           = "eip155"
	familySolana        = "solana"
	usdcBase            = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	usdcBaseSepolia     = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	usdcSolana          = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	usdcSolanaDevnet    = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"
)

// network is what the service knows about one payable network: its family, the USDC asset, and
// for EVM the token's EIP-712 domain (a wrong name or version makes every signature invalid).
type network struct {
	id, family, asset string
	domainName        string // EVM only
	domainVersion     string // EVM only
}

// knownNetworks lists every network the service can offer, in the order documents list them.
var knownNetworks = []network{
	{id: NetworkBase, family: familyEVM, asset: usdcBase, domainName: "USD Coin", domainVersion: "2"},
	{id: NetworkBaseSepolia, family: familyEVM, asset: usdcBaseSepolia, domainName: "USDC", domainVersion: "2"},
	{id: NetworkSolana, family: familySolana, asset: usdcSolana},
	{id: NetworkSolanaDevnet, family: familySolana, asset: usdcSolanaDevnet},
}

// lookupNetwork finds a known network by its CAIP-2 id.
func lookupNetwork(id string) (network, bool) {
	for _, n := range knownNetworks {
		if n.id == id {
			return n, true
		}
	}
	return network{}, false
}

// USDC returns the USDC asset (the token contract on EVM, the mint on Solana) of a network this
// package knows, and whether it knows the network. A client prices a requirement with it: an
// amount of a network's USDC is that many millionths of a dollar (USDCDecimals), while an asset
// it does not list cannot be priced and so should not be paid under a cap in dollars.
func USDC(network string) (asset string, ok bool) {
	n, ok := lookupNetwork(network)
	return n.asset, ok
}

// USDCDecimals is USDC's number of decimals on every network USDC reports: an atomic unit is a
// millionth of a dollar.
const USDCDecimals = usdcDecimals
