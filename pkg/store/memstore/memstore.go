// Package memstore is a store.Store held in memory: the free allowance, payment reservations,
// histories and aggregates of one process, gone when it ends. It passes the same contract suite
// (store/storetest) as store/bolt and store/dynamo, so a service built on it behaves as a
// deployed one does; tests, the worked examples and tools that need no persistence use it instead
// of a service with parts left out.
package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory store.Store, safe for concurrent use. One mutex guards everything: it is
// for tests and small tools, where simplicity matters more than contention.
type Store struct {
	now func() time.Time

	mu         sync.Mutex
	allowances map[allowanceKey]counter
	payments   map[string]int64 // payment id -> expiry, epoch seconds
	answers    map[string]keptClaim
	histories  map[string][]entry
	aggregates map[string]reputation.Aggregate
	log        receiptLog
	closed     bool
}

type allowanceKey struct{ client, day string }

type counter struct {
	used    int
	expires int64 // epoch seconds
}

// entry is one recorded verification under its history sort key.
type entry struct {
	key string
	v   store.Verification
}

// New returns an empty store that reads time from now (the service's one clock); nil means
// time.Now.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{
		now:        now,
		allowances: map[allowanceKey]counter{},
		payments:   map[string]int64{},
		answers:    map[string]keptClaim{},
		histories:  map[string][]entry{},
		aggregates: map[string]reputation.Aggregate{},
	}
}

// errClosed is every call's error after Close.
var errClosed = errors.New("memstore: closed")

// lock takes the store's lock, or answers errClosed (lock not held) after Close or ctx's end.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	return nil
}

// ConsumeAllowance implements store.Store.
func (s *Store) ConsumeAllowance(ctx context.Context, client, day string, limit int, expires time.Time) (bool, int, error) {
	if err := storekey.CheckAllowance(client, day); err != nil {
		return false, 0, fmt.Errorf("consume allowance: %w", err)
	}
	now := s.now()
	if storekey.Expired(expires.Unix(), now) {
		return false, 0, errors.New("consume allowance: the counter's expiry has already passed")
	}
	if err := s.lock(ctx); err != nil {
		return false, 0, fmt.Errorf("consume allowance: %w", err)
	}
	defer s.mu.Unlock()
	k := allowanceKey{client, day}
	c, ok := s.allowances[k]
	if !ok || storekey.Expired(c.expires, now) {
		c = counter{}
	}
	if c.used >= limit {
		return false, storekey.Remaining(limit, c.used), nil
	}
	c.used++
	c.expires = expires.Unix()
	s.allowances[k] = c
	return true, storekey.Remaining(limit, c.used), nil
}

