package translog

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Identity is which log a store holds: the origin its checkpoints name and the verifier key
// (note.NewVerifier's form, which names the origin too) that signs them. Every instance that
// sequences a store's log must have the same one, or the tree would hold checkpoints of several
// logs, each of which only some buyers could check.
type Identity struct {
	Origin      string
	VerifierKey string
}

// IdentityOf is the identity of the log key k signs for.
func IdentityOf(k LogKey) Identity { return Identity{Origin: k.Origin, VerifierKey: k.VerifierKey} }

// IdentityKeeper is a store that keeps its log's identity beside the tree head.
type IdentityKeeper interface {
	// ClaimLogIdentity stores id as the log's identity when none is stored yet, and returns the
	// identity stored: id itself when this call stored it, the first one otherwise. Of any
	// number of concurrent claims exactly one is stored; a stored identity never changes.
	ClaimLogIdentity(ctx context.Context, id Identity) (Identity, error)
}

// ErrOtherLog is CheckIdentity's answer (wrapped) for an instance whose log key or origin is
// not the one the store's log was started with.
var ErrOtherLog = errors.New("the store holds another log")

// CheckIdentity makes sure the log in s is the log key's, before anything is sequenced with the
// key: the first instance to start on a store claims the log for its identity, and every later
// one must have the same. A log started before identities were kept is claimed only by the key
// and origin that signed its latest checkpoint.
func CheckIdentity(ctx context.Context, s interface {
	Storage
	IdentityKeeper
}, key LogKey) error {
	want := IdentityOf(key)
	if want.VerifierKey == "" {
		return errors.New("check the log's identity: no log key")
	}
	head, err := s.LogHead(ctx)
	if err != nil {
		return fmt.Errorf("check the log's identity: read head: %w", err)
	}
	if head.Size > 0 {
		// Before the claim: a mismatched instance must not claim a log it cannot sign for.
		if _, err := OpenCheckpoint(head.Checkpoint, want.VerifierKey); err != nil {
			origin, _, _ := strings.Cut(string(head.Checkpoint), "\n")
			return fmt.Errorf("%w: its latest checkpoint (%d leaves, origin %q) is not signed by this instance's log key %s for origin %q (%v); "+
				"every instance that shares the store needs the VERIFIER_BASE_URL and VERIFIER_LOG_KEY the log was started with",
				ErrOtherLog, head.Size, origin, want.VerifierKey, want.Origin, err)
		}
	}
	got, err := s.ClaimLogIdentity(ctx, want)
	if err != nil {
		return fmt.Errorf("check the log's identity: %w", err)
	}
	if got != want {
		return fmt.Errorf("%w: it was started with origin %q and log key %s, and this instance has origin %q and log key %s; "+
			"every instance that shares the store needs the VERIFIER_BASE_URL and VERIFIER_LOG_KEY the log was started with",
			ErrOtherLog, got.Origin, got.VerifierKey, want.Origin, want.VerifierKey)
	}
	return nil
}
