package x402

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// ExtOfferReceipt is the x402 offer-receipt extension's key (SPEC §16): the server signs the
// terms of every requirement it offers (extensions["offer-receipt"].info.offers[] of a 402
// answer) and, once paid, what was paid for (extensions["offer-receipt"].info.receipt of the
// settlement response), so that a buyer can show both to anyone holding the server's key.
const ExtOfferReceipt = "offer-receipt"

// The extension's fixed names, as @x402/extensions writes and reads them.
const (
	// offerReceiptVersion is the offer and receipt payload version the extension defines.
	offerReceiptVersion = 1
	// FormatJWS is the signature format used: a JWS compact serialization (RFC 7515) whose
	// header names the algorithm and the key.
	FormatJWS = "jws"
	// AlgEdDSA is the JWS algorithm of an Ed25519 signature (RFC 8037), the receipt key's.
	AlgEdDSA = "EdDSA"
)

// OfferPayload is a signed offer's payload: one accepted requirement's terms for a resource, and
// until when (Unix seconds) the server stands by them.
type OfferPayload struct {
	Version     int    `json:"version"`
	ResourceURL string `json:"resourceUrl"`
	Scheme      string `json:"scheme"`
	Network     string `json:"network"`
	Asset       string `json:"asset"`
	PayTo       string `json:"payTo"`
	Amount      string `json:"amount"`
	ValidUntil  int64  `json:"validUntil"`
}

// ReceiptPayload is a signed receipt's payload: who paid on which network for which resource,
// when (Unix seconds) the receipt was issued, and the settlement's transaction.
type ReceiptPayload struct {
	Version     int    `json:"version"`
	Network     string `json:"network"`
	ResourceURL string `json:"resourceUrl"`
	Payer       string `json:"payer"`
	IssuedAt    int64  `json:"issuedAt"`
	Transaction string `json:"transaction,omitempty"`
}

// SignedOffer is one entry of info.offers: the JWS and the index of the accepts[] entry it
// signs (unsigned, a hint; a client matches on the payload's terms).
type SignedOffer struct {
	Format      string `json:"format"`
	AcceptIndex int    `json:"acceptIndex"`
	Signature   string `json:"signature"`
}

// SignedReceipt is info.receipt: the JWS of a ReceiptPayload.
type SignedReceipt struct {
	Format    string `json:"format"`
	Signature string `json:"signature"`
}

// OfferReceipt signs offers and receipts with the receipt key under a kid naming the key as a
// did:web URL of the deployment (SPEC §16). Every signature is the key's one signing entry point,
// receipt.Key.Sign, under the context of the request it is made for, so that a remote key's call
// (kms-sign) ends with that request. Signed offers are kept and handed out again (offerCache).
// It is safe for concurrent use.
type OfferReceipt struct {
	key    receipt.Key
	kid    string
	offers *offerCache
}

// NewOfferReceipt builds the signer of offers and receipts for the deployment at baseURL (the
// configured public base URL, never a request's Host header), signing with key under a kid that
// names its version.
func NewOfferReceipt(key receipt.Key, baseURL string) (*OfferReceipt, error) {
	if key.Private == nil && !key.IsRemote() {
		return nil, errors.New("offer-receipt: no signing key")
	}
	did, err := DIDWeb(baseURL)
	if err != nil {
		return nil, err
	}
	if key.Version == "" || strings.ContainsAny(key.Version, "#/?") {
		return nil, errors.New("offer-receipt: the key version is empty or holds #, / or ?")
	}
	return &OfferReceipt{key: key, kid: did + "#" + key.Version, offers: newOfferCache()}, nil
}

// KeyID is the JWS kid: did:web:<deployment host>#<key version>.
func (o *OfferReceipt) KeyID() string { return o.kid }

// DIDWeb is the did:web identifier of the deployment at baseURL, by the did:web method: its host,
// with a port's colon percent-encoded, then each path segment after a colon. A resolver reads the
// DID document at baseURL + "/.well-known/did.json" when baseURL has no path (DIDDocumentPath),
// and at baseURL + "/did.json" when it has one.
func DIDWeb(baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("did:web: the base URL is not an absolute http(s) URL without user, query or fragment")
	}
	did := "did:web:" + strings.ReplaceAll(strings.ToLower(u.Host), ":", "%3A")
	for _, seg := range strings.Split(strings.Trim(u.EscapedPath(), "/"), "/") {
		if seg != "" {
			did += ":" + seg
		}
	}
	return did, nil
}

