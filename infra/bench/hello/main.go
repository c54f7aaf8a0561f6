// Command hello is the hello-world Lambda bootstrap that `make bench` measures the functions'
// first invoke against (SPEC §14: a function's first invoke under the emulator is at most twice
// this one's). It does the least a Go HTTP API function can: start the runtime client and answer
// every API Gateway HTTP API v2 event with 200 "hello".
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "hello"}, nil
	})
}
