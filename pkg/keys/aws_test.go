package keys

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// awsJSONServer is a test server speaking the AWS JSON 1.1 protocol that Secrets Manager and KMS
// use; it cannot be the real service here, so it answers the few operations the key sources call.
// handle returns the response object, or an AWS error type name.
func awsJSONServer(t *testing.T, handle func(op string, in map[string]any) (map[string]any, string)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		op := target[strings.LastIndexByte(target, '.')+1:]
		var in map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &in)
		out, errType := handle(op, in)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if errType != "" {
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]string{"__type": errType, "message": "test server: " + errType})
			return
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// awsJSONServerChecking is awsJSONServer with check run on every request first.
func awsJSONServerChecking(t *testing.T, check func(*http.Request), handle func(op string, in map[string]any) (map[string]any, string)) string {
	t.Helper()
	url := awsJSONServer(t, handle)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check(r)
		req, _ := http.NewRequest(r.Method, url, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(502)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL
}

// awsJSONServerRaw answers each operation with a status and a raw body, for malformed answers.
func awsJSONServerRaw(t *testing.T, handle func(op string, body []byte) (int, string)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		b, _ := io.ReadAll(r.Body)
		status, body := handle(target[strings.LastIndexByte(target, '.')+1:], b)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func testAWSConfig(endpoint string) aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1, BaseEndpoint: aws.String(endpoint)}
}

