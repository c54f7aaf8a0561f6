// Package config reads the service's configuration from the environment, once, into one typed
// value. Every variable has a documented default; an invalid value fails start-up with a message
// naming the variable (and never its value, which may be a secret).
package config

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// PreviousKey is a public key the service signed with before the current one.
type PreviousKey struct {
	KeyVersion string `json:"keyVersion"`
	PublicKey  string `json:"publicKey"`
}

// Config is the whole configuration.
type Config struct {
	BaseURL          string        // VERIFIER_BASE_URL: public base URL named in receipts
	Store            string        // VERIFIER_STORE: "bolt" or "dynamodb"
	DataDir          string        // VERIFIER_DATA_DIR: the bolt file and the generated dev key
	Table            string        // VERIFIER_TABLE: the DynamoDB table
	SigningKey       string        // VERIFIER_SIGNING_KEY: file:<path> | secretsmanager:<id> | kms:<b64> | kms-sign:<key id>
	DefaultKey       bool          // VERIFIER_SIGNING_KEY was unset: the key file in the data directory
	KeyVersion       string        // VERIFIER_KEY_VERSION: the current key's version label
	PreviousKeys     []PreviousKey // VERIFIER_PREVIOUS_KEYS: JSON list of earlier public keys
	LogKey           string        // VERIFIER_LOG_KEY: the receipt log's key, from the same sources
	DefaultLogKey    bool          // VERIFIER_LOG_KEY was unset: the log key file in the data directory
	LogKeyVersion    string        // VERIFIER_LOG_KEY_VERSION: the log key's version label
	RecordDays       int           // VERIFIER_RECORD_DAYS: how long a stored receipt record is kept
	FreeCallsPerDay  int           // VERIFIER_FREE_CALLS_PER_DAY
	FreeMaxBody      int64         // VERIFIER_FREE_MAX_BODY: largest body served free
	MaxBody          int64         // VERIFIER_MAX_BODY: absolute body limit (413 beyond)
	TrustedProxyHops int           // VERIFIER_TRUSTED_PROXY_HOPS
	PriceVerify      string        // VERIFIER_PRICE_VERIFY: USD per paid verification
	PriceScore       string        // VERIFIER_PRICE_SCORE: USD per paid score lookup
	X402             x402.Config   // X402_*: facilitator and payees; no payee means free-only
}

// Variable describes one environment variable for the README and error messages.
type Variable struct {
	Name, Default, Meaning string
}

// Variables lists every variable the service reads, with its default.
var Variables = []Variable{
	{"VERIFIER_BASE_URL", "http://127.0.0.1:8080", "public base URL written into receipts (public_key_url, mcp)"},
	{"VERIFIER_STORE", "bolt", "bolt (embedded file: the local server only) or dynamodb (the Lambda functions)"},
	{"VERIFIER_DATA_DIR", ".data", "directory of the bolt file and of the generated dev key"},
	{"VERIFIER_TABLE", "", "DynamoDB table (required with VERIFIER_STORE=dynamodb)"},
	{"VERIFIER_SIGNING_KEY", "file:<data dir>/signing-key.json", "file:<path>, secretsmanager:<arn or name>, kms-sign:<KMS key id or ARN> (an Ed25519 key that signs in KMS) or kms:<base64 ciphertext of the seed>; the local server generates a key only at the default path"},
	{"VERIFIER_KEY_VERSION", "", "version label of the current key (required for secretsmanager:, kms: and kms-sign:; a key file must hold this version when it is set)"},
	{"VERIFIER_PREVIOUS_KEYS", "[]", `JSON list of {"keyVersion","publicKey"} signed with before`},
	{"VERIFIER_LOG_KEY", "file:<data dir>/log-key.json", "the receipt log's Ed25519 key (SPEC §15), from the same kinds of source as VERIFIER_SIGNING_KEY; the local server generates one only at the default path"},
	{"VERIFIER_LOG_KEY_VERSION", "", "version label of the log key (required for secretsmanager:, kms: and kms-sign:)"},
	{"VERIFIER_RECORD_DAYS", "90", "days a stored receipt record (GET /verifications/{id}) is kept; the log's leaves, tiles and checkpoints never expire"},
	{"VERIFIER_FREE_CALLS_PER_DAY", "1000", "free verifications per client per UTC day"},
	{"VERIFIER_FREE_MAX_BODY", "65536", "largest body served free, in bytes"},
	{"VERIFIER_MAX_BODY", "1048576", "absolute body limit in bytes (413 beyond), at most 16777216; on AWS Lambda's 6 MB payload limit binds first"},
	{"VERIFIER_TRUSTED_PROXY_HOPS", "0", "how many X-Forwarded-For hops to trust (0: use the peer address)"},
	{"VERIFIER_PRICE_VERIFY", "0.02", "USD per paid verification"},
	{"VERIFIER_PRICE_SCORE", "0.01", "USD per paid score lookup"},
	{"X402_FACILITATOR_URL", "", "x402 facilitator base URL (its /verify, /settle, /supported); required when a payee is set"},
	{"X402_FACILITATOR_AUTH_HEADER", "", "optional \"Name: value\" header sent on every facilitator call"},
	{"X402_FACILITATOR_AUTH_SECRET", "", "optional Secrets Manager secret (name or ARN) whose value is that header, read once at start-up (the Lambda functions use this one)"},
	{"X402_PAY_TO_EVM", "", "payee address on every EVM network offered (Base)"},
	{"X402_PAY_TO_SOLANA", "", "payee address on Solana"},
	{"X402_NETWORKS", "", "comma-separated CAIP-2 ids to offer; default: Base and Solana mainnet where a payee is set"},
}

