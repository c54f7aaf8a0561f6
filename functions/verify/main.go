// Command verify is the Lambda function behind POST /verify/schema and /verify/deliverable.
package main

import (
	"fmt"
	"os"

	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
)

func main() {
	app.TuneGC()
	if err := app.ServeLambda(httpapi.VerifyHandler, engine.New); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
