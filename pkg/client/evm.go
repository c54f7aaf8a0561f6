package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// EVMPayer pays x402 "exact" requirements on EVM networks the way @x402/evm's client does: it
// signs an EIP-3009 TransferWithAuthorization of exactly the amount to the payee, as EIP-712 typed
// data under the token's domain (the requirement's extra.name and extra.version, the chain id of
// the CAIP-2 network, the asset as verifying contract), with a secp256k1 key. The facilitator
// submits the authorization; the payer needs no gas and no chain access.
//
// Signatures are deterministic (RFC 6979) and low-S, and byte-equal to viem's signTypedData for
// the same input (testdata/eip712-vectors.json). The private key never leaves the value: it
// formats as its address only.
type EVMPayer struct {
	key     *secp256k1.PrivateKey
	address string // EIP-55

	now  func() time.Time // tests fix the clock
	rand io.Reader        // the source of authorization nonces
}

var _ Payer = (*EVMPayer)(nil)

// NewEVMPayer makes a payer from a hex private key (64 hex digits, 0x prefix optional), the form
// wallets and anvil print. A key outside the curve's range is an error.
func NewEVMPayer(hexKey string) (*EVMPayer, error) {
	s := strings.TrimSpace(hexKey)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != 32 {
		return nil, errors.New("evm payer: the private key must be 32 bytes of hex (64 digits, 0x prefix optional)")
	}
	var scalar secp256k1.ModNScalar
	overflow := scalar.SetByteSlice(raw)
	clear(raw)
	if overflow || scalar.IsZero() {
		return nil, errors.New("evm payer: the private key is outside the secp256k1 range")
	}
	key := secp256k1.NewPrivateKey(&scalar)
	scalar.Zero()
	pub := key.PubKey().SerializeUncompressed() // 0x04 || X || Y
	h := x402.Keccak256(pub[1:])
	addr, err := x402.ChecksumAddress("0x" + hex.EncodeToString(h[12:]))
	if err != nil {
		return nil, fmt.Errorf("evm payer: derive address: %w", err)
	}
	return &EVMPayer{key: key, address: addr, now: time.Now, rand: rand.Reader}, nil
}

// LoadEVMPayer reads a hex private key from a file. Like ssh with its keys, it refuses a file that
// others than its owner may read or write: a payment key is money.
func LoadEVMPayer(path string) (*EVMPayer, error) {
	b, err := readKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("evm payer: %w", err)
	}
	defer clear(b)
	p, err := NewEVMPayer(string(b))
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return p, nil
}

// readKeyFile reads a payment key file, refusing one that others than its owner may read or
// write, or that is larger than any key file. The caller clears the bytes when done.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s is accessible by others (mode %04o); chmod 600 it", path, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		clear(b)
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxKeyFileBytes {
		clear(b)
		return nil, fmt.Errorf("key file %s is too large to be a key", path)
	}
	return b, nil
}

// EVMPayerFromEnv reads a hex private key from the environment variable name.
func EVMPayerFromEnv(name string) (*EVMPayer, error) {
	v, ok := os.LookupEnv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("evm payer: environment variable %s is not set", name)
	}
	p, err := NewEVMPayer(v)
	if err != nil {
		return nil, fmt.Errorf("%w (variable %s)", err, name)
	}
	return p, nil
}

// Address is the payer's account, EIP-55 checksummed: the "from" of every authorization.
func (p *EVMPayer) Address() string { return p.address }

// String shows the address only, never the key.
func (p *EVMPayer) String() string { return "EVM payer " + p.address }

// GoString hides the key from %#v.
func (p *EVMPayer) GoString() string { return "client.EVMPayer{" + p.address + "}" }

// Format hides the key from every fmt verb.
func (p *EVMPayer) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(p.GoString()))
		return
	}
	_, _ = f.Write([]byte(p.String()))
}

// Supports tells whether r is an exact payment on an eip155 network with the EIP-712 domain in
// its extra and addresses that parse: what Sign can turn into an EIP-3009 authorization. A
// requirement asking for another transfer method (extra.assetTransferMethod other than eip3009,
// such as Permit2) is not supported.
func (p *EVMPayer) Supports(r x402.Requirements) bool {
	_, err := p.authorization(r, [32]byte{}, 0)
	return err == nil
}

