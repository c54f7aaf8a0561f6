package receipt

import (
	"math/rand/v2"
	"testing"
	"time"
)

// verified_at is written as the seed writes it, whatever the time's zone.
func TestFormatTime(t *testing.T) {
	at := time.Date(2026, 10, 14, 21, 12, 5, 645221000, time.FixedZone("CEST", 2*3600))
	if got, want := FormatTime(at), "2026-10-14T19:12:05.645221+00:00"; got != want {
		t.Errorf("FormatTime = %q, want %q", got, want)
	}
	if got, want := FormatTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), "2026-01-02T03:04:05.000000+00:00"; got != want {
		t.Errorf("FormatTime = %q, want %q", got, want)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		at := time.Unix(rng.Int64N(400*365*86400)-100*365*86400, rng.Int64N(1e9)).In(time.FixedZone("", (rng.IntN(49)-24)*1800))
		if rng.IntN(100) == 0 {
			at = at.AddDate(rng.IntN(20000)-10000, 0, 0)
		}
		if got, want := FormatTime(at), at.UTC().Format("2006-01-02T15:04:05.000000+00:00"); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", at, got, want)
		}
	}
}
