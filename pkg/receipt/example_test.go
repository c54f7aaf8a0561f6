package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// Signing a response and checking it the way a buyer does. The verifier needs only the signed
// bytes, the context of the route, and the published keys.
func ExampleKey_Attest() {
	seed := bytes.Repeat([]byte{42}, ed25519.SeedSize) // in the service: Secrets Manager, KMS or a key file
	key := receipt.Key{Version: "v1-example", Private: ed25519.NewKeyFromSeed(seed)}
	ring := receipt.KeyRing{Current: key}

	response := []byte(`{"result":"pass","task_id":"invoice-7731-final","verified_at":"2026-10-14T19:12:05.833769+00:00"}`)
	signed, err := key.Attest(receipt.ContextVerify, response, "2026-10-14T19:12:05.833769+00:00")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(signed[:len(response)-1]))

	fmt.Println(receipt.VerifyAttestation(signed, receipt.ContextVerify, ring.PublicKeys()))

	altered := bytes.Replace(signed, []byte(`"pass"`), []byte(`"fail"`), 1)
	fmt.Println(receipt.VerifyAttestation(altered, receipt.ContextVerify, ring.PublicKeys()))
	// Output:
	// {"result":"pass","task_id":"invoice-7731-final","verified_at":"2026-10-14T19:12:05.833769+00:00"
	// <nil>
	// verify attestation: signature does not verify under key "v1-example" and context json-schema-verifier/verify-schema-attestation/v1 (the response was altered, or signed for another context)
}

// Recomputing a receipt's hashes from the request that was sent.
func ExampleRequestHashes() {
	h, err := receipt.RequestHashes([]byte(`{"task_id":"tv-1","expected_schema":{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}},"submitted_output":{"ok":true}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Request)
	// Output: 5366542000b4226c5efb411c15ec8f0aac3c63844343997aa1bcc3c585086f97
}
