package translog

import (
	"context"
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
// name) and its Ed25519 key, which may be local or remote (a kms-sign: key, whose seed never
// leaves KMS).
type LogKey struct {
	Origin      string
	VerifierKey string // the public key in the form note.NewVerifier reads (<name>+<hash>+<base64>)

	key  receipt.Key
	hash uint32 // the key hash of the note signature lines, note's own (see noteSigner)
}

// NewLogKey makes the log's identity from its origin and Ed25519 key (a receipt.Key, from the same
// kinds of source as the signing key). The origin is the deployment's host and path plus /log.
func NewLogKey(origin string, key receipt.Key) (LogKey, error) {
	pub := key.Public().Key
	if len(pub) != ed25519.PublicKeySize || key.Version == "" {
		return LogKey{}, errors.New("log key: not an Ed25519 key with a version")
	}
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return LogKey{}, fmt.Errorf("log key for origin %q: %w", origin, err)
	}
	// The verifier computes the key hash as note does for every Ed25519 key: the first four bytes
	// (big-endian) of SHA-256(name, "\n", 0x01, public key). Taking it from there keeps the
	// signature lines' hash note's own, whatever signs.
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return LogKey{}, fmt.Errorf("log key: %w", err)
	}
	return LogKey{Origin: origin, VerifierKey: vkey, key: key, hash: v.KeyHash()}, nil
}

// WithContext is the key with the context its remote signatures are made under (receipt.Key's
// WithContext): a sequencer step's, so that a KMS call ends with the step.
func (k LogKey) WithContext(ctx context.Context) LogKey {
	k.key = k.key.WithContext(ctx)
	return k
}

// noteSigner is a note.Signer over a receipt.Key: note.Sign formats the signed note and asks it
// for the signature of the note's text, which the key makes locally or with one call to KMS (pure
// Ed25519, so either signature is the one note's own Ed25519 signer would make). A checkpoint's
// text is an origin, a number and a hash, far below KMS's 4096-byte limit on a raw message.
type noteSigner struct {
	name string
	hash uint32
	key  receipt.Key
}

func (s noteSigner) Name() string                    { return s.name }
func (s noteSigner) KeyHash() uint32                 { return s.hash }
func (s noteSigner) Sign(msg []byte) ([]byte, error) { return s.key.Sign(msg) }

var _ note.Signer = noteSigner{}

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

// Sign signs the checkpoint of a tree as a note. A remote key signs under the context WithContext
// gave it.
func (k LogKey) Sign(size int64, hash tlog.Hash) ([]byte, error) {
	if k.VerifierKey == "" {
		return nil, errors.New("log key: none configured")
	}
	return note.Sign(&note.Note{Text: Checkpoint{k.Origin, size, hash}.Text()}, noteSigner{k.Origin, k.hash, k.key})
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
