package app_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/agent-output-verifier/verifier/internal/kmstest"
	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/app/embedded"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

func load(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A key source that cannot be read stops start-up with a clear error and leaves nothing behind:
// no store is opened, so no half-started service can answer.
func TestKeySourceUnavailableAtStartup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": dir, "VERIFIER_SIGNING_KEY": "secretsmanager:verifier-key", "VERIFIER_KEY_VERSION": "v1"})
	opened := false
	svc, closeFn, err := app.Build(context.Background(), cfg, app.Options{
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		KeySource: func(context.Context, string, string) (receipt.Key, error) {
			return receipt.Key{}, errors.New("read secret verifier-key: AccessDeniedException")
		},
		OpenStore: func(context.Context, config.Config, func() time.Time) (app.Store, error) {
			opened = true
			return app.Store{}, nil
		},
	})
	if err == nil || svc != nil || closeFn != nil || !strings.Contains(err.Error(), "load signing key") {
		t.Fatalf("got %v, %v; want a key error and no service", svc, err)
	}
	if opened {
		t.Error("the store was opened although the key could not be loaded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the data directory was created: %v", err)
	}
}

// A binary without the embedded store's opener (every Lambda function: app.ServeLambda passes the
// AWS opener alone) refuses VERIFIER_STORE=bolt with an error that says so, and creates nothing.
func TestNoEmbeddedStoreWithoutItsOpener(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key.json")
	k, err := keys.Generate("v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WriteFile(keyFile, k); err != nil {
		t.Fatal(err)
	}
	aws, err := app.NewAWS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]app.StoreOpener{"no opener": nil, "the AWS opener": aws.OpenStore} {
		dir := filepath.Join(t.TempDir(), "data")
		cfg := load(t, map[string]string{"VERIFIER_STORE": "bolt", "VERIFIER_DATA_DIR": dir, "VERIFIER_SIGNING_KEY": "file:" + keyFile})
		svc, closeFn, err := app.Build(context.Background(), cfg, app.Options{OpenStore: open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
		if err == nil || svc != nil || closeFn != nil || !strings.Contains(err.Error(), "no embedded store") {
			t.Errorf("%s: got %v, %v; want a no-embedded-store error and no service", name, svc, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: the data directory was created: %v", name, err)
		}
	}
}

func TestMissingKeyFileIsAnErrorOnLambda(t *testing.T) {
	cfg := load(t, map[string]string{"VERIFIER_SIGNING_KEY": "file:" + filepath.Join(t.TempDir(), "absent.json")})
	if _, _, err := app.Build(context.Background(), cfg, app.Options{}); err == nil || !strings.Contains(err.Error(), "load signing key") {
		t.Fatalf("got %v, want a clear key error (only the local server creates a dev key)", err)
	}
}

// Only the default key file is generated: a key file named in VERIFIER_SIGNING_KEY that does not
// exist (a mistyped path) stops the local server too, and a file whose version is not
// VERIFIER_KEY_VERSION is refused.
func TestNamedKeyFileNeverGenerated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "reel-key.json")
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": dir, "VERIFIER_SIGNING_KEY": "file:" + path})
	opt := app.Options{CreateDevKey: true, OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	if _, _, err := app.Build(context.Background(), cfg, opt); err == nil || !strings.Contains(err.Error(), "load signing key") {
		t.Fatalf("a named key file that does not exist: %v, want a key error", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the named key file was created: %v", err)
	}
	k, err := keys.Generate("v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WriteFile(path, k); err != nil {
		t.Fatal(err)
	}
	cfg = load(t, map[string]string{"VERIFIER_DATA_DIR": dir, "VERIFIER_SIGNING_KEY": "file:" + path, "VERIFIER_KEY_VERSION": "v2"})
	if _, _, err := app.Build(context.Background(), cfg, opt); err == nil || !strings.Contains(err.Error(), `"v1"`) {
		t.Fatalf("a key file of version v1 under VERIFIER_KEY_VERSION v2: %v, want a version error", err)
	}
	cfg = load(t, map[string]string{"VERIFIER_DATA_DIR": dir, "VERIFIER_SIGNING_KEY": "file:" + path, "VERIFIER_KEY_VERSION": "v1"})
	svc, closeFn, err := app.Build(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if !svc.Keys().Current.Private.Equal(k.Private) {
		t.Error("the named key file's key is not the one in use")
	}
}

// A data directory others may write in is refused before the store is opened: another user could
// have put a store (allowances, payment reservations) or a key there.
func TestDataDirectoryOthersMayWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": dir})
	_, _, err := app.Build(context.Background(), cfg, app.Options{CreateDevKey: true, OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("a world-writable data directory: %v, want a refusal", err)
	}
	for _, name := range []string{"verifier.db", "signing-key.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s was created: %v", name, err)
		}
	}
}

func TestDevKeyCreatedOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": dir})
	svc1, close1, err := app.Build(context.Background(), cfg, app.Options{CreateDevKey: true, OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	close1()
	svc2, close2, err := app.Build(context.Background(), cfg, app.Options{CreateDevKey: true, OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer close2()
	if !svc1.Keys().Current.Private.Equal(svc2.Keys().Current.Private) {
		t.Fatal("a second start made a new key instead of reusing the file")
	}
	if !svc2.FreeOnly() {
		t.Error("a deployment without a payee must run free-only")
	}
}

// The Lambda wiring end to end against DynamoDB served by dynalite: the SDK configuration comes
// from the environment alone (region, credentials, endpoint override), as on Lambda.
func TestDynamoWiringFromEnvironment(t *testing.T) {
	endpoint := dynalitetest.Start(t)
	table := dynalitetest.TableName(t)
	if err := dynamo.CreateTable(context.Background(), dynalitetest.Client(endpoint), table); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
	keyFile := filepath.Join(t.TempDir(), "key.json")
	k, _ := keys.Generate("v-dyn", rand.Reader)
	if err := keys.WriteFile(keyFile, k); err != nil {
		t.Fatal(err)
	}
	cfg := load(t, map[string]string{"VERIFIER_STORE": "dynamodb", "VERIFIER_TABLE": table, "VERIFIER_SIGNING_KEY": "file:" + keyFile})
	aws, err := app.NewAWS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	svc, closeFn, err := app.Build(context.Background(), cfg, app.Options{KeySource: aws.KeySource, OpenStore: aws.OpenStore, Engine: engine.New, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	srv := httptest.NewServer(httpapi.Handler(svc))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/verify/schema", "application/json",
		strings.NewReader(`{"task_id":"t","agent_id":"dyn-agent","expected_schema":{"type":"number"},"submitted_output":3}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Free-Allowance-Remaining") != "999" {
		t.Fatalf("verify over DynamoDB: %d, remaining %q", resp.StatusCode, resp.Header.Get("Free-Allowance-Remaining"))
	}
	resp, err = http.Get(srv.URL + "/reputation/dyn-agent")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"verifications":1`) {
		t.Fatalf("history over DynamoDB: %d %s", resp.StatusCode, b)
	}
}

// The AWS key sources find their endpoints in the environment, as on Lambda and in the e2e tests:
// AWS_ENDPOINT_URL_SECRETS_MANAGER and AWS_ENDPOINT_URL_KMS, signed with the environment's
// credentials.
func TestAWSKeySourcesFromEnvironment(t *testing.T) {
	seed := strings.Repeat("\x07", 32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDENV/") {
			w.WriteHeader(403)
			io.WriteString(w, `{"__type":"MissingAuthenticationTokenException"}`)
			return
		}
		switch r.Header.Get("X-Amz-Target") {
		case "secretsmanager.GetSecretValue":
			fmt.Fprintf(w, `{"SecretString":%q}`, base64.StdEncoding.EncodeToString([]byte(seed)))
		case "TrentService.Decrypt":
			fmt.Fprintf(w, `{"Plaintext":%q}`, base64.StdEncoding.EncodeToString([]byte(seed)))
		default:
			w.WriteHeader(400)
			io.WriteString(w, `{"__type":"UnknownOperationException"}`)
		}
	}))
	defer srv.Close()
	t.Setenv("AWS_REGION", "eu-north-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", srv.URL)
	t.Setenv("AWS_ENDPOINT_URL_KMS", srv.URL)
	aws, err := app.NewAWS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := keys.FromSeed("v9", []byte(seed))
	for _, source := range []string{"secretsmanager:verifier-key", "kms:" + base64.StdEncoding.EncodeToString([]byte("blob"))} {
		got, err := aws.KeySource(context.Background(), source, "v9")
		if err != nil || !got.Private.Equal(want.Private) {
			t.Errorf("%s: %v", strings.SplitN(source, ":", 2)[0], err)
		}
	}
}

// Build hands its one clock to every part that reads time: at every epoch, far before and after
// any day the suite runs on, the store, the allowance and its headers agree on the day, the
// allowance runs out, and the next UTC day brings a fresh one. Over bolt and over DynamoDB
// (dynalite), each of which would refuse a counter whose day its own clock had left behind.
func TestOneClockAtEveryEpoch(t *testing.T) {
	endpoint := dynalitetest.Start(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
	aws, err := app.NewAWS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body := `{"task_id":"t","agent_id":"clock-agent","expected_schema":{"type":"number"},"submitted_output":3}`
	for _, storeName := range []string{"bolt", "dynamodb"} {
		for _, at := range testclock.Epochs() {
			t.Run(storeName+"/"+at.Format(time.DateOnly), func(t *testing.T) {
				env := map[string]string{"VERIFIER_STORE": storeName, "VERIFIER_DATA_DIR": filepath.Join(t.TempDir(), "data"),
					"VERIFIER_FREE_CALLS_PER_DAY": "1"}
				if storeName == "dynamodb" {
					table := dynalitetest.TableName(t)
					if err := dynamo.CreateTable(context.Background(), dynalitetest.Client(endpoint), table); err != nil {
						t.Fatal(err)
					}
					keyFile := filepath.Join(t.TempDir(), "key.json")
					k, _ := keys.Generate("v-clock", rand.Reader)
					if err := keys.WriteFile(keyFile, k); err != nil {
						t.Fatal(err)
					}
					env["VERIFIER_TABLE"], env["VERIFIER_SIGNING_KEY"] = table, "file:"+keyFile
				}
				clk := testclock.New(at)
				svc, closeFn, err := app.Build(context.Background(), load(t, env), app.Options{CreateDevKey: true, Engine: engine.New, Now: clk.Now,
					KeySource: aws.KeySource, OpenStore: embedded.Opener{Other: aws.OpenStore}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				defer closeFn()
				srv := httptest.NewServer(httpapi.Handler(svc))
				defer srv.Close()
				post := func() *http.Response {
					t.Helper()
					resp, err := http.Post(srv.URL+"/verify/schema", "application/json", strings.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					return resp
				}
				midnight := time.Date(at.Year(), at.Month(), at.Day()+1, 0, 0, 0, 0, time.UTC)
				if resp := post(); resp.StatusCode != 200 || resp.Header.Get("Free-Allowance-Resets") != midnight.Format(time.RFC3339) {
					t.Fatalf("first call: %d, resets %q; want 200, %s", resp.StatusCode, resp.Header.Get("Free-Allowance-Resets"), midnight.Format(time.RFC3339))
				}
				// Free-only: the spent allowance is a 429 until the clock's next midnight, a minute away.
				if resp := post(); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" {
					t.Fatalf("second call: %d, Retry-After %q; want 429, 60", resp.StatusCode, resp.Header.Get("Retry-After"))
				}
				clk.Advance(2 * time.Minute)
				next := midnight.AddDate(0, 0, 1).Format(time.RFC3339)
				if resp := post(); resp.StatusCode != 200 || resp.Header.Get("Free-Allowance-Remaining") != "0" || resp.Header.Get("Free-Allowance-Resets") != next {
					t.Fatalf("next day: %d, remaining %q, resets %q; want 200, 0, %s", resp.StatusCode,
						resp.Header.Get("Free-Allowance-Remaining"), resp.Header.Get("Free-Allowance-Resets"), next)
				}
			})
		}
	}
}

// The facilitator's auth header comes from the Secrets Manager secret X402_FACILITATOR_AUTH_SECRET
// names, read once by Build through the AWS client (the endpoint from the environment, as on
// Lambda): a good value starts the service, a malformed one or an unreadable secret stops
// start-up with an error that never repeats the value.
func TestFacilitatorAuthHeaderFromSecret(t *testing.T) {
	const secretValue = "X-Api-Key: sekret-value-123"
	values := map[string]string{"good": secretValue, "malformed": "sekret-value-123 without a colon"}
	var reads []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ SecretId string }
		if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || json.NewDecoder(r.Body).Decode(&in) != nil {
			w.WriteHeader(400)
			io.WriteString(w, `{"__type":"UnknownOperationException"}`)
			return
		}
		reads = append(reads, in.SecretId)
		v, ok := values[in.SecretId]
		if !ok {
			w.WriteHeader(400)
			io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"no such secret"}`)
			return
		}
		fmt.Fprintf(w, `{"SecretString":%q}`, v)
	}))
	defer srv.Close()
	t.Setenv("AWS_REGION", "eu-north-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", srv.URL)
	aws, err := app.NewAWS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ secret, wantErr string }{
		{"good", ""},
		{"malformed", `X402_FACILITATOR_AUTH_SECRET names must be "Name: value"`},
		{"missing", "read the facilitator auth secret"},
	} {
		t.Run(tc.secret, func(t *testing.T) {
			reads = nil
			cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": t.TempDir(), "X402_FACILITATOR_AUTH_SECRET": tc.secret})
			svc, closeFn, err := app.Build(context.Background(), cfg, app.Options{CreateDevKey: true, ReadSecret: aws.ReadSecret,
				OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
			if len(reads) != 1 || reads[0] != tc.secret {
				t.Errorf("secrets read: %q, want exactly [%q]", reads, tc.secret)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				closeFn()
				return
			}
			if err == nil || svc != nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "sekret") {
				t.Errorf("the error repeats the secret's value: %v", err)
			}
		})
	}
	// A binary without a secret reader refuses the variable instead of ignoring it.
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": t.TempDir(), "X402_FACILITATOR_AUTH_SECRET": "good"})
	if _, _, err := app.Build(context.Background(), cfg, app.Options{CreateDevKey: true, OpenStore: embedded.Opener{}.Open}); err == nil || !strings.Contains(err.Error(), "reads no Secrets Manager secret") {
		t.Errorf("got %v, want a refusal", err)
	}
}

// The log key comes from KMS through the signing key's own key source (VERIFIER_LOG_KEY
// kms-sign:, read by AWS.KeySource): the service's checkpoints are signed inside the test KMS
// and open under the verifier key the agent card publishes, which is KMS's public half.
func TestLogKeyFromKMS(t *testing.T) {
	kms := kmstest.Start(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDLOG")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL_KMS", kms.URL)
	aws, err := app.NewAWS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": filepath.Join(t.TempDir(), "data"),
		"VERIFIER_LOG_KEY": "kms-sign:alias/verifier-log", "VERIFIER_LOG_KEY_VERSION": "log-kms"})
	svc, closeFn, err := app.Build(context.Background(), cfg, app.Options{CreateDevKey: true, KeySource: aws.KeySource,
		OpenStore: embedded.Opener{}.Open, Engine: engine.New, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	origin, vkey := svc.LogIdentity()
	want, _ := note.NewEd25519VerifierKey(origin, kms.Public())
	if vkey != want {
		t.Fatalf("verifier key %s, want KMS's public half %s", vkey, want)
	}
	srv := httptest.NewServer(httpapi.Handler(svc))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/verify/schema", "application/json",
		strings.NewReader(`{"task_id":"t","agent_id":"log-agent","expected_schema":{"type":"number"},"submitted_output":3}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	before := kms.Signs()
	if n, err := svc.Sequence(context.Background()); err != nil || n != 1 {
		t.Fatalf("sequenced %d leaves (%v), want 1", n, err)
	}
	if kms.Signs() == before {
		t.Error("the checkpoint was not signed in KMS")
	}
	signed, err := svc.LogCheckpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := translog.OpenCheckpoint(signed, vkey); err != nil || cp.Size != 1 {
		t.Errorf("checkpoint %+v (%v), want one leaf under the KMS key", cp, err)
	}
}