// AllowanceUsed implements store.Store.
func (s *Store) AllowanceUsed(ctx context.Context, client, day string) (int, error) {
	if err := storekey.CheckAllowance(client, day); err != nil {
		return 0, fmt.Errorf("allowance used: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return 0, fmt.Errorf("allowance used: %w", err)
	}
	defer s.mu.Unlock()
	c, ok := s.allowances[allowanceKey{client, day}]
	if !ok || storekey.Expired(c.expires, s.now()) {
		return 0, nil
	}
	return c.used, nil
}

// ReservePayment implements store.Store.
func (s *Store) ReservePayment(ctx context.Context, id string, expires time.Time) error {
	if err := storekey.CheckID("payment id", id); err != nil {
		return fmt.Errorf("reserve payment: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("reserve payment: %w", err)
	}
	defer s.mu.Unlock()
	if exp, ok := s.payments[id]; ok && !storekey.Expired(exp, s.now()) {
		return fmt.Errorf("reserve payment: %w", store.ErrPaymentReplayed)
	}
	s.payments[id] = expires.Unix()
	return nil
}

// ReleasePayment implements store.Store.
func (s *Store) ReleasePayment(ctx context.Context, id string) error {
	if err := storekey.CheckID("payment id", id); err != nil {
		return fmt.Errorf("release payment: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("release payment: %w", err)
	}
	defer s.mu.Unlock()
	delete(s.payments, id)
	return nil
}

// PaymentReserved implements store.Store.
func (s *Store) PaymentReserved(ctx context.Context, id string) (bool, error) {
	if err := storekey.CheckID("payment id", id); err != nil {
		return false, fmt.Errorf("payment reserved: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return false, fmt.Errorf("payment reserved: %w", err)
	}
	defer s.mu.Unlock()
	exp, ok := s.payments[id]
	return ok && !storekey.Expired(exp, s.now()), nil
}

// keptClaim is a payment identifier's claim and its expiry, epoch seconds.
type keptClaim struct {
	c       store.PaymentClaim
	expires int64
}

// cloneClaim is c with bytes of its own, so neither the caller nor the store sees the other's
// later changes.
func cloneClaim(c store.PaymentClaim) store.PaymentClaim {
	c.Payment, c.Response, c.Settlement = slices.Clone(c.Payment), slices.Clone(c.Response), slices.Clone(c.Settlement)
	return c
}

// live is the live claim of id, under the lock.
func (s *Store) live(id string) (store.PaymentClaim, bool) {
	k, ok := s.answers[id]
	if !ok || storekey.Expired(k.expires, s.now()) {
		return store.PaymentClaim{}, false
	}
	return k.c, true
}

// ClaimPayment implements store.Store under the store's lock.
func (s *Store) ClaimPayment(ctx context.Context, id string, c store.PaymentClaim, expires time.Time) (store.PaymentClaim, bool, error) {
	if err := storekey.CheckNewClaim(id, c); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: %w", err)
	}
	defer s.mu.Unlock()
	if held, ok := s.live(id); ok && !storekey.Abandoned(held, s.now()) {
		return cloneClaim(held), false, nil
	}
	s.answers[id] = keptClaim{c: cloneClaim(c), expires: expires.Unix()}
	return store.PaymentClaim{}, true, nil
}

// UpdatePaymentClaim implements store.Store under the store's lock.
func (s *Store) UpdatePaymentClaim(ctx context.Context, id, holder string, c store.PaymentClaim, expires time.Time) error {
	if err := storekey.CheckPaymentClaim(id, c); err != nil {
		return fmt.Errorf("update payment claim: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("update payment claim: %w", err)
	}
	defer s.mu.Unlock()
	if held, ok := s.live(id); !ok || held.Holder != holder {
		return fmt.Errorf("update payment claim: %w", store.ErrClaimLost)
	}
	s.answers[id] = keptClaim{c: cloneClaim(c), expires: expires.Unix()}
	return nil
}

// ReleasePaymentClaim implements store.Store under the store's lock.
func (s *Store) ReleasePaymentClaim(ctx context.Context, id, holder string) error {
	if err := storekey.CheckID("payment identifier", id); err != nil {
		return fmt.Errorf("release payment claim: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("release payment claim: %w", err)
	}
	defer s.mu.Unlock()
	if held, ok := s.live(id); ok && held.Holder == holder && held.State == store.ClaimWorking {
		delete(s.answers, id)
	}
	return nil
}

// PaymentClaim implements store.Store.
func (s *Store) PaymentClaim(ctx context.Context, id string) (store.PaymentClaim, bool, error) {
	if err := storekey.CheckID("payment identifier", id); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("read payment claim: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("read payment claim: %w", err)
	}
	defer s.mu.Unlock()
	c, ok := s.live(id)
	return cloneClaim(c), ok, nil
}

// RecordVerification implements store.Store: the record and its aggregate change together, under
// the lock, so a retry never counts twice and no writer loses another's update.
func (s *Store) RecordVerification(ctx context.Context, v store.Verification) error {
	if err := storekey.CheckVerification(v); err != nil {
		return fmt.Errorf("record verification: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	defer s.mu.Unlock()
	v.VerifiedAt = v.VerifiedAt.UTC()
	key := storekey.HistoryKey(v.VerifiedAt, v.VerificationID)
	h := s.histories[v.AgentID]
	// Newest first: descending key order.
	i, found := slices.BinarySearchFunc(h, key, func(e entry, k string) int { return strings.Compare(k, e.key) })
	if found {
		return nil // already recorded
	}
	s.histories[v.AgentID] = slices.Insert(h, i, entry{key: key, v: v})
	agg := s.aggregates[v.AgentID]
	agg.Add(v.Observation())
	s.aggregates[v.AgentID] = agg
	return nil
}

// AgentAggregate implements store.Store. The aggregate is returned as a copy: the caller may keep
// it while writers go on adding to the stored one.
func (s *Store) AgentAggregate(ctx context.Context, agentID string) (reputation.Aggregate, bool, error) {
	if err := storekey.CheckAgentID(agentID); err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("agent aggregate: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("agent aggregate: %w", err)
	}
	agg, ok := s.aggregates[agentID]
	var b []byte
	var err error
	if ok {
		b, err = json.Marshal(agg)
	}
	s.mu.Unlock()
	if !ok {
		return reputation.Aggregate{}, false, nil
	}
	if err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("agent aggregate: copy: %w", err)
	}
	cp, err := reputation.UnmarshalAggregate(b)
	if err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("agent aggregate: copy: %w", err)
	}
	return cp, true, nil
}

// History implements store.Store.
func (s *Store) History(ctx context.Context, agentID string, limit int, cursor string) ([]store.Verification, string, error) {
	if err := storekey.CheckAgentID(agentID); err != nil {
		return nil, "", fmt.Errorf("history: %w", err)
	}
	limit, err := storekey.PageLimit(limit)
	if err != nil {
		return nil, "", fmt.Errorf("history: %w", err)
	}
	after := ""
	if cursor != "" {
		if after, err = storekey.DecodeCursor(cursor); err != nil {
			return nil, "", fmt.Errorf("history: %w", err)
		}
	}
	if err := s.lock(ctx); err != nil {
		return nil, "", fmt.Errorf("history: %w", err)
	}
	defer s.mu.Unlock()
	h := s.histories[agentID]
	start := 0
	if after != "" {
		// The first entry strictly older (smaller key) than the cursor's.
		start, _ = slices.BinarySearchFunc(h, after, func(e entry, k string) int { return strings.Compare(k, e.key) })
		if start < len(h) && h[start].key == after {
			start++
		}
	}
	end := min(start+limit, len(h))
	page := make([]store.Verification, 0, end-start)
	for _, e := range h[start:end] {
		page = append(page, e.v)
	}
	next := ""
	if end < len(h) {
		next = storekey.EncodeCursor(h[end-1].key)
	}
	return page, next, nil
}

// Ping implements store.Store: an open store always answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	s.mu.Unlock()
	return nil
}

// Close implements store.Store: the store forgets everything and refuses every later call.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.allowances, s.payments, s.histories, s.aggregates = nil, nil, nil, nil
	s.log = receiptLog{}
	return nil
}
