// Package bolt is the store.Store of the local server: one bbolt file under the data directory, so
// allowances, spent payments and agent histories survive a restart without any database server.
package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
)

// FileName is the name of the store's file inside the data directory, so that the wiring and the
// operator's backups agree on where the state lives.
const FileName = "verifier.db"

// openTimeout bounds the wait for bbolt's file lock: a second server on the same data directory
// should fail start-up with an error instead of hanging.
const openTimeout = 2 * time.Second

// The buckets: bucket "allowance" maps client NUL day to the day's counter (the calls reserved, at
// least those granted; see allowance.go) and its expiry; bucket "payments" maps a payment id to its
// expiry; bucket "history" holds one nested bucket per agent, mapping the shared history sort key
// to the record as JSON; bucket "aggregates" maps an agent id to its reputation.Aggregate (JSON,
// with a version counted up on each change); bucket "answers" maps a payment identifier to its
// expiry then the paid answer kept under it (JSON); the receipt log's buckets are described in
// log.go. Expired counters, reservations, answers and receipt records are ignored on read, deleted
// lazily when met, and swept when the file is opened.
var (
	bucketAllowance = []byte("allowance")
	bucketPayments  = []byte("payments")
	bucketHistory   = []byte("history")
	bucketAggregate = []byte("aggregates")
	bucketAnswers   = []byte("answers")
)

// Store is the bbolt-backed store.Store. It is safe for concurrent use: bbolt runs one write
// transaction at a time, which is what makes ReservePayment atomic; ConsumeAllowance decides under
// its counter's lock in memory (allowance.go).
type Store struct {
	db       *bbolt.DB
	writes   *groupCommit  // the API's writes, grouped into shared commits
	counters counters      // today's free allowances, counted in memory (allowance.go)
	payments payments      // payment reservations decided but not yet on disk (ReservePayment)
	linger   time.Duration // WithHistoryLinger
	now      func() time.Time
	decoded  decodedAggregates // the aggregates this process last wrote, decoded (addToAggregate)
	journal  journal           // answers on disk whose records are not yet in their buckets
}

// decodedAggregates keeps, per agent, the aggregate this process last stored and the exact bytes
// it stored, so that the next record of that agent reuses it instead of decoding its JSON again
// (the largest cost of a history write). Bytes that differ (another process wrote, or the
// transaction that stored them rolled back) are decoded as before.
type decodedAggregates struct {
	mu sync.Mutex
	m  map[string]decodedAggregate
}

type decodedAggregate struct {
	stored []byte
	agg    reputation.Aggregate
}

// maxDecodedAggregates bounds decodedAggregates: past it, the map starts over.
const maxDecodedAggregates = 4096

// get returns a copy of the aggregate stored as raw, if it is the one last written.
func (d *decodedAggregates) get(agent string, raw []byte) (reputation.Aggregate, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.m[agent]
	if !ok || !bytes.Equal(e.stored, raw) {
		return reputation.Aggregate{}, false
	}
	return e.agg.Clone(), true
}

// put remembers agg as stored in raw (which the caller must not modify).
func (d *decodedAggregates) put(agent string, raw []byte, agg reputation.Aggregate) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil || len(d.m) >= maxDecodedAggregates {
		d.m = make(map[string]decodedAggregate)
	}
	d.m[agent] = decodedAggregate{stored: raw, agg: agg.Clone()}
}

// payments are the reservations ReservePayment has granted whose write has not committed yet.
type payments struct {
	mu      sync.Mutex              // taken by every reservation: it decides between two uses of one payment
	pending map[string]*reservation // payment id → its reservation
	writing sync.WaitGroup          // reservation writes not yet committed, for Close
}

