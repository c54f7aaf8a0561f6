package x402

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// It settles testnets only; a mainnet deployment names its own facilitator.

// Config is the payment configuration, read once at start-up. A zero Config (no payee) means the
// deployment is free-only (SPEC §8.6).
type Config struct {
	FacilitatorURL string   // X402_FACILITATOR_URL
	AuthHeader     string   // X402_FACILITATOR_AUTH_HEADER, optional, "Name: value" sent on every facilitator call
	AuthSecret     string   // X402_FACILITATOR_AUTH_SECRET, optional, the Secrets Manager secret holding AuthHeader
	PayToEVM       string   // X402_PAY_TO_EVM (0x + 40 hex; stored in EIP-55 checksummed form)
	PayToSolana    string   // X402_PAY_TO_SOLANA (base58 of a 32-byte key)
	Networks       []string // X402_NETWORKS CAIP-2 ids; empty = Base mainnet and Solana mainnet where a payee is set
}

// Variable names, for error messages and documentation.
const (
	EnvFacilitatorURL = "X402_FACILITATOR_URL"
	EnvAuthHeader     = "X402_FACILITATOR_AUTH_HEADER"
	EnvAuthSecret     = "X402_FACILITATOR_AUTH_SECRET"
	EnvPayToEVM       = "X402_PAY_TO_EVM"
	EnvPayToSolana    = "X402_PAY_TO_SOLANA"
	EnvNetworks       = "X402_NETWORKS"
)

// LoadConfig reads and validates the X402_* variables through getenv (os.Getenv in production).
// Invalid values fail start-up rather than producing 402 answers nobody can pay. Errors name the
// variable and never repeat its value (the auth header is a secret, and an address with a typo is
// better shown by the operator's own tools).
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	c := Config{
		FacilitatorURL: get(EnvFacilitatorURL),
		AuthHeader:     get(EnvAuthHeader),
		AuthSecret:     get(EnvAuthSecret),
		PayToEVM:       get(EnvPayToEVM),
		PayToSolana:    get(EnvPayToSolana),
	}
	// There is no default facilitator: public ones serve different networks (testnet or
	// mainnet), and a wrong pairing would answer 402s that nobody can pay.
	c.FacilitatorURL = strings.TrimRight(c.FacilitatorURL, "/")
	if c.FacilitatorURL != "" {
		if err := checkFacilitatorURL(c.FacilitatorURL); err != nil {
			return Config{}, fmt.Errorf("%s %w", EnvFacilitatorURL, err)
		}
	}
	if c.AuthHeader != "" {
		if _, _, err := parseAuthHeader(c.AuthHeader); err != nil {
			return Config{}, fmt.Errorf("%s %w", EnvAuthHeader, err)
		}
		if c.AuthSecret != "" {
			return Config{}, fmt.Errorf("%s and %s are both set; set one", EnvAuthHeader, EnvAuthSecret)
		}
	}
	if c.PayToEVM != "" {
		a, err := checksumEVMAddress(c.PayToEVM)
		if err != nil {
			return Config{}, fmt.Errorf("%s %w", EnvPayToEVM, err)
		}
		c.PayToEVM = a
	}
	if c.PayToSolana != "" {
		if err := checkSolanaAddress(c.PayToSolana); err != nil {
			return Config{}, fmt.Errorf("%s %w", EnvPayToSolana, err)
		}
	}
	nets, err := c.networks(get(EnvNetworks))
	if err != nil {
		return Config{}, err
	}
	c.Networks = nets
	if c.FacilitatorURL == "" && (c.PayToEVM != "" || c.PayToSolana != "") {
		return Config{}, fmt.Errorf("%s is required when a payee is set", EnvFacilitatorURL)
	}
	return c, nil
}

// WithAuthHeaderFromSecret is c with the auth header read from the secret AuthSecret names
// (its value, "Name: value"), checked as X402_FACILITATOR_AUTH_HEADER is. The deployment keeps
// the header out of the function's environment, where anyone who may read the function's
// configuration would see it. Errors never contain the value.
func (c Config) WithAuthHeaderFromSecret(value string) (Config, error) {
	value = strings.TrimSpace(value)
	if _, _, err := parseAuthHeader(value); err != nil {
		return Config{}, fmt.Errorf("the secret %s names %w", EnvAuthSecret, err)
	}
	c.AuthHeader = value
	return c, nil
}

// networks resolves X402_NETWORKS: the listed ids, each known and with a payee for its family,
// or by default Base and Solana mainnet for each payee that is set.
func (c Config) networks(list string) ([]string, error) {
	if list == "" {
		var nets []string
		if c.PayToEVM != "" {
			nets = append(nets, NetworkBase)
		}
		if c.PayToSolana != "" {
			nets = append(nets, NetworkSolana)
		}
		return nets, nil
	}
	var nets []string
	seen := map[string]bool{}
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			return nil, fmt.Errorf("%s has an empty entry; list CAIP-2 ids separated by commas", EnvNetworks)
		}
		n, ok := lookupNetwork(id)
		if !ok {
			return nil, fmt.Errorf("%s names unknown network %q; known: %s", EnvNetworks, safeID(id), strings.Join(knownNetworkIDs(), ", "))
		}
		if seen[id] {
			return nil, fmt.Errorf("%s lists %s twice", EnvNetworks, id)
		}
		seen[id] = true
		switch {
		case n.family == familyEVM && c.PayToEVM == "":
			return nil, fmt.Errorf("%s offers %s but %s is not set", EnvNetworks, id, EnvPayToEVM)
		case n.family == familySolana && c.PayToSolana == "":
			return nil, fmt.Errorf("%s offers %s but %s is not set", EnvNetworks, id, EnvPayToSolana)
		}
		nets = append(nets, id)
	}
	return nets, nil
}

