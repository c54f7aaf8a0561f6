package x402

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/go-encoded.json (then run testdata/record.mjs again)")

// recorded is one header of npm-headers.json and the JSON the package decoded from it.
type recorded struct {
	Header string          `json:"header"`
	JSON   json.RawMessage `json:"json"`
}

type npmHeaders struct {
	Versions         map[string]string `json:"versions"`
	Payer            string            `json:"payer"`
	PaymentRequired  recorded          `json:"PAYMENT-REQUIRED"`
	PaymentSignature recorded          `json:"PAYMENT-SIGNATURE"`
	PaymentResponse  recorded          `json:"PAYMENT-RESPONSE"`
	PaymentFailed    recorded          `json:"PAYMENT-RESPONSE-failed"`
}

func loadNPM(t testing.TB) npmHeaders {
	t.Helper()
	var h npmHeaders
	readJSON(t, "npm-headers.json", &h)
	if h.Versions["@x402/core"] != "2.27.0" || h.Versions["@x402/evm"] != "2.27.0" {
		t.Fatalf("npm-headers.json was recorded with %v, want @x402 2.27.0", h.Versions)
	}
	return h
}

func sameRequirements(t *testing.T, where string, got, want Requirements) {
	t.Helper()
	if got.Scheme != want.Scheme || got.Network != want.Network || got.Amount != want.Amount ||
		got.Asset != want.Asset || got.PayTo != want.PayTo || got.MaxTimeoutSeconds != want.MaxTimeoutSeconds {
		t.Errorf("%s:\ngot  %+v\nwant %+v", where, got, want)
	}
	if !jsonEqual(t, got.Extra, want.Extra) {
		t.Errorf("%s extra: got %v, want %v", where, got.Extra, want.Extra)
	}
}

// The PAYMENT-REQUIRED header the package encoded decodes to the requirements it was given.
func TestDecodePaymentRequiredFromNPM(t *testing.T) {
	fx, rec := loadFixture(t), loadNPM(t)
	got, err := DecodePaymentRequired(rec.PaymentRequired.Header)
	if err != nil {
		t.Fatal(err)
	}
	want := fx.PaymentRequired
	if got.X402Version != 2 || got.Error != want.Error || got.Resource != want.Resource {
		t.Errorf("got %d %q %+v, want 2 %q %+v", got.X402Version, got.Error, got.Resource, want.Error, want.Resource)
	}
	if len(got.Accepts) != len(want.Accepts) {
		t.Fatalf("accepts: got %d, want %d", len(got.Accepts), len(want.Accepts))
	}
	for i := range want.Accepts {
		sameRequirements(t, "accepts", got.Accepts[i], want.Accepts[i])
	}
	if !jsonEqual(t, got.Extensions, want.Extensions) {
		t.Errorf("extensions differ:\ngot  %s\nwant %s", mustJSON(t, got.Extensions), mustJSON(t, want.Extensions))
	}
	if !jsonEqual(t, got, rec.PaymentRequired.JSON) {
		t.Errorf("Go's decoding differs from the package's:\ngot  %s\nwant %s", mustJSON(t, got), rec.PaymentRequired.JSON)
	}
}

