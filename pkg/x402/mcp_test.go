package x402

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The MCP transport carries the PaymentPayload as an object: the same payload the real client
// put in a PAYMENT-SIGNATURE header must decode identically from its JSON.
func TestDecodePaymentPayloadMatchesHeader(t *testing.T) {
	rec := loadNPM(t)
	fromHeader, err := DecodePaymentSignature(rec.PaymentSignature.Header)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(rec.PaymentSignature.Header)
	if err != nil {
		t.Fatal(err)
	}
	fromObject, err := DecodePaymentPayload(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, fromHeader, fromObject) {
		t.Errorf("object %s\nheader %s", mustJSON(t, fromObject), mustJSON(t, fromHeader))
	}
}

func TestDecodePaymentPayloadRefuses(t *testing.T) {
	valid := `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453","amount":"1","asset":"a","payTo":"b","maxTimeoutSeconds":60},"payload":{}}`
	if _, err := DecodePaymentPayload(json.RawMessage(valid)); err != nil {
		t.Fatalf("valid payload refused: %v", err)
	}
	for name, in := range map[string]string{
		"empty":         ``,
		"null":          `null`,
		"array":         `[]`,
		"string":        `"eyJ4NDAyVmVyc2lvbiI6Mn0="`,
		"version 1":     strings.Replace(valid, `"x402Version":2`, `"x402Version":1`, 1),
		"no payload":    strings.Replace(valid, `,"payload":{}`, ``, 1),
		"no amount":     strings.Replace(valid, `"amount":"1",`, ``, 1),
		"trailing data": valid + `{}`,
		"too long":      `{"x402Version":2,"pad":"` + strings.Repeat("x", MaxHeaderBytes) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodePaymentPayload(json.RawMessage(in))
			if !errors.Is(err, ErrMalformedHeader) {
				t.Fatalf("err = %v, want ErrMalformedHeader", err)
			}
			if len(in) > 8 && strings.Contains(err.Error(), in[:8]) && name != "too long" {
				t.Errorf("the error quotes the input: %v", err)
			}
		})
	}
}

// FuzzDecodePaymentPayload: decoding never panics, and whatever decodes survives a round trip
// through JSON unchanged (what goes to the facilitator is what the client sent).
func FuzzDecodePaymentPayload(f *testing.F) {
	rec := loadNPM(f)
	for _, h := range []string{rec.PaymentRequired.Header, rec.PaymentSignature.Header} {
		if raw, err := base64.StdEncoding.DecodeString(h); err == nil {
			f.Add(raw)
		}
	}
	f.Add([]byte(`{"x402Version":2,"accepted":{"scheme":"exact","network":"a:b","amount":"1","asset":"x","payTo":"y","maxTimeoutSeconds":1},"payload":{"n":1e400}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := DecodePaymentPayload(raw)
		if err != nil {
			return
		}
		PaymentID(p)
		Match(p, []Requirements{p.Accepted})
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("a decoded payload does not encode: %v", err)
		}
		back, err := DecodePaymentPayload(b)
		if err != nil {
			t.Fatalf("a re-encoded payload does not decode: %v", err)
		}
		if !jsonEqual(t, back, p) {
			t.Fatalf("round trip changed the payload:\n%s\n%s", mustJSON(t, p), mustJSON(t, back))
		}
	})
}
