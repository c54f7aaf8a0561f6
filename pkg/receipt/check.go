package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gowebpki/jcs"
)

// The verifier in this file is deliberately independent of the signer: it parses with encoding/json
// and canonicalizes with gowebpki/jcs, never with Canonicalize, so that signer and verifier do not
// share a canonicalizer and a bug in one cannot hide behind the other.

// Errors a receipt check can wrap, so callers can tell a forged or altered receipt from a
// malformed one or one signed with a key they do not know (errors.Is).
var (
	ErrMalformed    = errors.New("malformed receipt")
	ErrAlgorithm    = errors.New("unsupported signature algorithm")
	ErrUnknownKey   = errors.New("unknown key version")
	ErrSignature    = errors.New("signature does not verify")
	ErrHashMismatch = errors.New("receipt hash does not match the request")
)

// attestationFields are the members an attestation must have, and the only ones it may have:
// anything else in it would ride along unsigned.
var attestationFields = []string{"algorithm", "key_version", "timestamp", "signature"}

// VerifyAttestation checks that signed, a response as received (bytes exactly as they arrived),
// carries a valid attestation under context made by one of keys. It rebuilds the signed document
// from scratch, {"context","algorithm","key_version","attested_at","response"} with the response
// minus "attestation", canonicalizes it with gowebpki/jcs and checks the Ed25519 signature. The
// document must be strict JSON (no duplicate names, valid UTF-8, numbers in double range): a
// document two parsers could read differently is refused rather than verified.
func VerifyAttestation(signed []byte, context string, keys []PublicKey) error {
	_, _, err := verifyAttestation(signed, context, keys)
	return err
}

// verifyAttestation is VerifyAttestation that also returns the parsed response (attestation
// removed) and the attestation's members, so that VerifyReceipt does not parse them twice.
func verifyAttestation(signed []byte, context string, keys []PublicKey) (map[string]any, map[string]string, error) {
	if context == "" {
		return nil, nil, errors.New("verify attestation: no context given")
	}
	doc, err := decodeObject("receipt", signed)
	if err != nil {
		return nil, nil, fmt.Errorf("verify attestation: %w", err)
	}
	raw, ok := doc[attestationName]
	if !ok {
		return nil, nil, fmt.Errorf("verify attestation: %w: no attestation member", ErrMalformed)
	}
	att, ok := raw.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("verify attestation: %w: attestation is not an object", ErrMalformed)
	}
	fields := make(map[string]string, len(attestationFields))
	for _, name := range attestationFields {
		s, ok := att[name].(string)
		if !ok {
			return nil, nil, fmt.Errorf("verify attestation: %w: attestation.%s is missing or not a string", ErrMalformed, name)
		}
		fields[name] = s
	}
	if len(att) != len(attestationFields) {
		return nil, nil, fmt.Errorf("verify attestation: %w: attestation has members other than %s", ErrMalformed, strings.Join(attestationFields, ", "))
	}
	if fields["algorithm"] != Algorithm {
		return nil, nil, fmt.Errorf("verify attestation: %w: %s, want %s", ErrAlgorithm, short(fields["algorithm"]), Algorithm)
	}
	version := fields["key_version"]
	pub, ok := lookup(keys, version)
	if !ok {
		return nil, nil, fmt.Errorf("verify attestation: %w: %s is not among the known keys (%s)", ErrUnknownKey, short(version), versions(keys))
	}
	if len(pub.Key) != ed25519.PublicKeySize {
		return nil, nil, fmt.Errorf("verify attestation: public key %s is malformed (%d bytes)", short(version), len(pub.Key))
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(fields["signature"])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, nil, fmt.Errorf("verify attestation: %w: attestation.signature is not the base64 of %d bytes", ErrMalformed, ed25519.SignatureSize)
	}

	delete(doc, attestationName)
	envelope, err := json.Marshal(map[string]any{
		"context":     context,
		"algorithm":   fields["algorithm"],
		"key_version": version,
		"attested_at": fields["timestamp"],
		"response":    doc,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("verify attestation: rebuild signed document: %w", err)
	}
	message, err := jcs.Transform(envelope)
	if err != nil {
		return nil, nil, fmt.Errorf("verify attestation: canonicalize signed document: %w", err)
	}
	if !ed25519.Verify(pub.Key, message, sig) {
		return nil, nil, fmt.Errorf("verify attestation: %w under key %s and context %s (the response was altered, or signed for another context)", ErrSignature, short(version), context)
	}
	return doc, fields, nil
}

