// Package awsjson is a small client of the AWS JSON protocols, the ones DynamoDB (JSON 1.0),
// Secrets Manager and KMS (JSON 1.1) speak: a signed POST of a JSON body naming its operation in
// X-Amz-Target. The store makes a few item reads and conditional writes per request and the key
// sources a handful of one-shot calls (a secret read or a decryption at cold start, a secret
// creation from `verifier keygen`), while the SDK's generated service clients cost every Lambda
// binary megabytes and milliseconds of package initialisation (the DynamoDB client's serializer
// schemas alone take about 3 ms at every cold start) for operations never called. Signing is the
// SDK's own SigV4 signer; with aws.Config and the credential types, it is all of the SDK the
// functions link.
package awsjson

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Limits of one call, each with its reason.
const (
	// maxKeyResponse bounds what a Secrets Manager or KMS call reads: the largest answer expected
	// is a 64 KB secret (the Secrets Manager limit) base64-encoded inside JSON, so anything much
	// larger is not an answer.
	maxKeyResponse = 256 << 10
	// maxDynamoDBResponse bounds what a DynamoDB call reads: an answer holds at most 1 MB of items
	// (a Query page; an item is at most 400 KB), which the JSON form's type tags and escapes can
	// inflate but not fourfold.
	maxDynamoDBResponse = 4 << 20
	// callTimeout bounds a whole call, retries included, when the caller's context has no deadline:
	// a cold start that waits longer has already failed Lambda's 10-second init phase.
	callTimeout = 10 * time.Second
	// attemptTimeout bounds one attempt, so that one stuck connection leaves time for a retry.
	attemptTimeout = 4 * time.Second
	// defaultAttempts is how many times a retryable failure is tried in all, as the SDK's standard
	// retryer does.
	defaultAttempts = 3
	// baseBackoff and maxBackoff bound the wait between attempts: full jitter below a ceiling
	// that doubles from baseBackoff up to maxBackoff.
	baseBackoff = 100 * time.Millisecond
	maxBackoff  = time.Second
	// maxMessage bounds how much of a service's error message an error carries.
	maxMessage = 256
)

// Service is one AWS service the client can call.
type Service struct {
	// Name is the endpoint prefix and the SigV4 signing name ("dynamodb", "secretsmanager", "kms").
	Name string
	// EnvName is the service's part of its endpoint override variable, AWS_ENDPOINT_URL_<EnvName>.
	EnvName string
	// TargetPrefix prefixes operation names in X-Amz-Target ("DynamoDB_20120810", "TrentService").
	TargetPrefix string
	// ContentType names the protocol version: application/x-amz-json-1.0 or -1.1.
	ContentType string
	// MaxResponse is the largest answer a call reads, in bytes.
	MaxResponse int
}

// The services the project uses: DynamoDB for the store, Secrets Manager and KMS for the keys.
var (
	DynamoDB = Service{Name: "dynamodb", EnvName: "DYNAMODB", TargetPrefix: "DynamoDB_20120810",
		ContentType: "application/x-amz-json-1.0", MaxResponse: maxDynamoDBResponse}
	SecretsManager = Service{Name: "secretsmanager", EnvName: "SECRETS_MANAGER", TargetPrefix: "secretsmanager",
		ContentType: "application/x-amz-json-1.1", MaxResponse: maxKeyResponse}
	KMS = Service{Name: "kms", EnvName: "KMS", TargetPrefix: "TrentService",
		ContentType: "application/x-amz-json-1.1", MaxResponse: maxKeyResponse}
)

// Client calls the operations of one service at one endpoint, signed with one configuration's
// credentials.
type Client struct {
	service  Service
	endpoint string
	region   string
	creds    aws.CredentialsProvider // nil: requests go unsigned, as the SDK does for no credentials
	http     aws.HTTPClient
	signer   *v4.Signer
	attempts int
	// backoff is the wait before attempt n+1 (n ≥ 1); tests shorten it.
	backoff func(n int) time.Duration
}

