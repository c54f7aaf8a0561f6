package reputation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Observation is what the aggregate needs of one recorded verification.
type Observation struct {
	VerifiedAt   time.Time
	Passed       bool
	Paid         bool
	OverallRatio float64
	TaskID       string
	CallerID     string // the salted caller id; "" when unknown, and then not counted as a caller
}

// Aggregate is an agent's record, maintained by Add in O(1) per verification. Its JSON form is
// what the stores persist, so its field names are a storage format: add fields, never rename them.
//
// The weighted sums are kept decayed to a reference instant (the newest verified_at seen): adding
// a newer verification first multiplies both sums by 0.5^(Δdays/30) and moves the reference, an
// older one is added already decayed, and a lookup decays the sums once more to its own time. Since
// decay is multiplicative, the result does not depend on the order of the writes (up to floating
// point rounding), and each write and each lookup is O(1): no history scan, ever.
//
// The aggregate also keeps exact totals, first and last seen, the sum of overall ratios (for the
// mean), per-UTC-day counts of the newest 30 days (for last_30_days) and two small sketches for
// distinct_tasks and distinct_callers (exact up to 63 distinct values, HyperLogLog beyond). Every
// part merges the same whatever the order of the writes, which is what lets the stores apply
// writes concurrently under optimistic concurrency and lets the tests check the aggregate against
// a replay of the history.
type Aggregate struct {
	Verifications int64 `json:"verifications"`
	Passed        int64 `json:"passed"`
	Failed        int64 `json:"failed"`
	Paid          int64 `json:"paid"`
	// FirstSeen and LastSeen are the oldest and newest verified_at. LastSeen is also the reference
	// instant the weighted sums are decayed to.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// RatioSum is the sum of the overall ratios, for mean_overall_ratio.
	RatioSum float64 `json:"ratio_sum"`
	// Weight is Σw and PassWeight Σw over passes, each w decayed to LastSeen.
	Weight     float64 `json:"weight"`
	PassWeight float64 `json:"pass_weight"`
	// Days counts the verifications of each UTC day from 29 days before LastSeen's day on, oldest
	// first: at most WindowDays entries.
	Days []DayCount `json:"days"`
	// Tasks and Callers are HyperLogLog sketches of the distinct task ids and caller ids.
	Tasks   Sketch `json:"tasks"`
	Callers Sketch `json:"callers"`
}

// DayCount is the verifications of one UTC day.
type DayCount struct {
	Day    int64 `json:"day"` // days since 1970-01-01 UTC
	Total  int64 `json:"total"`
	Passed int64 `json:"passed"`
}

// dayOf is the UTC day t falls in, counted from 1970-01-01.
func dayOf(t time.Time) int64 {
	s := t.Unix()
	d := s / secondsPerDay
	if s%secondsPerDay < 0 {
		d--
	}
	return d
}

// Add counts one verification. The order in which verifications are added does not change the
// Clone is a copy of a that shares no memory with it.
func (a Aggregate) Clone() Aggregate {
	a.Days = slices.Clone(a.Days)
	a.Tasks = slices.Clone(a.Tasks)
	a.Callers = slices.Clone(a.Callers)
	return a
}

// Add counts one verification. The order in which verifications are added does not change the
// result (beyond floating point rounding of the weighted sums).
func (a *Aggregate) Add(o Observation) {
	at := o.VerifiedAt.UTC()
	w := Weight(o.Paid)
	switch {
	case a.Verifications == 0:
		a.FirstSeen, a.LastSeen = at, at
	case at.After(a.LastSeen):
		// Move the reference forward: everything so far ages by the gap.
		f := Decay(at.Sub(a.LastSeen))
		a.Weight *= f
		a.PassWeight *= f
		a.LastSeen = at
	default:
		// An older verification (writes arrive out of order) is added already decayed.
		w *= Decay(a.LastSeen.Sub(at))
	}
	if at.Before(a.FirstSeen) {
		a.FirstSeen = at
	}
	a.Verifications++
	a.Weight += w
	if o.Passed {
		a.Passed++
		a.PassWeight += w
	} else {
		a.Failed++
	}
	if o.Paid {
		a.Paid++
	}
	a.RatioSum += o.OverallRatio
	a.addDay(dayOf(at), o.Passed)
	if o.TaskID != "" {
		a.Tasks.Add(o.TaskID)
	}
	if o.CallerID != "" {
		a.Callers.Add(o.CallerID)
	}
}

// addDay counts a verification of day and drops the days that fell out of the window of the
// newest day; a day already out of it is not counted.
func (a *Aggregate) addDay(day int64, passed bool) {
	cutoff := dayOf(a.LastSeen) - (WindowDays - 1)
	a.Days = slices.DeleteFunc(a.Days, func(d DayCount) bool { return d.Day < cutoff })
	if day < cutoff {
		return
	}
	i, found := slices.BinarySearchFunc(a.Days, day, func(d DayCount, day int64) int {
		switch {
		case d.Day < day:
			return -1
		case d.Day > day:
			return 1
		}
		return 0
	})
	if !found {
		a.Days = slices.Insert(a.Days, i, DayCount{Day: day})
	}
	a.Days[i].Total++
	if passed {
		a.Days[i].Passed++
	}
}

// Replay builds the aggregate of a whole history from scratch. It is the reference the maintained
// aggregate must equal, and what an operator would rebuild a damaged aggregate with.
func Replay(history []Observation) Aggregate {
	var a Aggregate
	for _, o := range history {
		a.Add(o)
	}
	return a
}

