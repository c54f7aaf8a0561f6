// Package kept bounds what signatures an anonymous caller can make the service produce: a
// signature asked for without payment (a 402 answer's signed offers, a stored record's in-toto
// attestation) is kept in a bounded LRU and handed out again, and the signatures a remote key
// (kms-sign: one billed, rate-limited kms:Sign each) makes afresh are rationed by a token bucket.
// Both are safe for concurrent use; time is the caller's (the service's one clock).
package kept

import (
	"container/list"
	"sync"
	"time"
)

// LRU keeps up to a fixed number of values by key, dropping the least recently used past it.
type LRU[K comparable, V any] struct {
	mu      sync.Mutex
	max     int
	entries map[K]*list.Element
	order   list.List // of *entry[K, V], most recently used first
}

type entry[K comparable, V any] struct {
	key   K
	value V
}

// NewLRU is an LRU that keeps size values at most (at least one).
func NewLRU[K comparable, V any](size int) *LRU[K, V] {
	return &LRU[K, V]{max: max(size, 1), entries: map[K]*list.Element{}}
}

// Get is the value kept under k, which becomes the most recently used.
func (c *LRU[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[K, V]).value, true
}

// Put keeps v under k as the most recently used, dropping the least recently used value when
// the LRU is full.
func (c *LRU[K, V]) Put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[k]; ok {
		e.Value.(*entry[K, V]).value = v
		c.order.MoveToFront(e)
		return
	}
	c.entries[k] = c.order.PushFront(&entry[K, V]{key: k, value: v})
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*entry[K, V]).key)
	}
}

// Len is how many values are kept.
func (c *LRU[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Ration is a token bucket of fresh signatures: burst at most, filled at perSecond.
type Ration struct {
	mu        sync.Mutex
	perSecond float64
	burst     float64
	tokens    float64   // signatures that may be made now
	filled    time.Time // when tokens was last topped up; zero: never
}

// NewRation is a full ration of burst signatures, filled at perSecond.
func NewRation(perSecond, burst float64) *Ration {
	return &Ration{perSecond: perSecond, burst: burst, tokens: burst}
}

// Take takes n signatures from the ration at now, all or none.
func (r *Ration) Take(n int, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.filled.IsZero() {
		r.filled = now
	}
	if now.After(r.filled) {
		r.tokens = min(r.burst, r.tokens+now.Sub(r.filled).Seconds()*r.perSecond)
		r.filled = now
	}
	if r.tokens < float64(n) {
		return false
	}
	r.tokens -= float64(n)
	return true
}