// FreeOnly tells whether no payee is configured at all, in which case the service takes no
// payments and answers 429 past the free allowance instead of an unpayable 402 (SPEC §8.6).
func (c Config) FreeOnly() bool {
	return c.PayToEVM == "" && c.PayToSolana == ""
}

func knownNetworkIDs() []string {
	ids := make([]string, len(knownNetworks))
	for i, n := range knownNetworks {
		ids[i] = n.id
	}
	return ids
}

// safeID keeps an operator-supplied network id printable and short in an error message.
func safeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			b.WriteString("...")
			break
		}
		if r < 0x20 || r > 0x7e {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checkFacilitatorURL accepts an absolute http(s) URL without credentials in it (credentials
// belong in X402_FACILITATOR_AUTH_HEADER, which is never logged).
func checkFacilitatorURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("is not a URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return errors.New("must be an http or https URL")
	}
	if u.Host == "" {
		return errors.New("has no host")
	}
	if u.User != nil {
		return errors.New("must not carry credentials; use " + EnvAuthHeader)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("must not have a query or fragment")
	}
	return nil
}

// parseAuthHeader splits "Name: value" into a valid HTTP header name and a non-empty value
// without line breaks. Its errors never contain the value.
func parseAuthHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || value == "" {
		return "", "", errors.New(`must be "Name: value"`)
	}
	for _, r := range name {
		if !isTokenChar(r) {
			return "", "", errors.New("has an invalid header name")
		}
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return "", "", errors.New("has a line break in its value")
	}
	return http.CanonicalHeaderKey(name), value, nil
}

func isTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// ChecksumAddress validates an EVM address (0x + 40 hex digits; mixed case must carry a valid
// EIP-55 checksum) and returns its EIP-55 form. Clients use it for the addresses they sign, so a
// payee with a broken checksum is refused before anything is signed for it.
func ChecksumAddress(s string) (string, error) { return checksumEVMAddress(s) }

// checksumEVMAddress validates 0x + 40 hex digits and returns the EIP-55 checksummed form. An
// address in one case (all lower or all upper) carries no checksum and is accepted; a mixed-case
// address must have a valid checksum, since a wrong one means a typo and payments to a stranger.
func checksumEVMAddress(s string) (string, error) {
	if len(s) != 42 || (s[:2] != "0x" && s[:2] != "0X") {
		return "", errors.New("must be 0x followed by 40 hex digits")
	}
	h := s[2:]
	if _, err := hex.DecodeString(h); err != nil {
		return "", errors.New("must be 0x followed by 40 hex digits")
	}
	sum := eip55(h)
	if h != strings.ToLower(h) && h != strings.ToUpper(h) && "0x"+h != sum {
		return "", errors.New("has an invalid EIP-55 checksum (mixed case that does not match); check the address")
	}
	return sum, nil
}

// eip55 is the checksummed form of 40 hex digits: each letter is upper case where the matching
// nibble of Keccak256(lower-case hex) is 8 or more.
func eip55(h string) string {
	lower := strings.ToLower(h)
	hash := Keccak256([]byte(lower))
	out := []byte("0x" + lower)
	for i := 0; i < 40; i++ {
		nibble := hash[i/2] >> 4
		if i%2 == 1 {
			nibble = hash[i/2] & 0x0f
		}
		if c := out[2+i]; c >= 'a' && c <= 'f' && nibble >= 8 {
			out[2+i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

// checkSolanaAddress validates a Solana public key: base58 of exactly 32 bytes (32 to 44
// characters).
func checkSolanaAddress(s string) error {
	if len(s) < 32 || len(s) > 44 {
		return errors.New("must be a base58 Solana address of 32 to 44 characters")
	}
	b, err := base58Decode(s)
	if err != nil {
		return errors.New("is not valid base58")
	}
	if len(b) != 32 {
		return errors.New("does not decode to a 32-byte Solana public key")
	}
	return nil
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58Decode decodes Bitcoin-alphabet base58 (Solana's). Inputs are short (addresses), so the
// quadratic big-number loop is fine.
func base58Decode(s string) ([]byte, error) {
	var digits [256]int8
	for i := range digits {
		digits[i] = -1
	}
	for i := 0; i < len(base58Alphabet); i++ {
		digits[base58Alphabet[i]] = int8(i)
	}
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	var num []byte // big-endian
	for i := 0; i < len(s); i++ {
		d := digits[s[i]]
		if d < 0 {
			return nil, errors.New("invalid base58 character")
		}
		carry := int(d)
		for j := len(num) - 1; j >= 0; j-- {
			carry += int(num[j]) * 58
			num[j] = byte(carry)
			carry >>= 8
		}
		for carry > 0 {
			num = append([]byte{byte(carry)}, num...)
			carry >>= 8
		}
	}
	out := make([]byte, zeros, zeros+len(num))
	// Strip leading zero bytes of num that came from the '1' prefix digits (they add nothing).
	i := 0
	for i < len(num) && num[i] == 0 {
		i++
	}
	return append(out, num[i:]...), nil
}