// WeightsAt returns Σw and Σw over passes as of now (each w decayed to now rather than to
// LastSeen).
func (a *Aggregate) WeightsAt(now time.Time) (effective, passWeight float64) {
	f := Decay(now.Sub(a.LastSeen))
	return a.Weight * f, a.PassWeight * f
}

// LastDays counts the verifications dated on or after the UTC day WindowDays-1 days before now's.
func (a *Aggregate) LastDays(now time.Time) (total, passed int64) {
	from := dayOf(now.UTC()) - (WindowDays - 1)
	for _, d := range a.Days {
		if d.Day >= from {
			total += d.Total
			passed += d.Passed
		}
	}
	return total, passed
}

// PassRate is the unweighted share of passes over all time, rounded to 6 decimals; 0 without
// verifications.
func (a *Aggregate) PassRate() float64 {
	if a.Verifications == 0 {
		return 0
	}
	return round(float64(a.Passed)/float64(a.Verifications), 6)
}

// MeanOverallRatio is the mean of the overall ratios, rounded to 6 decimals; 0 without
// verifications.
func (a *Aggregate) MeanOverallRatio() float64 {
	if a.Verifications == 0 {
		return 0
	}
	return round(a.RatioSum/float64(a.Verifications), 6)
}

// Score is the outcome of the formula at one instant.
type Score struct {
	// Value is the score, 0 to 100 with one decimal; nil when there is nothing to score.
	Value *float64
	// Reason says why Value is nil: "no_data" (nothing recorded) or "insufficient_data" (every
	// weight has decayed to nothing).
	Reason string
	// Confidence is "low", "medium" or "high" (see Confidence).
	Confidence string
	// Effective is n = Σw at the instant, and WeightedPassRate the weighted pass rate p.
	Effective, WeightedPassRate float64
}

// ScoreAt applies the formula (see Method) to the aggregate as of now.
func (a *Aggregate) ScoreAt(now time.Time) Score {
	if a.Verifications == 0 {
		return Score{Reason: "no_data", Confidence: Confidence(0)}
	}
	n, passes := a.WeightsAt(now)
	if !(n > 0) {
		return Score{Reason: "insufficient_data", Confidence: Confidence(0)}
	}
	v := round(100*WilsonLower(passes, n), 1)
	return Score{Value: &v, Confidence: Confidence(n), Effective: n, WeightedPassRate: math.Min(passes/n, 1)}
}

// UnmarshalAggregate decodes a stored aggregate and refuses one that cannot be right, so that a
// damaged item surfaces as an error instead of a wrong score.
func UnmarshalAggregate(data []byte) (Aggregate, error) {
	var a Aggregate
	if err := json.Unmarshal(data, &a); err != nil {
		return Aggregate{}, fmt.Errorf("decode aggregate: %w", err)
	}
	if err := a.check(); err != nil {
		return Aggregate{}, fmt.Errorf("decode aggregate: %w", err)
	}
	return a, nil
}

func (a *Aggregate) check() error {
	switch {
	case a.Verifications < 0 || a.Passed < 0 || a.Failed < 0 || a.Paid < 0:
		return errors.New("negative count")
	case a.Passed+a.Failed != a.Verifications || a.Paid > a.Verifications:
		return errors.New("counts do not add up")
	case !finite(a.RatioSum) || !finite(a.Weight) || !finite(a.PassWeight) || a.Weight < 0 || a.PassWeight < 0:
		return errors.New("weighted sums are not finite and non-negative")
	case len(a.Days) > WindowDays:
		return errors.New("too many day counts")
	case a.Verifications > 0 && a.FirstSeen.After(a.LastSeen):
		return errors.New("first seen after last seen")
	}
	for i, d := range a.Days {
		if d.Total < 1 || d.Passed < 0 || d.Passed > d.Total || (i > 0 && a.Days[i-1].Day >= d.Day) {
			return errors.New("day counts are malformed or out of order")
		}
	}
	if err := a.Tasks.check(); err != nil {
		return fmt.Errorf("tasks: %w", err)
	}
	if err := a.Callers.check(); err != nil {
		return fmt.Errorf("callers: %w", err)
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// sumTolerance is the relative difference allowed between the floating-point sums of two
// aggregates of the same verifications added in different orders.
const sumTolerance = 1e-9

// Compare tells how two aggregates of the same verifications differ: counts, times, day counts
// and sketches must be equal, the floating-point sums equal within a relative 1e-9 (they are
// rounded differently in different orders). It returns nil when they agree.
func Compare(got, want Aggregate) error {
	type count struct {
		name      string
		got, want int64
	}
	for _, c := range []count{
		{"verifications", got.Verifications, want.Verifications},
		{"passed", got.Passed, want.Passed},
		{"failed", got.Failed, want.Failed},
		{"paid", got.Paid, want.Paid},
	} {
		if c.got != c.want {
			return fmt.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if !got.FirstSeen.Equal(want.FirstSeen) || !got.LastSeen.Equal(want.LastSeen) {
		return fmt.Errorf("seen %v to %v, want %v to %v", got.FirstSeen, got.LastSeen, want.FirstSeen, want.LastSeen)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"ratio_sum", got.RatioSum, want.RatioSum},
		{"weight", got.Weight, want.Weight},
		{"pass_weight", got.PassWeight, want.PassWeight},
	} {
		if math.Abs(f.got-f.want) > sumTolerance*math.Max(1, math.Abs(f.want)) {
			return fmt.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	if !slices.Equal(got.Days, want.Days) {
		return fmt.Errorf("day counts = %v, want %v", got.Days, want.Days)
	}
	if !slices.Equal(got.Tasks, want.Tasks) || !slices.Equal(got.Callers, want.Callers) {
		return errors.New("distinct task or caller sketches differ")
	}
	return nil
}
