// Package app wires the service from its configuration: key ring, store, engine and HTTP
// handlers. The local server and every Lambda main build the same Service through it, so they
// differ only in which routes they mount.
package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Options are the choices a caller of Build makes beyond the configuration.
type Options struct {
	// CreateDevKey generates the key file on first run when the default key file (in the data
	// directory, VERIFIER_SIGNING_KEY unset) does not exist yet (the local server does; Lambda
	// functions never do). A key file named in VERIFIER_SIGNING_KEY is never generated: a
	// mistyped path must not start a service that signs with a new key.
	CreateDevKey bool
	Log          *slog.Logger
	// KeySource loads non-file keys (Secrets Manager, KMS); nil means only file: keys work.
	KeySource func(ctx context.Context, source, version string) (receipt.Key, error)
	// OpenStore opens a non-bolt store (DynamoDB) that reads time from now; nil means only bolt
	// works.
	OpenStore func(ctx context.Context, cfg config.Config, now func() time.Time) (Store, error)
	// BackgroundHistory says history records are written off the request path (the local
	// server's StartRecording), so the embedded store may let them wait for company before
	// committing (bolt.WithHistoryLinger). A function that records before it answers leaves it off.
	BackgroundHistory bool
	// Engine builds the checking engine of the body limits; nil builds a service that serves no
	// verification (the score and discovery functions), which so never links the engine and
	// its JSON Schema library. The programs that verify pass engine.New (pkg/service/engine).
	Engine func(wire.Limits) service.Engine
	// Now is the service's one clock, handed to every part that reads time (the service, the
	// store, payments), so that they all agree on the day and on what has expired; nil means
	// time.Now. Tests set it to move a whole service through days and years.
	Now func() time.Time
}

// historyLinger is how long the embedded store lets a background history write wait for others.
// A commit rewrites every page it touches, of every agent in it, so the history's cost per record
// falls with the batch. At 2,800 records a second for 50 agents (pkg/store/bolt
// BenchmarkHistoryLinger), 10 ms cost 93 µs of CPU and 11.5 KB of pages per record, 100 ms 54 µs
// and 2.1 KB; the local server spent about 230-390 µs of CPU per request under load, over a
// quarter of it in these commits. No answer waits for it; a crash loses the records still waiting,
// as it loses those queued for the writers.
const historyLinger = 100 * time.Millisecond

// Store is the store as the service uses it, and its Close.
type Store interface {
	service.Store
	Close() error
}

// Build makes the service. The returned close function releases the store. A key source that
// cannot be read is an error: a half-started service is never returned.
func Build(ctx context.Context, cfg config.Config, opt Options) (*service.Service, func() error, error) {
	log := opt.Log
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	if cfg.Store == "bolt" || cfg.DefaultKey {
		// Before anything is read from it or created in it.
		if err := checkDataDir(cfg.DataDir); err != nil {
			return nil, nil, err
		}
	}
	key, err := loadKey(ctx, cfg, opt, now)
	if err != nil {
		return nil, nil, err
	}
	ring := receipt.KeyRing{Current: key}
	for _, p := range cfg.PreviousKeys {
		pk, err := keys.ParsePublicKey(p.KeyVersion, p.PublicKey)
		if err != nil {
			return nil, nil, fmt.Errorf("configuration: VERIFIER_PREVIOUS_KEYS: %w", err)
		}
		ring.Previous = append(ring.Previous, pk)
	}
	if err := ring.Validate(); err != nil {
		return nil, nil, fmt.Errorf("key ring: %w", err)
	}

	var st Store
	switch cfg.Store {
	case "bolt":
		if err := makeDataDir(cfg.DataDir); err != nil {
			return nil, nil, err
		}
		bopts := []bolt.Option{bolt.WithClock(now)}
		if opt.BackgroundHistory {
			bopts = append(bopts, bolt.WithHistoryLinger(historyLinger))
		}
		b, err := bolt.Open(filepath.Join(cfg.DataDir, bolt.FileName), bopts...)
		if err != nil {
			return nil, nil, fmt.Errorf("open embedded store: %w", err)
		}
		st = b
	default:
		if opt.OpenStore == nil {
			return nil, nil, fmt.Errorf("store %q is not available in this binary", cfg.Store)
		}
		if st, err = opt.OpenStore(ctx, cfg, now); err != nil {
			return nil, nil, fmt.Errorf("open store: %w", err)
		}
	}
	var payer service.Payer
	if !cfg.X402.FreeOnly() {
		p, err := x402.New(cfg.X402, x402.NewFacilitator(cfg.X402), log, x402.WithClock(now))
		if err != nil {
			st.Close()
			return nil, nil, fmt.Errorf("payments: %w", err)
		}
		payer = p
	}
	var eng service.Engine
	if opt.Engine != nil {
		eng = opt.Engine(wire.Limits{MaxBody: cfg.MaxBody})
	}
	svc, err := service.New(service.Deps{
		Engine:  eng,
		MaxBody: maxBody(cfg.MaxBody),
		Keys:    ring,
		BaseURL: cfg.BaseURL,
		Store:   st,
		Payer:   payer,
		Pricing: service.Pricing{FreeCallsPerDay: cfg.FreeCallsPerDay, FreeMaxBody: cfg.FreeMaxBody,
			PriceVerify: cfg.PriceVerify, PriceScore: cfg.PriceScore},
		Log:              log,
		Now:              now,
		TrustedProxyHops: cfg.TrustedProxyHops,
		CallerSalt:       callerSalt(key),
	})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return svc, st.Close, nil
}

