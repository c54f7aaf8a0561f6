package receipt

import "time"

// VerifyInfo is the "verify" block of every signed answer (a verification, a trust score, a
// reputation history): where to find the key and how the receipt is made. It lives with the
// receipts, not with the engine, so that the routes that sign without verifying anything (score,
// reputation) need not link the engine.
type VerifyInfo struct {
	PublicKeyURL     string `json:"public_key_url"`
	KeyVersion       string `json:"key_version"`
	Canonicalization string `json:"canonicalization"`
	HashAlgorithm    string `json:"hash_algorithm"`
	Service          string `json:"service"`
	MCP              string `json:"mcp"`
}

// NewVerifyInfo builds the verify block for a deployment at baseURL signing with keyVersion.
func NewVerifyInfo(baseURL, keyVersion string) VerifyInfo {
	return VerifyInfo{
		PublicKeyURL: baseURL + "/.well-known/agent-card.json", KeyVersion: keyVersion,
		Canonicalization: "RFC 8785 (JCS)", HashAlgorithm: "SHA-256",
		Service: "Agent Output Verifier", MCP: baseURL + "/mcp",
	}
}

// VerifyInfoSchemaJSON is the JSON Schema of the verify block of signed answers (VerifyInfo): the
// one description the answers' schemas and the OpenAPI document share, as they share
// AttestationSchemaJSON.
const VerifyInfoSchemaJSON = `{
  "type": "object",
  "description": "Where the public key is and how the receipt is made.",
  "required": ["public_key_url", "key_version", "canonicalization", "hash_algorithm", "service", "mcp"],
  "properties": {
    "public_key_url": {"type": "string"}, "key_version": {"type": "string"},
    "canonicalization": {"type": "string", "const": "RFC 8785 (JCS)"}, "hash_algorithm": {"type": "string", "const": "SHA-256"},
    "service": {"type": "string"}, "mcp": {"type": "string"}
  }
}`

// FormatTime renders t as verified_at, computed_at and the attestation's timestamp are written:
// RFC 3339 UTC with microseconds and "+00:00".
func FormatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		var buf [40]byte
		return string(t.AppendFormat(buf[:0], "2006-01-02T15:04:05.000000+00:00"))
	}
	// Written digit by digit: interpreting the layout was a tenth of shaping a report. The
	// test holds this to the layout for years 0 to 9999; others take the layout.
	hour, minute, second := t.Clock()
	buf := [32]byte{4: '-', 7: '-', 10: 'T', 13: ':', 16: ':', 19: '.', 26: '+', 27: '0', 28: '0', 29: ':', 30: '0', 31: '0'}
	putDigits(buf[0:4], year)
	putDigits(buf[5:7], int(month))
	putDigits(buf[8:10], day)
	putDigits(buf[11:13], hour)
	putDigits(buf[14:16], minute)
	putDigits(buf[17:19], second)
	putDigits(buf[20:26], t.Nanosecond()/1000)
	return string(buf[:])
}

// putDigits writes v, zero-padded, into all of dst.
func putDigits(dst []byte, v int) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + v%10)
		v /= 10
	}
}
