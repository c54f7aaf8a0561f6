package keys

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// KMSSignAPI is the part of the SDK's KMS client a KMSSigner calls; *kms.Client has it.
type KMSSignAPI interface {
	GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, opts ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error)
	Sign(ctx context.Context, in *kms.SignInput, opts ...func(*kms.Options)) (*kms.SignOutput, error)
}

var _ KMSSignAPI = (*kms.Client)(nil)

// MaxKMSMessage is the largest message KMS signs with MessageType RAW (its Sign API's limit).
// ED25519_PH_SHA_512 would take any length, but it is Ed25519ph, not the plain Ed25519 of
// receipts, so a longer message is refused here rather than sent.
const MaxKMSMessage = 4096

// KMSSigner signs with an Ed25519 key that never leaves AWS KMS (VERIFIER_SIGNING_KEY=
// kms-sign:<key id or ARN>): KMS key spec ECC_NIST_EDWARDS25519, signing algorithm
// ED25519_SHA_512 with MessageType RAW, which is plain RFC 8032 Ed25519, so its signatures are
// byte-identical to a local key's over the same bytes (Ed25519 is deterministic).
type KMSSigner struct {
	c     KMSSignAPI
	keyID string
	pub   receipt.PublicKey
}

// NewKMSSigner reads the key's public half once (GetPublicKey, DER SubjectPublicKeyInfo) and
// refuses a key that is not an Ed25519 signing key, so a misconfigured key stops the start-up
// instead of producing receipts nobody can verify.
func NewKMSSigner(ctx context.Context, c KMSSignAPI, keyID, version string) (*KMSSigner, error) {
	if keyID == "" {
		return nil, errors.New("kms-sign key: the key id is empty")
	}
	if version == "" {
		return nil, errors.New("kms-sign key: empty key version")
	}
	out, err := c.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: &keyID})
	if err != nil {
		return nil, fmt.Errorf("kms-sign key %s: read its public key: %w", keyID, err)
	}
	if out.KeySpec != types.KeySpecEccNistEdwards25519 || out.KeyUsage != types.KeyUsageTypeSignVerify {
		return nil, fmt.Errorf("kms-sign key %s: key spec %q and usage %q, want %q and %q", keyID,
			out.KeySpec, out.KeyUsage, types.KeySpecEccNistEdwards25519, types.KeyUsageTypeSignVerify)
	}
	parsed, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("kms-sign key %s: the public key is not DER SubjectPublicKeyInfo: %w", keyID, err)
	}
	pub, ok := parsed.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("kms-sign key %s: the public key is a %T, not Ed25519", keyID, parsed)
	}
	return &KMSSigner{c: c, keyID: keyID, pub: receipt.PublicKey{Version: version, Key: pub}}, nil
}

// Public is the key a verifier needs for the receipts this signer signs.
func (s *KMSSigner) Public() receipt.PublicKey { return s.pub }

// MaxMessage is KMS's limit for a raw message (receipt.Signer): a longer document is made to fit
// (pkg/verify shortens a report's lists) before it is signed, never sent.
func (s *KMSSigner) MaxMessage() int { return MaxKMSMessage }

// Sign signs msg with one KMS Sign call (receipt.Signer). receipt.Key checks the signature against
// the public key read at start-up before it is used, so a wrong answer (another key, a damaged
// signature) is an error, never a receipt that fails verification later.
func (s *KMSSigner) Sign(ctx context.Context, msg []byte) ([]byte, error) {
	if len(msg) > MaxKMSMessage {
		return nil, fmt.Errorf("kms sign: the message is %d bytes, over KMS's %d for a raw message", len(msg), MaxKMSMessage)
	}
	out, err := s.c.Sign(ctx, &kms.SignInput{
		KeyId:            &s.keyID,
		Message:          msg,
		MessageType:      types.MessageTypeRaw,
		SigningAlgorithm: types.SigningAlgorithmSpecEd25519Sha512,
	})
	if err != nil {
		return nil, fmt.Errorf("kms sign: %w", err)
	}
	return out.Signature, nil
}

var _ receipt.Signer = (*KMSSigner)(nil)

// FromKMSSign is the kms-sign:<key id or ARN> signing key: a receipt.RemoteKey whose signatures
// are KMS Sign calls, its public half read once, here, at start-up (NewKMSSigner).
func FromKMSSign(ctx context.Context, c KMSSignAPI, keyID, version string) (receipt.Key, error) {
	s, err := NewKMSSigner(ctx, c, keyID, version)
	if err != nil {
		return receipt.Key{}, err
	}
	return receipt.RemoteKey(version, s.pub.Key, s), nil
}

// API is the SDK's KMS client, for the kms-sign: key source.
func (k *KMS) API() KMSSignAPI { return k.c }
