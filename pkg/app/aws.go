package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/internal/awsjson"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
)

// AWS holds the configuration the AWS-backed key sources and store share: region, credentials
// and HTTP client, in the SDK's aws.Config, which their JSON-protocol client (awsjson) reads.
type AWS struct {
	Config aws.Config
}

// NewAWS builds the configuration from the environment the way Lambda provides it: the region
// (AWS_REGION), the execution role's credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN); the client reads the per-service endpoint overrides
// (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SECRETS_MANAGER, AWS_ENDPOINT_URL_KMS, or
// AWS_ENDPOINT_URL), which is how tests point it at local servers. It deliberately does not link
// the SDK's full configuration loader (profiles, SSO, instance metadata): that costs every Lambda
// binary megabytes and cold-start time for sources a function never has. `verifier keygen
// --secret`, run on a workstation, uses the full loader.
func NewAWS(context.Context) (*AWS, error) {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	c := aws.Config{Region: region}
	if id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		c.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN")))
	}
	return &AWS{Config: c}, nil
}

// KeySource reads secretsmanager:<id> and kms:<ciphertext> signing keys.
func (a *AWS) KeySource(ctx context.Context, source, version string) (receipt.Key, error) {
	if id, ok := strings.CutPrefix(source, "secretsmanager:"); ok {
		c, err := keys.NewSecretsManager(a.Config)
		if err != nil {
			return receipt.Key{}, err
		}
		return keys.FromSecretsManager(ctx, c, id, version)
	}
	if blob, ok := strings.CutPrefix(source, "kms:"); ok {
		c, err := keys.NewKMS(a.Config)
		if err != nil {
			return receipt.Key{}, err
		}
		return keys.FromKMS(ctx, c, blob, version)
	}
	return receipt.Key{}, fmt.Errorf("unknown key source")
}

// ReadSecret reads the value of the Secrets Manager secret id (a name or an ARN), through the
// same client the signing key is read with.
func (a *AWS) ReadSecret(ctx context.Context, id string) ([]byte, error) {
	c, err := keys.NewSecretsManager(a.Config)
	if err != nil {
		return nil, err
	}
	return c.GetSecretValue(ctx, id)
}

// OpenStore opens the DynamoDB store on the configured table. It makes no call: the first
// request's is the first, and /health's Ping checks the table. It opens no other store: the
// embedded one is pkg/app/embedded's, which the Lambda functions do not link.
func (a *AWS) OpenStore(ctx context.Context, cfg config.Config, now func() time.Time) (Store, error) {
	switch cfg.Store {
	case "dynamodb":
	case "bolt":
		return nil, noEmbeddedStore()
	default:
		return nil, fmt.Errorf("configuration: store %q is not available in this binary", cfg.Store)
	}
	c, err := awsjson.New(a.Config, awsjson.DynamoDB)
	if err != nil {
		return nil, err
	}
	return dynamo.New(c, cfg.Table, dynamo.WithClock(now)), nil
}
