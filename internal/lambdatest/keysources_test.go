package lambdatest_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/kmstest"
	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// signingSecret is the Secrets Manager secret the secretsmanager: source names.
const signingSecret = "verifier/signing-key"

// secretsManager is a Secrets Manager for the test: GetSecretValue of signingSecret, in the
// protocol's shape (JSON 1.1, SecretString), for SigV4-signed requests only.
func secretsManager(t *testing.T, value string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		var in struct{ SecretId string }
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &in) != nil || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
			!strings.Contains(r.Header.Get("Authorization"), "/secretsmanager/aws4_request") || in.SecretId != signingSecret {
			w.WriteHeader(400)
			io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ARN": "arn:aws:secretsmanager:us-east-1:111122223333:secret:" + signingSecret + "-a1b2c3",
			"Name": signingSecret, "SecretString": value, "VersionId": "EXAMPLE1-90ab-cdef-fedc-ba987SECRET1"})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The verify function runs under the emulator with each AWS key source, each served by a local
// server of its API: secretsmanager: (the seed in a secret), kms: (the seed encrypted with KMS,
// decrypted at start-up) and kms-sign: (the key inside KMS, one Sign call per receipt). All hold
// the same Ed25519 key, and each function's receipt verifies under it. (The file: source is the
// one TestLambdaMatchesLocal runs.)
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
	smURL := secretsManager(t, base64.StdEncoding.EncodeToString(seed))
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
			table := dynalitetest.TableName(t)
			if err := dynamo.CreateTable(ctx, dynalitetest.Client(dynamoDB), table); err != nil {
				t.Fatal(err)
			}
			vars, err := lambdatest.LocalVars(r, "verify", lambdatest.Here{DynamoDB: dynamoDB, Table: table})
			if err != nil {
				t.Fatal(err)
			}
			vars["VERIFIER_SIGNING_KEY"], vars["VERIFIER_KEY_VERSION"] = source, keyVersion
			vars["AWS_ENDPOINT_URL_SECRETS_MANAGER"], vars["AWS_ENDPOINT_URL_KMS"] = smURL, kms.URL
			e := runEmulated(ctx, t, rie, bin, "verify", vars)
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
}
