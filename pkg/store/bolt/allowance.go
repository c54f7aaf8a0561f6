package bolt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
)

// The free allowance is counted in memory and reserved on disk ahead of use.
//
// The local server is the only process that opens its file (bbolt locks it), so the store can know
// each counter exactly in memory. What must be durable before a free call is answered is only an
// upper bound on the calls granted: the counter on disk holds the calls *reserved*, and a call is
// granted from memory while it stays below that. A call beyond the reservation takes the next
// number and waits until a reservation that covers it has committed.
//
// A client calling now and then reserves one call at a time, so its counter on disk is exact, as
// before. A client whose reservations come within leaseWindow of each other reserves twice as
// many each time, up to maxLease, and reserves the next batch in the background once half of the
// current one is used, so that its calls do not queue behind the commit. Under load most free
// calls then answer without waiting for the disk, which is where their time went. maxLease is
// large for that reason: the next reservation starts with half of the current one left, and that
// half must last a busy client longer than a commit takes on a busy machine, or every free call
// of that client stalls behind the disk. A lease never holds more than an eighth of the daily
// limit (leaseShare), so only a deployment with a large limit reaches maxLease.
//
// Safety: the counter on disk is never below the calls granted, so no restart, crash included,
// gives a client more than the allowance. A graceful Close writes the exact counts back. A crash
// loses at most the unused part of each reservation (fewer than maxLease calls, and only for a
// client that was calling several times a second: a lease doubles only when the last one was
// taken within leaseWindow, in which the client used half of it, so what a crash loses is less
// than about four times what that client called in its last second): that client finds those
// free calls counted as used for the rest of its day. So does a client whose counter is dropped
// to make room (see maxCounters), and a call whose reservation failed to commit, or that stopped
// waiting for it when its context ended (either is answered with an error).
const (
	maxLease    = 4096
	leaseWindow = time.Second
	// leaseShare bounds a reservation to this share of the daily limit as well (125 calls of the
	// default 1,000), so that what a crash or a dropped counter (maxCounters) can cost a client
	// stays a small part of its day: only a deployment with a large limit reaches maxLease.
	leaseShare = 8
	// maxCounters bounds the counters held in memory. To make room, counters with nothing
	// reserved beyond their use are dropped first (the disk holds them exactly), then idle ones
	// with a reservation, whose unused part then counts as used. Counters in use are never
	// dropped, so the map may pass the bound by the calls in flight.
	maxCounters = 1 << 16
)

// counter is one client's allowance for one day, in memory.
type counter struct {
	mu        sync.Mutex // serialises this counter's state
	done      *sync.Cond // on mu: a reservation ended
	dead      bool       // dropped from the map; a caller holding it looks again
	loaded    bool       // the fields below hold the counter on disk
	reserving bool       // a reservation is being committed
	waiting   int        // calls waiting for a reservation
	used      int        // calls taken: granted, or waiting for a reservation that covers them
	reserved  int        // the count on disk: the calls granted are at most this
	failedTo  int        // the calls up to here that were waiting when a reservation failed
	expires   int64      // epoch seconds; past it the counter is gone
	lease     int        // size of the last reservation
	leasedAt  time.Time  // when the last reservation was taken
}

// nextLease is the size of the next reservation: twice the last while they come within
// leaseWindow of each other, otherwise one.
func (c *counter) nextLease(now time.Time) int {
	if c.lease > 0 && now.Sub(c.leasedAt) < leaseWindow {
		return min(2*c.lease, maxLease)
	}
	return 1
}

// waitUntil waits on c.done until ready holds or ctx ends, so that a disk that hangs does not
// hold requests past their deadline: ending ctx wakes the wait. It registers with ctx only when it
// must wait, off the path of the calls a reservation already covers. The caller holds c.mu.
func (c *counter) waitUntil(ctx context.Context, ready func() bool) {
	if ready() {
		return
	}
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.done.Broadcast()
	})
	defer stop()
	for !ready() && ctx.Err() == nil {
		c.done.Wait()
	}
}

// idle reports whether no call or reservation is using c. The caller holds c.mu.
func (c *counter) idle() bool { return !c.reserving && c.waiting == 0 }