// New makes a client of service from cfg: its region, credentials, HTTP client and retry limit.
// The endpoint is the first of AWS_ENDPOINT_URL_<service>, cfg.BaseEndpoint, AWS_ENDPOINT_URL,
// and the service's regional endpoint in the region's partition; the first three are how tests
// point the client at local servers, as they do the SDK's.
func New(cfg aws.Config, service Service) (*Client, error) {
	if cfg.Region == "" {
		return nil, fmt.Errorf("%s client: no AWS region (set AWS_REGION)", service.Name)
	}
	if !validRegion(cfg.Region) {
		return nil, fmt.Errorf("%s client: AWS region %q is not a valid region name", service.Name, cfg.Region)
	}
	endpoint, err := Endpoint(cfg, service, os.Getenv)
	if err != nil {
		return nil, err
	}
	c := &Client{
		service:  service,
		endpoint: endpoint,
		region:   cfg.Region,
		http:     cfg.HTTPClient,
		signer:   v4.NewSigner(),
		attempts: defaultAttempts,
		backoff:  jitteredBackoff,
	}
	if cfg.Credentials != nil && !aws.IsCredentialsProvider(cfg.Credentials, (*aws.AnonymousCredentials)(nil)) {
		c.creds = cfg.Credentials
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if cfg.RetryMaxAttempts > 0 {
		c.attempts = cfg.RetryMaxAttempts
	}
	return c, nil
}

// Endpoint is the URL the client of service sends its requests to (see New); getenv reads the
// environment.
func Endpoint(cfg aws.Config, service Service, getenv func(string) string) (string, error) {
	override := getenv("AWS_ENDPOINT_URL_" + service.EnvName)
	if override == "" && cfg.BaseEndpoint != nil {
		override = *cfg.BaseEndpoint
	}
	if override == "" {
		override = getenv("AWS_ENDPOINT_URL")
	}
	if override == "" {
		if !validRegion(cfg.Region) {
			return "", fmt.Errorf("%s endpoint: AWS region %q is not a valid region name", service.Name, cfg.Region)
		}
		return "https://" + service.Name + "." + cfg.Region + "." + DNSSuffix(cfg.Region), nil
	}
	u, err := url.Parse(override)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s endpoint override %q is not an http(s) URL of a host", service.Name, override)
	}
	return strings.TrimSuffix(override, "/") + "/", nil
}

// partitions maps region name prefixes to the DNS suffix of their AWS partition, as the SDK's
// partition table (aws-sdk-go-v2 internal/endpoints/awsrulesfn) has them; any other region,
// like any the SDK does not know, is in the aws partition. A test checks these against the
// SDK's endpoint resolver.
var partitions = []struct{ prefix, dnsSuffix string }{
	{"cn-", "amazonaws.com.cn"},
	{"eusc-", "amazonaws.eu"},
	{"us-iso-", "c2s.ic.gov"},
	{"us-isob-", "sc2s.sgov.gov"},
	{"eu-isoe-", "cloud.adc-e.uk"},
	{"us-isof-", "csp.hci.ic.gov"},
	{"us-gov-", "amazonaws.com"},
}

// DNSSuffix is the DNS suffix of region's partition, which regional endpoints end with.
func DNSSuffix(region string) string {
	for _, p := range partitions {
		if strings.HasPrefix(region, p.prefix) {
			return p.dnsSuffix
		}
	}
	return "amazonaws.com"
}

// validRegion reports whether region can be a DNS label, so that it cannot change which host a
// regional endpoint names.
func validRegion(region string) bool {
	if region == "" || len(region) > 63 || region[0] == '-' || region[len(region)-1] == '-' {
		return false
	}
	for _, r := range region {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// Error is a failed call: the service's error type and message when it answered, or the status.
// It never holds the request or response body, which may carry secret material.
type Error struct {
	// Operation is the X-Amz-Target of the call ("secretsmanager.GetSecretValue").
	Operation string
	// Code is the service's error type without its namespace ("ResourceNotFoundException"), or
	// "HTTP <status>" when the answer named none.
	Code string
	// Message is the service's message, at most maxMessage bytes of printable text.
	Message    string
	StatusCode int
	RequestID  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Operation)
	b.WriteString(": ")
	b.WriteString(e.Code)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	fmt.Fprintf(&b, " (HTTP %d", e.StatusCode)
	if e.RequestID != "" {
		b.WriteString(", request id ")
		b.WriteString(e.RequestID)
	}
	b.WriteString(")")
	return b.String()
}

// Call sends operation with the JSON of in and decodes the answer into out. Throttling, server
// errors and network failures are retried a bounded number of times with jittered backoff, within
// ctx's deadline (callTimeout when it has none). Errors never contain a body.
func (c *Client) Call(ctx context.Context, operation string, in, out any) error {
	target := c.service.TargetPrefix + "." + operation
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", target, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	for attempt := 1; ; attempt++ {
		answer, err := c.attempt(ctx, target, body)
		if err == nil {
			if err := json.Unmarshal(answer, out); err != nil {
				// encoding/json's messages can quote the answer, which may be secret material.
				return fmt.Errorf("%s: the answer is not the expected JSON", target)
			}
			return nil
		}
		if attempt >= c.attempts || !retryable(ctx, err) {
			return err
		}
		t := time.NewTimer(c.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up retrying: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// attempt makes one signed request and returns the body of a 2xx answer.
func (c *Client) attempt(ctx context.Context, target string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", target, err)
	}
	req.Header.Set("Content-Type", c.service.ContentType)
	req.Header.Set("X-Amz-Target", target)
	if c.creds != nil {
		creds, err := c.creds.Retrieve(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: retrieve AWS credentials: %w", target, err)
		}
		sum := sha256.Sum256(body)
		if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), c.service.Name, c.region, time.Now()); err != nil {
			return nil, fmt.Errorf("%s: sign request: %w", target, err)
		}
	}
	// Without this, net/http asks for gzip and unpacks the answer itself, and DynamoDB's
	// X-Amz-Crc32 (of the bytes sent) could no longer be checked. It is set after signing, so the
	// signed headers are the protocol's own.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &networkError{target: target, err: err}
	}
	defer resp.Body.Close()
	limit := c.service.MaxResponse
	answer, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, &networkError{target: target, err: err}
	}
	if len(answer) > limit {
		return nil, fmt.Errorf("%s: the answer is larger than %d bytes", target, limit)
	}
	if err := checkCRC32(resp, answer); err != nil {
		return nil, &networkError{target: target, err: err}
	}
	if resp.StatusCode/100 == 2 {
		return answer, nil
	}
	return nil, apiError(target, resp, answer)
}

