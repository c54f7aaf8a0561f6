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
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/translog"
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
	// ReadSecret reads a Secrets Manager secret's value (the facilitator's auth header,
	// X402_FACILITATOR_AUTH_SECRET); nil means this binary reads no secret.
	ReadSecret func(ctx context.Context, id string) ([]byte, error)
	// OpenStore opens the store the configuration names (VERIFIER_STORE), reading time from the
	// service's clock; nil means this binary opens no store, and Build refuses to start. The
	// Lambda functions pass AWS.OpenStore, which opens DynamoDB only; the local server passes
	// pkg/app/embedded's Opener, which opens the embedded bolt store and hands DynamoDB to the
	// AWS opener. So only the programs that import pkg/app/embedded link bbolt.
	OpenStore StoreOpener
	// Engine builds the checking engine of the body limits; nil builds a service that serves no
	// verification (the score and discovery functions), which so never links the engine and
	// its JSON Schema library. The programs that verify pass engine.New (pkg/service/engine).
	Engine func(wire.Limits) service.Engine
	// Now is the service's one clock, handed to every part that reads time (the service, the
	// store, payments), so that they all agree on the day and on what has expired; nil means
	// time.Now. Tests set it to move a whole service through days and years.
	Now func() time.Time
}

// Store is an opened store with each of its capabilities named: what the service keeps in it,
// its receipt log where it keeps one, and its Close. The opener fills every field from the store
// it opened, so what a store can do is declared where it is opened, not found by asking it.
type Store struct {
	// Data is the store as the service uses it: allowances, payments, histories.
	Data service.Store
	// Receipts is its receipt log (SPEC §15); nil for a store that keeps none, whose service
	// then keeps none either and reads no log key.
	Receipts service.ReceiptLog
	// ReceiptsWithHistory writes an answer's history record with its receipt (the embedded
	// store); nil where the history follows in a write of its own.
	ReceiptsWithHistory store.ReceiptWithHistory
	// Folder folds recorded history into the aggregate later (DynamoDB); nil where recording
	// updates the aggregate itself.
	Folder service.Folder
	// Close releases the store.
	Close func() error
}

// StoreOpener opens the store cfg names (VERIFIER_STORE), reading time from now, and fills in
// each capability of the Store it returns.
type StoreOpener func(ctx context.Context, cfg config.Config, now func() time.Time) (Store, error)