// counters is the in-memory side of the allowance bucket.
type counters struct {
	mu  sync.Mutex
	m   map[string]*counter
	max int // maxCounters, unless a test sets it
}

// get returns key's counter, making one (and room for it) if there is none.
func (cs *counters) get(key string, now time.Time) *counter {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c := cs.m[key]; c != nil {
		return c
	}
	if cs.m == nil {
		cs.m = make(map[string]*counter)
	}
	limit := cs.max
	if limit == 0 {
		limit = maxCounters
	}
	if len(cs.m) >= limit {
		cs.prune(now, len(cs.m)-limit+1)
	}
	c := &counter{}
	c.done = sync.NewCond(&c.mu)
	cs.m[key] = c
	return c
}

// prune drops counters to make room for n more: first all that lose nothing by it (expired, or
// with nothing reserved beyond their use), then, while room is still short, idle ones with an
// unused reservation. Counters in use (locked, waited on, reserving) are skipped.
func (cs *counters) prune(now time.Time, n int) {
	for pass := range 2 {
		for k, c := range cs.m {
			if pass == 1 && n <= 0 {
				return
			}
			if !c.mu.TryLock() {
				continue
			}
			lossless := !c.loaded || c.used == c.reserved || storekey.Expired(c.expires, now)
			if c.idle() && (lossless || pass == 1) {
				c.dead = true
				delete(cs.m, k)
				n--
			}
			c.mu.Unlock()
		}
	}
}

// drop removes c from the map if it is still key's counter. The caller holds c.mu.
func (cs *counters) drop(key string, c *counter) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c.dead = true
	if cs.m[key] == c {
		delete(cs.m, key)
	}
}

// errReservation is a call's answer when the reservation it waited for could not be committed.
var errReservation = errors.New("consume allowance: the reservation could not be committed")

// ConsumeAllowance implements store.Store. The call takes the next number under the counter's
// lock; it is granted at once when the reservation on disk covers it, and otherwise waits for the
// reservation that does.
func (s *Store) ConsumeAllowance(ctx context.Context, client, day string, limit int, expires time.Time) (bool, int, error) {
	if err := storekey.CheckAllowance(client, day); err != nil {
		return false, 0, fmt.Errorf("consume allowance: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return false, 0, fmt.Errorf("consume allowance: %w", err)
	}
	if storekey.Expired(expires.Unix(), s.now()) {
		return false, 0, errors.New("consume allowance: the counter's expiry has already passed")
	}
	if limit <= 0 {
		return false, 0, nil
	}
	key := allowanceKey(client, day)
	for {
		c := s.counters.get(string(key), s.now())
		c.mu.Lock()
		if c.dead {
			c.mu.Unlock()
			continue
		}
		granted, remaining, err := s.consume(ctx, c, key, limit, expires)
		c.mu.Unlock()
		return granted, remaining, err
	}
}

// consume takes one call from c. The caller holds c.mu.
func (s *Store) consume(ctx context.Context, c *counter, key []byte, limit int, expires time.Time) (bool, int, error) {
	now := s.now()
	if c.loaded && storekey.Expired(c.expires, now) {
		c.waitUntil(ctx, c.idle)
		if !c.idle() {
			return false, 0, fmt.Errorf("consume allowance: waiting for yesterday's reservation: %w", ctx.Err())
		}
		c.loaded = false
	}
	if !c.loaded {
		n, _, err := s.readCounter(key)
		if err != nil {
			return false, 0, fmt.Errorf("consume allowance: %w", err)
		}
		c.used, c.reserved, c.failedTo, c.expires, c.lease, c.loaded = n, n, n, expires.Unix(), 0, true
	}
	if c.used >= limit {
		return false, 0, nil
	}
	c.used++
	call := c.used
	if call > c.reserved {
		if !c.reserving {
			s.startReservation(c, key, limit, expires, now)
		}
		c.waiting++
		c.waitUntil(ctx, func() bool { return call <= c.reserved || call <= c.failedTo })
		c.waiting--
		if call > c.reserved {
			if call > c.failedTo {
				// Gave up: its number stays taken, as a failed reservation's does.
				return false, 0, fmt.Errorf("consume allowance: waiting for the reservation: %w", ctx.Err())
			}
			return false, 0, errReservation
		}
	} else if !c.reserving && c.reserved-c.used <= c.lease/2 && c.nextLease(now) > 1 {
		// Half of a fast client's reservation is used: reserve the next batch now.
		s.startReservation(c, key, limit, expires, now)
	}
	return true, storekey.Remaining(limit, call), nil
}

// startReservation commits, in the background, a reservation of the next lease calls from the
// latest call taken (as if before it, which is what leaves fewer than maxLease unused), capped at
// limit; when it ends it wakes the calls waiting for it and starts the next one if calls are still
// waiting. The caller holds c.mu.
func (s *Store) startReservation(c *counter, key []byte, limit int, expires, now time.Time) {
	lease := min(c.nextLease(now), max(limit/leaseShare, 1))
	target := min(c.used-1+lease, limit)
	if target <= c.reserved {
		return
	}
	c.reserving = true
	go func() {
		err := s.writes.update(func(tx *bbolt.Tx) error {
			return putIn(tx, bucketAllowance, key, encodeCounter(target, expires.Unix()))
		})
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reserving = false
		if err != nil {
			// The calls waiting now are answered with an error; their numbers stay taken.
			c.failedTo = c.used
		} else {
			c.reserved, c.lease, c.leasedAt = target, lease, now
			if c.used > c.reserved {
				s.startReservation(c, key, limit, expires, s.now())
			}
		}
		c.done.Broadcast()
	}()
}

// readCounter is the live count on disk for key: 0 when there is none or it has expired, which
// expired reports.
func (s *Store) readCounter(key []byte) (used int, expired bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		n, exp, ok := decodeCounter(getIn(tx, bucketAllowance, key))
		switch {
		case !ok:
		case storekey.Expired(exp, s.now()):
			expired = true
		default:
			used = n
		}
		return nil
	})
	return used, expired, err
}