// reservation is one granted reservation on its way to disk.
type reservation struct {
	expires int64 // epoch seconds
	// released is set by ReleasePayment; the write, which runs in the commit without the lock,
	// then leaves the reservation out.
	released atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Option adjusts a Store at Open.
type Option func(*Store)

// WithClock replaces the wall clock used to decide whether counters and reservations have expired,
// so tests can move time instead of waiting for it.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// WithHistoryLinger lets a history record wait up to d for other writes to share its commit (see
// groupCommit). It is for a caller that records in the background, as the local server does:
// whoever waits for RecordVerification waits up to d longer.
func WithHistoryLinger(d time.Duration) Option {
	return func(s *Store) { s.linger = d }
}

// Open opens (creating it and its directory if needed) the store file at path, usually
// filepath.Join(dataDir, FileName), and sweeps out expired counters and reservations. It looks
// for them in a read transaction first and writes only when it found some, so that opening a
// clean file costs no commit.
func Open(path string, opts ...Option) (*Store, error) {
	if path == "" {
		return nil, errors.New("open bolt store: empty path")
	}
	s := &Store{now: time.Now}
	for _, opt := range opts {
		opt(s)
	}
	if s.now == nil {
		return nil, errors.New("open bolt store: nil clock")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open bolt store: create data directory: %w", err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: openTimeout,
		// A large initial mapping (address space, not memory) spares the growing file the
		// remaps that block every reader and writer while they happen; the map freelist without
		// syncing it makes each commit cheaper. Both are bbolt's own recommendations for
		// write-heavy use, and neither weakens durability of committed data.
		InitialMmapSize: initialMmapSize,
		FreelistType:    bbolt.FreelistMapType,
		NoFreelistSync:  true,
	})
	if err != nil {
		return nil, fmt.Errorf("open bolt store: %w", err)
	}
	s.db = db
	s.writes = newGroupCommit(db, s.linger)
	now := s.now()
	stale := false
	err = db.View(func(tx *bbolt.Tx) error {
		for _, name := range swept {
			dead, err := expiredKeys(tx, name, now)
			if err != nil {
				return err
			}
			stale = stale || len(dead) > 0
		}
		return nil
	})
	if err == nil && stale {
		err = db.Update(func(tx *bbolt.Tx) error { return sweepExpired(tx, now) })
	}
	if err == nil {
		err = replayJournal(s)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open bolt store: %w", err)
	}
	return s, nil
}

// swept are the buckets whose items expire.
var swept = [][]byte{bucketAllowance, bucketPayments, bucketAnswers, bucketReceipts}

// sweepExpired deletes every expired counter and reservation, so the file does not grow by one
// counter per client per day forever.
func sweepExpired(tx *bbolt.Tx, now time.Time) error {
	for _, name := range swept {
		dead, err := expiredKeys(tx, name, now)
		if err != nil {
			return err
		}
		for _, k := range dead { // none unless the bucket exists
			if err := tx.Bucket(name).Delete(k); err != nil {
				return fmt.Errorf("sweep %s: %w", name, err)
			}
		}
	}
	return nil
}

