// Command score is the Lambda function behind GET /score/{agent_id}.
package main

import (
	"fmt"
	"os"

	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
)

func main() {
	app.TuneGC()
	if err := app.ServeLambda(httpapi.ScoreHandler, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
