package keys

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// SecretGetter is the part of the Secrets Manager client a key source needs.
type SecretGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// SecretCreator is the part of the Secrets Manager client `verifier keygen --secret` needs.
type SecretCreator interface {
	CreateSecret(ctx context.Context, in *secretsmanager.CreateSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.CreateSecretOutput, error)
}

// Decrypter is the part of the KMS client a key source needs.
type Decrypter interface {
	Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// FromSecretsManager reads the signing key from a secret holding the base64 of the 32-byte seed
// (or a whole key file as `verifier keygen` writes it). Errors name the secret, never its value.
func FromSecretsManager(ctx context.Context, c SecretGetter, secretID, version string) (receipt.Key, error) {
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretID)})
	if err != nil {
		return receipt.Key{}, fmt.Errorf("read secret %s: %w", secretID, err)
	}
	var value []byte
	switch {
	case out.SecretString != nil:
		value = []byte(*out.SecretString)
	default:
		value = out.SecretBinary
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
	out, err := c.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob})
	if err != nil {
		return receipt.Key{}, fmt.Errorf("kms decrypt signing key: %w", err)
	}
	seed := out.Plaintext
	if len(seed) != ed25519.SeedSize {
		if seed, err = decodeSeed(bytes.TrimSpace(out.Plaintext)); err != nil {
			return receipt.Key{}, fmt.Errorf("kms key: %w", err)
		}
	}
	return FromSeed(version, seed)
}

// CreateSecret stores a new key's seed (base64) as a Secrets Manager secret named name, so a first
// deploy needs no hand-made key material. It returns the secret's ARN.
func CreateSecret(ctx context.Context, c SecretCreator, name string, k receipt.Key) (string, error) {
	out, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name:         aws.String(name),
		Description:  aws.String("Agent Output Verifier Ed25519 signing key seed, version " + k.Version),
		SecretString: aws.String(base64.StdEncoding.EncodeToString(k.Private.Seed())),
	})
	if err != nil {
		return "", fmt.Errorf("create secret %s: %w", name, err)
	}
	return aws.ToString(out.ARN), nil
}

func decodeSeed(b []byte) ([]byte, error) {
	seed, err := base64.StdEncoding.Strict().DecodeString(string(b))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("the value is not the base64 of a %d-byte Ed25519 seed", ed25519.SeedSize)
	}
	return seed, nil
}