// expiredKeys lists the keys of bucket name whose items have expired, or that this version cannot
// read (garbage to the sweep).
func expiredKeys(tx *bbolt.Tx, name []byte, now time.Time) ([][]byte, error) {
	b := tx.Bucket(name)
	if b == nil {
		return nil, nil
	}
	var dead [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if exp, ok := expiryOf(name, v); !ok || storekey.Expired(exp, now) {
			dead = append(dead, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", name, err)
	}
	return dead, nil
}

// getIn is key's value in bucket, nil when either is missing (a bucket nothing was written to
// yet does not exist).
func getIn(tx *bbolt.Tx, bucket, key []byte) []byte {
	if b := tx.Bucket(bucket); b != nil {
		return b.Get(key)
	}
	return nil
}

// putIn stores key's value in bucket, which it creates on the first write. A read takes a missing
// bucket as empty, so opening a file, fresh or reopened, commits nothing unless the sweep has
// something to delete: each commit syncs the file at least twice, and every cold start of a
// function on the embedded store (under the Lambda emulator) opens the file.
func putIn(tx *bbolt.Tx, bucket, key, value []byte) error {
	b, err := tx.CreateBucketIfNotExists(bucket)
	if err != nil {
		return err
	}
	return b.Put(key, value)
}

// expiryOf reads the expiry out of a counter or reservation value; ok is false for a value this
// version did not write, which the sweep treats as garbage.
func expiryOf(bucket, v []byte) (int64, bool) {
	switch string(bucket) {
	case string(bucketAllowance):
		_, exp, ok := decodeCounter(v)
		return exp, ok
	case string(bucketAnswers):
		exp, _, ok := decodeAnswer(v)
		return exp, ok
	case string(bucketReceipts):
		if len(v) > 8 {
			return decodeExpiry(v[:8]) // the expiry, then the record
		}
		return 0, false
	}
	return decodeExpiry(v)
}

// A counter value is the count then the expiry (epoch seconds), both big-endian 64-bit.
func encodeCounter(n int, expires int64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b[:8], uint64(n))
	binary.BigEndian.PutUint64(b[8:], uint64(expires))
	return b
}

func decodeCounter(b []byte) (n int, expires int64, ok bool) {
	if len(b) != 16 {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint64(b[:8])), int64(binary.BigEndian.Uint64(b[8:])), true
}

// A reservation value is its expiry (epoch seconds), big-endian 64-bit.
func encodeExpiry(expires int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(expires))
	return b
}

func decodeExpiry(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}

// allowanceKey is client NUL day; ids never contain NUL (storekey.CheckID), so it is unambiguous.
func allowanceKey(client, day string) []byte {
	return []byte(client + "\x00" + day)
}

// deleteIfExpired is the lazy deletion of an expired item met by a read. It is best-effort: the
// read already ignored the item, and the next Open sweeps whatever is left.
func (s *Store) deleteIfExpired(bucket, key []byte) {
	_ = s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		if exp, ok := expiryOf(bucket, b.Get(key)); ok && storekey.Expired(exp, s.now()) {
			return b.Delete(key)
		}
		return nil
	})
}

// evmPaymentPrefix begins the id of every EVM payment (x402.PaymentID: the CAIP-2 network first).
const evmPaymentPrefix = "eip155:"

