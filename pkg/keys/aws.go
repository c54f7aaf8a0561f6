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

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agent-output-verifier/verifier/pkg/internal/awsjson"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
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

// SecretsManager is the client of the few AWS Secrets Manager operations the project uses, for
// the Lambda functions and `verifier keygen --secret` alike. It speaks the service's JSON protocol
// directly: the SDK's generated client costs every binary far more than two operations need.
type SecretsManager struct{ c *awsjson.Client }

// NewSecretsManager makes a Secrets Manager client from cfg's region, credentials and HTTP
// client. The endpoint is AWS_ENDPOINT_URL_SECRETS_MANAGER, cfg.BaseEndpoint or AWS_ENDPOINT_URL
// when set, else https://secretsmanager.<region>.<the partition's DNS suffix>.
func NewSecretsManager(cfg aws.Config) (*SecretsManager, error) {
	c, err := awsjson.New(cfg, awsjson.SecretsManager)
	if err != nil {
		return nil, err
	}
	return &SecretsManager{c}, nil
}

// GetSecretValue reads the current value of the secret secretID (a name or an ARN).
func (s *SecretsManager) GetSecretValue(ctx context.Context, secretID string) ([]byte, error) {
	var out struct {
		SecretString *string
		SecretBinary []byte
	}
	if err := s.c.Call(ctx, "GetSecretValue", struct{ SecretId string }{secretID}, &out); err != nil {
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
	in := struct {
		Name               string
		Description        string `json:",omitempty"`
		SecretString       string
		ClientRequestToken string
	}{name, description, value, hex.EncodeToString(token[:])}
	var out struct{ ARN string }
	if err := s.c.Call(ctx, "CreateSecret", in, &out); err != nil {
		if e, ok := errors.AsType[*awsjson.Error](err); ok && value != "" {
			e.Message = strings.ReplaceAll(e.Message, value, "[redacted]")
		}
		return "", err
	}
	return out.ARN, nil
}

// KMS is the client of the one AWS KMS operation the project uses, Decrypt, speaking the
// service's JSON protocol directly (see SecretsManager).
type KMS struct{ c *awsjson.Client }

// NewKMS makes a KMS client from cfg (the endpoint as for NewSecretsManager, with
// AWS_ENDPOINT_URL_KMS and https://kms.<region>.<DNS suffix>).
func NewKMS(cfg aws.Config) (*KMS, error) {
	c, err := awsjson.New(cfg, awsjson.KMS)
	if err != nil {
		return nil, err
	}
	return &KMS{c}, nil
}

// Decrypt decrypts a symmetric-key ciphertext blob; the blob names its key.
func (k *KMS) Decrypt(ctx context.Context, ciphertext []byte) ([]byte, error) {
	var out struct{ Plaintext []byte }
	if err := k.c.Call(ctx, "Decrypt", struct{ CiphertextBlob []byte }{ciphertext}, &out); err != nil {
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
// (or a whole key file as `verifier keygen` writes it). Errors name the secret, never its value.
func FromSecretsManager(ctx context.Context, c SecretGetter, secretID, version string) (receipt.Key, error) {
	value, err := c.GetSecretValue(ctx, secretID)
	if err != nil {
		return receipt.Key{}, fmt.Errorf("read secret %s: %w", secretID, err)
	}
	value = bytes.TrimSpace(value)
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
