// Command log is the Lambda function that sequences the receipt log (SPEC §15): invoked by a
// schedule, with reserved concurrency 1, it appends the pending leaves to the tree and signs its
// checkpoint. It serves no route.
package main

import (
	"fmt"
	"os"

	"github.com/agent-output-verifier/verifier/pkg/app"
)

func main() {
	app.TuneGC()
	if err := app.ServeLogSequencer(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
