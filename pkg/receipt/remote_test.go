package receipt

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"testing"
)

// remoteSigner signs in process as a key held elsewhere would answer: possibly wrongly (another
// key), possibly not at all.
type remoteSigner struct {
	priv  ed25519.PrivateKey
	max   int
	fail  bool
	calls int
	ctx   context.Context
}

func (s *remoteSigner) Sign(ctx context.Context, msg []byte) ([]byte, error) {
	s.calls++
	s.ctx = ctx
	if s.fail {
		return nil, errors.New("KMSInternalException")
	}
	return ed25519.Sign(s.priv, msg), nil
}

func (s *remoteSigner) MaxMessage() int { return s.max }

type ctxKey struct{}

// A remote key signs exactly as a local key of the same seed (Attest and Sign), under the context
// it was given; a failed call wraps ErrSignerUnavailable, an answer from another key is refused,
// and a message over its limit is a *MessageTooLargeError before any call.
func TestRemoteKey(t *testing.T) {
	local := testKey("v-remote", 21)
	s := &remoteSigner{priv: local.Private, max: 300}
	remote := RemoteKey("v-remote", local.Public().Key, s)
	if !remote.IsRemote() || remote.MaxMessage() != 300 || !remote.Public().Key.Equal(local.Public().Key) || (KeyRing{Current: remote}).Validate() != nil {
		t.Fatalf("remote key %v: not a valid remote key with limit 300", remote)
	}
	ctx := context.WithValue(context.Background(), ctxKey{}, "request")
	want, err := local.Attest(ContextVerify, []byte(`{"a":1}`), testTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.WithContext(ctx).Attest(ContextVerify, []byte(`{"a":1}`), testTimestamp)
	if err != nil || !bytes.Equal(got, want) || s.ctx.Value(ctxKey{}) != "request" {
		t.Fatalf("remote Attest: %s, %v; want the local key's bytes %s, signed under the request's context", got, err, want)
	}
	if sig, err := remote.Sign([]byte("dsse")); err != nil || !bytes.Equal(sig, ed25519.Sign(local.Private, []byte("dsse"))) {
		t.Errorf("remote Sign: %v", err)
	}

	calls := s.calls
	_, err = remote.Attest(ContextVerify, []byte(`{"pad":"`+string(bytes.Repeat([]byte("x"), 300))+`"}`), testTimestamp)
	var tooLarge *MessageTooLargeError
	if !errors.As(err, &tooLarge) || !errors.Is(err, ErrMessageTooLarge) || tooLarge.Max != 300 || tooLarge.Size <= 300 || s.calls != calls {
		t.Errorf("a message over the limit: %v after %d calls", err, s.calls-calls)
	}
	s.fail = true
	if _, err := remote.Attest(ContextVerify, []byte(`{}`), testTimestamp); !errors.Is(err, ErrSignerUnavailable) {
		t.Errorf("a failed call: %v, want ErrSignerUnavailable", err)
	}
	s.fail, s.priv = false, testKey("other", 22).Private
	if _, err := remote.Sign([]byte("x")); !errors.Is(err, ErrSignerUnavailable) {
		t.Errorf("a signature by another key: %v, want it refused", err)
	}
}
