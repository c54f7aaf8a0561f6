package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/oasisprotocol/curve25519-voi/curve"

	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// SolanaPayer pays x402 "exact" requirements on Solana the way @x402/svm's client does: it builds
// a version 0 transaction whose fee payer is the facilitator (the requirement's extra.feePayer),
// holding SetComputeUnitLimit, SetComputeUnitPrice, a transferChecked of exactly the amount of
// USDC from the payer's associated token account to the payee's, and a memo with a random nonce
// that makes every payment distinct, and signs it as the transfer's authority. The facilitator
// adds its own signature and submits it, so the payer needs no SOL. It reads a recent blockhash
// from a Solana JSON-RPC endpoint, its only chain access.
//
// The private key never leaves the value: it formats as its address only.
type SolanaPayer struct {
	key     ed25519.PrivateKey
	address string // base58

	rpc  string       // the JSON-RPC endpoint
	http *http.Client // for the RPC
	rand io.Reader    // the source of memo nonces
}

var _ Payer = (*SolanaPayer)(nil)

// What the transactions hold, as @x402/svm's client (2.27) builds them; its facilitator checks
// the compute unit price against its own maximum (5 lamports per unit).
const (
	solanaComputeUnitLimit = 20_000
	solanaComputeUnitPrice = 1 // micro-lamports per compute unit
	solanaMemoNonceBytes   = 16
	// solanaRPCTimeout bounds the blockhash read when the context has no deadline.
	solanaRPCTimeout = 10 * time.Second
	// maxRPCAnswer bounds the RPC answer read.
	maxRPCAnswer = 64 << 10
)

// Programs the transaction calls, and the associated token account program that derives the
// token accounts' addresses.
var (
	solanaTokenProgram         = mustSolanaKey("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
	solanaAssociatedToken      = mustSolanaKey("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
	solanaComputeBudgetProgram = mustSolanaKey("ComputeBudget111111111111111111111111111111")
	solanaMemoProgram          = mustSolanaKey("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")
)

func mustSolanaKey(address string) [32]byte {
	k, err := x402.SolanaPublicKey(address)
	if err != nil {
		panic(err)
	}
	return k
}

// NewSolanaPayer makes a payer from a private key and the JSON-RPC URL of the Solana cluster the
// payments are for. The key is either the 32-byte Ed25519 seed in hex (64 digits) or a
// solana-keygen keypair file's content, a JSON array of the 64 bytes seed and public key (which
// must agree).
func NewSolanaPayer(key, rpcURL string) (*SolanaPayer, error) {
	seed, err := solanaSeed(strings.TrimSpace(key))
	if err != nil {
		return nil, err
	}
	defer clear(seed)
	if rpcURL == "" {
		return nil, errors.New("solana payer: the cluster's JSON-RPC URL is required (for a recent blockhash)")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	var pub [32]byte
	copy(pub[:], priv[32:])
	return &SolanaPayer{key: priv, address: x402.SolanaAddress(pub), rpc: rpcURL, http: &http.Client{}, rand: rand.Reader}, nil
}

// solanaSeed reads the two key forms NewSolanaPayer takes.
func solanaSeed(s string) ([]byte, error) {
	if strings.HasPrefix(s, "[") {
		var b []byte
		var nums []int
		defer func() { clear(nums) }()
		if err := json.Unmarshal([]byte(s), &nums); err != nil || len(nums) != ed25519.PrivateKeySize {
			return nil, errors.New("solana payer: a keypair file holds a JSON array of 64 bytes")
		}
		for _, n := range nums {
			if n < 0 || n > 255 {
				return nil, errors.New("solana payer: a keypair file holds a JSON array of 64 bytes")
			}
			b = append(b, byte(n))
		}
		defer clear(b)
		pub := ed25519.NewKeyFromSeed(b[:32]).Public().(ed25519.PublicKey)
		if !bytes.Equal(pub, b[32:]) {
			return nil, errors.New("solana payer: the keypair's public key does not match its seed")
		}
		return bytes.Clone(b[:32]), nil
	}
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil || len(b) != ed25519.SeedSize {
		clear(b)
		return nil, errors.New("solana payer: the key must be a 32-byte seed in hex (64 digits) or a solana-keygen keypair (a JSON array of 64 bytes)")
	}
	return b, nil
}

// LoadSolanaPayer reads a key in either of NewSolanaPayer's forms from a file, refusing a file
// that others than its owner may read or write.
func LoadSolanaPayer(path, rpcURL string) (*SolanaPayer, error) {
	b, err := readKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("solana payer: %w", err)
	}
	defer clear(b)
	p, err := NewSolanaPayer(string(b), rpcURL)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return p, nil
}

// SolanaPayerFromEnv reads a key in either of NewSolanaPayer's forms from the environment variable
// name.
func SolanaPayerFromEnv(name, rpcURL string) (*SolanaPayer, error) {
	v, ok := os.LookupEnv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("solana payer: environment variable %s is not set", name)
	}
	p, err := NewSolanaPayer(v, rpcURL)
	if err != nil {
		return nil, fmt.Errorf("%w (variable %s)", err, name)
	}
	return p, nil
}

// Address is the payer's account, base58: the owner of the token account it pays from.
func (p *SolanaPayer) Address() string { return p.address }

// String shows the address only, never the key.
func (p *SolanaPayer) String() string { return "Solana payer " + p.address }

// GoString hides the key from %#v.
func (p *SolanaPayer) GoString() string { return "client.SolanaPayer{" + p.address + "}" }

// Format hides the key from every fmt verb.
func (p *SolanaPayer) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(p.GoString()))
		return
	}
	_, _ = f.Write([]byte(p.String()))
}