// DIDDocumentPath is where the DID document of a deployment whose base URL has no path is read.
const DIDDocumentPath = "/.well-known/did.json"

// DIDDocument is the DID document of the deployment at baseURL: every published key (current
// first, then the earlier ones, so offers and receipts signed before a rotation stay
// verifiable) as a JsonWebKey2020 verification method with id <did>#<key version>, each one an
// assertion method.
func DIDDocument(baseURL string, keys []receipt.PublicKey) (map[string]any, error) {
	did, err := DIDWeb(baseURL)
	if err != nil {
		return nil, err
	}
	methods := make([]any, 0, len(keys))
	refs := make([]any, 0, len(keys))
	for _, k := range keys {
		id := did + "#" + k.Version
		methods = append(methods, map[string]any{
			"id": id, "type": "JsonWebKey2020", "controller": did,
			"publicKeyJwk": map[string]any{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(k.Key)},
		})
		refs = append(refs, id)
	}
	return map[string]any{
		"@context":           []any{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"},
		"id":                 did,
		"verificationMethod": methods,
		"assertionMethod":    refs,
	}, nil
}

// Offers is the offer-receipt extension of a 402 answer for resourceURL at now: one signed offer
// per accepted requirement, with the extension's schema. An offer signed earlier for the same
// terms is handed out again while it stays valid for OfferReuseMargin; the others are signed
// under ctx, the request's, valid for OfferValidity. With a remote key, offers that would take
// more fresh signatures than the ration has left are not signed (ErrOffersRationed).
func (o *OfferReceipt) Offers(ctx context.Context, resourceURL string, accepts []Requirements, now time.Time) (map[string]any, error) {
	offers := make([]SignedOffer, len(accepts))
	fresh := 0
	for i, r := range accepts {
		offers[i] = SignedOffer{Format: FormatJWS, AcceptIndex: i}
		if jws, ok := o.offers.get(offerTerms(resourceURL, r), now); ok {
			offers[i].Signature = jws
		} else {
			fresh++
		}
	}
	if fresh > 0 && o.key.IsRemote() && !o.offers.take(fresh, now) {
		return nil, ErrOffersRationed
	}
	// Kept with the second the payload names, so the margin is measured against what it says.
	validUntil := time.Unix(now.Add(OfferValidity).Unix(), 0)
	for i, r := range accepts {
		if offers[i].Signature != "" {
			continue
		}
		terms := offerTerms(resourceURL, r)
		signed := terms
		signed.ValidUntil = validUntil.Unix()
		jws, err := o.sign(ctx, signed)
		if err != nil {
			return nil, fmt.Errorf("sign offer %d: %w", i, err)
		}
		o.offers.put(terms, jws, validUntil)
		offers[i].Signature = jws
	}
	return map[string]any{"info": map[string]any{"offers": offers}, "schema": offerSchema}, nil
}

// offerTerms is the payload of the offer of r for resourceURL without its ValidUntil: what an
// offer signs besides its validity, and so the key its signature is kept under.
func offerTerms(resourceURL string, r Requirements) OfferPayload {
	return OfferPayload{Version: offerReceiptVersion, ResourceURL: resourceURL, Scheme: r.Scheme, Network: r.Network,
		Asset: r.Asset, PayTo: r.PayTo, Amount: r.Amount}
}

// Receipt is the offer-receipt extension of a successful settlement of a payment for
// resourceURL on network: payer, the settlement's transaction, issued now. The signature is
// made under ctx, the request's.
func (o *OfferReceipt) Receipt(ctx context.Context, resourceURL, network, payer, transaction string, now time.Time) (map[string]any, error) {
	jws, err := o.sign(ctx, ReceiptPayload{
		Version: offerReceiptVersion, Network: network, ResourceURL: resourceURL, Payer: payer,
		IssuedAt: now.Unix(), Transaction: transaction,
	})
	if err != nil {
		return nil, fmt.Errorf("sign receipt: %w", err)
	}
	return map[string]any{"info": map[string]any{"receipt": SignedReceipt{Format: FormatJWS, Signature: jws}}, "schema": receiptSchema}, nil
}

// sign is the JWS compact serialization (RFC 7515 §7.1) of payload: the protected header
// {"alg":"EdDSA","kid":...} as JSON.stringify writes it, the payload in its RFC 8785 form (the
// extension's canonical form), each base64url without padding, and the Ed25519 signature of
// "header.payload", made under ctx.
func (o *OfferReceipt) sign(ctx context.Context, payload any) (string, error) {
	header, err := EncodeJSON(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}{AlgEdDSA, o.kid})
	if err != nil {
		return "", err
	}
	raw, err := EncodeJSON(payload)
	if err != nil {
		return "", err
	}
	canon, err := receipt.Canonicalize(raw)
	if err != nil {
		return "", err
	}
	return compactJWS(header, canon, o.key.WithContext(ctx))
}

