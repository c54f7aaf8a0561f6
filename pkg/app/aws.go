package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
)

// AWS is the one SDK configuration of a function (aws.Config), built once per execution
// environment, from which each service client is made when the function first needs it.
//
// The configuration is built by hand from the environment Lambda provides, not loaded with the
// SDK's configuration loader (aws-sdk-go-v2/config, LoadDefaultConfig): the loader links every
// credential source it may try (shared files and profiles, SSO and its OIDC client, STS, the
// instance metadata service, processes), which adds megabytes to every function and time to
// its cold start, for sources a Lambda function never has. What is read:
//
//   - the region: AWS_REGION (Lambda sets it), else AWS_DEFAULT_REGION;
//   - the credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, a static
//     provider (on Lambda they are the execution role's, issued for the execution environment's
//     lifetime); without them the calls go unsigned and AWS refuses them;
//   - each service's endpoint override, by the SDK's standard names: AWS_ENDPOINT_URL_DYNAMODB,
//     AWS_ENDPOINT_URL_SECRETS_MANAGER and AWS_ENDPOINT_URL_KMS, else AWS_ENDPOINT_URL (how the
//     tests point the clients at dynalite or a local KMS), given to each client as its
//     BaseEndpoint.
//
// Retries are the SDK's standard retryer, each client's default. `verifier keygen --secret`, run
// on a workstation with profiles and SSO, uses the SDK's loader instead.
type AWS struct {
	Config aws.Config
	getenv func(string) string

	// The clients, each made on first use and then shared: a function whose key is a file
	// makes no Secrets Manager or KMS client.
	secretsManager func() (*keys.SecretsManager, error)
	kms            func() (*keys.KMS, error)
}

// Endpoint override variables, the SDK's names (AWS_ENDPOINT_URL_<service id>).
const (
	envEndpoint               = "AWS_ENDPOINT_URL"
	envEndpointDynamoDB       = "AWS_ENDPOINT_URL_DYNAMODB"
	envEndpointSecretsManager = "AWS_ENDPOINT_URL_SECRETS_MANAGER"
	envEndpointKMS            = "AWS_ENDPOINT_URL_KMS"
)

// NewAWS builds the configuration from the process's environment (see AWS). It makes no network
// call.
func NewAWS(context.Context) (*AWS, error) {
	return newAWS(os.Getenv), nil
}

func newAWS(getenv func(string) string) *AWS {
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	c := aws.Config{Region: region}
	if id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		c.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN")))
	}
	a := &AWS{Config: c, getenv: getenv}
	a.secretsManager = sync.OnceValues(func() (*keys.SecretsManager, error) {
		return keys.NewSecretsManager(a.withEndpoint(envEndpointSecretsManager))
	})
	a.kms = sync.OnceValues(func() (*keys.KMS, error) {
		return keys.NewKMS(a.withEndpoint(envEndpointKMS))
	})
	return a
}

// endpoint is the endpoint override of the service whose variable is name, or nil for the
// SDK's own resolution (https://<service>.<region>.amazonaws.com and the partition's).
func (a *AWS) endpoint(name string) *string {
	if v := a.getenv(name); v != "" {
		return aws.String(v)
	}
	if v := a.getenv(envEndpoint); v != "" {
		return aws.String(v)
	}
	return nil
}

// errNoRegion is what a client answers without a region, before any call could.
var errNoRegion = errors.New("configuration: no AWS region (set AWS_REGION)")

// KeySource reads secretsmanager:<id> and kms:<ciphertext> signing keys, and makes the
// kms-sign:<key id or ARN> key, whose public half it reads once (GetPublicKey) and which signs
// with KMS.
func (a *AWS) KeySource(ctx context.Context, source, version string) (receipt.Key, error) {
	if id, ok := strings.CutPrefix(source, "secretsmanager:"); ok {
		c, err := a.secretsManager()
		if err != nil {
			return receipt.Key{}, err
		}
		return keys.FromSecretsManager(ctx, c, id, version)
	}
	if keyID, ok := strings.CutPrefix(source, "kms-sign:"); ok {
		c, err := a.kms()
		if err != nil {
			return receipt.Key{}, err
		}
		return keys.FromKMSSign(ctx, c.API(), keyID, version)
	}
	if blob, ok := strings.CutPrefix(source, "kms:"); ok {
		c, err := a.kms()
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
	c, err := a.secretsManager()
	if err != nil {
		return nil, err
	}
	return c.GetSecretValue(ctx, id)
}

// withEndpoint is the configuration with the endpoint override of the service whose variable is
// name as its BaseEndpoint.
func (a *AWS) withEndpoint(name string) aws.Config {
	c := a.Config
	c.BaseEndpoint = a.endpoint(name)
	return c
}

// OpenStore opens the DynamoDB store on the configured table. It makes no call: the first
// request's is the first, and /health's Ping checks the table. It opens no other store: the
// embedded one is pkg/app/embedded's, which the Lambda functions do not link.
func (a *AWS) OpenStore(ctx context.Context, cfg config.Config, now func() time.Time) (Store, error) {
	switch cfg.Store {
	case "dynamodb":
	case "bolt":
		return Store{}, noEmbeddedStore()
	default:
		return Store{}, fmt.Errorf("configuration: store %q is not available in this binary", cfg.Store)
	}
	if a.Config.Region == "" {
		return Store{}, errNoRegion
	}
	st := dynamo.New(dynamodb.NewFromConfig(a.withEndpoint(envEndpointDynamoDB)), cfg.Table, dynamo.WithClock(now))
	return Store{Data: st, Receipts: st, Folder: st, Close: st.Close}, nil
}