// maxRecordDays bounds VERIFIER_RECORD_DAYS at ten years: a record's expiry must stay a sane
// epoch second, and a longer wish is better served by the log itself, which never expires.
const maxRecordDays = 3650

// MaxConfigurableBody is the most VERIFIER_MAX_BODY may allow. A verification in flight holds
// about twenty times its body in memory (the bytes, the decoded tree, the canonical forms), so 16
// MiB keeps one within a few hundred megabytes on the local server. On AWS a smaller ceiling
// binds first: API Gateway's HTTP API takes requests up to 10 MB and Lambda's invocation payload
// (the event that carries the body) is at most 6 MB, so a deployment there gains nothing past
// about 5 MiB.
const MaxConfigurableBody = 16 << 20

// Load reads the configuration through getenv (os.Getenv in production, a map in tests).
func Load(getenv func(string) string) (Config, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		for _, v := range Variables {
			if v.Name == name {
				return v.Default
			}
		}
		return ""
	}
	c := Config{
		BaseURL: strings.TrimRight(get("VERIFIER_BASE_URL"), "/"), Store: get("VERIFIER_STORE"),
		DataDir: get("VERIFIER_DATA_DIR"), Table: get("VERIFIER_TABLE"),
		SigningKey: strings.TrimSpace(getenv("VERIFIER_SIGNING_KEY")), KeyVersion: get("VERIFIER_KEY_VERSION"),
		PriceVerify: get("VERIFIER_PRICE_VERIFY"), PriceScore: get("VERIFIER_PRICE_SCORE"),
	}
	if err := checkBaseURL(c.BaseURL); err != nil {
		return Config{}, err
	}
	switch c.Store {
	case "bolt":
	case "dynamodb":
		if c.Table == "" {
			return Config{}, bad("VERIFIER_TABLE", "is required when VERIFIER_STORE is dynamodb")
		}
	default:
		return Config{}, bad("VERIFIER_STORE", "must be bolt or dynamodb")
	}
	if c.SigningKey == "" {
		c.SigningKey, c.DefaultKey = "file:"+strings.TrimRight(c.DataDir, "/")+"/signing-key.json", true
	}
	if err := checkKeySource("VERIFIER_SIGNING_KEY", "VERIFIER_KEY_VERSION", "signing key", c.SigningKey, c.KeyVersion); err != nil {
		return Config{}, err
	}
	c.LogKey, c.LogKeyVersion = strings.TrimSpace(getenv("VERIFIER_LOG_KEY")), get("VERIFIER_LOG_KEY_VERSION")
	if c.LogKey == "" {
		c.LogKey, c.DefaultLogKey = "file:"+strings.TrimRight(c.DataDir, "/")+"/log-key.json", true
	}
	if err := checkKeySource("VERIFIER_LOG_KEY", "VERIFIER_LOG_KEY_VERSION", "log key", c.LogKey, c.LogKeyVersion); err != nil {
		return Config{}, err
	}
	if err := json.Unmarshal([]byte(get("VERIFIER_PREVIOUS_KEYS")), &c.PreviousKeys); err != nil {
		return Config{}, bad("VERIFIER_PREVIOUS_KEYS", `must be a JSON list of {"keyVersion","publicKey"}`)
	}
	var err error
	if c.FreeCallsPerDay, err = intVar(get, "VERIFIER_FREE_CALLS_PER_DAY", 0, 1_000_000_000); err != nil {
		return Config{}, err
	}
	if c.RecordDays, err = intVar(get, "VERIFIER_RECORD_DAYS", 1, maxRecordDays); err != nil {
		return Config{}, err
	}
	if c.TrustedProxyHops, err = intVar(get, "VERIFIER_TRUSTED_PROXY_HOPS", 0, 16); err != nil {
		return Config{}, err
	}
	maxBody, err := intVar(get, "VERIFIER_MAX_BODY", 1024, MaxConfigurableBody)
	if err != nil {
		return Config{}, err
	}
	freeMax, err := intVar(get, "VERIFIER_FREE_MAX_BODY", 0, maxBody)
	if err != nil {
		return Config{}, err
	}
	c.MaxBody, c.FreeMaxBody = int64(maxBody), int64(freeMax)
	for _, p := range []struct{ name, v string }{{"VERIFIER_PRICE_VERIFY", c.PriceVerify}, {"VERIFIER_PRICE_SCORE", c.PriceScore}} {
		if _, err := x402.USDToAtomic(p.v); err != nil {
			return Config{}, bad(p.name, "must be a positive USD amount with at most 6 decimals, such as 0.02")
		}
	}
	if c.X402, err = x402.LoadConfig(getenv); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	// Without a payee nothing can be paid, so a zero allowance would refuse every call forever.
	if c.X402.FreeOnly() && c.FreeCallsPerDay == 0 {
		return Config{}, bad("VERIFIER_FREE_CALLS_PER_DAY", "must be at least 1 on a deployment that takes no payments (no payee is set)")
	}
	if c.X402.FreeOnly() && c.FreeMaxBody == 0 {
		return Config{}, bad("VERIFIER_FREE_MAX_BODY", "must be at least 1 on a deployment that takes no payments (no payee is set)")
	}
	return c, nil
}

