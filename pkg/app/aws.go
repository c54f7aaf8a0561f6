package app

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
)

// AWS holds the SDK configuration the AWS-backed key sources and store share.
type AWS struct {
	Config aws.Config
}

// NewAWS builds the SDK configuration from the environment the way Lambda provides it: the
// region (AWS_REGION), the execution role's credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN) and per-service endpoint overrides (AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SECRETS_MANAGER, AWS_ENDPOINT_URL_KMS, or AWS_ENDPOINT_URL), which is how tests
// point the SDK at local servers. It deliberately does not link the SDK's full configuration
// loader (profiles, SSO, instance metadata): that costs every Lambda binary megabytes and
// cold-start time for sources a function never has. `verifier keygen --secret`, run on a
// workstation, uses the full loader.
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

// endpoint is the endpoint override for an SDK service client from the environment, if any. (The
// key sources' own client, in pkg/keys, reads AWS_ENDPOINT_URL_SECRETS_MANAGER, AWS_ENDPOINT_URL_KMS
// and AWS_ENDPOINT_URL the same way.)
func endpoint(service string) *string {
	if v := os.Getenv("AWS_ENDPOINT_URL_" + service); v != "" {
		return aws.String(v)
	}
	if v := os.Getenv("AWS_ENDPOINT_URL"); v != "" {
		return aws.String(v)
	}
	return nil
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

// OpenStore opens the DynamoDB store on the configured table.
func (a *AWS) OpenStore(ctx context.Context, cfg config.Config) (Store, error) {
	return dynamo.New(dynamodb.NewFromConfig(a.Config, func(o *dynamodb.Options) { o.BaseEndpoint = endpoint("DYNAMODB") }), cfg.Table), nil
}
