package client_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"github.com/agent-output-verifier/verifier/pkg/store/memstore"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"math/big"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/client"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
)

// exampleService serves the verifier's routes from memory, signing with a fixed example key; a
// real caller points the client at a deployment instead.
func exampleService() *httptest.Server {
	key := receipt.Key{Version: "v1-example", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{42}, ed25519.SeedSize))}
	now := func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	svc, err := service.New(service.Deps{
		Engine: engine.New(wire.Limits{}), MaxBody: wire.DefaultLimits.MaxBody, Keys: receipt.KeyRing{Current: key}, BaseURL: "https://verify.example.com",
		Store: memstore.New(now), Now: now, Pricing: service.Pricing{FreeCallsPerDay: 100, FreeMaxBody: 64 << 10},
	})
	if err != nil {
		panic(err)
	}
	return httptest.NewServer(httpapi.Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) }))
}

// Verifying an agent's output. The answer comes back only after its signature checked out with
// the keys of the service's agent card and its hashes matched the request that was sent.
func ExampleClient_VerifySchema() {
	srv := exampleService()
	defer srv.Close()

	c, err := client.New(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := c.VerifySchema(context.Background(), client.Request{
		TaskID:          "invoice-7731-draft",
		ExpectedSchema:  json.RawMessage(`{"type":"object","required":["line_items","total"]}`),
		SubmittedOutput: json.RawMessage(`{"line_items":[{"line_total":87.0},{"line_total":42.5}],"total":135.0}`),
		Rules:           []client.Rule{{Type: "sum_equals", Field: "line_items[].line_total", EqualsField: "total"}},
		EnforceRules:    true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Result, v.Summary.BlockingChecks)
	fmt.Println(v.ErrorsDetail[0].Found)
	fmt.Println("signed with", v.Attestation.KeyVersion)
	// Output:
	// fail [consistency:sum_equals]
	// sum 129.5
	// signed with v1-example
}

// A bad receipt is an error, never a silent pass: here a proxy changes one byte of every answer.
func ExampleReceiptError() {
	srv := exampleService()
	defer srv.Close()
	tamper := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		srv.Config.Handler.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if r.URL.Path == "/verify/schema" {
			body = bytes.Replace(body, []byte(`"result":"fail"`), []byte(`"result":"pass"`), 1)
		}
		w.Write(body)
	}))
	defer tamper.Close()

	c, _ := client.New(tamper.URL)
	_, err := c.VerifyJSON(context.Background(), client.RouteVerifySchema,
		[]byte(`{"task_id":"t1","expected_schema":{"type":"string"},"submitted_output":42}`))
	var re *client.ReceiptError
	fmt.Println(errors.As(err, &re), errors.Is(err, receipt.ErrSignature))
	// Output: true true
}

// A client that pays past the free allowance with an EVM key, at most 5 cents a call and a dollar
// in all, and what it gets back when it cannot or will not pay.
func ExampleWithPayer() {
	payer, err := client.LoadEVMPayer("pay.key") // hex secp256k1 key, mode 0600; or EVMPayerFromEnv
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := client.New("https://verify.example.com",
		client.WithPayer(payer), client.WithMaxPrice("0.05"), client.WithBudget("1.00"), client.WithTimeout(time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := c.VerifySchema(context.Background(), client.Request{TaskID: "t1", ExpectedSchema: true, SubmittedOutput: 1})
	var (
		capped *client.SpendingCapError
		unpaid *client.PaymentRequiredError
		api    *client.APIError
	)
	switch {
	case errors.As(err, &capped):
		fmt.Println("price", capped.Price, "is over the cap", capped.Cap)
	case errors.As(err, &unpaid):
		fmt.Println("not paid:", unpaid.Code, unpaid.FreeTrial.Message)
	case errors.As(err, &api):
		fmt.Println(api.Code, api.Fields)
	case err != nil:
		fmt.Println(err)
	case v.Payment != nil:
		fmt.Println(v.Result, "paid", v.Payment.USD, "USD in", v.Payment.Settlement.Transaction)
	default:
		fmt.Println(v.Result, "free;", v.Allowance.Remaining, "free calls left today")
	}
}

// The EVM payer's account is the address of its key.
func ExampleNewEVMPayer() {
	// anvil's public test key 0: never hold money with a published key.
	p, err := client.NewEVMPayer("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Address())
	fmt.Println(p) // the key never prints
	// Output:
	// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
	// EVM payer 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
}

// The EIP-712 digest an EIP-3009 payment signs: the same bytes as viem's hashTypedData.
func ExampleTransferAuthorization_Digest() {
	a := client.TransferAuthorization{
		TokenName: "USD Coin", TokenVersion: "2", ChainID: big.NewInt(8453),
		Token: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
		From:  "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", To: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
		Value: big.NewInt(20000), ValidAfter: big.NewInt(0), ValidBefore: big.NewInt(1790000060),
		Nonce: [32]byte{31: 1},
	}
	d, err := a.Digest()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("0x" + hex.EncodeToString(d[:]))
	// Output: 0x69e7ebd8d8a84d731e5b6d42489d78a1dd6167967a136d5c94e665ccbbbc7d0f
}
