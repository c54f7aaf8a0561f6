// Command verify is the Lambda function behind POST /verify/schema and /verify/deliverable.
package main

import (
	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
)

func main() { app.StartLambda(httpapi.VerifyHandler, engine.New) }
