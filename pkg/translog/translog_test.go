package translog_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/memstore"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

func testKey(t testing.TB, origin string) translog.LogKey {
	t.Helper()
	seed := sha256.Sum256([]byte("translog test"))
	k, err := translog.NewLogKey(origin, receipt.Key{Version: "t", Private: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// buildLog records the leaves named by ids in a new memory store and sequences them.
func buildLog(t *testing.T, key translog.LogKey, ids []string) (*memstore.Store, translog.Checkpoint) {
	t.Helper()
	clk := testclock.New(testclock.Epochs()[0])
	s := memstore.New(clk.Now)
	ctx := context.Background()
	for _, id := range ids {
		if err := s.RecordReceipt(ctx, store.Receipt{VerificationID: id, ReceiptHash: sha256.Sum256([]byte(id)), Expires: clk.Now().Add(1e12)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (&translog.Sequencer{Storage: s, Key: key}).Drain(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := s.LogHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := translog.OpenCheckpoint(h.Checkpoint, key.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	return s, cp
}

func tiles(t *testing.T, s *memstore.Store) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		v, err := translog.Read(context.Background(), s)
		if err != nil {
			return nil, err
		}
		data, _, err := v.Tile(path)
		return data, err
	}
}

func names(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// A log grown from an earlier one passes the audit against the earlier checkpoint; a log that
// holds other leaves at the same key (a fork, or a history rewritten) fails it with ErrFork, and
// an earlier checkpoint larger than the current tree is refused.
func TestAuditDetectsFork(t *testing.T) {
	key := testKey(t, "verifier.test/log")
	_, old := buildLog(t, key, names("a", 300))
	grown, now := buildLog(t, key, append(names("a", 300), names("b", 20)...))
	if _, err := translog.Audit(tiles(t, grown), now, &old); err != nil {
		t.Fatalf("audit of a grown log: %v", err)
	}
	forked, fnow := buildLog(t, key, append(append(names("a", 299), "x"), names("b", 20)...))
	if _, err := translog.Audit(tiles(t, forked), fnow, &old); !errors.Is(err, translog.ErrFork) {
		t.Errorf("audit of a forked log = %v, want ErrFork", err)
	}
	if _, err := translog.Audit(tiles(t, grown), old, &now); err == nil {
		t.Error("an earlier checkpoint larger than the current one was accepted")
	}
}

// A checkpoint opens under its own key only, and not once any byte of its body is changed.
func TestCheckpointTampering(t *testing.T) {
	key := testKey(t, "verifier.test/log")
	signed, err := key.Sign(5, tlog.RecordHash([]byte("root")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := translog.OpenCheckpoint(signed, key.VerifierKey); err != nil {
		t.Fatal(err)
	}
	body := string(signed[:strings.Index(string(signed), "\n\n")])
	for i := range len(body) {
		b := []byte(string(signed))
		b[i] ^= 0x01
		if _, err := translog.OpenCheckpoint(b, key.VerifierKey); err == nil {
			t.Fatalf("a checkpoint with byte %d changed opens", i)
		}
	}
	other := testKey(t, "other.test/log")
	if _, err := translog.OpenCheckpoint(signed, other.VerifierKey); err == nil {
		t.Error("a checkpoint opens under another log's key")
	}
}

// ParseCheckpoint never panics, and what it accepts it writes back the same.
func FuzzParseCheckpoint(f *testing.F) {
	f.Add("verifier.test/log\n5\n" + strings.Repeat("A", 43) + "=\n")
	f.Add("o\n0\n\n")
	f.Add("o\n-1\nAA==\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := translog.ParseCheckpoint(text)
		if err != nil {
			return
		}
		back, err := translog.ParseCheckpoint(c.Text())
		if err != nil || back != c {
			t.Fatalf("round trip of %q: %+v, %v", text, back, err)
		}
	})
}

// Origin is the base URL's host and path plus /log.
func ExampleOrigin() {
	fmt.Println(translog.Origin("https://verifier.example.com"))
	fmt.Println(translog.Origin("https://example.com/verifier/"))
	// Output:
	// verifier.example.com/log
	// example.com/verifier/log
}