// solanaTransfer is what a payment transfers, from the requirement.
type solanaTransfer struct {
	feePayer, owner, payee, mint [32]byte
	amount                       uint64
}

// Supports tells whether r is an exact payment of a Solana network's USDC (the classic token
// program's mint, 6 decimals) with a fee payer other than the payer: what Sign can build.
func (p *SolanaPayer) Supports(r x402.Requirements) bool {
	_, err := p.transfer(r)
	return err == nil
}

func (p *SolanaPayer) transfer(r x402.Requirements) (solanaTransfer, error) {
	var t solanaTransfer
	fail := func(format string, args ...any) (solanaTransfer, error) {
		return solanaTransfer{}, fmt.Errorf("solana payer: "+format, args...)
	}
	if r.Scheme != x402.SchemeExact {
		return fail("scheme %s is not exact", short(r.Scheme))
	}
	if !strings.HasPrefix(r.Network, "solana:") {
		return fail("network %s is not a Solana network", short(r.Network))
	}
	usdc, ok := x402.USDC(r.Network)
	if !ok || r.Asset != usdc {
		return fail("asset %s is not the USDC of %s", short(r.Asset), short(r.Network))
	}
	var err error
	if t.mint, err = x402.SolanaPublicKey(r.Asset); err != nil {
		return fail("asset: %v", err)
	}
	if t.payee, err = x402.SolanaPublicKey(r.PayTo); err != nil {
		return fail("payTo: %v", err)
	}
	fee, _ := r.Extra["feePayer"].(string)
	if t.feePayer, err = x402.SolanaPublicKey(fee); err != nil {
		return fail("extra.feePayer: %v", err)
	}
	copy(t.owner[:], p.key[32:])
	if t.feePayer == t.owner || t.payee == t.owner {
		return fail("the fee payer and the payee must be other accounts than the payer")
	}
	if t.amount, err = strconv.ParseUint(r.Amount, 10, 64); err != nil || t.amount == 0 || r.Amount[0] == '0' {
		return fail("amount %s is not a positive integer of at most 64 bits", short(r.Amount))
	}
	return t, nil
}

// Sign builds and signs the transaction paying r exactly and returns the x402 exact Solana
// payload: {"transaction": base64 of the wire transaction, the fee payer's signature left empty}.
func (p *SolanaPayer) Sign(ctx context.Context, r x402.Requirements) (map[string]any, error) {
	t, err := p.transfer(r)
	if err != nil {
		return nil, err
	}
	blockhash, err := p.latestBlockhash(ctx)
	if err != nil {
		return nil, err
	}
	var nonce [solanaMemoNonceBytes]byte
	if _, err := io.ReadFull(p.rand, nonce[:]); err != nil {
		return nil, fmt.Errorf("solana payer: memo nonce: %w", err)
	}
	msg, err := t.message(blockhash, []byte(hex.EncodeToString(nonce[:])))
	if err != nil {
		return nil, err
	}
	// Two signature slots, in the order of the signing accounts: the fee payer's (empty, for the
	// facilitator) and the payer's.
	wire := make([]byte, 0, 1+2*ed25519.SignatureSize+len(msg))
	wire = append(wire, 2)
	wire = append(wire, make([]byte, ed25519.SignatureSize)...)
	wire = append(wire, ed25519.Sign(p.key, msg)...)
	wire = append(wire, msg...)
	return map[string]any{"transaction": base64.StdEncoding.EncodeToString(wire)}, nil
}

