// Package testclock is the one settable clock of the tests. A test builds one Clock and hands its
// Now to every component that reads time (the service, the store, payments, anything with an
// expiry), so the test's day is the same everywhere and no outcome depends on the calendar date
// the suite happens to run on.
package testclock

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when the test moves it. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock that reads at until it is set or advanced.
func New(at time.Time) *Clock { return &Clock{now: at} }

// Now is the clock's time; pass the method value (c.Now) wherever a func() time.Time is taken.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to at.
func (c *Clock) Set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = at
}

// Advance moves the clock forward by d (backward when d is negative) and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Epochs are the instants a calendar-independence test runs at: years before and after any day the
// suite might run on, and the wall clock's own day, each shortly before a UTC midnight so that a
// test can cross into the next day. A test that passes at all of them does not depend on the date.
func Epochs() []time.Time {
	y, m, d := time.Now().UTC().Date()
	return []time.Time{
		time.Date(2003, 2, 28, 23, 59, 0, 0, time.UTC),
		time.Date(y, m, d, 23, 59, 0, 0, time.UTC),
		time.Date(2091, 12, 31, 23, 59, 0, 0, time.UTC),
	}
}
