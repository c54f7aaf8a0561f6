// Command mcp is the Lambda function behind /mcp: the MCP server (Streamable HTTP, stateless,
// JSON responses) with the tools verify_schema and get_verification_record.
package main

import (
	"fmt"
	"os"

	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
)

func main() {
	app.TuneGC()
	if err := app.ServeLambda(mcpserver.Handler, engine.New); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
