package awsjson

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token"}

// newTestClient is a client of service at url with testCreds, no endpoint variables from the
// machine's environment, and a backoff short enough for tests.
func newTestClient(t *testing.T, service Service, url string) *Client {
	t.Helper()
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_" + service.EnvName} {
		t.Setenv(v, "")
	}
	c, err := New(aws.Config{
		Region:       "eu-west-3",
		Credentials:  credentials.NewStaticCredentialsProvider(testCreds.AccessKeyID, testCreds.SecretAccessKey, testCreds.SessionToken),
		BaseEndpoint: aws.String(url),
	}, service)
	if err != nil {
		t.Fatal(err)
	}
	c.backoff = func(int) time.Duration { return time.Millisecond }
	return c
}

// verifySignature checks r's SigV4 signature the way the service does: it rebuilds the request
// from the headers the signature names, signs it again with the same credentials and time, and
// compares. It returns the Authorization header's parts.
func verifySignature(r *http.Request, body []byte, service, region string) (scope, signedHeaders string, err error) {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", "", errors.New("no SigV4 Authorization header")
	}
	parts := map[string]string{}
	for _, p := range strings.Split(rest, ", ") {
		k, v, _ := strings.Cut(p, "=")
		parts[k] = v
	}
	signedHeaders = parts["SignedHeaders"]
	_, scope, _ = strings.Cut(parts["Credential"], "/")
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "", "", errors.New("no X-Amz-Date")
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range strings.Split(signedHeaders, ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	again.Header.Del("Authorization")
	if err := v4.NewSigner().SignHTTP(context.Background(), testCreds, again, hex.EncodeToString(sum[:]), service, region, when); err != nil {
		return "", "", err
	}
	if again.Header.Get("Authorization") != auth {
		return "", "", errors.New("the signature does not verify")
	}
	return scope, signedHeaders, nil
}

func TestRequestsAreSigned(t *testing.T) {
	for _, tc := range []struct {
		service     Service
		operation   string
		wantTarget  string
		contentType string
	}{
		{SecretsManager, "GetSecretValue", "secretsmanager.GetSecretValue", "application/x-amz-json-1.1"},
		{SecretsManager, "CreateSecret", "secretsmanager.CreateSecret", "application/x-amz-json-1.1"},
		{KMS, "Decrypt", "TrentService.Decrypt", "application/x-amz-json-1.1"},
		{DynamoDB, "UpdateItem", "DynamoDB_20120810.UpdateItem", "application/x-amz-json-1.0"},
	} {
		t.Run(tc.wantTarget, func(t *testing.T) {
			var problems []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if got := r.Header.Get("X-Amz-Target"); got != tc.wantTarget {
					problems = append(problems, "X-Amz-Target "+got)
				}
				if got := r.Header.Get("Content-Type"); got != tc.contentType {
					problems = append(problems, "Content-Type "+got)
				}
				if got := r.Header.Get("Accept-Encoding"); got != "identity" {
					problems = append(problems, "Accept-Encoding "+got)
				}
				if r.Method != http.MethodPost || r.URL.Path != "/" {
					problems = append(problems, r.Method+" "+r.URL.Path)
				}
				if r.Header.Get("X-Amz-Security-Token") != testCreds.SessionToken {
					problems = append(problems, "no session token")
				}
				scope, signed, err := verifySignature(r, body, tc.service.Name, "eu-west-3")
				if err != nil {
					problems = append(problems, err.Error())
				}
				if !strings.HasPrefix(scope, time.Now().UTC().Format("20060102")[:6]) || !strings.HasSuffix(scope, "/eu-west-3/"+tc.service.Name+"/aws4_request") {
					problems = append(problems, "credential scope "+scope)
				}
				for _, h := range []string{"content-type", "host", "x-amz-date", "x-amz-security-token", "x-amz-target"} {
					if !strings.Contains(";"+signed+";", ";"+h+";") {
						problems = append(problems, "unsigned header "+h+" in "+signed)
					}
				}
				w.Write([]byte(`{"ok":true}`))
			}))
			t.Cleanup(srv.Close)
			c := newTestClient(t, tc.service, srv.URL)
			var out struct{ OK bool }
			if err := c.Call(context.Background(), tc.operation, map[string]string{"SecretId": "s"}, &out); err != nil || !out.OK {
				t.Fatalf("call: %v %v", out, err)
			}
			if len(problems) > 0 {
				t.Errorf("the server saw: %s", strings.Join(problems, "; "))
			}
		})
	}
}

