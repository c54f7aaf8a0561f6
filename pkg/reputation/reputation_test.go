package reputation

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// now is the instant every golden case is scored at.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// history builds n verifications of one kind, all age days old.
func history(n int, passed, paid bool, age time.Duration) []Observation {
	out := make([]Observation, n)
	for i := range out {
		out[i] = Observation{VerifiedAt: now.Add(-age), Passed: passed, Paid: paid, OverallRatio: 1, TaskID: fmt.Sprint("t", i)}
	}
	return out
}

func concat(hs ...[]Observation) []Observation {
	var out []Observation
	for _, h := range hs {
		out = append(out, h...)
	}
	return out
}

// z² = 1.959963984540054² = 3.8414588206941254. When every verification passed (p = 1) the Wilson
// lower bound simplifies to n/(n+z²); when none did (p = 0) it is 0.
var goldenScores = []struct {
	name       string
	history    []Observation
	effective  float64 // n = Σw
	score      float64 // 100 × Wilson lower bound, one decimal
	confidence string
}{
	{
		// One fresh paid pass: n = 1, p = 1 → 1/(1+3.841459) = 0.206549 → 20.7.
		name: "one paid pass", history: history(1, true, true, 0),
		effective: 1, score: 20.7, confidence: "low",
	},
	{
		// One fresh free pass weighs 0.5: n = 0.5 → 0.5/(0.5+3.841459) = 0.115169 → 11.5.
		name: "one free pass", history: history(1, true, false, 0),
		effective: 0.5, score: 11.5, confidence: "low",
	},
	{
		// One paid pass 30 days old: 0.5^(30/30) × 1 = 0.5, the same weight as a fresh free pass.
		name: "one paid pass a half-life old", history: history(1, true, true, 30*day),
		effective: 0.5, score: 11.5, confidence: "low",
	},
	{
		// One fresh paid fail: p = 0 → 0.
		name: "one paid fail", history: history(1, false, true, 0),
		effective: 1, score: 0, confidence: "low",
	},
	{
		// Ten fresh paid passes: n = 10 → 10/13.841459 = 0.722467 → 72.2; n = 10 is medium.
		name: "all pass, ten", history: history(10, true, true, 0),
		effective: 10, score: 72.2, confidence: "medium",
	},
	{
		// A hundred fresh paid passes: 100/103.841459 = 0.963007 → 96.3; n = 100 is high.
		name: "all pass, a hundred", history: history(100, true, true, 0),
		effective: 100, score: 96.3, confidence: "high",
	},
	{
		// Ten fresh paid fails: p = 0 → 0, whatever n.
		name: "all fail, ten", history: history(10, false, true, 0),
		effective: 10, score: 0, confidence: "medium",
	},
	{
		// Ten paid passes 60 days old each weigh 0.5^2 = 0.25: n = 2.5 → 2.5/6.341459 = 0.394231
		// → 39.4, against 72.2 for the same record when fresh.
		name: "old passes", history: history(10, true, true, 60*day),
		effective: 2.5, score: 39.4, confidence: "low",
	},
	{
		// Recent passes, old fails: 5 fresh paid passes (w 1) and 5 paid fails 90 days old
		// (w 0.5^3 = 0.125): n = 5.625, p = 5/5.625 = 0.888889.
		//   z²/2n = 0.341463, p(1-p)/n = 0.017558, z²/4n² = 0.030352, √(0.047911) = 0.218885,
		//   × z = 0.429006; (0.888889 + 0.341463 − 0.429006) / (1 + z²/n = 1.682926)
		//   = 0.801346 / 1.682926 = 0.476162 → 47.6.
		name: "recent passes, old fails", history: concat(history(5, true, true, 0), history(5, false, true, 90*day)),
		effective: 5.625, score: 47.6, confidence: "low",
	},
	{
		// The mirror image: 5 fresh paid fails and 5 paid passes 90 days old: n = 5.625,
		// p = 0.625/5.625 = 0.111111; the same n gives z²/2n = 0.341463 and the same root 0.429006:
		// (0.111111 + 0.341463 − 0.429006) / 1.682926 = 0.023568 / 1.682926 = 0.014004 → 1.4.
		name: "recent fails, old passes", history: concat(history(5, false, true, 0), history(5, true, true, 90*day)),
		effective: 5.625, score: 1.4, confidence: "low",
	},
	{
		// Ten fresh free passes weigh 0.5 each: n = 5 → 5/8.841459 = 0.565518 → 56.6, against 72.2
		// for ten paid ones.
		name: "free passes", history: history(10, true, false, 0),
		effective: 5, score: 56.6, confidence: "low",
	},
	{
		// 8 fresh paid passes and 4 fresh free fails: n = 8 + 4×0.5 = 10, p = 0.8.
		//   z²/2n = 0.192073, p(1-p)/n = 0.016, z²/4n² = 0.009604, √(0.025604) = 0.160011,
		//   × z = 0.313617; (0.8 + 0.192073 − 0.313617) / 1.384146 = 0.678456 / 1.384146
		//   = 0.490162 → 49.0.
		name: "paid passes, free fails", history: concat(history(8, true, true, 0), history(4, false, false, 0)),
		effective: 10, score: 49.0, confidence: "medium",
	},
}

