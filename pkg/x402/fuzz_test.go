package x402

import (
	"encoding/base64"
	"reflect"
	"testing"
)

// fuzzSeeds are the recorded npm headers, the Go golden headers and the decode cases.
func fuzzSeeds(f *testing.F, prefix string) {
	rec := loadNPM(f)
	for _, h := range []string{rec.PaymentRequired.Header, rec.PaymentSignature.Header, rec.PaymentResponse.Header, rec.PaymentFailed.Header} {
		f.Add(h)
	}
	var golden goEncoded
	readJSON(f, "go-encoded.json", &golden)
	for _, h := range golden.Headers {
		f.Add(h)
	}
	var cases []decodeCase
	readJSON(f, "decode-cases.json", &cases)
	for _, c := range cases {
		f.Add(c.header())
	}
	f.Add(base64.StdEncoding.EncodeToString([]byte(prefix)))
}

// FuzzDecodePaymentSignature: decoding never panics, and whatever decodes survives a round trip
// through EncodeHeader unchanged (so what goes to the facilitator is what the client sent).
func FuzzDecodePaymentSignature(f *testing.F) {
	fuzzSeeds(f, `{"x402Version":2,"accepted":{"scheme":"exact","network":"a:b","amount":"1","asset":"x","payTo":"y","maxTimeoutSeconds":1},"payload":{"n":1e400}}`)
	f.Fuzz(func(t *testing.T, h string) {
		p, err := DecodePaymentSignature(h)
		if err != nil {
			return
		}
		PaymentID(p) // must not panic either
		Match(p, []Requirements{p.Accepted})
		enc, err := EncodeHeader(p)
		if err != nil {
			t.Fatalf("a decoded payload does not encode: %v", err)
		}
		back, err := DecodePaymentSignature(enc)
		if err != nil {
			t.Fatalf("a re-encoded payload does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(t, back), normalize(t, p)) {
			t.Fatalf("round trip changed the payload:\n%s\n%s", mustJSON(t, p), mustJSON(t, back))
		}
	})
}

// FuzzDecodePaymentRequired: decoding never panics, and whatever decodes survives a round trip.
func FuzzDecodePaymentRequired(f *testing.F) {
	fuzzSeeds(f, `{"x402Version":2,"resource":{"url":"u"},"accepts":[{"scheme":"exact","network":"a:b","amount":"1","asset":"x","payTo":"y","maxTimeoutSeconds":1}]}`)
	f.Fuzz(func(t *testing.T, h string) {
		p, err := DecodePaymentRequired(h)
		if err != nil {
			return
		}
		enc, err := EncodeHeader(p)
		if err != nil {
			t.Fatalf("a decoded answer does not encode: %v", err)
		}
		back, err := DecodePaymentRequired(enc)
		if err != nil {
			t.Fatalf("a re-encoded answer does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(t, back), normalize(t, p)) {
			t.Fatalf("round trip changed the answer:\n%s\n%s", mustJSON(t, p), mustJSON(t, back))
		}
	})
}

// FuzzDecodeSettleResponse: decoding a PAYMENT-RESPONSE never panics.
func FuzzDecodeSettleResponse(f *testing.F) {
	fuzzSeeds(f, `{"success":true,"transaction":"0x1","network":"a:b"}`)
	f.Fuzz(func(t *testing.T, h string) {
		DecodeSettleResponse(h)
	})
}

// FuzzPaymentIDSolana: the transaction parser never panics on arbitrary bytes.
func FuzzPaymentIDSolana(f *testing.F) {
	f.Add(solanaTx(0, 7, []byte("message")))
	f.Add([]byte{0x80})
	f.Add([]byte{0xff, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, tx []byte) {
		PaymentID(solanaPayload(base64.StdEncoding.EncodeToString(tx)))
	})
}