func testSecretsManager(t *testing.T, cfg aws.Config) *SecretsManager {
	t.Helper()
	c, err := NewSecretsManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testKMS(t *testing.T, cfg aws.Config) *KMS {
	t.Helper()
	c, err := NewKMS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var testSeed = bytes.Repeat([]byte{42}, 32)

func TestFromSecretsManager(t *testing.T) {
	secrets := map[string]string{
		"seed-b64": base64.StdEncoding.EncodeToString(testSeed),
		"garbage":  "not a seed",
	}
	k, _ := FromSeed("v7", testSeed)
	kf, _ := json.Marshal(File{KeyVersion: "v7", Algorithm: "Ed25519", PublicKey: base64.StdEncoding.EncodeToString(k.Public().Key), Seed: base64.StdEncoding.EncodeToString(testSeed)})
	secrets["key-file"] = string(kf)
	url := awsJSONServer(t, func(op string, in map[string]any) (map[string]any, string) {
		if op != "GetSecretValue" {
			return nil, "InvalidRequestException"
		}
		v, ok := secrets[in["SecretId"].(string)]
		if !ok {
			return nil, "ResourceNotFoundException"
		}
		return map[string]any{"Name": in["SecretId"], "SecretString": v}, ""
	})
	c := testSecretsManager(t, testAWSConfig(url))
	want := ed25519.NewKeyFromSeed(testSeed)
	for _, id := range []string{"seed-b64", "key-file"} {
		got, err := FromSecretsManager(context.Background(), c, id, "v7")
		if err != nil || !got.Private.Equal(want) || got.Version != "v7" {
			t.Errorf("%s: got %v, %v", id, got.Version, err)
		}
	}
	if _, err := FromSecretsManager(context.Background(), c, "key-file", "v8"); err == nil {
		t.Error("a key file of another version was accepted")
	}
	_, err := FromSecretsManager(context.Background(), c, "garbage", "v7")
	if err == nil || strings.Contains(err.Error(), "not a seed") {
		t.Errorf("garbage secret: %v (must fail without echoing the value)", err)
	}
	if _, err := FromSecretsManager(context.Background(), c, "missing", "v7"); err == nil || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Errorf("missing secret: %v", err)
	}
}

func TestFromKMS(t *testing.T) {
	// The test server "encrypts" by prefixing a marker, enough to show the blob round-trips.
	url := awsJSONServer(t, func(op string, in map[string]any) (map[string]any, string) {
		blob, _ := base64.StdEncoding.DecodeString(in["CiphertextBlob"].(string))
		if op != "Decrypt" || !bytes.HasPrefix(blob, []byte("ENC:")) {
			return nil, "InvalidCiphertextException"
		}
		return map[string]any{"KeyId": "arn:aws:kms:us-east-1:111122223333:key/test", "Plaintext": base64.StdEncoding.EncodeToString(blob[4:])}, ""
	})
	c := testKMS(t, testAWSConfig(url))
	for name, plain := range map[string][]byte{"raw": testSeed, "base64": []byte(base64.StdEncoding.EncodeToString(testSeed))} {
		blob := base64.StdEncoding.EncodeToString(append([]byte("ENC:"), plain...))
		got, err := FromKMS(context.Background(), c, blob, "v2")
		if err != nil || !got.Private.Equal(ed25519.NewKeyFromSeed(testSeed)) {
			t.Errorf("%s plaintext: %v", name, err)
		}
	}
	if _, err := FromKMS(context.Background(), c, base64.StdEncoding.EncodeToString([]byte("tampered")), "v2"); err == nil {
		t.Error("an undecryptable blob was accepted")
	}
	if _, err := FromKMS(context.Background(), c, "%%%", "v2"); err == nil {
		t.Error("a non-base64 ciphertext was accepted")
	}
	short := base64.StdEncoding.EncodeToString([]byte("ENC:short"))
	if _, err := FromKMS(context.Background(), c, short, "v2"); err == nil {
		t.Error("a short plaintext was accepted")
	}
}

func TestCreateSecret(t *testing.T) {
	var stored string
	url := awsJSONServer(t, func(op string, in map[string]any) (map[string]any, string) {
		switch op {
		case "CreateSecret":
			stored = in["SecretString"].(string)
			return map[string]any{"ARN": "arn:aws:secretsmanager:us-east-1:111122223333:secret:" + in["Name"].(string), "Name": in["Name"]}, ""
		case "GetSecretValue":
			return map[string]any{"SecretString": stored}, ""
		}
		return nil, "InvalidRequestException"
	})
	c := testSecretsManager(t, testAWSConfig(url))
	k, _ := FromSeed("v3", testSeed)
	arn, err := CreateSecret(context.Background(), c, "verifier-signing-key", k)
	if err != nil || !strings.HasSuffix(arn, ":secret:verifier-signing-key") {
		t.Fatalf("create: %q %v", arn, err)
	}
	got, err := FromSecretsManager(context.Background(), c, arn, "v3")
	if err != nil || !got.Private.Equal(k.Private) {
		t.Fatalf("read back: %v", err)
	}
}

// Every call the key sources make is signed for its own service: the server checks the SigV4
// credential scope (the signature itself is the SDK's SigV4 signer's).
func TestAWSCallsAreSigned(t *testing.T) {
	var seen []string
	url := awsJSONServerChecking(t, func(r *http.Request) {
		auth := r.Header.Get("Authorization")
		target := r.Header.Get("X-Amz-Target")
		service := map[string]string{"secretsmanager.GetSecretValue": "secretsmanager", "secretsmanager.CreateSecret": "secretsmanager", "TrentService.Decrypt": "kms"}[target]
		scope := "Credential=AKIDTEST/" + time.Now().UTC().Format("2006") // year: a test across midnight still passes
		if service == "" || !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 "+scope) ||
			!strings.Contains(auth, "/us-east-1/"+service+"/aws4_request, SignedHeaders=") || !strings.Contains(auth, "x-amz-target") {
			t.Errorf("%s: Authorization %q", target, auth)
		}
		seen = append(seen, target)
	}, func(op string, in map[string]any) (map[string]any, string) {
		switch op {
		case "GetSecretValue":
			return map[string]any{"SecretString": base64.StdEncoding.EncodeToString(testSeed)}, ""
		case "CreateSecret":
			if tok, _ := in["ClientRequestToken"].(string); len(tok) < 32 {
				t.Errorf("CreateSecret without an idempotency token: %v", in["ClientRequestToken"])
			}
			return map[string]any{"ARN": "arn:aws:secretsmanager:us-east-1:1:secret:x"}, ""
		case "Decrypt":
			return map[string]any{"Plaintext": base64.StdEncoding.EncodeToString(testSeed)}, ""
		}
		return nil, "InvalidRequestException"
	})
	cfg := testAWSConfig(url)
	cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")
	sm, km := testSecretsManager(t, cfg), testKMS(t, cfg)
	ctx := context.Background()
	if _, err := FromSecretsManager(ctx, sm, "s", "v1"); err != nil {
		t.Error(err)
	}
	k, _ := FromSeed("v1", testSeed)
	if _, err := CreateSecret(ctx, sm, "x", k); err != nil {
		t.Error(err)
	}
	if _, err := FromKMS(ctx, km, base64.StdEncoding.EncodeToString([]byte("blob")), "v1"); err != nil {
		t.Error(err)
	}
	if want := []string{"secretsmanager.GetSecretValue", "secretsmanager.CreateSecret", "TrentService.Decrypt"}; !slices.Equal(seen, want) {
		t.Errorf("calls %v, want %v", seen, want)
	}
}

// No error of the AWS key sources carries the seed, even from a service that quotes it back or
// answers with it in a malformed body.
func TestAWSErrorsHoldNoSecret(t *testing.T) {
	seedB64 := base64.StdEncoding.EncodeToString(testSeed)
	url := awsJSONServerRaw(t, func(op string, body []byte) (int, string) {
		switch op {
		case "CreateSecret":
			// A service that quotes the request in its message.
			msg, _ := json.Marshal("invalid request: " + string(body))
			return 400, `{"__type":"InvalidRequestException","message":` + string(msg) + `}`
		case "GetSecretValue":
			return 200, `{"SecretString":"` + seedB64 + `"` // truncated JSON
		default:
			return 200, `{"Plaintext":"` + seedB64 + `","KeyId":` // truncated JSON
		}
	})
	cfg := testAWSConfig(url)
	sm, km := testSecretsManager(t, cfg), testKMS(t, cfg)
	ctx := context.Background()
	k, _ := FromSeed("v1", testSeed)
	_, err1 := CreateSecret(ctx, sm, "x", k)
	_, err2 := FromSecretsManager(ctx, sm, "x", "v1")
	_, err3 := FromKMS(ctx, km, base64.StdEncoding.EncodeToString([]byte("blob")), "v1")
	for i, err := range []error{err1, err2, err3} {
		if err == nil || strings.Contains(err.Error(), seedB64) || strings.Contains(err.Error(), seedB64[:12]) {
			t.Errorf("call %d: %v, want an error without the seed", i+1, err)
		}
	}
	if !strings.Contains(err1.Error(), "InvalidRequestException") {
		t.Errorf("CreateSecret error %q does not name the service's error type", err1)
	}
}

// Errors name the service's error type, and a throttled call is retried.
func TestAWSErrorsAndRetry(t *testing.T) {
	var calls int
	url := awsJSONServer(t, func(op string, in map[string]any) (map[string]any, string) {
		calls++
		if in["SecretId"] == "throttled-once" && calls == 1 {
			return nil, "ThrottlingException"
		}
		if in["SecretId"] == "denied" {
			return nil, "AccessDeniedException"
		}
		return map[string]any{"SecretString": base64.StdEncoding.EncodeToString(testSeed)}, ""
	})
	cfg := testAWSConfig(url)
	cfg.RetryMaxAttempts = 2
	sm := testSecretsManager(t, cfg)
	if _, err := FromSecretsManager(context.Background(), sm, "throttled-once", "v1"); err != nil || calls != 2 {
		t.Errorf("throttled once: %v after %d calls, want success after 2", err, calls)
	}
	calls = 0
	_, err := FromSecretsManager(context.Background(), sm, "denied", "v1")
	if err == nil || !strings.Contains(err.Error(), "read secret denied: ") || !strings.Contains(err.Error(), "AccessDeniedException") || calls != 1 {
		t.Errorf("denied: %v after %d calls, want a named error and no retry", err, calls)
	}
}

func TestNewClientsNeedARegion(t *testing.T) {
	if _, err := NewSecretsManager(aws.Config{}); err == nil {
		t.Error("a Secrets Manager client without a region")
	}
	if _, err := NewKMS(aws.Config{}); err == nil {
		t.Error("a KMS client without a region")
	}
}
