package x402_test

import (
	"context"
	"fmt"

	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Building the 402 answer for a $0.02 call from the environment, and reading a client's payment
// against it. Only EVM is configured, so no facilitator call is needed to answer.
func ExamplePayments_Requirements() {
	env := map[string]string{"X402_PAY_TO_EVM": "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc", "X402_FACILITATOR_URL": "https://facilitator.example.com"}
	cfg, err := x402.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		fmt.Println(err)
		return
	}
	payments, err := x402.New(cfg, x402.NewFacilitator(cfg), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	accepts, err := payments.Requirements(context.Background(), "0.02")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range accepts {
		fmt.Println(r.Scheme, r.Network, r.Amount, r.Asset, r.PayTo, r.MaxTimeoutSeconds, r.Extra["name"])
	}

	// A client that pays the first entry; Match returns the server's own copy for the facilitator.
	paid := x402.PaymentPayload{X402Version: 2, Accepted: accepts[0]}
	paid.Accepted.Extra = map[string]any{"name": "whatever the client says"}
	own, err := x402.Match(paid, accepts)
	fmt.Println(own.Extra["name"], err)

	paid.Accepted.Amount = "1"
	_, err = x402.Match(paid, accepts)
	fmt.Println(err != nil)
	// Output:
	// exact eip155:8453 20000 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913 0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC 60 USD Coin
	// USD Coin <nil>
	// true
}

// Prices are configured in USD and offered in USDC's atomic units, converted without floats.
func ExampleUSDToAtomic() {
	for _, usd := range []string{"0.02", "0.29", "0.0000001"} {
		fmt.Println(x402.USDToAtomic(usd))
	}
	// Output:
	// 20000 <nil>
	// 290000 <nil>
	//  price has more than 6 decimals, finer than USDC's smallest unit
}

// Headers are the base64 of the JSON; decoding validates the x402 v2 shape.
func ExampleDecodePaymentSignature() {
	h, _ := x402.EncodeHeader(map[string]any{"x402Version": 1, "scheme": "exact", "network": "base", "payload": map[string]any{}})
	_, err := x402.DecodePaymentSignature(h)
	fmt.Println(err)
	// Output:
	// malformed x402 header: payment payload: x402Version must be 2
}
