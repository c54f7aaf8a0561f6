package client_test

import (
	"bytes"
	"crypto/ed25519"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testserver"

	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// testServer is the local server, built exactly as `verifier serve` builds it (app.Build, bolt
// store, generated key), on a loopback port, behind a thin wrapper that counts agent card
// fetches and lets a test rotate the signing key or freeze the card.
type testServer struct {
	URL string
	svc *service.Service

	live        http.Handler // svc's routes
	mu          sync.RWMutex // held for reading while a request is served, for writing to change svc
	frozenCard  []byte       // when set, served instead of the live card
	cardFetches atomic.Int32
}

func startServer(t *testing.T, env map[string]string) *testServer {
	t.Helper()
	s := &testServer{}
	started := testserver.Start(t, env, func(svc *service.Service) http.Handler {
		s.live = serverHandler(svc)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.RLock()
			defer s.mu.RUnlock()
			if r.URL.Path == "/.well-known/agent-card.json" {
				s.cardFetches.Add(1)
				if s.frozenCard != nil {
					w.Header().Set("Content-Type", "application/json")
					w.Write(s.frozenCard)
					return
				}
			}
			s.live.ServeHTTP(w, r)
		})
	})
	s.URL, s.svc = started.URL, started.Svc
	return s
}

// rotate makes the server sign with a new key of version v, keeping the old one published.
func (s *testServer) rotate(t *testing.T, v string, seed byte) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.svc.Keys()
	svc, err := s.svc.WithKeys(receipt.KeyRing{
		Current:  receipt.Key{Version: v, Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))},
		Previous: old.PublicKeys(),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.svc, s.live = svc, serverHandler(svc)
}

// serverHandler is every REST route of svc with the index, /health, the agent card and the x402
// manifest, as the local server serves them.
func serverHandler(svc *service.Service) http.Handler {
	return httpapi.Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) })
}

// freezeCard serves the card as it is now from here on, whatever the keys become.
func (s *testServer) freezeCard(t *testing.T) {
	t.Helper()
	resp, err := http.Get(s.URL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s.mu.Lock()
	s.frozenCard = b
	s.mu.Unlock()
	s.cardFetches.Add(-1) // the test's own fetch does not count
}

// proxy is a man in the middle in front of target: editRequest may change a request body on its
// way in, editAnswer an answer body on its way out (the agent card passes untouched).
func proxy(t *testing.T, target string, editRequest, editAnswer func([]byte) []byte) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{}
	rp.Rewrite = func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host
		r := pr.Out
		if editRequest != nil && r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			b = editRequest(b)
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
			r.Header.Set("Content-Length", strconv.Itoa(len(b)))
		}
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		if editAnswer == nil || resp.Request.URL.Path == "/.well-known/agent-card.json" {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		b = editAnswer(b)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv
}