// compactJWS is the JWS compact serialization of payload under the protected header, signed by
// key with Ed25519: base64url(header) "." base64url(payload) "." base64url(signature), the
// signature over the first two parts (RFC 7515 §5.1, RFC 8037 §3.1).
func compactJWS(header, payload []byte, key receipt.Key) (string, error) {
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sig, err := key.Sign([]byte(input))
	if err != nil {
		return "", err
	}
	if len(sig) != ed25519.SignatureSize {
		return "", fmt.Errorf("the signer gave %d bytes, not an Ed25519 signature", len(sig))
	}
	return input + "." + enc.EncodeToString(sig), nil
}

// offerSchema and receiptSchema are the JSON Schemas of the extension's info, as
// @x402/extensions declares them, encoded once (with EncodeJSON, as header parts encoded ahead of
// time must be): every 402 answer carries the offer schema.
var (
	offerSchema   = mustEncodeJSON(offerSchemaValue)
	receiptSchema = mustEncodeJSON(receiptSchemaValue)
)

// mustEncodeJSON is EncodeJSON of a constant document, which cannot fail.
func mustEncodeJSON(v any) json.RawMessage {
	b, err := EncodeJSON(v)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	offerSchemaValue = map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"properties": map[string]any{
			"offers": map[string]any{
				"type": "array",
				"items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"format":      map[string]any{"type": "string"},
						"acceptIndex": map[string]any{"type": "integer"},
						"signature":   map[string]any{"type": "string"},
					},
					"required": []any{"format", "signature"},
				},
			},
		},
		"required": []any{"offers"},
	}
	receiptSchemaValue = map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"properties": map[string]any{
			"receipt": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"format":    map[string]any{"type": "string"},
					"signature": map[string]any{"type": "string"},
				},
				"required": []any{"format", "signature"},
			},
		},
		"required": []any{"receipt"},
	}
)

// VerifyJWS checks an offer's or receipt's compact JWS against pub, the key its kid names
// (DIDDocument, or the agent card, lists it under the key version), and returns its header and
// payload. Only EdDSA is accepted: a JWS naming another algorithm is refused, never verified
// another way.
func VerifyJWS(jws string, pub ed25519.PublicKey) (header OfferReceiptHeader, payload []byte, err error) {
	h, p, ok := strings.Cut(jws, ".")
	p, s, ok2 := strings.Cut(p, ".")
	if !ok || !ok2 || strings.Contains(s, ".") {
		return header, nil, errors.New("jws: not three parts")
	}
	dec := base64.RawURLEncoding.Strict()
	rawHeader, err := dec.DecodeString(h)
	if err != nil {
		return header, nil, errors.New("jws: the header is not base64url")
	}
	if err := decodeObject(rawHeader, &header); err != nil || header.Alg != AlgEdDSA {
		return header, nil, errors.New("jws: the header is not {alg: EdDSA, kid}")
	}
	if payload, err = dec.DecodeString(p); err != nil {
		return header, nil, errors.New("jws: the payload is not base64url")
	}
	sig, err := dec.DecodeString(s)
	if err != nil || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, []byte(h+"."+p), sig) {
		return header, nil, errors.New("jws: the signature does not verify")
	}
	return header, payload, nil
}

// OfferReceiptHeader is the protected header of an offer's or receipt's JWS.
type OfferReceiptHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}