func TestGoldenScores(t *testing.T) {
	for _, c := range goldenScores {
		t.Run(c.name, func(t *testing.T) {
			a := Replay(c.history)
			got := a.ScoreAt(now)
			if got.Value == nil {
				t.Fatalf("score = nil (%s), want %v", got.Reason, c.score)
			}
			if *got.Value != c.score {
				t.Errorf("score = %v, want %v", *got.Value, c.score)
			}
			if math.Abs(got.Effective-c.effective) > 1e-9 {
				t.Errorf("effective verifications = %v, want %v", got.Effective, c.effective)
			}
			if got.Confidence != c.confidence {
				t.Errorf("confidence = %s, want %s", got.Confidence, c.confidence)
			}
		})
	}
}

func TestNoData(t *testing.T) {
	var a Aggregate
	got := a.ScoreAt(now)
	if got.Value != nil || got.Reason != "no_data" || got.Confidence != "low" {
		t.Fatalf("score of an empty aggregate = %+v, want nil, no_data, low", got)
	}
	if a.PassRate() != 0 || a.MeanOverallRatio() != 0 || a.Tasks.Estimate() != 0 {
		t.Errorf("empty aggregate: pass rate %v, mean %v, tasks %v; want zeros", a.PassRate(), a.MeanOverallRatio(), a.Tasks.Estimate())
	}
}

// TestScoreDecaysAtLookup checks that a lookup ages the evidence to its own time: the same
// aggregate scored 30 days later has half the effective verifications.
func TestScoreDecaysAtLookup(t *testing.T) {
	a := Replay(history(10, true, true, 0))
	later := a.ScoreAt(now.Add(30 * day))
	if math.Abs(later.Effective-5) > 1e-9 || *later.Value != 56.6 { // as ten fresh free passes
		t.Errorf("30 days later: n = %v, score %v; want 5, 56.6", later.Effective, *later.Value)
	}
	// A lookup dated before the newest verification (clock skew) counts it as fresh.
	early := a.ScoreAt(now.Add(-time.Hour))
	if early.Effective != 10 {
		t.Errorf("lookup before the newest verification: n = %v, want 10", early.Effective)
	}
}

func TestWilsonLower(t *testing.T) {
	cases := []struct{ s, n, want float64 }{
		{0, 0, 0},
		{1, 0, 0},
		{0, 1, 0},
		{1, 1, 1 / (1 + Z95*Z95)},
		{50, 100, 0.403832},       // the textbook case: 50/100 → [0.4038, 0.5962]
		{2, 1, 1 / (1 + Z95*Z95)}, // p is clamped to 1
	}
	for _, c := range cases {
		if got := WilsonLower(c.s, c.n); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("WilsonLower(%v, %v) = %v, want %v", c.s, c.n, got, c.want)
		}
	}
}

func TestConfidence(t *testing.T) {
	for _, c := range []struct {
		n    float64
		want string
	}{{0, "low"}, {9.999, "low"}, {10, "medium"}, {99.99, "medium"}, {100, "high"}, {1e6, "high"}} {
		if got := Confidence(c.n); got != c.want {
			t.Errorf("Confidence(%v) = %s, want %s", c.n, got, c.want)
		}
	}
}

