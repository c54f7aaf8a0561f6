package keys

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
)

// SecretGetter reads a secret's value (its SecretString, or else its SecretBinary).
type SecretGetter interface {
	GetSecretValue(ctx context.Context, secretID string) ([]byte, error)
}

// SecretCreator creates a secret holding value and returns its ARN.
type SecretCreator interface {
	CreateSecret(ctx context.Context, name, description, value string) (string, error)
}

// Decrypter decrypts a KMS ciphertext blob.
type Decrypter interface {
	Decrypt(ctx context.Context, ciphertext []byte) ([]byte, error)
}

// SecretsManager is the few Secrets Manager operations the project uses, on the SDK's client,
// for the Lambda functions and `verifier keygen --secret` alike.
type SecretsManager struct{ c *secretsmanager.Client }

// NewSecretsManager makes a Secrets Manager client from cfg: its region, credentials, retryer and
// BaseEndpoint (the functions' configuration is pkg/app's NewAWS, which sets the endpoint
// override; `verifier keygen --secret` loads the SDK's own).
func NewSecretsManager(cfg aws.Config) (*SecretsManager, error) {
	if cfg.Region == "" {
		return nil, errNoRegion
	}
	return &SecretsManager{secretsmanager.NewFromConfig(cfg)}, nil
}

// errNoRegion is what the constructors answer without a region, before any call could.
var errNoRegion = errors.New("aws: no region configured (set AWS_REGION)")

// GetSecretValue reads the current value of the secret secretID (a name or an ARN).
func (s *SecretsManager) GetSecretValue(ctx context.Context, secretID string) ([]byte, error) {
	out, err := s.c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &secretID})
	if err != nil {
		return nil, err
	}
	if out.SecretString != nil {
		return []byte(*out.SecretString), nil
	}
	return out.SecretBinary, nil
}

// CreateSecret creates the secret name holding value. A fresh client request token makes the
// call idempotent, so a retried request cannot create the secret twice or fail on its own first
// attempt. Errors never contain value, even if the service were to quote it.
func (s *SecretsManager) CreateSecret(ctx context.Context, name, description, value string) (string, error) {
	var token [16]byte // 32 hex digits, the shortest token the service accepts
	rand.Read(token[:])
	in := &secretsmanager.CreateSecretInput{Name: &name, SecretString: &value, ClientRequestToken: aws.String(hex.EncodeToString(token[:]))}
	if description != "" {
		in.Description = &description
	}
	out, err := s.c.CreateSecret(ctx, in)
	if err != nil {
		if value != "" && strings.Contains(err.Error(), value) {
			code := "unknown"
			if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
				code = apiErr.ErrorCode()
			}
			return "", fmt.Errorf("secretsmanager CreateSecret: %s: %s", code, strings.ReplaceAll(err.Error(), value, "[redacted]"))
		}
		return "", err
	}
	return aws.ToString(out.ARN), nil
}

// KMS is the KMS operations the project uses, on the SDK's client: Decrypt for the kms: key
// source, GetPublicKey and Sign for kms-sign:.
type KMS struct{ c *kms.Client }

// NewKMS makes a KMS client from cfg, as NewSecretsManager.
func NewKMS(cfg aws.Config) (*KMS, error) {
	if cfg.Region == "" {
		return nil, errNoRegion
	}
	return &KMS{kms.NewFromConfig(cfg)}, nil
}

// Decrypt decrypts a symmetric-key ciphertext blob; the blob names its key.
func (k *KMS) Decrypt(ctx context.Context, ciphertext []byte) ([]byte, error) {
	out, err := k.c.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: ciphertext})
	if err != nil {
		return nil, err
	}
	return out.Plaintext, nil
}

var (
	_ SecretGetter  = (*SecretsManager)(nil)
	_ SecretCreator = (*SecretsManager)(nil)
	_ Decrypter     = (*KMS)(nil)
)

// FromSecretsManager reads the signing key from a secret holding the base64 of the 32-byte seed
// (what `verifier keygen --secret` writes), a whole key file as `verifier keygen --out` writes
// it, or a generated secret (the secret template.yaml creates, filled by Secrets Manager:
// {"kdf":"HKDF-SHA256","secret":"..."}, the seed derived from it; see generatedKDF). Errors
// name the secret, never its value.
func FromSecretsManager(ctx context.Context, c SecretGetter, secretID, version string) (receipt.Key, error) {
	value, err := c.GetSecretValue(ctx, secretID)
	if err != nil {
		return receipt.Key{}, fmt.Errorf("read secret %s: %w", secretID, err)
	}
	value = bytes.TrimSpace(value)
	if bytes.HasPrefix(value, []byte("{")) && isGeneratedSecret(value) {
		seed, err := seedFromGenerated(value)
		if err != nil {
			return receipt.Key{}, fmt.Errorf("secret %s: %w", secretID, err)
		}
		return FromSeed(version, seed)
	}
	if bytes.HasPrefix(value, []byte("{")) {
		k, err := Parse(value)
		if err != nil {
			return receipt.Key{}, fmt.Errorf("secret %s: %w", secretID, err)
		}
		if k.Version != version {
			return receipt.Key{}, fmt.Errorf("secret %s holds key version %q, configured %q", secretID, k.Version, version)
		}
		return k, nil
	}
	seed, err := decodeSeed(value)
	if err != nil {
		return receipt.Key{}, fmt.Errorf("secret %s: %w", secretID, err)
	}
	return FromSeed(version, seed)
}

// FromKMS decrypts a KMS-encrypted seed (given as base64 of the ciphertext blob) once, at cold
// start. The plaintext may be the 32 raw bytes or their base64.
func FromKMS(ctx context.Context, c Decrypter, ciphertextB64, version string) (receipt.Key, error) {
	blob, err := base64.StdEncoding.DecodeString(ciphertextB64)
	if err != nil || len(blob) == 0 {
		return receipt.Key{}, errors.New("kms key: the ciphertext is not base64")
	}
	plain, err := c.Decrypt(ctx, blob)
	if err != nil {
		return receipt.Key{}, fmt.Errorf("kms decrypt signing key: %w", err)
	}
	seed := plain
	if len(seed) != ed25519.SeedSize {
		if seed, err = decodeSeed(bytes.TrimSpace(plain)); err != nil {
			return receipt.Key{}, fmt.Errorf("kms key: %w", err)
		}
	}
	return FromSeed(version, seed)
}

// CreateSecret stores a new key's seed (base64) as a Secrets Manager secret named name, so a first
// deploy needs no hand-made key material. It returns the secret's ARN.
func CreateSecret(ctx context.Context, c SecretCreator, name string, k receipt.Key) (string, error) {
	arn, err := c.CreateSecret(ctx, name,
		"Agent Output Verifier Ed25519 signing key seed, version "+k.Version,
		base64.StdEncoding.EncodeToString(k.Private.Seed()))
	if err != nil {
		return "", fmt.Errorf("create secret %s: %w", name, err)
	}
	return arn, nil
}

func decodeSeed(b []byte) ([]byte, error) {
	seed, err := base64.StdEncoding.Strict().DecodeString(string(b))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("the value is not the base64 of a %d-byte Ed25519 seed", ed25519.SeedSize)
	}
	return seed, nil
}