// maxBody is the body limit of the configuration: the default where it sets none.
func maxBody(configured int64) int64 {
	if configured > 0 {
		return configured
	}
	return wire.DefaultLimits.MaxBody
}

// makeDataDir creates the data directory (0700) unless it exists, and checks it as checkDataDir.
func makeDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	return checkDataDir(dir)
}

// checkDataDir refuses a data directory others may write in: another user could have put a
// store (allowances, payment reservations) or a signing key there. One that does not exist yet
// passes.
func checkDataDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("data directory %s: others may write in it (mode %04o); chmod 700 it", dir, perm)
	}
	return nil
}

// callerSalt derives the per-deployment salt of caller ids from the signing key, so a deployment
// needs no second secret and the salt changes when the key does.
func callerSalt(k receipt.Key) []byte {
	h := sha256.New()
	h.Write([]byte("agent-output-verifier caller-id salt v1\x00"))
	h.Write(k.Private.Seed())
	return h.Sum(nil)
}

func loadKey(ctx context.Context, cfg config.Config, opt Options, now func() time.Time) (receipt.Key, error) {
	path, isFile := strings.CutPrefix(cfg.SigningKey, "file:")
	if !isFile {
		if opt.KeySource == nil {
			return receipt.Key{}, errors.New("configuration: VERIFIER_SIGNING_KEY names a key source this binary cannot read")
		}
		k, err := opt.KeySource(ctx, cfg.SigningKey, cfg.KeyVersion)
		if err != nil {
			return receipt.Key{}, fmt.Errorf("load signing key: %w", err)
		}
		return k, nil
	}
	k, err := keys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && opt.CreateDevKey && cfg.DefaultKey {
		version := cfg.KeyVersion
		if version == "" {
			version = "dev-" + now().UTC().Format("2006-01-02")
		}
		if k, err = keys.Generate(version, rand.Reader); err != nil {
			return receipt.Key{}, fmt.Errorf("generate dev key: %w", err)
		}
		if err := makeDataDir(filepath.Dir(path)); err != nil {
			return receipt.Key{}, err
		}
		if err := keys.WriteFile(path, k); err != nil {
			return receipt.Key{}, fmt.Errorf("write dev key: %w", err)
		}
		return k, nil
	}
	if err != nil {
		return receipt.Key{}, fmt.Errorf("load signing key: %w", err)
	}
	if cfg.KeyVersion != "" && k.Version != cfg.KeyVersion {
		// As for a secret: the version names one key, so a file of another is the wrong file.
		return receipt.Key{}, fmt.Errorf("load signing key: the key file %s holds version %q, not VERIFIER_KEY_VERSION %q", path, k.Version, cfg.KeyVersion)
	}
	return k, nil
}
