// Package testserver starts the local server for tests exactly as `verifier serve` builds it:
// configuration from an environment map, app.Build with a generated key and the embedded store
// in a temporary directory, every route on a loopback port.
package testserver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/app/embedded"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
)

// Server is a running local server.
type Server struct {
	URL string
	Svc *service.Service
}

// Start serves the service on 127.0.0.1 until the test ends. env is completed with the base URL
// and a fresh data directory. handler, when given, chooses what to serve (for extra mounts such as
// MCP, or a wrapper that counts requests); by default every REST route, with the index, /health,
// the agent card and the x402 manifest.
func Start(t testing.TB, env map[string]string, handler func(*service.Service) http.Handler) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	if env == nil {
		env = map[string]string{}
	}
	env["VERIFIER_BASE_URL"] = base
	env["VERIFIER_DATA_DIR"] = filepath.Join(t.TempDir(), "data")
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	svc, closeStore, err := app.Build(context.Background(), cfg, app.Options{CreateDevKey: true, Engine: engine.New, OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	var h http.Handler = httpapi.Handler(svc, func(rt *edge.Router) { discovery.MountWellKnown(rt, svc) })
	if handler != nil {
		h = handler(svc)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); closeStore() })
	return &Server{URL: base, Svc: svc}
}