// ReservePayment implements store.Store. The decision is made in memory at once: under the lock
// every reservation takes, an id already reserved (on disk, or granted and not yet written) is a
// replay, and any other is granted. The local server is the only process that opens the file
// (bbolt locks it), so that lock decides between any two uses of one payment, as the conditional
// write does on DynamoDB.
//
// An EVM payment's reservation is then written with the next commit of the history
// (WithHistoryLinger) rather than in a commit of its own that the paid request waits for: under
// load such commits, each with its syncs, would be where a paid request's time goes. A
// crash can therefore lose the reservations of the last moments (at most the linger and one
// commit). That costs no safety: a payment whose reservation was lost was either never settled,
// and using it again is its first use, or settled, and then the token contract refuses its spent
// EIP-3009 authorization on verification or settlement, so a replay is neither delivered nor
// charged (internal/e2e TestPaidVerificationOnLocalChain replays a settled payment to a store
// without its reservation). Close waits until every reservation is on disk.
//
// Any other payment's reservation is on disk before ReservePayment returns. A Solana cluster
// does not refuse a settled transaction sent again in a way a facilitator must notice: its RPC
// answers with the signature, whose status is the first run's success, so only a facilitator's own
// memory of what it settled would stop the replay.
func (s *Store) ReservePayment(ctx context.Context, id string, expires time.Time) error {
	if err := storekey.CheckID("payment id", id); err != nil {
		return fmt.Errorf("reserve payment: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("reserve payment %s: %w", id, err)
	}
	p := &s.payments
	p.mu.Lock()
	defer p.mu.Unlock()
	live, err := s.paymentLive(id)
	if err != nil {
		return fmt.Errorf("reserve payment %s: %w", id, err)
	}
	if live {
		return fmt.Errorf("reserve payment %s: %w", id, store.ErrPaymentReplayed)
	}
	if p.pending == nil {
		p.pending = make(map[string]*reservation)
	}
	r := &reservation{expires: expires.Unix()}
	p.pending[id] = r
	write := func(tx *bbolt.Tx) error {
		if r.released.Load() {
			return nil
		}
		return putIn(tx, bucketPayments, []byte(id), encodeExpiry(r.expires))
	}
	// written takes r out of pending once it is on disk, unless a release (and maybe a new
	// reservation of the same id) came first.
	written := func() {
		if p.pending[id] == r {
			delete(p.pending, id)
		}
	}
	if !strings.HasPrefix(id, evmPaymentPrefix) {
		// Pending while it commits, so that a concurrent use is already a replay.
		p.mu.Unlock()
		err := s.writes.update(write)
		p.mu.Lock()
		written() // on disk now, or not reserved at all
		if err != nil {
			return fmt.Errorf("reserve payment %s: %w", id, err)
		}
		return nil
	}
	p.writing.Add(1)
	go func() {
		defer p.writing.Done()
		err := s.writes.updateDeferred(write)
		if err != nil {
			return // it stays pending: refused as a replay for as long as this process runs
		}
		p.mu.Lock()
		written() // on disk now, where paymentLive finds it
		p.mu.Unlock()
	}()
	return nil
}

// ReleasePayment implements store.Store. It holds the reservations' lock until the release is on
// disk, so that the same payment sent again at once is not refused by the record being deleted.
// A release is rare (a paid request whose work failed), so the commit it waits for costs others
// little.
func (s *Store) ReleasePayment(ctx context.Context, id string) error {
	if err := storekey.CheckID("payment id", id); err != nil {
		return fmt.Errorf("release payment: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release payment %s: %w", id, err)
	}
	p := &s.payments
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.pending[id]; ok {
		r.released.Store(true) // a write still to come leaves it out
		delete(p.pending, id)
	}
	// A write that already ran is undone by this one, which commits after it.
	err := s.writes.update(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketPayments); b != nil {
			return b.Delete([]byte(id))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("release payment %s: %w", id, err)
	}
	return nil
}

// PaymentReserved implements store.Store: a reservation counts from when ReservePayment granted
// it, on disk or not yet.
func (s *Store) PaymentReserved(ctx context.Context, id string) (bool, error) {
	if err := storekey.CheckID("payment id", id); err != nil {
		return false, fmt.Errorf("read payment: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("read payment %s: %w", id, err)
	}
	s.payments.mu.Lock()
	defer s.payments.mu.Unlock()
	live, err := s.paymentLive(id)
	if err != nil {
		return false, fmt.Errorf("read payment %s: %w", id, err)
	}
	return live, nil
}

// paymentLive reports whether id holds an unexpired reservation, granted or on disk. The caller
// holds s.payments.mu, so a reservation leaving pending is already on disk.
func (s *Store) paymentLive(id string) (bool, error) {
	now := s.now()
	if r, ok := s.payments.pending[id]; ok && !storekey.Expired(r.expires, now) {
		return true, nil
	}
	var live bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		exp, ok := decodeExpiry(getIn(tx, bucketPayments, []byte(id)))
		live = ok && !storekey.Expired(exp, now)
		return nil
	})
	return live, err
}

// record is a verification as stored in its agent's bucket; the agent is the bucket's name.
type record struct {
	VerificationID string    `json:"verification_id"`
	TaskID         string    `json:"task_id,omitempty"`
	Result         string    `json:"result"`
	OverallRatio   float64   `json:"overall_ratio"`
	VerifiedAt     time.Time `json:"verified_at"`
	Paid           bool      `json:"paid"`
	CallerID       string    `json:"caller_id,omitempty"`
}

// initialMmapSize is the address space bbolt maps up front (1 GiB).
const initialMmapSize = 1 << 30

