package storekey

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

func TestCursorRoundTrip(t *testing.T) {
	cases := []struct {
		at time.Time
		id string
	}{
		{time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), "v-1"},
		{time.Date(2025, 3, 1, 12, 0, 0, 1, time.FixedZone("x", -5*3600)), "id#with#separators"},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Nanosecond), "ä/ü 🙂"},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), strings.Repeat("x", MaxIDLength)},
	}
	for _, c := range cases {
		key := HistoryKey(c.at, c.id)
		got, err := DecodeCursor(EncodeCursor(key))
		if err != nil {
			t.Errorf("DecodeCursor(EncodeCursor(%q)): %v", key, err)
			continue
		}
		if got != key {
			t.Errorf("cursor round trip = %q, want %q", got, key)
		}
	}
}

func TestHistoryKeyOrder(t *testing.T) {
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	// Each key must sort after the previous one: later instants, then larger ids at one instant.
	keys := []string{
		HistoryKey(base.Add(-time.Hour), "z"),
		HistoryKey(base, "a"),
		HistoryKey(base, "b"),
		HistoryKey(base.Add(time.Nanosecond), "a"),
		HistoryKey(base.Add(time.Second).In(time.FixedZone("x", 9*3600)), "a"),
		HistoryKey(base.Add(10*time.Second), "a"),
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("key %q does not sort before %q", keys[i-1], keys[i])
		}
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(EncodeCursor(HistoryKey(time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC), "v-1")))
	f.Add("")
	f.Add("%%%")
	f.Add("aGVsbG8")
	f.Add(EncodeCursor("2025-03-01T12:00:00.000000000Z#"))
	f.Fuzz(func(t *testing.T, cursor string) {
		key, err := DecodeCursor(cursor)
		if err != nil {
			if !errors.Is(err, store.ErrBadCursor) {
				t.Fatalf("DecodeCursor error %v does not wrap ErrBadCursor", err)
			}
			return
		}
		// Whatever is accepted must be a key HistoryKey could have made.
		at, err := time.Parse(timeLayout, key[:len(timeLayout)])
		if err != nil {
			t.Fatalf("accepted key %q has no valid time: %v", key, err)
		}
		if got := HistoryKey(at, key[len(timeLayout)+len(keySeparator):]); got != key {
			t.Fatalf("accepted key %q is not canonical; HistoryKey gives %q", key, got)
		}
	})
}

func TestCheckDay(t *testing.T) {
	for day, ok := range map[string]bool{
		"2025-03-01": true, "2024-02-29": true, "2025-02-29": false, "2025-3-1": false, "": false, "2025-03-01 ": false,
	} {
		if got := CheckDay(day) == nil; got != ok {
			t.Errorf("CheckDay(%q) ok = %v, want %v", day, got, ok)
		}
	}
}

// TestCheckVerificationLabels: every task id and caller id the service sends is accepted (the
// longest task id in characters, each of them four bytes in UTF-8), and past MaxLabelLength bytes
// neither is.
func TestCheckVerificationLabels(t *testing.T) {
	valid := store.Verification{AgentID: "agent", VerificationID: "v-1", Result: "pass",
		VerifiedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	cases := []struct {
		name             string
		taskID, callerID string
		ok               bool
	}{
		{"longest task id the service sends", strings.Repeat("🙂", wire.MaxIDLen), strings.Repeat("f", 64), true},
		{"labels at the bound", strings.Repeat("x", MaxLabelLength), strings.Repeat("x", MaxLabelLength), true},
		{"task id past the bound", strings.Repeat("x", MaxLabelLength+1), "", false},
		{"caller id past the bound", "", strings.Repeat("x", MaxLabelLength+1), false},
	}
	for _, c := range cases {
		v := valid
		v.TaskID, v.CallerID = c.taskID, c.callerID
		if got := CheckVerification(v) == nil; got != c.ok {
			t.Errorf("%s: CheckVerification ok = %v, want %v", c.name, got, c.ok)
		}
	}
}