// noEmbeddedStore is the start-up error of a binary asked for the embedded store it does not link.
func noEmbeddedStore() error {
	return errors.New("configuration: VERIFIER_STORE is bolt, but this binary has no embedded store (only the local server, verifier serve, has one): set VERIFIER_STORE=dynamodb and VERIFIER_TABLE")
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
	if cfg.DefaultKey {
		// Before the key is read from it or created in it. The store's opener checks it again
		// before it opens a store file there (pkg/app/embedded).
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

	if cfg.X402.AuthSecret != "" {
		if opt.ReadSecret == nil {
			return nil, nil, errors.New("configuration: X402_FACILITATOR_AUTH_SECRET is set, but this binary reads no Secrets Manager secret")
		}
		v, err := opt.ReadSecret(ctx, cfg.X402.AuthSecret)
		if err != nil {
			return nil, nil, fmt.Errorf("read the facilitator auth secret: %w", err)
		}
		if cfg.X402, err = cfg.X402.WithAuthHeaderFromSecret(string(v)); err != nil {
			return nil, nil, fmt.Errorf("configuration: %w", err)
		}
	}

	if opt.OpenStore == nil {
		if cfg.Store == "bolt" {
			return nil, nil, noEmbeddedStore()
		}
		return nil, nil, fmt.Errorf("configuration: store %q is not available in this binary", cfg.Store)
	}
	salt, err := callerSalt(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	st, err := opt.OpenStore(ctx, cfg, now)
	if err != nil {
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	if st.Data == nil || st.Close == nil {
		return nil, nil, errors.New("open store: the opener returned no store or no Close")
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
	// The receipt log (SPEC §15), in a store that keeps one. Its key is read only then: a
	// function whose store keeps no log needs none. Only a default key file that does not
	// exist, in a program that generates no dev keys, leaves the log off (logged); a key that
	// was named and cannot be read fails start-up.
	var receipts service.ReceiptLog
	var withHistory store.ReceiptWithHistory // only with the log it belongs to
	var logKey translog.LogKey
	if rl := st.Receipts; rl != nil {
		k, err := loadLogKey(ctx, cfg, opt, now)
		if errors.Is(err, fs.ErrNotExist) && cfg.DefaultLogKey && !opt.CreateDevKey {
			log.Warn("receipt log off: no log key (set VERIFIER_LOG_KEY)")
			rl, err = nil, nil
		} else if err == nil {
			logKey, err = translog.NewLogKey(translog.Origin(cfg.BaseURL), k)
		}
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		if rl != nil {
			receipts, withHistory = rl, st.ReceiptsWithHistory
		}
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
		Store:   st.Data,
		Payer:   payer,
		Pricing: service.Pricing{FreeCallsPerDay: cfg.FreeCallsPerDay, FreeMaxBody: cfg.FreeMaxBody,
			PriceVerify: cfg.PriceVerify, PriceScore: cfg.PriceScore},
		Log:              log,
		Now:              now,
		TrustedProxyHops: cfg.TrustedProxyHops,
		CallerSalt:       salt,
		Receipts:         receipts,
		// The capabilities of the store opened, which the service is handed rather than finds.
		ReceiptsWithHistory: withHistory,
		Folder:              st.Folder,
		LogKey:              logKey,
		RecordDays:          cfg.RecordDays,
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

// MakeDataDir creates the data directory (0700) unless it exists, and checks it as checkDataDir:
// for the generated key file here, for the embedded store's file in pkg/app/embedded.
func MakeDataDir(dir string) error {
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
// needs no second secret and the salt changes when the key does. A local key's is a hash of its
// seed. A remote key's seed never leaves KMS, so its salt is a hash of its signature over a fixed
// message, made once at start-up: Ed25519 is deterministic, so every execution environment
// derives the same salt, and no one without the key can, since that signature is never published.
func callerSalt(ctx context.Context, k receipt.Key) ([]byte, error) {
	h := sha256.New()
	h.Write([]byte("agent-output-verifier caller-id salt v1\x00"))
	if !k.IsRemote() {
		h.Write(k.Private.Seed())
		return h.Sum(nil), nil
	}
	signed, err := k.WithContext(ctx).Attest(callerSaltContext, []byte(`{}`), callerSaltTimestamp)
	if err != nil {
		return nil, fmt.Errorf("derive the caller-id salt with the signing key: %w", err)
	}
	h.Write(signed)
	return h.Sum(nil), nil
}

// The fixed message a remote key signs for the caller-id salt; no receipt carries its context.
const (
	callerSaltContext   = "agent-output-verifier/caller-id-salt/v1"
	callerSaltTimestamp = "1970-01-01T00:00:00.000000+00:00"
)

func loadKey(ctx context.Context, cfg config.Config, opt Options, now func() time.Time) (receipt.Key, error) {
	return loadKeyFrom(ctx, keySpec{"signing key", "VERIFIER_KEY_VERSION", cfg.SigningKey, cfg.KeyVersion, cfg.DefaultKey}, opt, now)
}

// loadLogKey reads the receipt log's key (VERIFIER_LOG_KEY), from the same kinds of source as
// the signing key; the local server generates one beside the dev key.
func loadLogKey(ctx context.Context, cfg config.Config, opt Options, now func() time.Time) (receipt.Key, error) {
	return loadKeyFrom(ctx, keySpec{"log key", "VERIFIER_LOG_KEY_VERSION", cfg.LogKey, cfg.LogKeyVersion, cfg.DefaultLogKey}, opt, now)
}

// keySpec is one configured key: what it is, the variable naming its version, its source and
// version, and whether the source is the default file in the data directory.
type keySpec struct {
	what, versionVar, source, version string
	isDefault                         bool
}

func loadKeyFrom(ctx context.Context, ks keySpec, opt Options, now func() time.Time) (receipt.Key, error) {
	path, isFile := strings.CutPrefix(ks.source, "file:")
	if !isFile {
		if opt.KeySource == nil {
			return receipt.Key{}, fmt.Errorf("configuration: the %s names a key source this binary cannot read", ks.what)
		}
		k, err := opt.KeySource(ctx, ks.source, ks.version)
		if err != nil {
			return receipt.Key{}, fmt.Errorf("load %s: %w", ks.what, err)
		}
		return k, nil
	}
	k, err := keys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && opt.CreateDevKey && ks.isDefault {
		version := ks.version
		if version == "" {
			version = "dev-" + now().UTC().Format("2006-01-02")
		}
		if k, err = keys.Generate(version, rand.Reader); err != nil {
			return receipt.Key{}, fmt.Errorf("generate dev %s: %w", ks.what, err)
		}
		if err := MakeDataDir(filepath.Dir(path)); err != nil {
			return receipt.Key{}, err
		}
		if err := keys.WriteFile(path, k); err != nil {
			return receipt.Key{}, fmt.Errorf("write dev %s: %w", ks.what, err)
		}
		return k, nil
	}
	if err != nil {
		return receipt.Key{}, fmt.Errorf("load %s: %w", ks.what, err)
	}
	if ks.version != "" && k.Version != ks.version {
		// As for a secret: the version names one key, so a file of another is the wrong file.
		return receipt.Key{}, fmt.Errorf("load %s: the key file %s holds version %q, not %s %q", ks.what, path, k.Version, ks.versionVar, ks.version)
	}
	return k, nil
}