// AllowanceUsed implements store.Store: the count in memory when the store holds one, which is
// exact, otherwise the count on disk.
func (s *Store) AllowanceUsed(ctx context.Context, client, day string) (int, error) {
	if err := storekey.CheckAllowance(client, day); err != nil {
		return 0, fmt.Errorf("read allowance: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("read allowance: %w", err)
	}
	key := allowanceKey(client, day)
	s.counters.mu.Lock()
	c := s.counters.m[string(key)]
	s.counters.mu.Unlock()
	if c != nil {
		c.mu.Lock()
		live := !c.dead && c.loaded && !storekey.Expired(c.expires, s.now())
		used := c.used
		if c.loaded && !live && !c.dead && c.idle() {
			s.counters.drop(string(key), c)
		}
		c.mu.Unlock()
		if live {
			return used, nil
		}
	}
	used, expired, err := s.readCounter(key)
	if err != nil {
		return 0, fmt.Errorf("read allowance: %w", err)
	}
	if expired {
		s.deleteIfExpired(bucketAllowance, key)
	}
	return used, nil
}

// settleCounters writes the exact count of every counter holding an unused reservation, so that
// a graceful stop gives nothing away. It runs at Close, after the server has stopped taking calls;
// the counters stay held, so a call that still comes is counted from the exact count.
func (s *Store) settleCounters() error {
	// A counter's lock is never taken while the map's is held (drop takes them the other way).
	s.counters.mu.Lock()
	all := maps.Clone(s.counters.m)
	s.counters.mu.Unlock()
	now := s.now()
	var held []*counter
	var keys []string
	for k, c := range all {
		c.mu.Lock()
		for !c.idle() {
			c.done.Wait()
		}
		if !c.dead && c.loaded && c.used < c.reserved && !storekey.Expired(c.expires, now) {
			held, keys = append(held, c), append(keys, k)
			continue // unlocked below
		}
		c.mu.Unlock()
	}
	if len(held) == 0 {
		return nil
	}
	defer func() {
		for _, c := range held {
			c.mu.Unlock()
		}
	}()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for i, c := range held {
			if err := putIn(tx, bucketAllowance, []byte(keys[i]), encodeCounter(c.used, c.expires)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		for _, c := range held {
			c.reserved = c.used
		}
	}
	return err
}