// Sign signs an EIP-3009 authorization paying r exactly and returns the x402 exact EVM payload:
// {"authorization":{from,to,value,validAfter,validBefore,nonce},"signature":"0x<r><s><v>"}. The
// nonce is 32 random bytes; the authorization is valid from now until now + r.MaxTimeoutSeconds
// (at most maxAuthorizationSeconds).
func (p *EVMPayer) Sign(ctx context.Context, r x402.Requirements) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var nonce [32]byte
	if _, err := io.ReadFull(p.rand, nonce[:]); err != nil {
		return nil, fmt.Errorf("evm payer: nonce: %w", err)
	}
	auth, err := p.authorization(r, nonce, p.now().Unix())
	if err != nil {
		return nil, err
	}
	sig, err := p.SignAuthorization(auth)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"authorization": map[string]any{
			"from":        auth.From,
			"to":          auth.To,
			"value":       auth.Value.String(),
			"validAfter":  auth.ValidAfter.String(),
			"validBefore": auth.ValidBefore.String(),
			"nonce":       "0x" + hex.EncodeToString(auth.Nonce[:]),
		},
		"signature": sig,
	}, nil
}

// authorization builds the typed data that paying r signs, at Unix time now.
func (p *EVMPayer) authorization(r x402.Requirements, nonce [32]byte, now int64) (TransferAuthorization, error) {
	fail := func(format string, args ...any) (TransferAuthorization, error) {
		return TransferAuthorization{}, fmt.Errorf("evm payer: "+format, args...)
	}
	if r.Scheme != x402.SchemeExact {
		return fail("scheme %s is not exact", short(r.Scheme))
	}
	chain, ok := strings.CutPrefix(r.Network, "eip155:")
	if !ok {
		return fail("network %s is not an eip155 network", short(r.Network))
	}
	chainID, ok := new(big.Int).SetString(chain, 10)
	if !ok || chainID.Sign() <= 0 || chain[0] == '0' || len(chain) > 20 {
		return fail("network %s has no valid chain id", short(r.Network))
	}
	if m, ok := r.Extra["assetTransferMethod"]; ok && m != "eip3009" {
		return fail("transfer method %s is not eip3009", short(fmt.Sprint(m)))
	}
	name, _ := r.Extra["name"].(string)
	version, _ := r.Extra["version"].(string)
	if name == "" || version == "" {
		return fail("extra.name and extra.version (the token's EIP-712 domain) are required")
	}
	token, err := x402.ChecksumAddress(r.Asset)
	if err != nil {
		return fail("asset: %v", err)
	}
	to, err := x402.ChecksumAddress(r.PayTo)
	if err != nil {
		return fail("payTo: %v", err)
	}
	value, err := uint256(r.Amount)
	if err != nil || value.Sign() == 0 {
		return fail("amount is not a positive whole number of atomic units")
	}
	timeout := int64(r.MaxTimeoutSeconds)
	if timeout <= 0 {
		return fail("maxTimeoutSeconds must be positive")
	}
	timeout = min(timeout, maxAuthorizationSeconds)
	return TransferAuthorization{
		TokenName: name, TokenVersion: version, ChainID: chainID, Token: token,
		From: p.address, To: to, Value: value,
		ValidAfter: big.NewInt(0), ValidBefore: big.NewInt(now + timeout), Nonce: nonce,
	}, nil
}

// SignAuthorization signs a TransferWithAuthorization with the payer's key and returns the
// signature as Ethereum writes it: 0x, then r, s (32 bytes each) and v (27 or 28). The
// authorization's From must be the payer's address.
func (p *EVMPayer) SignAuthorization(a TransferAuthorization) (string, error) {
	if !strings.EqualFold(a.From, p.address) {
		return "", errors.New("evm payer: the authorization is not from this payer's address")
	}
	digest, err := a.Digest()
	if err != nil {
		return "", err
	}
	// SignCompact gives <27 + recovery id><R><S> (uncompressed-key form), deterministic per RFC
	// 6979 and with a low S, which is what EIP-2 and the token's ecrecover expect.
	compact := ecdsa.SignCompact(p.key, digest[:], false)
	sig := make([]byte, 65)
	copy(sig, compact[1:])
	sig[64] = compact[0]
	return "0x" + hex.EncodeToString(sig), nil
}

