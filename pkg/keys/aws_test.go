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
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
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

func testAWSConfig() aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1}
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
	c := secretsmanager.NewFromConfig(testAWSConfig(), func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(url) })
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
	c := kms.NewFromConfig(testAWSConfig(), func(o *kms.Options) { o.BaseEndpoint = aws.String(url) })
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
	c := secretsmanager.NewFromConfig(testAWSConfig(), func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(url) })
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