// The PAYMENT-SIGNATURE header x402HTTPClient built for an EIP-3009 payment decodes field by field.
func TestDecodePaymentSignatureFromNPM(t *testing.T) {
	fx, rec := loadFixture(t), loadNPM(t)
	got, err := DecodePaymentSignature(rec.PaymentSignature.Header)
	if err != nil {
		t.Fatal(err)
	}
	evm := fx.PaymentRequired.Accepts[0]
	if got.X402Version != 2 {
		t.Errorf("x402Version = %d", got.X402Version)
	}
	if got.Resource == nil || *got.Resource != fx.PaymentRequired.Resource {
		t.Errorf("resource = %+v, want %+v", got.Resource, fx.PaymentRequired.Resource)
	}
	sameRequirements(t, "accepted", got.Accepted, evm)
	if !jsonEqual(t, got.Extensions, fx.PaymentRequired.Extensions) {
		t.Errorf("extensions were not echoed: %s", mustJSON(t, got.Extensions))
	}
	sig, _ := got.Payload["signature"].(string)
	if !regexp.MustCompile(`^0x[0-9a-f]{130}$`).MatchString(sig) {
		t.Errorf("signature = %q", sig)
	}
	auth, _ := got.Payload["authorization"].(map[string]any)
	for field, want := range map[string]string{"from": rec.Payer, "to": evm.PayTo, "value": evm.Amount} {
		if auth[field] != want {
			t.Errorf("authorization.%s = %v, want %s", field, auth[field], want)
		}
	}
	if rec.Payer != "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" {
		t.Errorf("payer = %s, want anvil account 0", rec.Payer)
	}
	for _, field := range []string{"validAfter", "validBefore"} {
		if s, _ := auth[field].(string); !regexp.MustCompile(`^[0-9]+$`).MatchString(s) {
			t.Errorf("authorization.%s = %v", field, auth[field])
		}
	}
	if n, _ := auth["nonce"].(string); !isHex(n, 32) {
		t.Errorf("authorization.nonce = %v", auth["nonce"])
	}
	if !jsonEqual(t, got, rec.PaymentSignature.JSON) {
		t.Errorf("Go's decoding differs from the package's:\ngot  %s\nwant %s", mustJSON(t, got), rec.PaymentSignature.JSON)
	}
	// The server's own copy matches what the package signed, and the payment has a replay key.
	if _, err := Match(got, fx.PaymentRequired.Accepts); err != nil {
		t.Errorf("Match: %v", err)
	}
	id, err := PaymentID(got)
	if err != nil || id != strings.ToLower("eip155:8453/"+evm.Asset+"/"+rec.Payer+"/"+auth["nonce"].(string)) {
		t.Errorf("PaymentID = %q, %v", id, err)
	}
}

func TestDecodeSettleResponseFromNPM(t *testing.T) {
	fx, rec := loadFixture(t), loadNPM(t)
	for _, c := range []struct {
		rec  recorded
		want SettleResponse
	}{
		{rec.PaymentResponse, SettleResponse{Success: true, Payer: rec.Payer, Transaction: fx.Settlement.Transaction, Network: NetworkBase}},
		{rec.PaymentFailed, SettleResponse{Success: false, ErrorReason: fx.Settlement.FailureReason, Payer: rec.Payer, Network: NetworkBase}},
	} {
		got, err := DecodeSettleResponse(c.rec.Header)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("got %+v, want %+v", got, c.want)
		}
	}
}

// goEncoded is testdata/go-encoded.json: headers this package encodes, and the values they hold.
type goEncoded struct {
	Comment string                     `json:"comment"`
	Headers map[string]string          `json:"headers"`
	Values  map[string]json.RawMessage `json:"values"`
}

// goldenValues are the values of go-encoded.json, built by the code paths the service uses.
func goldenValues(t *testing.T) map[string]any {
	fx := loadFixture(t)
	p, _ := fixturePayments(t)
	accepts, err := p.Requirements(context.Background(), fx.Config.PriceUSD)
	if err != nil {
		t.Fatal(err)
	}
	input := fx.PaymentRequired.Extensions["bazaar"].(map[string]any)["info"].(map[string]any)["input"].(map[string]any)
	schema := fx.PaymentRequired.Extensions["bazaar"].(map[string]any)["schema"].(map[string]any)["properties"].(map[string]any)["input"].(map[string]any)["properties"].(map[string]any)["body"]
	ext := map[string]any{"bazaar": BazaarExtension("POST", input["body"], schema)}
	res := fx.PaymentRequired.Resource
	payer := "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	return map[string]any{
		"PAYMENT-REQUIRED": PaymentRequired{X402Version: 2, Error: fx.PaymentRequired.Error, Resource: res, Accepts: accepts, Extensions: ext},
		"PAYMENT-SIGNATURE-evm": PaymentPayload{X402Version: 2, Resource: &res, Accepted: accepts[0], Extensions: ext, Payload: map[string]any{
			"signature": "0x" + strings.Repeat("ab", 65),
			"authorization": map[string]any{
				"from": payer, "to": accepts[0].PayTo, "value": accepts[0].Amount,
				"validAfter": "1760000000", "validBefore": "1760000660", "nonce": "0x" + strings.Repeat("5a", 32),
			},
		}},
		"PAYMENT-SIGNATURE-solana": PaymentPayload{X402Version: 2, Resource: &res, Accepted: accepts[1], Payload: map[string]any{
			"transaction": base64.StdEncoding.EncodeToString(solanaTx(0, 7, []byte("message of a transfer <&>"))),
		}},
		"PAYMENT-RESPONSE":        SettleResponse{Success: true, Payer: payer, Transaction: fx.Settlement.Transaction, Network: NetworkBase},
		"PAYMENT-RESPONSE-failed": SettleResponse{Success: false, ErrorReason: fx.Settlement.FailureReason, Payer: payer, Network: NetworkBase},
	}
}

