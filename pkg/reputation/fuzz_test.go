package reputation

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// FuzzUnmarshalAggregate feeds stored aggregates of any shape: decoding never panics, and an
// aggregate it accepts scores within 0–100, keeps accepting writes, and round-trips.
func FuzzUnmarshalAggregate(f *testing.F) {
	full := Replay(concat(history(70, true, true, 0), history(5, false, false, 40*day)))
	for _, a := range []Aggregate{{}, Replay(history(3, true, false, 0)), full} {
		b, _ := json.Marshal(a)
		f.Add(b)
	}
	f.Add([]byte(`{"verifications":1,"passed":1,"failed":0,"days":[{"day":5,"total":1,"passed":1},{"day":4,"total":1,"passed":0}]}`))
	f.Add([]byte(`{"verifications":1,"passed":1,"failed":0,"weight":1e308,"pass_weight":1e308}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := UnmarshalAggregate(data)
		if err != nil {
			return
		}
		for _, at := range []time.Time{now, now.Add(-400 * day), now.Add(4000 * day)} {
			s := a.ScoreAt(at)
			if s.Value != nil && (math.IsNaN(*s.Value) || *s.Value < 0 || *s.Value > 100) {
				t.Fatalf("score %v out of range", *s.Value)
			}
			a.LastDays(at)
		}
		a.Add(Observation{VerifiedAt: now, Passed: true, TaskID: "t", CallerID: "c"})
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal after Add: %v", err)
		}
		if _, err := UnmarshalAggregate(b); err != nil {
			t.Fatalf("an accepted aggregate after Add no longer decodes: %v\n%s", err, b)
		}
	})
}