// RecordVerification implements store.Store. With WithHistoryLinger its write may wait for others
// to share the commit. The history record and the aggregate update are written in one
// transaction, so the two always agree; bbolt runs one write transaction at a time, which gives the
// aggregate the guarantee that optimistic concurrency gives it in DynamoDB.
func (s *Store) RecordVerification(ctx context.Context, v store.Verification) error {
	write, err := s.verificationWrite(ctx, v)
	if err != nil {
		return err
	}
	if err := s.writes.updateDeferred(write); err != nil {
		return fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	return nil
}

// verificationWrite is the write of v's history record and its aggregate's update, once: a retry
// must not count twice.
func (s *Store) verificationWrite(ctx context.Context, v store.Verification) (func(*bbolt.Tx) error, error) {
	if err := storekey.CheckVerification(v); err != nil {
		return nil, fmt.Errorf("record verification: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	value, err := json.Marshal(record{
		VerificationID: v.VerificationID,
		TaskID:         v.TaskID,
		Result:         v.Result,
		OverallRatio:   v.OverallRatio,
		VerifiedAt:     v.VerifiedAt.UTC(),
		Paid:           v.Paid,
		CallerID:       v.CallerID,
	})
	if err != nil {
		return nil, fmt.Errorf("record verification %s: encode: %w", v.VerificationID, err)
	}
	key := []byte(storekey.HistoryKey(v.VerifiedAt, v.VerificationID))
	return func(tx *bbolt.Tx) error {
		history, err := tx.CreateBucketIfNotExists(bucketHistory)
		if err != nil {
			return err
		}
		b, err := history.CreateBucketIfNotExists([]byte(v.AgentID))
		if err != nil {
			return err
		}
		if b.Get(key) != nil {
			return nil // already recorded: a retry must not count twice
		}
		if err := b.Put(key, value); err != nil {
			return err
		}
		aggregates, err := tx.CreateBucketIfNotExists(bucketAggregate)
		if err != nil {
			return err
		}
		return s.addToAggregate(aggregates, v)
	}, nil
}

// An aggregate is stored as an 8-byte big-endian version followed by the aggregate's JSON. The
// version counts the updates, as DynamoDB's version attribute does, so the two stores keep the
// same record of an agent. Stores written before this layout hold the JSON object
// {"version":v,"aggregate":{...}} instead, which starts with '{' where the binary version starts
// with a zero byte; both are read, and the next update writes the binary layout.
const aggregateHeader = 8

// legacyAggregate is the earlier layout.
type legacyAggregate struct {
	Version   int64           `json:"version"`
	Aggregate json.RawMessage `json:"aggregate"`
}

// addToAggregate adds v to its agent's aggregate inside the caller's write transaction.
func (s *Store) addToAggregate(b *bbolt.Bucket, v store.Verification) error {
	var agg reputation.Aggregate
	var version int64
	if raw := b.Get([]byte(v.AgentID)); raw != nil {
		var err error
		var ok bool
		if version, _, err = splitAggregate(raw); err != nil {
			return fmt.Errorf("decode aggregate: %w", err)
		}
		if agg, ok = s.decoded.get(v.AgentID, raw); !ok {
			if agg, version, err = decodeAggregate(raw); err != nil {
				return err
			}
		}
	}
	agg.Add(v.Observation())
	body, err := json.Marshal(agg)
	if err != nil {
		return fmt.Errorf("encode aggregate: %w", err)
	}
	value := make([]byte, aggregateHeader, aggregateHeader+len(body))
	binary.BigEndian.PutUint64(value, uint64(version+1))
	value = append(value, body...)
	if err := b.Put([]byte(v.AgentID), value); err != nil {
		return err
	}
	s.decoded.put(v.AgentID, value, agg)
	return nil
}

func decodeAggregate(raw []byte) (reputation.Aggregate, int64, error) {
	version, body, err := splitAggregate(raw)
	if err != nil {
		return reputation.Aggregate{}, 0, fmt.Errorf("decode aggregate: %w", err)
	}
	agg, err := reputation.UnmarshalAggregate(body)
	if err != nil {
		return reputation.Aggregate{}, 0, err
	}
	return agg, version, nil
}

// splitAggregate separates a stored aggregate's version from its JSON, in either layout.
func splitAggregate(raw []byte) (int64, []byte, error) {
	if len(raw) > 0 && raw[0] == '{' {
		var st legacyAggregate
		if err := json.Unmarshal(raw, &st); err != nil {
			return 0, nil, err
		}
		return st.Version, st.Aggregate, nil
	}
	if len(raw) < aggregateHeader {
		return 0, nil, errors.New("truncated record")
	}
	v := binary.BigEndian.Uint64(raw)
	if v > math.MaxInt64 {
		return 0, nil, errors.New("version out of range")
	}
	return int64(v), raw[aggregateHeader:], nil
}

// AgentAggregate implements store.Store with one read transaction.
func (s *Store) AgentAggregate(ctx context.Context, agentID string) (reputation.Aggregate, bool, error) {
	if err := storekey.CheckAgentID(agentID); err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("read aggregate: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("read aggregate: %w", err)
	}
	var agg reputation.Aggregate
	var found bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		raw := getIn(tx, bucketAggregate, []byte(agentID))
		if raw == nil {
			return nil
		}
		var err error
		agg, _, err = decodeAggregate(raw)
		found = err == nil
		return err
	})
	if err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("read aggregate of %s: %w", agentID, err)
	}
	return agg, found, nil
}

