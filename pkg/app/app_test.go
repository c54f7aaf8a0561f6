package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
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
	svc, closeFn, err := Build(context.Background(), cfg, Options{
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		KeySource: func(context.Context, string, string) (receipt.Key, error) {
			return receipt.Key{}, errors.New("read secret verifier-key: AccessDeniedException")
		},
		OpenStore: func(context.Context, config.Config) (Store, error) { opened = true; return nil, nil },
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

func TestMissingKeyFileIsAnErrorOnLambda(t *testing.T) {
	cfg := load(t, map[string]string{"VERIFIER_SIGNING_KEY": "file:" + filepath.Join(t.TempDir(), "absent.json")})
	if _, _, err := Build(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "load signing key") {
		t.Fatalf("got %v, want a clear key error (only the local server creates a dev key)", err)
	}
}

func TestDevKeyCreatedOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": dir})
	svc1, close1, err := Build(context.Background(), cfg, Options{CreateDevKey: true, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	close1()
	svc2, close2, err := Build(context.Background(), cfg, Options{CreateDevKey: true, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer close2()
	if !svc1.Keys.Current.Private.Equal(svc2.Keys.Current.Private) {
		t.Fatal("a second start made a new key instead of reusing the file")
	}
	if svc2.Payer != nil {
		t.Error("a deployment without a payee must run free-only")
	}
}
