package translog

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// maxCheckpoint bounds a checkpoint read from a server: an origin line, a size, a hash and a few
// signature lines fit in far less, so a larger answer is refused unread.
const maxCheckpoint = 16 << 10

// LogKey is the log's signing identity: its origin (the checkpoint's first line and the key's
// name) and its Ed25519 key.
type LogKey struct {
	Origin      string
	signer      note.Signer
	VerifierKey string // the public key in the form note.NewVerifier reads (<name>+<hash>+<base64>)
}

// NewLogKey makes the log's identity from its origin and Ed25519 key (a receipt.Key, from the same
// kinds of source as the signing key). The origin is the deployment's host and path plus /log.
func NewLogKey(origin string, key receipt.Key) (LogKey, error) {
	if len(key.Private) != ed25519.PrivateKeySize {
		return LogKey{}, errors.New("log key: not an Ed25519 private key")
	}
	vkey, err := note.NewEd25519VerifierKey(origin, key.Private.Public().(ed25519.PublicKey))
	if err != nil {
		return LogKey{}, fmt.Errorf("log key for origin %q: %w", origin, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return LogKey{}, fmt.Errorf("log key: %w", err)
	}
	// The signed-note private key form: PRIVATE+KEY+<name>+<hash>+<base64(algorithm 1, seed)>.
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", origin, v.KeyHash(),
		base64.StdEncoding.EncodeToString(append([]byte{1}, key.Private.Seed()...)))
	s, err := note.NewSigner(skey)
	if err != nil {
		return LogKey{}, fmt.Errorf("log key: %w", err)
	}
	return LogKey{Origin: origin, signer: s, VerifierKey: vkey}, nil
}

// Origin is the origin line of a deployment whose public base URL is baseURL: its host and path
// plus /log (SPEC §15).
func Origin(baseURL string) string {
	o := strings.TrimPrefix(strings.TrimPrefix(baseURL, "https://"), "http://")
	return strings.TrimSuffix(o, "/") + "/log"
}

// Checkpoint is the body of a C2SP tlog-checkpoint: which log, how many leaves, which root.
type Checkpoint struct {
	Origin string
	Size   int64
	Hash   tlog.Hash
}

// Text is the checkpoint body: the origin, the size and the base64 root hash, one a line.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Hash[:]))
}

// Sign signs the checkpoint of a tree as a note.
func (k LogKey) Sign(size int64, hash tlog.Hash) ([]byte, error) {
	if k.signer == nil {
		return nil, errors.New("log key: none configured")
	}
	return note.Sign(&note.Note{Text: Checkpoint{k.Origin, size, hash}.Text()}, k.signer)
}

// OpenCheckpoint checks a signed checkpoint against the log's verifier key (note.Open) and parses
// it; the origin must be the key's name.
func OpenCheckpoint(signed []byte, verifierKey string) (Checkpoint, error) {
	if len(signed) > maxCheckpoint {
		return Checkpoint{}, errors.New("checkpoint: too large")
	}
	v, err := note.NewVerifier(verifierKey)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: log key: %w", err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	c, err := ParseCheckpoint(n.Text)
	if err != nil {
		return Checkpoint{}, err
	}
	if c.Origin != v.Name() {
		return Checkpoint{}, fmt.Errorf("checkpoint: origin %q is not the log key's %q", c.Origin, v.Name())
	}
	return c, nil
}

// ParseCheckpoint parses a checkpoint body (its signature already checked). Extension lines after
// the third are allowed by C2SP and ignored.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return Checkpoint{}, errors.New("checkpoint: want an origin, a size and a root hash line")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return Checkpoint{}, errors.New("checkpoint: malformed size")
	}
	h, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(h) != tlog.HashSize {
		return Checkpoint{}, errors.New("checkpoint: malformed root hash")
	}
	c := Checkpoint{Origin: lines[0], Size: size}
	copy(c.Hash[:], h)
	return c, nil
}
