package receipt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// invoice is an indented invoice document with n line items, the shape of the seed's
// submitted_output, used to measure canonicalization at size.
func invoice(n int) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"invoice_id\": \"INV-7731\",\n  \"currency\": \"USD\",\n  \"line_items\": [\n")
	total := 0.0
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		lt := float64(i%97) + 0.5
		total += lt
		fmt.Fprintf(&b, "    {\n      \"sku\": \"CRWL-%04d\",\n      \"description\": \"Crawler unit – batch %d\",\n      \"qty\": %d,\n      \"unit_price\": %.1f,\n      \"line_total\": %.1f\n    }", i, i, 1+i%5, lt, lt)
	}
	fmt.Fprintf(&b, "\n  ],\n  \"total\": %.1f\n}\n", total)
	return []byte(b.String())
}

// BenchmarkAttest measures the sign path on the seed's draft response: canonicalize once,
// assemble the envelope, Ed25519, append the attestation.
func BenchmarkAttest(b *testing.B) {
	resp := stripAttestation(b, readSeed(b, "invoice-draft.response.json"))
	k := testKey("v-bench", 1)
	b.SetBytes(int64(len(resp)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Attest(ContextVerify, resp, "2026-10-14T19:12:05.645221+00:00"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyAttestation measures the independent verifier on the same receipt (not a hot
// path; shown for scale).
func BenchmarkVerifyAttestation(b *testing.B) {
	signed := readSeed(b, "invoice-draft.response.json")
	keys := seedKeys(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyAttestation(signed, ContextVerify, keys); err != nil {
			b.Fatal(err)
		}
	}
}

// canonicalBenchDocs are the documents the two canonicalizers are compared on.
func canonicalBenchDocs(b *testing.B) map[string][]byte {
	return map[string][]byte{
		"seed-response": readSeed(b, "invoice-draft.response.json"),
		"items-2":       invoice(2),
		"items-200":     invoice(200),
	}
}

// BenchmarkCanonicalizeFast is the signer's canonicalizer (jsontext).
func BenchmarkCanonicalizeFast(b *testing.B) {
	for _, name := range []string{"seed-response", "items-2", "items-200"} {
		doc := canonicalBenchDocs(b)[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonicalize(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCanonicalizeJCS is the verifier's canonicalizer (gowebpki/jcs) on the same documents.
func BenchmarkCanonicalizeJCS(b *testing.B) {
	for _, name := range []string{"seed-response", "items-2", "items-200"} {
		doc := canonicalBenchDocs(b)[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jcs.Transform(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
