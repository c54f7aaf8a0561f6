package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/agent-output-verifier/verifier/pkg/keys"
)

func runKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the key file here (mode 0600; never overwrites)")
	version := fs.String("version", "", "key version label (default v1-<yyyy-mm-dd>)")
	secret := fs.String("secret", "", "instead of a file, create a Secrets Manager secret of this name holding the seed")
	kmsKey := fs.String("kms-key-id", "", "with --out: print the command that encrypts the seed under this KMS key")
	if err := fs.Parse(args); err != nil || (*out == "") == (*secret == "") || fs.NArg() != 0 || (*kmsKey != "" && *out == "") {
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
	pub := base64.StdEncoding.EncodeToString(k.Public().Key)
	if *secret != "" {
		ctx := context.Background()
		// On a workstation the SDK's full loader applies: profiles, SSO, the usual variables.
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "verifier keygen: load AWS configuration: %v\n", err)
			return exitError
		}
		// The same Secrets Manager client as the functions', so there is one way to talk to it.
		sm, err := keys.NewSecretsManager(awsCfg)
		if err != nil {
			fmt.Fprintf(stderr, "verifier keygen: %v\n", err)
			return exitError
		}
		arn, err := keys.CreateSecret(ctx, sm, *secret, k)
		if err != nil {
			fmt.Fprintf(stderr, "verifier keygen: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "created secret %s: key version %s, public key %s\n", arn, k.Version, pub)
		fmt.Fprintf(stdout, "deploy with: sam deploy --parameter-overrides SigningKey=secretsmanager:%s SigningKeySecretArn=%s KeyVersion=%s\n", arn, arn, k.Version)
		return exitOK
	}
	if err := keys.WriteFile(*out, k); err != nil {
		fmt.Fprintf(stderr, "verifier keygen: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "wrote %s: key version %s, public key %s\n", *out, k.Version, pub)
	if *kmsKey != "" {
		fmt.Fprintf(stdout, "encrypt the seed under KMS, then delete the plaintext copies:\n"+
			"  jq -r .seed %s | base64 -d > seed.bin\n"+
			"  aws kms encrypt --key-id %s --plaintext fileb://seed.bin --query CiphertextBlob --output text\n"+
			"  rm seed.bin\n"+
			"and deploy with VERIFIER_SIGNING_KEY=kms:<that output> VERIFIER_KEY_VERSION=%s\n", *out, *kmsKey, k.Version)
	}
	return exitOK
}