// TestOrderDoesNotMatter adds one history in many orders: every order gives the same aggregate
// (weighted sums within rounding), which is what lets concurrent writers apply it in any order.
func TestOrderDoesNotMatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h []Observation
	for i := range 300 {
		h = append(h, Observation{
			VerifiedAt:   now.Add(-time.Duration(rng.Int64N(int64(200 * day)))),
			Passed:       rng.IntN(3) > 0,
			Paid:         rng.IntN(2) == 0,
			OverallRatio: float64(rng.IntN(1000)) / 1000,
			TaskID:       fmt.Sprint("task-", rng.IntN(40)),
			CallerID:     fmt.Sprint("caller-", i%17),
		})
	}
	want := Replay(h)
	for round := range 20 {
		rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		got := Replay(h)
		if err := Compare(got, want); err != nil {
			t.Fatalf("order %d: %v", round, err)
		}
	}
	// The incremental sums equal the definition, Σ 0.5^(age_days/30) × (1 or 0.5), at any lookup.
	for _, at := range []time.Time{now, now.Add(45 * day)} {
		var n, p float64
		for _, o := range h {
			w := math.Pow(0.5, at.Sub(o.VerifiedAt).Hours()/24/30) * map[bool]float64{true: 1, false: 0.5}[o.Paid]
			n += w
			if o.Passed {
				p += w
			}
		}
		gotN, gotP := want.WeightsAt(at)
		if math.Abs(gotN-n) > 1e-9*n || math.Abs(gotP-p) > 1e-9*p {
			t.Errorf("weights at %v = %v, %v; by definition %v, %v", at, gotN, gotP, n, p)
		}
	}
	if got, want := want.Callers.Estimate(), int64(17); got != want {
		t.Errorf("distinct callers = %d, want %d", got, want)
	}
	if got := want.Tasks.Estimate(); got < 38 || got > 42 {
		t.Errorf("distinct tasks = %d, want about 40", got)
	}
}

// TestLastDays checks the window: the lookup's UTC day and the 29 before it.
func TestLastDays(t *testing.T) {
	midnight := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	var a Aggregate
	for _, at := range []time.Time{
		midnight.Add(23 * time.Hour),               // today
		midnight.Add(-29 * day),                    // first day of the window
		midnight.Add(-29*day - time.Nanosecond),    // last instant before it
		midnight.Add(-100 * day),                   // long ago
		midnight.Add(-5 * day).Add(12 * time.Hour), // inside
	} {
		a.Add(Observation{VerifiedAt: at, Passed: at.Hour() == 12, Paid: true})
	}
	total, passed := a.LastDays(midnight.Add(10 * time.Hour))
	if total != 3 || passed != 1 {
		t.Errorf("last 30 days = %d total, %d passed; want 3, 1", total, passed)
	}
	if len(a.Days) > WindowDays {
		t.Errorf("%d day counts kept, want at most %d", len(a.Days), WindowDays)
	}
	// A lookup ten days later sees only what is left in its own window.
	if total, _ := a.LastDays(midnight.Add(10 * day)); total != 2 {
		t.Errorf("last 30 days ten days later = %d, want 2", total)
	}
}

// TestSketchAccuracy checks the distinct counts: exact up to sketchExact, within a few standard
// errors (6.5% each) when large.
func TestSketchAccuracy(t *testing.T) {
	for _, n := range []int{1, 2, 5, 10, 50, 63, 64, 65, 200, 1000, 20000} {
		var s Sketch
		for i := range n {
			s.Add(fmt.Sprintf("caller-%d", i))
			s.Add(fmt.Sprintf("caller-%d", i/2)) // repeats change nothing
		}
		got := float64(s.Estimate())
		tol := math.Max(0.2*float64(n), 1)
		if n <= sketchExact {
			tol = 0
		}
		if math.Abs(got-float64(n)) > tol {
			t.Errorf("%d distinct strings estimated as %v", n, got)
		}
	}
}

func TestUnmarshalAggregate(t *testing.T) {
	a := Replay(history(3, true, false, 0))
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalAggregate(b)
	if err != nil {
		t.Fatalf("UnmarshalAggregate: %v", err)
	}
	if err := Compare(back, a); err != nil {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range []string{
		`not json`,
		`{"verifications":2,"passed":1,"failed":0}`,
		`{"verifications":1,"passed":1,"failed":0,"weight":-1}`,
		`{"verifications":1,"passed":1,"failed":0,"tasks":"AAAA"}`,           // 3 bytes: not whole hashes
		`{"verifications":1,"passed":1,"failed":0,"callers":"AAAAAgAAAAE="}`, // hashes out of order
	} {
		if _, err := UnmarshalAggregate([]byte(bad)); err == nil {
			t.Errorf("UnmarshalAggregate(%s): no error", bad)
		}
	}
}
