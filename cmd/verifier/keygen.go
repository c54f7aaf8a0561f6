package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// maxPublicKeyFile bounds a public key file read by --key: a key file is under a kilobyte.
const maxPublicKeyFile = 64 << 10

const keygenSynopsis = `  verifier keygen --out NAME.key.json [--version V] [--kms-key-id ID]
  verifier keygen --secret NAME [--version V]
--out writes the private key file (mode 0600, never overwrites) and NAME.pub beside it: the
public key, base64, which 'verifier receipt verify --key NAME.pub' reads. Keep the key file out
of version control (the repository ignores *.key.json).
template.yaml's default key needs neither: the stack creates a secret whose value Secrets
Manager generates. A key that never leaves KMS (VERIFIER_SIGNING_KEY=kms-sign:ARN, KeySource
kms-sign, which shortens reports over 4096 bytes) is not made here: the stack creates one, or
  aws kms create-key --key-spec ECC_NIST_EDWARDS25519 --key-usage SIGN_VERIFY
To rotate any key, deploy a new one (a secret: its ARN as SigningKeySecretArn; for KMS: its ARN
as SigningKeyKmsKeyArn) under a new
VERIFIER_KEY_VERSION, and add the old version and public key (the agent card lists it) to
VERIFIER_PREVIOUS_KEYS, so receipts signed before stay verifiable (docs/deploying.md).`

func runKeygen(args []string, stdout, stderr io.Writer) int {
	c := newCommand("keygen", keygenSynopsis)
	out := c.String("out", "", "write the private key `FILE` (mode 0600; never overwrites) and its .pub beside it")
	version := c.String("version", "", "key version label (default v1-<yyyy-mm-dd>)")
	secret := c.String("secret", "", "instead of a file, create a Secrets Manager secret of this `NAME` holding the seed")
	kmsKey := c.String("kms-key-id", "", "with --out: print the command that encrypts the seed under this KMS key `ID`")
	if code, ok := c.parse(args, stdout, stderr); !ok {
		return code
	}
	switch {
	case *out == "" && *secret == "":
		return c.misuse(stderr, "--out or --secret is required")
	case *out != "" && *secret != "":
		return c.misuse(stderr, "give --out or --secret, not both")
	case *kmsKey != "" && *out == "":
		return c.misuse(stderr, "--kms-key-id goes with --out")
	case c.NArg() != 0:
		return c.misuse(stderr, "unexpected argument %q", c.Arg(0))
	}
	if *version == "" {
		*version = "v1-" + time.Now().UTC().Format("2006-01-02")
	}
	k, err := keys.Generate(*version, rand.Reader)
	if err != nil {
		return c.errorf(stderr, exitError, "%v", err)
	}
	pub := base64.StdEncoding.EncodeToString(k.Public().Key)
	if *secret != "" {
		ctx := context.Background()
		// On a workstation the SDK's full loader applies: profiles, SSO, the usual variables.
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return c.errorf(stderr, exitError, "load AWS configuration: %v", err)
		}
		// The same Secrets Manager client as the functions', so there is one way to talk to it.
		sm, err := keys.NewSecretsManager(awsCfg)
		if err != nil {
			return c.errorf(stderr, exitError, "%v", err)
		}
		arn, err := keys.CreateSecret(ctx, sm, *secret, k)
		if err != nil {
			return c.errorf(stderr, exitError, "%v", err)
		}
		fmt.Fprintf(stdout, "created secret %s: key version %s, public key %s\n", arn, k.Version, pub)
		fmt.Fprintf(stdout, "deploy with: sam deploy --parameter-overrides KeySource=secretsmanager SigningKeySecretArn=%s KeyVersion=%s\n", arn, k.Version)
		return exitOK
	}
	pubFile := publicKeyPath(*out)
	// Both files or neither: the public file is checked first, so that a refusal leaves nothing.
	if _, err := os.Lstat(pubFile); err == nil {
		return c.errorf(stderr, exitError, "%s exists; refusing to overwrite a public key", pubFile)
	}
	if err := keys.WriteFile(*out, k); err != nil {
		return c.errorf(stderr, exitError, "%v", err)
	}
	if err := writeNew(pubFile, []byte(pub+"\n"), 0o644); err != nil {
		os.Remove(*out)
		return c.errorf(stderr, exitError, "write public key: %v", err)
	}
	fmt.Fprintf(stdout, "wrote %s (private, mode 0600: never commit it) and %s (public): key version %s\n", *out, pubFile, k.Version)
	if *kmsKey != "" {
		fmt.Fprintf(stdout, "encrypt the seed under KMS, then delete the plaintext copies:\n"+
			"  jq -r .seed %s | base64 -d > seed.bin\n"+
			"  aws kms encrypt --key-id %s --plaintext fileb://seed.bin --query CiphertextBlob --output text\n"+
			"  rm seed.bin\n"+
			"and deploy with VERIFIER_SIGNING_KEY=kms:<that output> VERIFIER_KEY_VERSION=%s\n"+
			"(template.yaml: KeySource=kms SigningKey=kms:<that output> SigningKeyKmsKeyArn=<the key's ARN>)\n", *out, *kmsKey, k.Version)
	}
	return exitOK
}

// publicKeyPath is where keygen puts the public half of the key file at out, as cosign does:
// NAME.key.json (or NAME.json, or NAME) gives NAME.pub.
func publicKeyPath(out string) string {
	name := strings.TrimSuffix(out, ".json")
	name = strings.TrimSuffix(name, ".key")
	return name + ".pub"
}

// writeNew writes a file that must not exist yet.
func writeNew(name string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// signingKey reads check's --key: a key file from keygen, or else the base64 of a 32-byte seed
// signing as version. A seed on the command line shows in process listings and shell history,
// so that form warns on stderr. Errors never contain the argument, which may be a seed.
func signingKey(arg, version string, stderr io.Writer) (receipt.Key, error) {
	if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
		k, err := keys.ReadFile(arg)
		if err == nil && version != "" && version != k.Version {
			return receipt.Key{}, fmt.Errorf("the key file holds version %s, not --key-version %s", k.Version, version)
		}
		return k, err
	}
	seed, err := base64.StdEncoding.Strict().DecodeString(arg)
	if err != nil || len(seed) != ed25519.SeedSize {
		return receipt.Key{}, errors.New("no such key file, and not the base64 of a 32-byte seed either")
	}
	if version == "" {
		return receipt.Key{}, errors.New("a base64 seed needs --key-version (a key file names its own)")
	}
	fmt.Fprintln(stderr, "verifier check: warning: a seed given on the command line shows in process listings and shell history; prefer a key file")
	return keys.FromSeed(version, seed)
}

// publicKey reads receipt verify's --key: the base64 public key itself, or a file holding it
// (NAME.pub from keygen, or a key file, whose publicKey is used). It stands for version, the one
// the receipt names.
func publicKey(arg, version string) (receipt.PublicKey, error) {
	if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
		f, err := os.Open(arg)
		if err != nil {
			return receipt.PublicKey{}, err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxPublicKeyFile))
		if err != nil {
			return receipt.PublicKey{}, fmt.Errorf("read %s: %w", arg, err)
		}
		var kf keys.File
		if json.Unmarshal(b, &kf) == nil && kf.PublicKey != "" {
			return keys.ParsePublicKey(version, kf.PublicKey)
		}
		pk, err := keys.ParsePublicKey(version, strings.TrimSpace(string(b)))
		if err != nil {
			return receipt.PublicKey{}, fmt.Errorf("%s holds no public key: %w", arg, err)
		}
		return pk, nil
	}
	return keys.ParsePublicKey(version, arg)
}
