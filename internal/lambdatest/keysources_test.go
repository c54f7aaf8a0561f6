package lambdatest_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/kmstest"
	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/reporttest"
	"github.com/agent-output-verifier/verifier/internal/secretstest"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// signingSecret is the Secrets Manager secret the secretsmanager: source names, holding the
// base64 seed (`verifier keygen --secret`); generatedSecret holds the same kind of key as the
// secret template.yaml creates by default does, a value Secrets Manager generated.
const (
	signingSecret   = "verifier/signing-key"
	generatedSecret = "agent-output-verifier/receipt-signing-key"
)

// The verify function runs under the emulator with each AWS key source, each served by a local
// server of its API: secretsmanager: (the seed in a secret), kms: (the seed encrypted with KMS,
// decrypted at start-up) and kms-sign: (the key inside KMS, one Sign call per receipt). All hold
// the same Ed25519 key, and each function's receipt verifies under it. (The file: source is the
// one TestLambdaMatchesLocal runs.) Then the template's default source and kms-sign: on a long
// failing report (defaultSourceSignsInFull).
func TestLambdaKeySources(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the verify Lambda binary")
	}
	rie := emulatorOrSkip(t)
	r := root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	seed := make([]byte, 32)
	rand.Read(seed)
	key, err := keys.FromSeed(keyVersion, seed)
	if err != nil {
		t.Fatal(err)
	}
	kms := kmstest.StartWithKey(t, key.Private)
	smURL := secretstest.Start(t, map[string]string{signingSecret: base64.StdEncoding.EncodeToString(seed)}).URL
	dynamoDB := dynalitetest.Start(t)
	bin, err := lambdatest.Build(ctx, r, "verify", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	raw, ev := readEvent(t, "verify-pass.json")

	for _, source := range []string{
		"secretsmanager:" + signingSecret,
		"kms:" + base64.StdEncoding.EncodeToString(kms.Ciphertext(seed)),
		"kms-sign:alias/verifier-receipts",
	} {
		name := source[:strings.IndexByte(source, ':')]
		t.Run(name, func(t *testing.T) {
			e := emulateVerify(ctx, t, rie, bin, dynamoDB, source, smURL, kms.URL)
			// The first invoke starts the function (kms-sign: signs once then, for the caller-id
			// salt); the second is one receipt.
			var signs int64
			for i := range 2 {
				signs = kms.Signs()
				out, err := e.Invoke(ctx, raw)
				if err != nil {
					t.Fatal(err)
				}
				lam := fromLambda(t, out)
				if lam.status != http.StatusOK {
					t.Fatalf("invoke %d: status %d: %s", i, lam.status, lam.body)
				}
				if err := receipt.VerifyReceipt(lam.body, []receipt.PublicKey{key.Public()}, []byte(ev.Body)); err != nil {
					t.Errorf("invoke %d: the receipt does not verify under the key: %v", i, err)
				}
			}
			// Only kms-sign: signs in KMS: one Sign call per receipt.
			if want := map[bool]int64{true: 1, false: 0}[name == "kms-sign"]; kms.Signs()-signs != want {
				t.Errorf("%d KMS Sign calls for one receipt, want %d", kms.Signs()-signs, want)
			}
		})
	}
	t.Run("default source signs in full", func(t *testing.T) { defaultSourceSignsInFull(ctx, t, rie, bin, dynamoDB, kms) })
}

// emulateVerify runs the verify function bin under the emulator, on a table of its own, with the
// signing key source and the Secrets Manager and KMS it reads the key from.
func emulateVerify(ctx context.Context, t *testing.T, rie, bin, dynamoDB, source, smURL, kmsURL string) *lambdatest.Emulator {
	t.Helper()
	table := dynalitetest.TableName(t)
	if err := dynamo.CreateTable(ctx, dynalitetest.Client(dynamoDB), table); err != nil {
		t.Fatal(err)
	}
	vars, err := lambdatest.LocalVars(root(t), "verify", lambdatest.Here{DynamoDB: dynamoDB, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	vars["VERIFIER_SIGNING_KEY"], vars["VERIFIER_KEY_VERSION"] = source, keyVersion
	vars["AWS_ENDPOINT_URL_SECRETS_MANAGER"], vars["AWS_ENDPOINT_URL_KMS"] = smURL, kmsURL
	return runEmulated(ctx, t, rie, bin, "verify", vars)
}

// defaultSourceSignsInFull runs the verify function bin under the emulator with the template's
// default key source (the secret the stack creates: a value Secrets Manager generated, named by
// its ARN, read through the Secrets Manager API): it answers a failing invoice of 50 line items
// with 10 wrong in full, every error and repair hint, nothing omitted, far over KMS's 4096
// bytes, and the receipt verifies under the key the secret derives. Under the opt-in kms-sign:
// the same answer is shortened to fit, and says so.
func defaultSourceSignsInFull(ctx context.Context, t *testing.T, rie, bin, dynamoDB string, kms *kmstest.Server) {
	value := `{"kdf":"HKDF-SHA256","secret":"` + strings.Repeat("Zq7", 21) + `X"}` // 64 letters and digits
	sm := secretstest.Start(t, map[string]string{generatedSecret: value})
	key, err := keys.FromSecretsManager(ctx, secretValue(value), generatedSecret, keyVersion)
	if err != nil {
		t.Fatal(err)
	}
	body := reporttest.FailingInvoice(50, 10)
	want := reporttest.FailuresOf(10)
	var ev map[string]any
	raw, _ := readEvent(t, "verify-pass.json")
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	ev["body"] = body
	headers, _ := ev["headers"].(map[string]any)
	headers["content-length"] = strconv.Itoa(len(body))
	event, _ := json.Marshal(ev)

	for _, c := range []struct {
		name, source string
		pub          receipt.PublicKey
	}{
		{"secretsmanager", "secretsmanager:" + secretstest.ARN(generatedSecret), key.Public()},
		{"kms-sign", "kms-sign:alias/verifier-receipts", receipt.PublicKey{Version: keyVersion, Key: kms.Public()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := emulateVerify(ctx, t, rie, bin, dynamoDB, c.source, sm.URL, kms.URL)
			out, err := e.Invoke(ctx, event)
			if err != nil {
				t.Fatal(err)
			}
			lam := fromLambda(t, out)
			if lam.status != http.StatusOK {
				t.Fatalf("status %d: %s", lam.status, lam.body)
			}
			if err := receipt.VerifyReceipt(lam.body, []receipt.PublicKey{c.pub}, []byte(body)); err != nil {
				t.Errorf("the receipt does not verify under the key: %v", err)
			}
			if c.name == "secretsmanager" {
				reporttest.InFull(t, lam.body, want)
				if len(lam.body) <= keys.MaxKMSMessage {
					t.Errorf("the answer is %d bytes, want one over %d", len(lam.body), keys.MaxKMSMessage)
				}
			} else {
				reporttest.Shortened(t, lam.body, want, keys.MaxKMSMessage)
			}
			t.Logf("%s: %d bytes, shown %v", c.name, len(lam.body), reporttest.ShapeOf(t, lam.body).Shown)
		})
	}
}

// secretValue is a Secrets Manager holding one value, to derive the key the test expects.
type secretValue string

func (v secretValue) GetSecretValue(context.Context, string) ([]byte, error) { return []byte(v), nil }