// checkCRC32 compares the answer with the CRC-32 DynamoDB sends of it in X-Amz-Crc32, as the
// SDK's DynamoDB client does: a mismatch is damage in transit, retried like a broken connection.
// An answer that an HTTP client given in the configuration decompressed is not what the checksum
// covers, and goes unchecked.
func checkCRC32(resp *http.Response, answer []byte) error {
	v := resp.Header.Get("X-Amz-Crc32")
	if v == "" || resp.Uncompressed {
		return nil
	}
	want, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("X-Amz-Crc32 %q is not a CRC-32", printable(v, 16))
	}
	if got := crc32.ChecksumIEEE(answer); got != uint32(want) {
		return fmt.Errorf("the answer's CRC-32 is %d, X-Amz-Crc32 says %d", got, want)
	}
	return nil
}

// apiError reads the protocol's error answer: {"__type": "...#Code", "message": "..."}, or the
// X-Amzn-ErrorType header.
func apiError(target string, resp *http.Response, answer []byte) *Error {
	var doc struct {
		Type     string `json:"__type"`
		Code     string `json:"code"`
		Message  string `json:"message"`
		MessageU string `json:"Message"`
	}
	_ = json.Unmarshal(answer, &doc) // a body that is not JSON leaves the status to speak
	code := resp.Header.Get("X-Amzn-ErrorType")
	if code == "" {
		code = doc.Type
	}
	if code == "" {
		code = doc.Code
	}
	// "aws.protocoltests#Code:http://internal.amazon.com/..." names Code.
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	code = printable(code, 64)
	if code == "" {
		code = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	msg := doc.Message
	if msg == "" {
		msg = doc.MessageU
	}
	return &Error{
		Operation:  target,
		Code:       code,
		Message:    printable(msg, maxMessage),
		StatusCode: resp.StatusCode,
		RequestID:  printable(resp.Header.Get("X-Amzn-RequestId"), 64),
	}
}

// printable is s without control characters, cut to at most n bytes at a rune boundary.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xc0 != 0x80 }

// networkError is a request that got no complete answer.
type networkError struct {
	target string
	err    error
}

func (e *networkError) Error() string { return e.target + ": " + e.err.Error() }
func (e *networkError) Unwrap() error { return e.err }

// throttling lists the error types AWS services use for "slow down", as the SDK's standard
// retryer does.
var throttling = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true,
	"RequestThrottledException": true, "TooManyRequestsException": true,
	"ProvisionedThroughputExceededException": true, "TransactionInProgressException": true,
	"RequestLimitExceeded": true, "BandwidthLimitExceeded": true,
	"RequestThrottled": true, "SlowDown": true, "PriorRequestNotComplete": true,
	"EC2ThrottledException": true,
}

// retryable reports whether a failed attempt may succeed when repeated: throttling, a server
// error, or a network failure, while the call's own context is still live.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return throttling[e.Code] || e.StatusCode >= 500 || e.StatusCode == http.StatusTooManyRequests
	}
	// A network failure, an attempt's own timeout included, is retried; the caller's
	// cancellation or deadline is not (checked above).
	_, ok := errors.AsType[*networkError](err)
	return ok
}

// jitteredBackoff waits a random time below min(maxBackoff, baseBackoff·2^(n-1)) ("full jitter"),
// so that many cold starts throttled together do not retry together.
func jitteredBackoff(n int) time.Duration {
	ceiling := baseBackoff << min(n-1, 10)
	ceiling = min(ceiling, maxBackoff)
	return rand.N(ceiling)
}
