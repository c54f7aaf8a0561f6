// Command invoke runs one Lambda function of this project on this machine the way Lambda does
// and sends it one API Gateway HTTP API v2 event: `make invoke FN=verify EVENT=events/verify-pass.json`.
//
// The function is built for the host architecture and served by the AWS Lambda Runtime Interface
// Emulator on a free 127.0.0.1 port, with its DynamoDB store on a fresh in-memory dynalite (a
// local server of DynamoDB's wire protocol, `make npm`) on another, and a freshly generated signing
// key, so it needs neither Docker nor an AWS account. (A function links no embedded store.) Its
// other variables are those `sam local` gives it, from lambdatest.EnvFile. The
// response is printed like an HTTP response; the emulator and dynalite are stopped by their
// process ids and the temporary directory removed before the command exits.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testproc"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// invokeTimeout bounds the whole run: a build, a cold start and one invocation.
const invokeTimeout = 5 * time.Minute

// invokeTable is the function's table on its own dynalite, which lives for one run.
const invokeTable = "verifier-invoke"

func main() {
	fn := flag.String("fn", "verify", "the function group to run (a directory under functions/)")
	event := flag.String("event", "events/verify-pass.json", "the API Gateway HTTP API v2 event to send")
	rie := flag.String("rie", "", "the aws-lambda-rie binary (default: bin/tools/aws-lambda-rie, from `make tools`)")
	verbose := flag.Bool("v", false, "also print what the emulator and the function logged")
	flag.Parse()
	if err := run(*fn, *event, *rie, *verbose, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(1)
	}
}

func run(fn, eventPath, rie string, verbose bool, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, invokeTimeout)
	defer cancel()

	root, err := testproc.RepoRoot()
	if err != nil {
		return err
	}
	if rie == "" {
		rie = lambdatest.RIEPath(root)
	}
	if _, err := os.Stat(rie); err != nil {
		return fmt.Errorf("%s: %w (run `make tools`)", rie, err)
	}
	if _, err := os.Stat(filepath.Join(root, "functions", fn, "main.go")); err != nil {
		return fmt.Errorf("no function %q under functions/", fn)
	}
	event, err := os.ReadFile(eventPath)
	if err != nil {
		return err
	}
	if !json.Valid(event) {
		return fmt.Errorf("%s is not JSON", eventPath)
	}

	tmp, err := os.MkdirTemp("", "verifier-invoke-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := lambdatest.Build(ctx, root, fn, tmp)
	if err != nil {
		return err
	}
	keyFile := filepath.Join(tmp, "signing-key.json")
	if _, err := lambdatest.WriteKey(keyFile, "invoke-"+time.Now().UTC().Format("2006-01-02")); err != nil {
		return err
	}
	dynamoDB, stopDynalite, err := dynalitetest.Launch(root)
	if err != nil {
		return err
	}
	defer stopDynalite()
	if err := dynamo.CreateTable(ctx, dynalitetest.Client(dynamoDB), invokeTable); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	vars, err := lambdatest.LocalVars(root, fn, lambdatest.Here{DynamoDB: dynamoDB, Table: invokeTable, KeyFile: keyFile})
	if err != nil {
		return err
	}
	emu, err := lambdatest.Start(ctx, rie, bin, lambdatest.Env(vars))
	if err != nil {
		return err
	}
	payload, invokeErr := emu.Invoke(ctx, event)
	stopErr := emu.Stop()
	if verbose || invokeErr != nil {
		fmt.Fprintf(stderr, "--- functions/%s under the emulator:\n%s---\n", fn, emu.Logs())
	}
	if invokeErr != nil {
		return invokeErr
	}
	if err := printResponse(stdout, payload); err != nil {
		return err
	}
	return stopErr
}

// printResponse shows the function's answer as an HTTP response: status, headers, then the body
// (indented when it is JSON). A payload that is not an HTTP response is a function error and is
// printed as it came.
func printResponse(w io.Writer, payload []byte) error {
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(payload, &resp); err != nil || resp.StatusCode == 0 {
		fmt.Fprintf(w, "%s\n", payload)
		return errors.New("the function did not answer with an HTTP response")
	}
	fmt.Fprintf(w, "HTTP %d\n", resp.StatusCode)
	names := make([]string, 0, len(resp.Headers))
	for k := range resp.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(w, "%s: %s\n", k, resp.Headers[k])
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") == nil {
		body = pretty.Bytes()
	}
	fmt.Fprintf(w, "\n%s\n", bytes.TrimRight(body, "\n"))
	return nil
}