// VerifyReceipt checks a /verify response: its attestation under ContextVerify, that it is
// consistent with itself (verified_at equals attestation.timestamp, verify.key_version equals
// attestation.key_version, where present), and, when request is not nil, that output_hash,
// schema_hash and rules_hash (and request_hash, present in full detail only) are the hashes of
// request as RequestHashes computes them. It is what `verifier receipt verify` and a buyer run.
func VerifyReceipt(signed []byte, keys []PublicKey, request []byte) error {
	doc, att, err := verifyAttestation(signed, ContextVerify, keys)
	if err != nil {
		return err
	}
	if v, ok := doc["verified_at"]; ok && v != att["timestamp"] {
		return fmt.Errorf("verify receipt: %w: verified_at differs from attestation.timestamp", ErrMalformed)
	}
	if v, ok := doc["verify"].(map[string]any); ok {
		if kv, ok := v["key_version"]; ok && kv != att["key_version"] {
			return fmt.Errorf("verify receipt: %w: verify.key_version differs from attestation.key_version", ErrMalformed)
		}
	}
	if request == nil {
		return nil
	}

	want, err := RequestHashes(request)
	if err != nil {
		return fmt.Errorf("verify receipt: %w", err)
	}
	checks := []struct {
		name     string
		want     string
		required bool
	}{
		{"output_hash", want.Output, true},
		{"schema_hash", want.Schema, true},
		{"rules_hash", want.Rules, true},
		{"request_hash", want.Request, false},
	}
	for _, c := range checks {
		v, present := doc[c.name]
		if !present {
			if c.required {
				return fmt.Errorf("verify receipt: %w: %s is missing", ErrMalformed, c.name)
			}
			continue
		}
		if got, ok := v.(string); !ok || got != c.want {
			return fmt.Errorf("verify receipt: %w: %s is not the hash of the request's data (recomputed %s)", ErrHashMismatch, c.name, c.want)
		}
	}
	return nil
}

// ruleDefaults and boundDefaults are what request_hash fills in for a rule or bound member that was
// left out (SPEC §5), so that spelling out a default does not change the hash.
var (
	ruleDefaults = map[string]json.RawMessage{
		"equals_field": json.RawMessage("null"),
		"equals":       json.RawMessage("null"),
		"other_field":  json.RawMessage("null"),
		"value":        json.RawMessage("null"),
		"in_field":     json.RawMessage("null"),
		"values":       json.RawMessage("null"),
		"tolerance":    json.RawMessage("1e-9"),
		"if_present":   json.RawMessage("false"),
	}
	boundDefaults = map[string]json.RawMessage{
		"min":        json.RawMessage("null"),
		"max":        json.RawMessage("null"),
		"if_present": json.RawMessage("false"),
	}
	jsonNull  = json.RawMessage("null")
	jsonFalse = json.RawMessage("false")
)

// RequestHashes computes the four receipt hashes of a /verify request body, independently of the
// engine (encoding/json and gowebpki/jcs): output_hash over submitted_output, schema_hash over
// expected_schema, rules_hash over {"bounds": as sent or null, "rules": as sent or null}, and
// request_hash over the eight hashed fields with every default filled in (SPEC §5). It is the
// reference the engine is tested against and what a receipt verifier recomputes.
func RequestHashes(requestBody []byte) (Hashes, error) {
	f, err := requestForms(requestBody)
	if err != nil {
		return Hashes{}, err
	}
	return Hashes{Output: Digest(f.output), Schema: Digest(f.schema), Rules: Digest(f.rules), Request: Digest(f.request)}, nil
}

// canonicalForms are the exact bytes behind the four hashes, kept apart so tests can compare them
// with the seed's published canonical forms.
type canonicalForms struct{ output, schema, rules, request []byte }

