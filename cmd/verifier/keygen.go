package main

import (
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/keys"
)

func runKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the key file here (mode 0600; never overwrites)")
	version := fs.String("version", "", "key version label (default v1-<yyyy-mm-dd>)")
	if err := fs.Parse(args); err != nil || *out == "" || fs.NArg() != 0 {
		fmt.Fprint(stderr, usage)
		return exitInvalid
	}
	if *version == "" {
		*version = "v1-" + time.Now().UTC().Format("2006-01-02")
	}
	k, err := keys.Generate(*version, rand.Reader)
	if err != nil {
		fmt.Fprintf(stderr, "verifier keygen: %v\n", err)
		return exitError
	}
	if err := keys.WriteFile(*out, k); err != nil {
		fmt.Fprintf(stderr, "verifier keygen: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "wrote %s: key version %s, public key %s\n", *out, k.Version, base64.StdEncoding.EncodeToString(k.Public().Key))
	return exitOK
}