// Go-encoded headers are pinned by a golden file, which record.mjs decodes with the npm packages.
func TestGoEncodedGolden(t *testing.T) {
	values := goldenValues(t)
	want := goEncoded{
		Comment: "Written by `go test ./pkg/x402 -run TestGoEncodedGolden -update`; record.mjs decodes these headers with @x402/core into go-encoded.npm-decoded.json.",
		Headers: map[string]string{}, Values: map[string]json.RawMessage{},
	}
	for name, v := range values {
		h, err := EncodeHeader(v)
		if err != nil {
			t.Fatal(err)
		}
		want.Headers[name] = h
		want.Values[name] = json.RawMessage(mustJSON(t, v))
	}
	path := filepath.Join("testdata", "go-encoded.json")
	if *update {
		b, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got goEncoded
	readJSON(t, "go-encoded.json", &got)
	for name, h := range want.Headers {
		if got.Headers[name] != h {
			t.Errorf("%s: EncodeHeader changed; run with -update and record.mjs again\ngot  %s\nwant %s", name, h, got.Headers[name])
		}
	}
	if len(got.Headers) != len(want.Headers) {
		t.Errorf("golden has %d headers, want %d", len(got.Headers), len(want.Headers))
	}
}

// The npm packages decoded the Go-encoded headers into the same values, their zod schemas
// accepted them, and x402Client could sign a payment for the Go-encoded 402 answer.
func TestGoEncodedDecodedByNPM(t *testing.T) {
	var golden goEncoded
	readJSON(t, "go-encoded.json", &golden)
	var npm struct {
		Versions map[string]string `json:"versions"`
		Decoded  map[string]struct {
			JSON   json.RawMessage `json:"json"`
			Schema string          `json:"schema"`
		} `json:"decoded"`
		Client struct {
			Accepted     Requirements `json:"accepted"`
			HasSignature bool         `json:"hasSignature"`
			Schema       string       `json:"schema"`
		} `json:"clientSignedFromGoPaymentRequired"`
	}
	readJSON(t, "go-encoded.npm-decoded.json", &npm)
	if npm.Versions["@x402/core"] != "2.27.0" {
		t.Fatalf("recorded with %v", npm.Versions)
	}
	for name, header := range golden.Headers {
		d, ok := npm.Decoded[name]
		if !ok {
			t.Errorf("%s: not decoded by record.mjs; run it again", name)
			continue
		}
		if d.Schema != "ok" {
			t.Errorf("%s: @x402/core's schema rejects it: %s", name, d.Schema)
		}
		if !jsonEqual(t, d.JSON, golden.Values[name]) {
			t.Errorf("%s: the package decoded\n%s\nwant\n%s", name, d.JSON, golden.Values[name])
		}
		// And Go decodes its own header back to the same value.
		var back any
		var err error
		switch {
		case strings.HasPrefix(name, "PAYMENT-SIGNATURE"):
			back, err = DecodePaymentSignature(header)
		case strings.HasPrefix(name, "PAYMENT-REQUIRED"):
			back, err = DecodePaymentRequired(header)
		default:
			back, err = DecodeSettleResponse(header)
		}
		if err != nil || !jsonEqual(t, back, golden.Values[name]) {
			t.Errorf("%s: Go round trip: %v\n%s", name, err, mustJSON(t, back))
		}
	}
	var pr PaymentRequired
	if err := json.Unmarshal(golden.Values["PAYMENT-REQUIRED"], &pr); err != nil {
		t.Fatal(err)
	}
	if !npm.Client.HasSignature || npm.Client.Schema != "ok" {
		t.Errorf("x402Client could not pay the Go-encoded answer: %+v", npm.Client)
	}
	sameRequirements(t, "client's choice", npm.Client.Accepted, pr.Accepts[0])
}

// EncodeHeader writes standard padded base64 of compact JSON without HTML escaping.
func TestEncodeHeader(t *testing.T) {
	h, err := EncodeHeader(map[string]any{"a": "<&>", "b": 1})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `{"a":"<&>","b":1}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if !strings.HasSuffix(h, "=") {
		t.Errorf("%s: want padding", h)
	}
	if _, err := EncodeHeader(func() {}); err == nil {
		t.Error("encoding a func: want an error")
	}
}

// decodeCase is one case of testdata/decode-cases.json. The header is JSON (base64-encoded by
// the test) or, with raw, the literal header.
type decodeCase struct {
	Name   string          `json:"name"`
	Kind   string          `json:"kind"` // signature | required | response
	JSON   json.RawMessage `json:"json"`
	Text   *string         `json:"text"` // JSON text that is not valid JSON, base64-encoded by the test
	Raw    *string         `json:"raw"`
	WantOK bool            `json:"ok"`
}

func (c decodeCase) header() string {
	switch {
	case c.Raw != nil:
		return *c.Raw
	case c.Text != nil:
		return base64.StdEncoding.EncodeToString([]byte(*c.Text))
	}
	return base64.StdEncoding.EncodeToString(c.JSON)
}

func decodeKind(kind, h string) (any, error) {
	switch kind {
	case "signature":
		return DecodePaymentSignature(h)
	case "required":
		return DecodePaymentRequired(h)
	case "response":
		return DecodeSettleResponse(h)
	}
	panic("unknown kind " + kind)
}

func TestDecodeCases(t *testing.T) {
	var cases []decodeCase
	readJSON(t, "decode-cases.json", &cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			_, err := decodeKind(c.Kind, c.header())
			if c.WantOK && err != nil {
				t.Fatalf("want success, got %v", err)
			}
			if !c.WantOK {
				if err == nil {
					t.Fatal("want an error")
				}
				if !strings.Contains(err.Error(), ErrMalformedHeader.Error()) {
					t.Errorf("error %q does not wrap ErrMalformedHeader", err)
				}
			}
		})
	}
}

// The npm decoders accept unpadded base64 and so does this one; anything over the size bound is
// refused before it is decoded.
func TestDecodeLengthAndPadding(t *testing.T) {
	rec := loadNPM(t)
	h := rec.PaymentSignature.Header
	if _, err := DecodePaymentSignature(strings.TrimRight(h, "=")); err != nil {
		t.Errorf("unpadded: %v", err)
	}
	if _, err := DecodePaymentSignature(" " + h + "\t"); err != nil {
		t.Errorf("surrounding spaces: %v", err)
	}
	if _, err := DecodePaymentSignature(strings.NewReplacer("+", "-", "/", "_").Replace(h)); err == nil && strings.ContainsAny(h, "+/") {
		t.Error("URL-safe alphabet: want an error")
	}
	big := base64.StdEncoding.EncodeToString(append([]byte(`{"x402Version":2,"pad":"`), append(bytes.Repeat([]byte("a"), MaxHeaderBytes), `"}`...)...))
	if _, err := DecodePaymentSignature(big); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("oversized: %v", err)
	}
}

// Numbers inside the payload survive decoding and re-encoding exactly, so the facilitator sees
// what the client signed.
func TestPayloadNumbersPreserved(t *testing.T) {
	doc := `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453","amount":"1","asset":"a","payTo":"b","maxTimeoutSeconds":60},` +
		`"payload":{"big":123456789012345678901234567890,"f":0.1000000000000000055511151231257827}}`
	p, err := DecodePaymentSignature(base64.StdEncoding.EncodeToString([]byte(doc)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"big":123456789012345678901234567890,"f":0.1000000000000000055511151231257827}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
