// Command score is the Lambda function behind GET /score/{agent_id}.
package main

import (
	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
)

func main() { app.StartLambda(httpapi.ScoreHandler, nil) }
