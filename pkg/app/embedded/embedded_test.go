package embedded_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/app/embedded"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
)

// clock is the tests' one clock; the opener hands it to the store.
var clock = testclock.New(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))

func load(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// keyOutside writes a signing key outside the data directory, so that only the store's opener
// looks at the data directory (app.Build checks it itself only for the default key file).
func keyOutside(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key.json")
	k, err := keys.Generate("v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WriteFile(path, k); err != nil {
		t.Fatal(err)
	}
	return path
}

// The opener creates a missing data directory for the store file, readable by its owner alone,
// and the service built on it answers from the store file there.
func TestOpensBoltInAPrivateDataDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": dir, "VERIFIER_SIGNING_KEY": "file:" + keyOutside(t)})
	svc, closeFn, err := app.Build(context.Background(), cfg, app.Options{OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if !svc.Health(context.Background()).OK() {
		t.Fatal("the service over the embedded store is not healthy")
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Mode().Perm(), os.FileMode(0o700); got != want {
		t.Errorf("data directory mode %04o, want %04o", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, bolt.FileName)); err != nil {
		t.Errorf("no store file in the data directory: %v", err)
	}
}

// A data directory others may write in is refused before a store file is opened in it, also when
// the key lives elsewhere: another user could have put a store (allowances, payment reservations)
// there.
func TestDataDirectoryOthersMayWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := load(t, map[string]string{"VERIFIER_DATA_DIR": dir, "VERIFIER_SIGNING_KEY": "file:" + keyOutside(t)})
	if _, err := (embedded.Opener{}).Open(context.Background(), cfg, clock.Now); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("a world-writable data directory: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(dir, bolt.FileName)); !os.IsNotExist(err) {
		t.Errorf("the store file was created: %v", err)
	}
}

// Every store but bolt goes to the other opener, with the configuration and the clock it was
// given; without one, the store is refused.
func TestOtherStoresGoToTheOtherOpener(t *testing.T) {
	cfg := load(t, map[string]string{"VERIFIER_STORE": "dynamodb", "VERIFIER_TABLE": "t1", "VERIFIER_SIGNING_KEY": "file:" + keyOutside(t)})
	var gotTable string
	other := func(_ context.Context, c config.Config, _ func() time.Time) (app.Store, error) {
		gotTable = c.Table
		return app.Store{}, nil
	}
	if _, err := (embedded.Opener{Other: other}).Open(context.Background(), cfg, clock.Now); err != nil || gotTable != "t1" {
		t.Errorf("the other opener got table %q (%v), want t1", gotTable, err)
	}
	if _, err := (embedded.Opener{}).Open(context.Background(), cfg, clock.Now); err == nil || !strings.Contains(err.Error(), `"dynamodb"`) {
		t.Errorf("dynamodb without another opener: %v, want a refusal", err)
	}
}
