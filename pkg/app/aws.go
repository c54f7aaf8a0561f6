package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
)

// AWS holds the SDK configuration the AWS-backed key sources and store share. The SDK's own
// environment variables (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, ...) apply as usual.
type AWS struct {
	Config aws.Config
}

// NewAWS loads the default SDK configuration.
func NewAWS(ctx context.Context) (*AWS, error) {
	c, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return &AWS{Config: c}, nil
}

// KeySource reads secretsmanager:<id> and kms:<ciphertext> signing keys.
func (a *AWS) KeySource(ctx context.Context, source, version string) (receipt.Key, error) {
	if id, ok := strings.CutPrefix(source, "secretsmanager:"); ok {
		return keys.FromSecretsManager(ctx, secretsmanager.NewFromConfig(a.Config), id, version)
	}
	if blob, ok := strings.CutPrefix(source, "kms:"); ok {
		return keys.FromKMS(ctx, kms.NewFromConfig(a.Config), blob, version)
	}
	return receipt.Key{}, fmt.Errorf("unknown key source")
}

// OpenStore opens the DynamoDB store on the configured table.
func (a *AWS) OpenStore(ctx context.Context, cfg config.Config) (Store, error) {
	return dynamo.New(dynamodb.NewFromConfig(a.Config), cfg.Table), nil
}
