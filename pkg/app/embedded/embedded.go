// Package embedded opens the local server's embedded store (bolt, one file in the data
// directory) for app.Build. It lives apart from pkg/app so that only the programs that may run the
// embedded store, the local server (cmd/verifier serve) and the tests that build one, link it: no
// Lambda function links bbolt, since a function's file system is neither shared nor kept and every
// linked package costs its cold start.
package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/store/bolt"
)

// historyLinger is how long the embedded store lets a deferred write (a journal entry's
// application, a history record, an EVM payment's reservation) wait for others. A commit rewrites
// every page it touches, of every agent in it, so the cost per record falls as batches grow
// (pkg/store/bolt BenchmarkHistoryLinger measures it; docs/PERFORMANCE.md has the numbers). No
// answer waits for it: an answer's records wait in the journal, on disk; what else waits (an EVM
// payment's reservation) and what a crash does to it is said beside bolt's ReservePayment.
const historyLinger = 100 * time.Millisecond

// Opener opens the embedded store for VERIFIER_STORE=bolt and hands every other store to Other.
// Its Open is an app.StoreOpener: app.Options{OpenStore: embedded.Opener{...}.Open}.
type Opener struct {
	// Other opens the stores that are not embedded (DynamoDB: app.AWS's OpenStore); nil means
	// only bolt works.
	Other app.StoreOpener
	// BackgroundHistory says history records are written off the request path (the local
	// server's StartRecording), so the embedded store may let them wait for company before
	// committing (bolt.WithHistoryLinger). A service that records before it answers leaves it off.
	BackgroundHistory bool
}

// Open opens the store cfg names, reading time from now. For bolt it creates the data directory
// (0700) unless it exists and refuses one others may write in, before the store file is opened or
// created in it: another user could have put a store (allowances, payment reservations) there.
func (o Opener) Open(ctx context.Context, cfg config.Config, now func() time.Time) (app.Store, error) {
	if cfg.Store != "bolt" {
		if o.Other == nil {
			return app.Store{}, fmt.Errorf("store %q is not available in this binary", cfg.Store)
		}
		return o.Other(ctx, cfg, now)
	}
	if err := app.MakeDataDir(cfg.DataDir); err != nil {
		return app.Store{}, err
	}
	opts := []bolt.Option{bolt.WithClock(now)}
	if o.BackgroundHistory {
		opts = append(opts, bolt.WithHistoryLinger(historyLinger))
	}
	st, err := bolt.Open(filepath.Join(cfg.DataDir, bolt.FileName), opts...)
	if err != nil {
		return app.Store{}, fmt.Errorf("open embedded store: %w", err)
	}
	return app.Store{Data: st, Receipts: st, ReceiptsWithHistory: st, Close: st.Close}, nil
}