// A tampered request must fail verifySignature, or the test above proves nothing.
func TestVerifySignatureRejectsTampering(t *testing.T) {
	var err error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _, err = verifySignature(r, append(body, ' '), "kms", "eu-west-3")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, KMS, srv.URL)
	if cerr := c.Call(context.Background(), "Decrypt", struct{}{}, new(struct{})); cerr != nil {
		t.Fatal(cerr)
	}
	if err == nil {
		t.Fatal("a changed body still verified")
	}
}

func TestAnonymousRequestsAreUnsigned(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_KMS", "")
	c, err := New(aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}, BaseEndpoint: aws.String(srv.URL)}, KMS)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Call(context.Background(), "Decrypt", struct{}{}, new(struct{})); err != nil || auth != "" {
		t.Fatalf("got %v, Authorization %q; want an unsigned request", err, auth)
	}
}

func TestErrorMapping(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, tc := range []struct {
		name           string
		status         int
		header, body   string
		code, message  string
		wantRetryCount int32
	}{
		{"namespaced type", 400, "", `{"__type":"com.amazonaws.kms#InvalidCiphertextException","message":"bad blob"}`, "InvalidCiphertextException", "bad blob", 1},
		{"plain type, Message", 400, "", `{"__type":"ResourceNotFoundException","Message":"no such secret"}`, "ResourceNotFoundException", "no such secret", 1},
		{"type with URL suffix", 400, "", `{"__type":"AccessDeniedException:http://internal.amazon.com/coral/com.amazon.coral.service/","message":"denied"}`, "AccessDeniedException", "denied", 1},
		{"type header", 400, "KMSInvalidStateException:http://x", `{"message":"disabled key"}`, "KMSInvalidStateException", "disabled key", 1},
		{"not JSON", 403, "", `<html>forbidden</html>`, "HTTP 403", "", 1},
		{"control characters", 400, "", `{"__type":"X","message":"a\nb\u0000c"}`, "X", "a b c", 1},
		{"long message", 400, "", `{"__type":"X","message":"` + long + `"}`, "X", long[:maxMessage] + "…", 1},
		{"throttled, retried", 400, "", `{"__type":"ThrottlingException","message":"Rate exceeded"}`, "ThrottlingException", "Rate exceeded", 3},
		{"server error, retried", 500, "", `{"__type":"InternalServiceError","message":"oops"}`, "InternalServiceError", "oops", 3},
		{"unavailable, retried", 503, "", ``, "HTTP 503", "", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if tc.header != "" {
					w.Header().Set("X-Amzn-ErrorType", tc.header)
				}
				w.Header().Set("X-Amzn-RequestId", "req-1")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			c := newTestClient(t, SecretsManager, srv.URL)
			err := c.Call(context.Background(), "GetSecretValue", struct{}{}, new(struct{}))
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("got %v, want an *Error", err)
			}
			if e.Code != tc.code || e.Message != tc.message || e.StatusCode != tc.status || e.RequestID != "req-1" || e.Operation != "secretsmanager.GetSecretValue" {
				t.Errorf("got %+v, want code %q message %q status %d", e, tc.code, tc.message, tc.status)
			}
			if got := calls.Load(); got != tc.wantRetryCount {
				t.Errorf("attempts = %d, want %d", got, tc.wantRetryCount)
			}
			if !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), "req-1") {
				t.Errorf("Error() = %q lacks the code or request id", err)
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(400)
			io.WriteString(w, `{"__type":"ThrottlingException"}`)
		case 2:
			// A connection that breaks before any answer is a network error, retried.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		default:
			io.WriteString(w, `{"Plaintext":"AQID"}`)
		}
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, KMS, srv.URL)
	var out struct{ Plaintext []byte }
	if err := c.Call(context.Background(), "Decrypt", struct{}{}, &out); err != nil || !bytes.Equal(out.Plaintext, []byte{1, 2, 3}) {
		t.Fatalf("got %v, %v", out.Plaintext, err)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("attempts = %d, want 3", got)
	}
}

func TestRetryHonoursDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	c := newTestClient(t, KMS, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Call(ctx, "Decrypt", struct{}{}, new(struct{}))
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the call took %v past a 200 ms deadline", d)
	}
}

func TestAnswerSizeLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"SecretString":"`+strings.Repeat("a", SecretsManager.MaxResponse)+`"}`)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, SecretsManager, srv.URL)
	err := c.Call(context.Background(), "GetSecretValue", struct{}{}, new(struct{ SecretString string }))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v, want the size limit", err)
	}
}

// An answer whose X-Amz-Crc32 does not match is damaged in transit: retried, and never decoded.
func TestCRC32(t *testing.T) {
	const body = `{"Item":{"pk":{"S":"a"}}}`
	for _, tc := range []struct {
		name      string
		header    func(attempt int32) string
		wantCalls int32
		wantErr   bool
	}{
		{"matching", func(int32) string { return strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10) }, 1, false},
		{"absent", func(int32) string { return "" }, 1, false},
		{"damaged once", func(n int32) string {
			if n == 1 {
				return "12345"
			}
			return strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)
		}, 2, false},
		{"always damaged", func(int32) string { return "12345" }, 3, true},
		{"not a number", func(int32) string { return "x" }, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if h := tc.header(calls.Add(1)); h != "" {
					w.Header().Set("X-Amz-Crc32", h)
				}
				io.WriteString(w, body)
			}))
			t.Cleanup(srv.Close)
			c := newTestClient(t, DynamoDB, srv.URL)
			var out struct{ Item map[string]map[string]string }
			err := c.Call(context.Background(), "GetItem", struct{}{}, &out)
			if (err != nil) != tc.wantErr || calls.Load() != tc.wantCalls {
				t.Fatalf("got %v after %d attempts; want error %v after %d", err, calls.Load(), tc.wantErr, tc.wantCalls)
			}
			if !tc.wantErr && out.Item["pk"]["S"] != "a" {
				t.Errorf("answer decoded as %v", out)
			}
		})
	}
}

// No body, asked for or answered, reaches an error: either may hold secret material.
func TestErrorsHoldNoBody(t *testing.T) {
	const secret = "c2VjcmV0LXNlZWQtbWF0ZXJpYWwtMzItYnl0ZXMhISE="
	for name, answer := range map[string]struct {
		status int
		body   string
	}{
		"malformed success": {200, `{"Plaintext":"` + secret + `"`},
		"wrong type":        {200, `{"Plaintext":["` + secret + `"]}`},
		"not JSON error":    {400, secret},
		"error with a body": {400, `{"__type":"X","SecretString":"` + secret + `"}`},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(answer.status)
				io.WriteString(w, answer.body)
			}))
			t.Cleanup(srv.Close)
			c := newTestClient(t, KMS, srv.URL)
			err := c.Call(context.Background(), "Decrypt", map[string]string{"CiphertextBlob": secret}, new(struct{ Plaintext []byte }))
			if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:8]) {
				t.Fatalf("got %v, want an error without the secret", err)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		base    string
		region  string
		service Service
		want    string
	}{
		{"regional", nil, "", "us-east-1", SecretsManager, "https://secretsmanager.us-east-1.amazonaws.com"},
		{"regional kms", nil, "", "ap-southeast-2", KMS, "https://kms.ap-southeast-2.amazonaws.com"},
		{"china", nil, "", "cn-north-1", KMS, "https://kms.cn-north-1.amazonaws.com.cn"},
		{"gov cloud", nil, "", "us-gov-west-1", SecretsManager, "https://secretsmanager.us-gov-west-1.amazonaws.com"},
		{"iso-b", nil, "", "us-isob-east-1", KMS, "https://kms.us-isob-east-1.sc2s.sgov.gov"},
		{"unknown region", nil, "", "xx-new-1", KMS, "https://kms.xx-new-1.amazonaws.com"},
		{"service variable", map[string]string{"AWS_ENDPOINT_URL_KMS": "http://127.0.0.1:9/", "AWS_ENDPOINT_URL": "http://other"}, "http://base", "us-east-1", KMS, "http://127.0.0.1:9/"},
		{"other service's variable", map[string]string{"AWS_ENDPOINT_URL_KMS": "http://kms"}, "", "us-east-1", SecretsManager, "https://secretsmanager.us-east-1.amazonaws.com"},
		{"config", map[string]string{"AWS_ENDPOINT_URL": "http://other"}, "http://base:1", "us-east-1", KMS, "http://base:1/"},
		{"global variable", map[string]string{"AWS_ENDPOINT_URL": "https://proxy.example/aws"}, "", "us-east-1", SecretsManager, "https://proxy.example/aws/"},
		{"bad override", map[string]string{"AWS_ENDPOINT_URL": "ftp://x"}, "", "us-east-1", KMS, ""},
		{"bad region", nil, "", "us-east-1.evil.example/", KMS, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := aws.Config{Region: tc.region}
			if tc.base != "" {
				cfg.BaseEndpoint = aws.String(tc.base)
			}
			got, err := Endpoint(cfg, tc.service, func(k string) string { return tc.env[k] })
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// DNSSuffix agrees with the SDK's partition table, read through the SDK DynamoDB client's
// endpoint resolver, which only this test links: the regional endpoints of every service this
// client calls follow the same pattern.
func TestDNSSuffixMatchesSDK(t *testing.T) {
	regions := []string{
		"us-east-1", "us-west-2", "eu-central-2", "ap-southeast-7", "mx-central-1", "il-central-1", "af-south-1",
		"cn-north-1", "cn-northwest-1", "cn-south-9",
		"us-gov-west-1", "us-gov-east-1",
		"us-iso-east-1", "us-iso-west-1", "us-isob-east-1", "us-isof-south-1", "us-isof-east-1",
		"eu-isoe-west-1", "eusc-de-east-1",
		"xx-unknown-1",
	}
	r := dynamodb.NewDefaultEndpointResolverV2()
	for _, region := range regions {
		ep, err := r.ResolveEndpoint(context.Background(), dynamodb.EndpointParameters{Region: aws.String(region)})
		if err != nil {
			t.Fatalf("%s: %v", region, err)
		}
		want := strings.TrimPrefix(ep.URI.Host, "dynamodb."+region+".")
		if got := DNSSuffix(region); got != want {
			t.Errorf("DNSSuffix(%q) = %q, the SDK says %q", region, got, want)
		}
	}
}

func TestNewRejectsMissingRegion(t *testing.T) {
	if _, err := New(aws.Config{}, KMS); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("got %v, want a missing-region error", err)
	}
}

func TestRequestBodyIsJSON(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, KMS, srv.URL)
	if err := c.Call(context.Background(), "Decrypt", struct{ CiphertextBlob []byte }{[]byte{1, 2, 3}}, new(struct{})); err != nil {
		t.Fatal(err)
	}
	if got["CiphertextBlob"] != "AQID" {
		t.Errorf("body %v, want the blob in base64", got)
	}
}
