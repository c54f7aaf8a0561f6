package app

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
)

// StartLambda is the whole of a function's main: read the configuration, build the service with
// the AWS key sources and store, and serve the handler mount picks (HTTP API payload v2).
func StartLambda(mount func(*httpapi.Service) http.Handler) {
	ctx := context.Background()
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	aws, err := NewAWS(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	svc, _, err := Build(ctx, cfg, Options{KeySource: aws.KeySource, OpenStore: aws.OpenStore})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lambda.Start(httpadapter.NewV2(mount(svc)).ProxyWithContext)
}