// checkBaseURL refuses a base URL that cannot stand in signed documents as the service's
// address: not absolute http(s), credentials, a query or fragment, no host name, or an address
// that names no host (0.0.0.0, ::).
func checkBaseURL(base string) error {
	u, err := url.Parse(base)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "":
		return bad("VERIFIER_BASE_URL", "must be an absolute http(s) URL")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(base, "?") || strings.HasSuffix(base, "#"):
		return bad("VERIFIER_BASE_URL", "must have no user, query or fragment")
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		return bad("VERIFIER_BASE_URL", "must name a host clients can reach, not "+u.Hostname())
	}
	return nil
}

func intVar(get func(string) string, name string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(get(name))
	if err != nil || n < lo || n > hi {
		return 0, bad(name, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
	return n, nil
}

func bad(name, problem string) error {
	return fmt.Errorf("configuration: %s %s", name, problem)
}

// checkKeySource checks one key's source and version, the signing key's and the log key's alike
// (SPEC §15: the log key comes from the same kinds of source): a file, or a secretsmanager:,
// kms: or kms-sign: source, which needs a version since only a key file carries its own.
func checkKeySource(sourceVar, versionVar, what, source, version string) error {
	switch {
	case strings.HasPrefix(source, "file:"):
	case strings.HasPrefix(source, "secretsmanager:"), strings.HasPrefix(source, "kms:"), strings.HasPrefix(source, "kms-sign:"):
		if version == "" {
			return bad(versionVar, "is required with a secretsmanager:, kms: or kms-sign: "+what)
		}
	default:
		return bad(sourceVar, "must start with file:, secretsmanager:, kms: or kms-sign:")
	}
	return nil
}
