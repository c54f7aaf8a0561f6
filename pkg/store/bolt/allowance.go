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
// granted from memory while it stays below that. When the reservation runs out, the next call
// reserves more and waits for the commit, as every call used to.
//
// A client calling now and then reserves one call at a time, so its counter on disk is exact, as
// before. A client whose reservations run out within leaseWindow of each other reserves twice as
// many each time, up to maxLease. Under load most free calls then answer without waiting for the
// disk, which is where their time went.
//
// Safety: the counter on disk is never below the calls granted, so no restart, crash included,
// gives a client more than the allowance. A graceful Close writes the exact counts back. A crash
// loses at most the unused part of each reservation (fewer than maxLease calls, and only for a
// client that was calling several times a second): that client finds those free calls counted
// as used for the rest of its day.
const (
	maxLease    = 32
	leaseWindow = time.Second
	// maxCounters bounds the counters held in memory. A counter with nothing reserved beyond its
	// use is dropped without loss when room is needed; when all are busy, a new client's calls are
	// reserved one at a time, exactly, without a counter in memory.
	maxCounters = 1 << 16
)

// counter is one client's allowance for one day, in memory.
type counter struct {
	mu       sync.Mutex // serialises this counter's calls, reservation commits included
	dead     bool       // dropped from the map; a caller holding it looks again
	loaded   bool       // used and reserved hold the counter on disk
	used     int        // calls granted
	reserved int        // the count on disk: used <= reserved
	expires  int64      // epoch seconds; past it the counter is gone
	lease    int        // size of the next reservation
	leasedAt time.Time  // when the last reservation was taken
}

// counters is the in-memory side of the allowance bucket.
type counters struct {
	mu  sync.Mutex
	m   map[string]*counter
	max int // maxCounters, unless a test sets it
}

// get returns key's counter, making one if there is room; nil means none is held for key.
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
		cs.prune(now)
		if len(cs.m) >= limit {
			return nil
		}
	}
	c := &counter{}
	cs.m[key] = c
	return c
}

// prune drops every counter that loses nothing by being dropped: expired ones, and those with
// nothing reserved beyond their use (the disk holds them exactly). Counters in use are skipped.
func (cs *counters) prune(now time.Time) {
	for k, c := range cs.m {
		if !c.mu.TryLock() {
			continue
		}
		if !c.loaded || c.used == c.reserved || storekey.Expired(c.expires, now) {
			c.dead = true
			delete(cs.m, k)
		}
		c.mu.Unlock()
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

// ConsumeAllowance implements store.Store. The grant is decided in memory under the counter's
// lock; a call beyond the reservation first commits a larger one (see maxLease).
func (s *Store) ConsumeAllowance(ctx context.Context, client, day string, limit int, expires time.Time) (bool, int, error) {
	if err := checkAllowanceArgs(client, day); err != nil {
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
		if c == nil {
			return s.consumeExact(key, limit, expires)
		}
		c.mu.Lock()
		if c.dead {
			c.mu.Unlock()
			continue
		}
		granted, remaining, err := s.consume(c, key, limit, expires)
		c.mu.Unlock()
		return granted, remaining, err
	}
}

// consume takes one call from c, reserving more on disk when its reservation is used up. The
// caller holds c.mu.
func (s *Store) consume(c *counter, key []byte, limit int, expires time.Time) (bool, int, error) {
	now := s.now()
	if c.loaded && storekey.Expired(c.expires, now) {
		c.loaded = false
	}
	if !c.loaded {
		n, err := s.readCounter(key)
		if err != nil {
			return false, 0, fmt.Errorf("consume allowance: %w", err)
		}
		c.used, c.reserved, c.expires, c.lease, c.loaded = n, n, expires.Unix(), 0, true
	}
	if c.used >= limit {
		return false, 0, nil
	}
	if c.used < c.reserved {
		c.used++
		return true, storekey.Remaining(limit, c.used), nil
	}
	lease := 1
	if c.lease > 0 && now.Sub(c.leasedAt) < leaseWindow {
		lease = min(2*c.lease, maxLease)
	}
	// The count on disk is read again: calls that consumeExact granted while this counter was
	// being made (the only other writer) count as used.
	var used, reserved int
	err := s.writes.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAllowance)
		used, reserved = c.used, c.reserved
		if n, exp, ok := decodeCounter(b.Get(key)); ok && !storekey.Expired(exp, s.now()) && n > reserved {
			used, reserved = used+n-reserved, n
		}
		if used >= limit {
			return nil
		}
		reserved = min(used+lease, limit)
		return b.Put(key, encodeCounter(reserved, expires.Unix()))
	})
	if err != nil {
		return false, 0, fmt.Errorf("consume allowance: %w", err)
	}
	c.used, c.reserved, c.expires, c.lease, c.leasedAt = used, reserved, expires.Unix(), lease, now
	if c.used >= limit {
		return false, 0, nil
	}
	c.used++
	return true, storekey.Remaining(limit, c.used), nil
}

// consumeExact is the allowance without a counter in memory: one call reserved and granted in one
// write transaction, as exact on disk as a counter with a reservation of one.
func (s *Store) consumeExact(key []byte, limit int, expires time.Time) (bool, int, error) {
	var granted bool
	var remaining int
	// Concurrent writers share one commit; the function may run more than once, so it sets its
	// results afresh.
	err := s.writes.update(func(tx *bbolt.Tx) error {
		granted, remaining = false, 0
		b := tx.Bucket(bucketAllowance)
		used := 0
		if n, exp, ok := decodeCounter(b.Get(key)); ok && !storekey.Expired(exp, s.now()) {
			used = n
		}
		if used >= limit {
			return nil
		}
		used++
		granted, remaining = true, storekey.Remaining(limit, used)
		return b.Put(key, encodeCounter(used, expires.Unix()))
	})
	if err != nil {
		return false, 0, fmt.Errorf("consume allowance: %w", err)
	}
	return granted, remaining, nil
}

// readCounter is the live count on disk for key, 0 when there is none or it has expired.
func (s *Store) readCounter(key []byte) (int, error) {
	var used int
	err := s.db.View(func(tx *bbolt.Tx) error {
		if n, exp, ok := decodeCounter(tx.Bucket(bucketAllowance).Get(key)); ok && !storekey.Expired(exp, s.now()) {
			used = n
		}
		return nil
	})
	return used, err
}

// AllowanceUsed implements store.Store: the count in memory when the store holds one, which is
// exact, otherwise the count on disk.
func (s *Store) AllowanceUsed(ctx context.Context, client, day string) (int, error) {
	if err := checkAllowanceArgs(client, day); err != nil {
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
		if c.loaded && !live && !c.dead {
			s.counters.drop(string(key), c)
		}
		c.mu.Unlock()
		if live {
			return used, nil
		}
	}
	var used int
	var expired bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		n, exp, ok := decodeCounter(tx.Bucket(bucketAllowance).Get(key))
		switch {
		case !ok:
		case storekey.Expired(exp, s.now()):
			expired = true
		default:
			used = n
		}
		return nil
	})
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
		b := tx.Bucket(bucketAllowance)
		for i, c := range held {
			if err := b.Put([]byte(keys[i]), encodeCounter(c.used, c.expires)); err != nil {
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