// History implements store.Store by walking the agent's bucket backwards from the cursor.
func (s *Store) History(ctx context.Context, agentID string, limit int, cursor string) ([]store.Verification, string, error) {
	if err := storekey.CheckAgentID(agentID); err != nil {
		return nil, "", fmt.Errorf("read history: %w", err)
	}
	limit, err := storekey.PageLimit(limit)
	if err != nil {
		return nil, "", fmt.Errorf("read history: %w", err)
	}
	var after string
	if cursor != "" {
		if after, err = storekey.DecodeCursor(cursor); err != nil {
			return nil, "", fmt.Errorf("read history: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("read history: %w", err)
	}
	var page []store.Verification
	var next string
	err = s.db.View(func(tx *bbolt.Tx) error {
		history := tx.Bucket(bucketHistory)
		if history == nil {
			return nil
		}
		b := history.Bucket([]byte(agentID))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, v []byte
		if after == "" {
			k, v = c.Last()
		} else if k, _ = c.Seek([]byte(after)); k == nil {
			k, v = c.Last() // every key sorts before the cursor
		} else {
			k, v = c.Prev() // the first key strictly before the cursor
		}
		for ; k != nil && len(page) < limit; k, v = c.Prev() {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode record %q: %w", k, err)
			}
			page = append(page, store.Verification{
				AgentID:        agentID,
				VerificationID: r.VerificationID,
				TaskID:         r.TaskID,
				Result:         r.Result,
				OverallRatio:   r.OverallRatio,
				VerifiedAt:     r.VerifiedAt,
				Paid:           r.Paid,
				CallerID:       r.CallerID,
			})
			if len(page) == limit {
				if more, _ := c.Prev(); more != nil {
					next = storekey.EncodeCursor(string(k))
				}
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("read history: %w", err)
	}
	return page, next, nil
}

// Ping implements store.Store: a read transaction fails once the file is closed. bbolt's errors do
// not name the file, so nothing about the deployment leaks.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ping bolt store: %w", err)
	}
	if err := s.db.View(func(*bbolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("ping bolt store: %w", err)
	}
	return nil
}

// Close implements store.Store. It first writes back the exact allowance counts (allowance.go);
// if that fails, the reservations on disk stand, which never grants more than the allowance.
func (s *Store) Close() error {
	s.writes.flush()
	s.payments.writing.Wait()
	s.journal.applying.Wait()
	settleErr := s.settleCounters()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close bolt store: %w", err)
	}
	if settleErr != nil {
		return fmt.Errorf("close bolt store: write back the allowance counts: %w", settleErr)
	}
	return nil
}