// TransferAuthorization is an EIP-3009 TransferWithAuthorization message together with its
// token's EIP-712 domain: everything a signature covers.
type TransferAuthorization struct {
	// The EIP-712 domain: the token's name and version (x402's extra.name and extra.version),
	// the chain id and the token contract.
	TokenName, TokenVersion string
	ChainID                 *big.Int
	Token                   string
	// The message.
	From, To                       string
	Value, ValidAfter, ValidBefore *big.Int
	Nonce                          [32]byte
}

// EIP-712 type strings of the domain (the four fields tokens such as USDC use) and of EIP-3009's
// TransferWithAuthorization, exactly as their type hashes are defined.
const (
	domainType   = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
	transferType = "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
)

// DomainSeparator is hashStruct of the EIP-712 domain.
func (a TransferAuthorization) DomainSeparator() ([32]byte, error) {
	token, err := address(a.Token)
	if err != nil {
		return [32]byte{}, fmt.Errorf("eip-712 domain: verifyingContract: %w", err)
	}
	chain, err := word(a.ChainID)
	if err != nil {
		return [32]byte{}, fmt.Errorf("eip-712 domain: chainId: %w", err)
	}
	th := x402.Keccak256([]byte(domainType))
	nh := x402.Keccak256([]byte(a.TokenName))
	vh := x402.Keccak256([]byte(a.TokenVersion))
	return keccakConcat(th[:], nh[:], vh[:], chain, token), nil
}

// StructHash is hashStruct of the TransferWithAuthorization message.
func (a TransferAuthorization) StructHash() ([32]byte, error) {
	from, err := address(a.From)
	if err != nil {
		return [32]byte{}, fmt.Errorf("transfer authorization: from: %w", err)
	}
	to, err := address(a.To)
	if err != nil {
		return [32]byte{}, fmt.Errorf("transfer authorization: to: %w", err)
	}
	words := make([][]byte, 0, 3)
	for _, v := range []struct {
		name string
		n    *big.Int
	}{{"value", a.Value}, {"validAfter", a.ValidAfter}, {"validBefore", a.ValidBefore}} {
		w, err := word(v.n)
		if err != nil {
			return [32]byte{}, fmt.Errorf("transfer authorization: %s: %w", v.name, err)
		}
		words = append(words, w)
	}
	th := x402.Keccak256([]byte(transferType))
	return keccakConcat(th[:], from, to, words[0], words[1], words[2], a.Nonce[:]), nil
}

// Digest is the EIP-712 hash that is signed: keccak256(0x19 0x01 ‖ domainSeparator ‖ structHash).
func (a TransferAuthorization) Digest() ([32]byte, error) {
	ds, err := a.DomainSeparator()
	if err != nil {
		return [32]byte{}, err
	}
	sh, err := a.StructHash()
	if err != nil {
		return [32]byte{}, err
	}
	return keccakConcat([]byte{0x19, 0x01}, ds[:], sh[:]), nil
}

func keccakConcat(parts ...[]byte) [32]byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	buf := make([]byte, 0, n)
	for _, p := range parts {
		buf = append(buf, p...)
	}
	return x402.Keccak256(buf)
}

// two256 is 2^256, the bound of a uint256.
var two256 = new(big.Int).Lsh(big.NewInt(1), 256)

// word ABI-encodes a uint256 as 32 big-endian bytes.
func word(n *big.Int) ([]byte, error) {
	if n == nil || n.Sign() < 0 || n.Cmp(two256) >= 0 {
		return nil, errors.New("not a uint256")
	}
	return n.FillBytes(make([]byte, 32)), nil
}

// address ABI-encodes an address as one 32-byte word (12 zero bytes, then the 20 bytes).
func address(s string) ([]byte, error) {
	a, err := x402.ChecksumAddress(s)
	if err != nil {
		return nil, err
	}
	raw, _ := hex.DecodeString(a[2:])
	return append(make([]byte, 12, 32), raw...), nil
}

// uint256 parses a decimal atomic amount (digits only, as x402 writes amounts).
func uint256(s string) (*big.Int, error) {
	if s == "" || len(s) > 78 || strings.Trim(s, "0123456789") != "" {
		return nil, errors.New("not a decimal whole number")
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Cmp(two256) >= 0 {
		return nil, errors.New("not a uint256")
	}
	return n, nil
}
