// Command wellknown is the Lambda function behind GET /, /health and the discovery documents.
package main

import (
	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
)

func main() { app.StartLambda((*httpapi.Service).WellKnownHandler) }
