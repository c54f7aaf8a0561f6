// Command wellknown is the Lambda function behind GET /, /health and the discovery documents:
// the agent card, the x402 manifest, the API catalog, OpenAPI, the docs viewer and llms.txt.
package main

import (
	"fmt"
	"os"

	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
)

func main() {
	app.TuneGC()
	if err := app.ServeLambda(discovery.Handler, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
