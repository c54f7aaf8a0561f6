// Package reputation is the trust score of SPEC §9 in one place: the per-agent aggregate that the
// stores keep up to date on every recorded verification, and the formula that turns it into a
// score. It is pure (no I/O, no clock it is not given), so the stores, the HTTP layer and the
// tests all compute exactly the same thing.
package reputation

import (
	"math"
	"time"
)

// Method is the versioned name of the formula, published with every score so that a buyer can tell
// which formula produced it. Any change to the weights, the half-life, the interval, the rounding or
// the confidence thresholds must change this name.
//
// Each verification weighs
//
//	w = 0.5^(age_days/30) × (1 if paid else 0.5)
//
// where age_days is the time from its verified_at to the moment the score is computed, in days of
// 86,400 seconds (a verification dated after that moment counts as age 0). Recent evidence counts
// more than old, and paid evidence twice as much as free, because free calls with a self-chosen
// agent_id cost nothing to fake.
//
// With n = Σw (the effective verifications) and p = Σw over passes / n (the weighted pass rate),
// the score is 100 × the lower bound of the 95% Wilson score interval of p with sample size n:
//
//	lower = (p + z²/2n − z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n),  z = 1.959963984540054
//
// rounded to one decimal place. Wilson's interval is defined for any positive n, so the fractional
// n of weighted counts plugs in directly: n is how many fresh, paid verifications the evidence is
// worth. The lower bound is what makes the score hard to game: a handful of passes cannot buy a
// high score (one fresh paid pass scores 20.7, ten score 72.2), only a long record can.
//
// "Effective verifications" is that same n = Σw, deliberately not Kish's effective sample size
// (Σw)²/Σw²: Kish's measure ignores the scale of the weights, so a hundred free calls would count
// as a hundred, which is exactly the cheap evidence the weights discount. confidence is "low"
// below 10 effective verifications, "medium" below 100 and "high" from 100 on.
const Method = "wilson-lower-95/half-life-30d/paid-1-free-0.5/v1"

// The formula's constants (see Method).
const (
	// HalfLifeDays is how many days it takes a verification's weight to halve.
	HalfLifeDays = 30.0
	// PaidWeight and FreeWeight are a fresh verification's weight when paid and when free.
	PaidWeight = 1.0
	FreeWeight = 0.5
	// Z95 is the standard normal quantile of a two-sided 95% interval.
	Z95 = 1.959963984540054
	// MediumConfidenceAt and HighConfidenceAt are the effective verifications from which the
	// confidence is "medium" and "high".
	MediumConfidenceAt = 10.0
	HighConfidenceAt   = 100.0
	// WindowDays is the span of last_30_days: the UTC day of the lookup and the 29 before it.
	WindowDays = 30
)

// secondsPerDay is the length of the day age_days is counted in.
const secondsPerDay = 86400

// Decay is the factor 0.5^(age_days/HalfLifeDays) for an age; a negative age (a verification dated
// after the lookup, by clock skew) counts as age 0.
func Decay(age time.Duration) float64 {
	if age <= 0 {
		return 1
	}
	return math.Exp2(-age.Seconds() / secondsPerDay / HalfLifeDays)
}

// Weight is a fresh verification's weight before decay.
func Weight(paid bool) float64 {
	if paid {
		return PaidWeight
	}
	return FreeWeight
}

// WilsonLower is the lower bound of the 95% Wilson score interval for successes out of n, where
// both may be fractional (weighted counts). It is 0 when n is not positive.
func WilsonLower(successes, n float64) float64 {
	if !(n > 0) {
		return 0
	}
	p := math.Min(math.Max(successes/n, 0), 1)
	z2 := Z95 * Z95
	centre := p + z2/(2*n)
	margin := Z95 * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return math.Max((centre-margin)/(1+z2/n), 0)
}

// Confidence names how much evidence effective verifications amount to.
func Confidence(effective float64) string {
	switch {
	case effective < MediumConfidenceAt:
		return "low"
	case effective < HighConfidenceAt:
		return "medium"
	}
	return "high"
}

// round rounds x to places decimal places.
func round(x float64, places int) float64 {
	p := math.Pow10(places)
	return math.Round(x*p) / p
}