// message is the version 0 transaction message of the payment. Accounts come in the order the
// format requires (writable signers, read-only signers, writable others, read-only others).
func (t solanaTransfer) message(blockhash [32]byte, memo []byte) ([]byte, error) {
	source, err := associatedTokenAccount(t.owner, t.mint)
	if err != nil {
		return nil, err
	}
	dest, err := associatedTokenAccount(t.payee, t.mint)
	if err != nil {
		return nil, err
	}
	keys := [][32]byte{t.feePayer, t.owner, source, dest, t.mint, solanaTokenProgram, solanaComputeBudgetProgram, solanaMemoProgram}
	const (
		authority = 1
		src       = 2
		dst       = 3
		mint      = 4
		token     = 5
		budget    = 6
		memoProg  = 7
	)
	m := []byte{0x80, 2, 1, 4} // version 0; 2 signers, 1 of them read-only; 4 read-only others
	m = appendShortVec(m, len(keys))
	for _, k := range keys {
		m = append(m, k[:]...)
	}
	m = append(m, blockhash[:]...)

	limit := binary.LittleEndian.AppendUint32([]byte{2}, solanaComputeUnitLimit) // SetComputeUnitLimit
	price := binary.LittleEndian.AppendUint64([]byte{3}, solanaComputeUnitPrice) // SetComputeUnitPrice
	transfer := append(binary.LittleEndian.AppendUint64([]byte{12}, t.amount), x402.USDCDecimals)
	m = appendShortVec(m, 4)
	m = appendInstruction(m, budget, nil, limit)
	m = appendInstruction(m, budget, nil, price)
	m = appendInstruction(m, token, []byte{src, mint, dst, authority}, transfer) // transferChecked
	m = appendInstruction(m, memoProg, nil, memo)
	return appendShortVec(m, 0), nil // no address lookup tables
}

func appendInstruction(m []byte, program byte, accounts, data []byte) []byte {
	m = append(m, program)
	m = appendShortVec(m, len(accounts))
	m = append(m, accounts...)
	m = appendShortVec(m, len(data))
	return append(m, data...)
}

// appendShortVec appends n in Solana's compact-u16 encoding.
func appendShortVec(b []byte, n int) []byte {
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// associatedTokenAccount is the address of owner's token account for mint under the classic token
// program: the program address derived from (owner, token program, mint) by the associated token
// account program, with the highest bump seed that puts it off the Ed25519 curve.
func associatedTokenAccount(owner, mint [32]byte) ([32]byte, error) {
	for bump := 255; bump >= 0; bump-- {
		h := sha256.New()
		h.Write(owner[:])
		h.Write(solanaTokenProgram[:])
		h.Write(mint[:])
		h.Write([]byte{byte(bump)})
		h.Write(solanaAssociatedToken[:])
		h.Write([]byte("ProgramDerivedAddress"))
		var addr [32]byte
		h.Sum(addr[:0])
		if !onEd25519Curve(addr) {
			return addr, nil
		}
	}
	return [32]byte{}, errors.New("solana payer: no token account address for this owner and mint")
}

// onEd25519Curve reports whether b decompresses to a point of the curve, as Solana decides it for
// program addresses (curve25519-dalek's decompress, which curve25519-voi ports): y is the low 255
// bits reduced modulo 2^255 - 19, and x^2 = (y^2 - 1) / (d y^2 + 1) must have a root.
func onEd25519Curve(b [32]byte) bool {
	_, err := new(curve.EdwardsPoint).SetCompressedY((*curve.CompressedEdwardsY)(&b))
	return err == nil
}

// latestBlockhash reads a recent blockhash with the cluster's getLatestBlockhash.
func (p *SolanaPayer) latestBlockhash(ctx context.Context) ([32]byte, error) {
	var blockhash [32]byte
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, solanaRPCTimeout)
		defer cancel()
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"getLatestBlockhash","params":[{"commitment":"confirmed"}]}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.rpc, bytes.NewReader(body))
	if err != nil {
		return blockhash, fmt.Errorf("solana payer: blockhash: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.http.Do(req)
	if err != nil {
		return blockhash, fmt.Errorf("solana payer: blockhash: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Value struct {
				Blockhash string `json:"blockhash"`
			} `json:"value"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxRPCAnswer)).Decode(&out); err != nil {
		return blockhash, fmt.Errorf("solana payer: blockhash: HTTP %d, not a JSON-RPC answer", resp.StatusCode)
	}
	if out.Error != nil {
		return blockhash, fmt.Errorf("solana payer: blockhash: %s", short(out.Error.Message))
	}
	if blockhash, err = x402.SolanaPublicKey(out.Result.Value.Blockhash); err != nil {
		return blockhash, fmt.Errorf("solana payer: blockhash %q is not 32 bytes of base58", short(out.Result.Value.Blockhash))
	}
	return blockhash, nil
}
