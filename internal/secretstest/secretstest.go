// Package secretstest is a Secrets Manager for tests: an HTTP server on 127.0.0.1 speaking the
// Secrets Manager API's JSON protocol (application/x-amz-json-1.1, X-Amz-Target
// secretsmanager.GetSecretValue) for the one operation the functions call on a key, answering
// with the shape the API reference documents (ARN, Name, SecretString, VersionId). The real
// service cannot run here and no local emulator of it is part of the repository's harnesses;
// KMS has internal/kmstest. Every request must be SigV4-signed for the secretsmanager service, as
// the SDK's client signs it. Errors are the protocol's: status 400 and {"__type", "message"}.
package secretstest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// ARNPrefix is the start of every ARN the server gives its secrets: ARNPrefix + name + "-a1b2c3".
const ARNPrefix = "arn:aws:secretsmanager:us-east-1:111122223333:secret:"

// Server is one test Secrets Manager holding fixed secrets.
type Server struct {
	URL   string
	reads atomic.Int64
}

// Start runs a server holding secrets (name → SecretString), each also found by its ARN; it is
// closed when the test ends.
func Start(t testing.TB, secrets map[string]string) *Server {
	t.Helper()
	byID := map[string]string{}
	names := map[string]string{}
	for name, v := range secrets {
		byID[name], byID[ARN(name)] = v, v
		names[name], names[ARN(name)] = name, name
	}
	s := &Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if !strings.Contains(r.Header.Get("Authorization"), "/secretsmanager/aws4_request") {
			fail(w, "MissingAuthenticationTokenException", "Request is missing Authentication Token")
			return
		}
		var in struct{ SecretId string }
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &in) != nil || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" {
			fail(w, "InvalidRequestException", "the test server answers GetSecretValue only")
			return
		}
		v, ok := byID[in.SecretId]
		if !ok {
			fail(w, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
			return
		}
		s.reads.Add(1)
		name := names[in.SecretId]
		json.NewEncoder(w).Encode(map[string]any{"ARN": ARN(name), "Name": name, "SecretString": v,
			"VersionId": "EXAMPLE1-90ab-cdef-fedc-ba987SECRET1", "VersionStages": []string{"AWSCURRENT"}})
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// ARN is the ARN the server gives the secret name.
func ARN(name string) string { return ARNPrefix + name + "-a1b2c3" }

// Reads is how many GetSecretValue calls found their secret.
func (s *Server) Reads() int64 { return s.reads.Load() }

func fail(w http.ResponseWriter, errType, message string) {
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"__type": errType, "message": message})
}
