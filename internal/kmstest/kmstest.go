// Package kmstest is a KMS for tests: an HTTP server on 127.0.0.1 speaking the KMS API's JSON
// protocol for the three operations the service calls, with one Ed25519 signing key and one
// symmetric key inside it. local-kms, the usual local KMS, has no ECC_NIST_EDWARDS25519 key spec,
// which is why this package exists.
package kmstest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// KeyARN is the ARN of the signing key the server holds; it answers to any key id.
const KeyARN = "arn:aws:kms:us-east-1:111122223333:key/0f5e4d3c-2b1a-4f9e-8d7c-6b5a49382716"

// symmetricKeyARN is the ARN the server names as the key of its ciphertexts.
const symmetricKeyARN = "arn:aws:kms:us-east-1:111122223333:key/1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"

// maxRawMessage is KMS's limit on a Sign message of MessageType RAW.
const maxRawMessage = 4096

// Server is one test KMS.
type Server struct {
	URL     string
	Private ed25519.PrivateKey // the signing key inside

	signs    atomic.Int64
	failSign atomic.Bool

	mu          sync.Mutex
	ciphertexts map[string][]byte // base64 blob → plaintext
}

// Start runs a server with a fresh signing key; it is closed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return StartWithKey(t, priv)
}

// StartWithKey runs a server whose signing key is priv (a test that compares key sources gives
// them all one key); it is closed when the test ends.
func StartWithKey(t testing.TB, priv ed25519.PrivateKey) *Server {
	t.Helper()
	s := &Server{Private: priv, ciphertexts: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Public is the signing key's public half.
func (s *Server) Public() ed25519.PublicKey { return s.Private.Public().(ed25519.PublicKey) }

// Signs is how many Sign calls succeeded.
func (s *Server) Signs() int64 { return s.signs.Load() }

// FailSign makes every Sign call fail (KMSInternalException, a 500) while on is true.
func (s *Server) FailSign(on bool) { s.failSign.Store(on) }

// Ciphertext is a ciphertext blob of plain, as Encrypt would answer it, which Decrypt turns back.
func (s *Server) Ciphertext(plain []byte) []byte {
	sum := sha256.Sum256(append([]byte("kmstest ciphertext\x00"), plain...))
	blob := append([]byte("kmstest:"), sum[:]...)
	s.mu.Lock()
	s.ciphertexts[base64.StdEncoding.EncodeToString(blob)] = append([]byte(nil), plain...)
	s.mu.Unlock()
	return blob
}

// serve answers one request of the protocol (application/x-amz-json-1.1, X-Amz-Target
// TrentService.<operation>). Its answers follow the shapes the KMS API reference documents:
//
//   - GetPublicKey: KeyId, KeySpec ECC_NIST_EDWARDS25519, KeyUsage SIGN_VERIFY, PublicKey (the
//     base64 of the DER SubjectPublicKeyInfo), SigningAlgorithms [ED25519_SHA_512,
//     ED25519_PH_SHA_512];
//   - Sign: with SigningAlgorithm ED25519_SHA_512 and MessageType RAW, a Message of at most 4096
//     bytes, the Ed25519 signature (RFC 8032) as Signature, with KeyId and SigningAlgorithm; any
//     other algorithm or message type is InvalidKeyUsageException, a longer message
//     ValidationException;
//   - Decrypt: the plaintext of a ciphertext blob Encrypt made (here: the blob the test got from
//     Ciphertext), as Plaintext with KeyId and EncryptionAlgorithm SYMMETRIC_DEFAULT.
//
// Errors are the protocol's: status 400 and {"__type": ..., "message": ...}. Every request must
// be SigV4-signed for the kms service, as the SDK's client signs it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=") || !strings.Contains(auth, "/kms/aws4_request") {
		fail(w, http.StatusBadRequest, "MissingAuthenticationTokenException", "Request is missing Authentication Token")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		fail(w, http.StatusBadRequest, "SerializationException", "wrong content type")
		return
	}
	var in map[string]any
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "SerializationException", "the body is not a JSON object")
		return
	}
	switch r.Header.Get("X-Amz-Target") {
	case "TrentService.GetPublicKey":
		der, err := x509.MarshalPKIXPublicKey(s.Public())
		if err != nil {
			fail(w, http.StatusInternalServerError, "KMSInternalException", err.Error())
			return
		}
		answer(w, map[string]any{"KeyId": KeyARN, "KeySpec": "ECC_NIST_EDWARDS25519", "KeyUsage": "SIGN_VERIFY",
			"PublicKey": der, "SigningAlgorithms": []string{"ED25519_SHA_512", "ED25519_PH_SHA_512"}})
	case "TrentService.Sign":
		if s.failSign.Load() {
			fail(w, http.StatusInternalServerError, "KMSInternalException", "the test server fails Sign")
			return
		}
		if in["SigningAlgorithm"] != "ED25519_SHA_512" || in["MessageType"] != "RAW" {
			fail(w, http.StatusBadRequest, "InvalidKeyUsageException", "this test key signs ED25519_SHA_512 RAW messages only")
			return
		}
		msg, err := base64.StdEncoding.DecodeString(str(in["Message"]))
		if err != nil || len(msg) == 0 || len(msg) > maxRawMessage {
			fail(w, http.StatusBadRequest, "ValidationException", "Message must be 1 to 4096 bytes")
			return
		}
		s.signs.Add(1)
		answer(w, map[string]any{"KeyId": KeyARN, "SigningAlgorithm": "ED25519_SHA_512", "Signature": ed25519.Sign(s.Private, msg)})
	case "TrentService.Decrypt":
		s.mu.Lock()
		plain, ok := s.ciphertexts[str(in["CiphertextBlob"])]
		s.mu.Unlock()
		if !ok {
			fail(w, http.StatusBadRequest, "InvalidCiphertextException", "not a ciphertext of this test server")
			return
		}
		answer(w, map[string]any{"KeyId": symmetricKeyARN, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT", "Plaintext": plain})
	default:
		fail(w, http.StatusBadRequest, "UnknownOperationException", "the test server does not answer this operation")
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// answer writes a 200 with out in the protocol's JSON ([]byte members as base64, as the
// protocol's blobs are).
func answer(w http.ResponseWriter, out map[string]any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

func fail(w http.ResponseWriter, status int, errType, message string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": errType, "message": message})
}