// requestForms builds the canonical forms of RequestHashes.
func requestForms(requestBody []byte) (canonicalForms, error) {
	var f canonicalForms
	if _, err := decodeObject("request", requestBody); err != nil {
		return f, fmt.Errorf("request hashes: %w", err)
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(requestBody, &req); err != nil {
		return f, fmt.Errorf("request hashes: %w", err)
	}
	for _, name := range []string{"task_id", "expected_schema", "submitted_output"} {
		if _, ok := req[name]; !ok {
			return f, fmt.Errorf("request hashes: %s is missing", name)
		}
	}
	orDefault := func(name string, def json.RawMessage) json.RawMessage {
		if v, ok := req[name]; ok {
			return v
		}
		return def
	}

	var err error
	if f.output, err = jcsForm(req["submitted_output"]); err != nil {
		return f, fmt.Errorf("request hashes: submitted_output: %w", err)
	}
	if f.schema, err = jcsForm(req["expected_schema"]); err != nil {
		return f, fmt.Errorf("request hashes: expected_schema: %w", err)
	}
	if f.rules, err = jcsForm(map[string]json.RawMessage{
		"bounds": orDefault("bounds", jsonNull),
		"rules":  orDefault("rules", jsonNull),
	}); err != nil {
		return f, fmt.Errorf("request hashes: rules: %w", err)
	}

	bounds, err := filledBounds(req["bounds"])
	if err != nil {
		return f, fmt.Errorf("request hashes: %w", err)
	}
	rules, err := filledRules(req["rules"])
	if err != nil {
		return f, fmt.Errorf("request hashes: %w", err)
	}
	if f.request, err = jcsForm(map[string]any{
		"task_id":              req["task_id"],
		"agent_id":             orDefault("agent_id", jsonNull),
		"expected_schema":      req["expected_schema"],
		"submitted_output":     req["submitted_output"],
		"strict_content_check": orDefault("strict_content_check", jsonFalse),
		"bounds":               bounds,
		"rules":                rules,
		"enforce_rules":        orDefault("enforce_rules", jsonFalse),
	}); err != nil {
		return f, fmt.Errorf("request hashes: request: %w", err)
	}
	return f, nil
}

// filledBounds is bounds with each bound's defaults filled in, or nil (hashed as null) when bounds
// is absent, null or empty.
func filledBounds(raw json.RawMessage) (map[string]map[string]json.RawMessage, error) {
	var bounds map[string]map[string]json.RawMessage
	if raw != nil {
		if err := json.Unmarshal(raw, &bounds); err != nil {
			return nil, errors.New("bounds is not an object of objects")
		}
	}
	if len(bounds) == 0 {
		return nil, nil
	}
	for path, b := range bounds {
		if b == nil {
			return nil, fmt.Errorf("bounds[%s] is not an object", short(path))
		}
		fillDefaults(b, boundDefaults)
	}
	return bounds, nil
}

// filledRules is rules with each rule's defaults filled in, or nil (hashed as null) when rules is
// absent, null or empty.
func filledRules(raw json.RawMessage) ([]map[string]json.RawMessage, error) {
	var rules []map[string]json.RawMessage
	if raw != nil {
		if err := json.Unmarshal(raw, &rules); err != nil {
			return nil, errors.New("rules is not an array of objects")
		}
	}
	if len(rules) == 0 {
		return nil, nil
	}
	for i, r := range rules {
		if r == nil {
			return nil, fmt.Errorf("rules[%d] is not an object", i)
		}
		fillDefaults(r, ruleDefaults)
	}
	return rules, nil
}

// fillDefaults adds each default member m lacks; a member that was sent, even as null, stays.
func fillDefaults(m, defaults map[string]json.RawMessage) {
	for k, v := range defaults {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
}

// jcsForm is the gowebpki/jcs canonical form of v as encoding/json marshals it.
func jcsForm(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// decodeObject parses doc as one JSON object with encoding/json (numbers kept as literals). The
// gowebpki/jcs pass first refuses what encoding/json would quietly accept: duplicate names (it keeps
// the last), invalid UTF-8 (it substitutes U+FFFD), lone surrogates and out-of-range numbers.
func decodeObject(what string, doc []byte) (map[string]any, error) {
	if _, err := jcs.Transform(doc); err != nil {
		return nil, fmt.Errorf("%w: %s is not strict JSON: %v", ErrMalformed, what, err)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: %s is not a JSON object", ErrMalformed, what)
	}
	return m, nil
}

// CardKeys extracts the published public keys from an A2A agent card: the params.publicKeys of the
// capabilities.extensions entry whose uri starts with CardExtensionPrefix. Keys of algorithms other
// than Ed25519 are skipped (a newer card may add some); a version listed twice with two different
// keys, or a card with no Ed25519 key, is an error.
func CardKeys(card []byte) ([]PublicKey, error) {
	var c struct {
		Capabilities struct {
			Extensions []struct {
				URI    string `json:"uri"`
				Params struct {
					PublicKeys []struct {
						KeyVersion string `json:"keyVersion"`
						Algorithm  string `json:"algorithm"`
						PublicKey  string `json:"publicKey"`
					} `json:"publicKeys"`
				} `json:"params"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, fmt.Errorf("agent card: %w", err)
	}
	var out []PublicKey
	found := false
	for _, ext := range c.Capabilities.Extensions {
		if !strings.HasPrefix(ext.URI, CardExtensionPrefix) {
			continue
		}
		found = true
		for i, k := range ext.Params.PublicKeys {
			if k.Algorithm != Algorithm {
				continue
			}
			p, err := ParsePublicKey(k.KeyVersion, k.PublicKey)
			if err != nil {
				return nil, fmt.Errorf("agent card: publicKeys[%d]: %w", i, err)
			}
			if prev, ok := lookup(out, p.Version); ok {
				if !prev.Key.Equal(p.Key) {
					return nil, fmt.Errorf("agent card: key version %s is listed with two different keys", short(p.Version))
				}
				continue
			}
			out = append(out, p)
		}
	}
	if !found {
		return nil, fmt.Errorf("agent card: no extension whose uri starts with %s", CardExtensionPrefix)
	}
	if len(out) == 0 {
		return nil, errors.New("agent card: the attestation extension lists no Ed25519 key")
	}
	return out, nil
}

// CardExtensionPrefix starts the uri of the agent card extension that publishes the attestation
// keys; the suffix carries a version the verifier does not need to know.
const CardExtensionPrefix = "urn:json-schema-verifier:extension:attestation:"

// short quotes a caller-controlled string for an error message, cut so that a hostile document
// cannot flood a log line.
func short(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// versions lists key versions for an error message.
func versions(keys []PublicKey) string {
	vs := make([]string, 0, len(keys))
	for _, k := range keys {
		vs = append(vs, k.Version)
	}
	sort.Strings(vs)
	if len(vs) == 0 {
		return "none"
	}
	return strings.Join(vs, ", ")
}
