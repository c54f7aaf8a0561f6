// Package dynamo is the store.Store of the Lambda deployment: one DynamoDB table shared by every
// function, so the allowance, spent payments and histories are the same whichever function answers.
//
// The table has string keys pk and sk and the TTL attribute expires_at (epoch seconds):
//
//	allowance    pk CLIENT#<client>   sk ALLOWANCE#<day>          n (count), expires_at
//	payment      pk PAYMENT#<id>      sk PAYMENT                  expires_at
//	verification pk AGENT#<agent id>  sk V#<time>#<verification>  the record's fields
//	aggregate    pk AGENT#<agent id>  sk AGGREGATE                version, aggregate (JSON), recent_ids, outbox
//
// Every write is one conditional UpdateItem or PutItem and never a transaction, so the design runs
// on any DynamoDB-compatible server and each write is atomic on its own. DynamoDB deletes expired
// items late (within days), so every read ignores an item whose expires_at has passed.
//
// Recording a verification counts it first and writes its history record after, in steps none of
// which can count it twice, and after any of which a writer may die without the record being lost:
//
//  0. A strongly consistent read of the history record, sent together with step 1's first read of
//     the aggregate: if the record is there, an earlier call finished the job and nothing more
//     happens.
//  1. The aggregate under optimistic concurrency: read it with its version, add the verification
//     (reputation.Aggregate.Add), put its history record into the aggregate's outbox (a map from
//     verification id to the record), and PutItem it on condition that the version is still the
//     one read (or that no aggregate exists yet); a lost race reads the aggregate again, then the
//     history record again (step 0 once more, since another call may have finished the same
//     verification meanwhile), and retries. A verification found in the outbox, or among recent_ids
//     (the ids of the latest verifications counted or written out from the outbox), is not counted
//     again; step 2 then writes the outbox's copy of the record, the one that was counted.
//  2. PutItem of the history record, unless it is there already.
//  3. UpdateItem removing the record from the outbox.
//
// A writer that died after step 1 leaves its record in the outbox: counted, and not yet in the
// history. Recording the verification again completes it; otherwise the next writer to the same
// aggregate that finds records in the outbox older than outboxGrace, or more than maxOutbox of
// them, or more than maxOutboxBytes, writes them to the history (step 2, on their behalf) before
// its own step 1 drops them from the outbox and adds their ids to recent_ids. AgentAggregate
// writes out the records older than outboxGrace too (steps 2 and 3), so that the history of an
// agent that records nothing more is completed when it is read. Writing a record is idempotent (a
// conditional PutItem of the same content), so it does not matter whether its owner is still alive
// and writes it too. Nothing in a step's correctness depends on the grace period; it only spares a
// live owner's record a second write.
//
// Records that an earlier version of this package left marked "pending" are completed the same way
// when recorded again: step 0 treats them as absent and step 2 replaces them. That version wrote
// the record pending, counted it, then cleared the mark, so a writer that died between the last two
// left a record that is counted although pending: recording it again after its id has left
// recent_ids counts it a second time. This is a limit of migrating from that scheme, which the
// current steps cannot tell from a record that was never counted.
//
// The store speaks DynamoDB's JSON protocol through pkg/internal/awsjson rather than the SDK's
// generated client, whose package initialisation alone took about 3 ms of every cold start: the
// four operations it uses (GetItem, PutItem, UpdateItem, Query) are a few small structs here.
package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/internal/awsjson"
	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
)

// Attribute names and key prefixes of the single-table layout (see the package comment).
const (
	attrPK         = "pk"
	attrSK         = "sk"
	attrExpiresAt  = "expires_at"
	attrCount      = "n"
	attrAgentID    = "agent_id"
	attrVerifID    = "verification_id"
	attrTaskID     = "task_id"
	attrResult     = "result"
	attrRatio      = "overall_ratio"
	attrVerifiedAt = "verified_at"
	attrPaid       = "paid"
	attrCallerID   = "caller_id"
	attrPending    = "pending"
	attrVersion    = "version"
	attrAggregate  = "aggregate"
	attrRecentIDs  = "recent_ids"
	attrOutbox     = "outbox"

	prefixClient    = "CLIENT#"
	prefixAllowance = "ALLOWANCE#"
	prefixPayment   = "PAYMENT#"
	skPayment       = "PAYMENT"
	prefixAgent     = "AGENT#"
	prefixHistory   = "V#"
	skAggregate     = "AGGREGATE"
	pingKey         = "PING"
)

// Store is the DynamoDB-backed store.Store. It is safe for concurrent use; it holds no state but
// the client, the table name and the clock.
type Store struct {
	client Client
	table  string
	now    func() time.Time
}

// Client sends one operation of DynamoDB's JSON protocol with the JSON of in and decodes the answer
// into out. A refusal by DynamoDB must be an *awsjson.Error, whose Code the store reads (a failed
// condition is ConditionalCheckFailedException). awsjson.New(cfg, awsjson.DynamoDB) makes the one
// the functions use; it retries throttling, server errors and network failures a bounded number
// of times, and nothing else.
type Client interface {
	Call(ctx context.Context, operation string, in, out any) error
}

var _ store.Store = (*Store)(nil)

// Option adjusts a Store at New.
type Option func(*Store)

// WithClock replaces the wall clock used to decide whether items have expired, so tests can move
// time instead of waiting for it.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// New returns a store on table, which must already exist with string keys pk and sk (template.yaml
// creates it in production; the service never creates or alters tables).
func New(client Client, table string, opts ...Option) *Store {
	s := &Store{client: client, table: table, now: time.Now}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// value is one DynamoDB AttributeValue in the JSON protocol's form, with exactly one member set:
// {"S":"text"}, {"N":"12"}, {"BOOL":true}, {"L":[...]} or {"M":{...}}, the types the store
// writes. An attribute of any other type reads as none of these and fails the store's type checks.
type value struct {
	S    *string  `json:"S,omitempty"`
	N    *string  `json:"N,omitempty"`
	BOOL *bool    `json:"BOOL,omitempty"`
	L    *[]value `json:"L,omitempty"`
	M    *item    `json:"M,omitempty"`
}

// item is a DynamoDB item, a key, or a set of expression values, by attribute name.
type item map[string]value

func str(s string) value { return value{S: &s} }

func boolean(b bool) value { return value{BOOL: &b} }

func number(n int64) value {
	s := strconv.FormatInt(n, 10)
	return value{N: &s}
}

func list(v []value) value { return value{L: &v} }

func mapOf(m item) value { return value{M: &m} }

// The requests and answers of the operations the store uses, with DynamoDB's member names.
type (
	getItemInput struct {
		TableName                string
		Key                      item
		ConsistentRead           bool              `json:",omitempty"`
		ProjectionExpression     string            `json:",omitempty"`
		ExpressionAttributeNames map[string]string `json:",omitempty"`
	}
	getItemOutput struct {
		Item item // nil when there is no such item
	}
	putItemInput struct {
		TableName                 string
		Item                      item
		ConditionExpression       string            `json:",omitempty"`
		ExpressionAttributeNames  map[string]string `json:",omitempty"`
		ExpressionAttributeValues item              `json:",omitempty"`
	}
	updateItemInput struct {
		TableName                 string
		Key                       item
		UpdateExpression          string
		ConditionExpression       string            `json:",omitempty"`
		ExpressionAttributeNames  map[string]string `json:",omitempty"`
		ExpressionAttributeValues item              `json:",omitempty"`
		ReturnValues              string            `json:",omitempty"`
	}
	updateItemOutput struct {
		Attributes item
	}
	queryInput struct {
		TableName                 string
		KeyConditionExpression    string
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues item
		ScanIndexForward          bool // always sent: false reads the newest first
		ConsistentRead            bool
		Limit                     int
		ExclusiveStartKey         item `json:",omitempty"`
	}
	queryOutput struct {
		Items            []item
		LastEvaluatedKey item
	}
	// noOutput is the answer of a write whose returned attributes the store does not ask for.
	noOutput struct{}
)

func (s *Store) getItem(ctx context.Context, in getItemInput) (item, error) {
	in.TableName = s.table
	var out getItemOutput
	err := s.client.Call(ctx, "GetItem", &in, &out)
	return out.Item, err
}

func (s *Store) putItem(ctx context.Context, in putItemInput) error {
	in.TableName = s.table
	return s.client.Call(ctx, "PutItem", &in, new(noOutput))
}

func (s *Store) updateItem(ctx context.Context, in updateItemInput) (item, error) {
	in.TableName = s.table
	var out updateItemOutput
	err := s.client.Call(ctx, "UpdateItem", &in, &out)
	return out.Attributes, err
}

func allowanceKey(client, day string) item {
	return key(prefixClient+client, prefixAllowance+day)
}

func paymentKey(id string) item {
	return key(prefixPayment+id, skPayment)
}

func key(pk, sk string) item {
	return item{attrPK: str(pk), attrSK: str(sk)}
}

// isConditionFailed reports whether DynamoDB refused a write because its condition did not hold.
func isConditionFailed(err error) bool {
	e, ok := errors.AsType[*awsjson.Error](err)
	return ok && e.Code == "ConditionalCheckFailedException"
}

// ConsumeAllowance implements store.Store with one conditional UpdateItem: the ADD and the check
// against the limit happen in one atomic step on the server, so concurrent callers can never take
// more than limit between them.
//
// Only when that update is refused does it read the counter, to tell a spent allowance from an
// expired counter that TTL has not deleted yet; an expired counter counts as absent (as it does for
// every read), and is restarted with a second conditional update that only one caller can win.
func (s *Store) ConsumeAllowance(ctx context.Context, client, day string, limit int, expires time.Time) (bool, int, error) {
	if err := storekey.CheckAllowance(client, day); err != nil {
		return false, 0, fmt.Errorf("consume allowance: %w", err)
	}
	if storekey.Expired(expires.Unix(), s.now()) {
		return false, 0, errors.New("consume allowance: the counter's expiry has already passed")
	}
	if limit <= 0 {
		return false, 0, nil
	}
	// Two rounds cover losing the restart of an expired counter to a concurrent caller; past that
	// the answer is "not granted", which can never exceed the limit.
	for range 2 {
		attrs, err := s.updateItem(ctx, updateItemInput{
			Key:                 allowanceKey(client, day),
			UpdateExpression:    "ADD #n :one SET #exp = :exp",
			ConditionExpression: "(attribute_not_exists(#n) OR #n < :limit) AND (attribute_not_exists(#exp) OR #exp >= :now)",
			ExpressionAttributeNames: map[string]string{
				"#n":   attrCount,
				"#exp": attrExpiresAt,
			},
			ExpressionAttributeValues: item{
				":one":   number(1),
				":limit": number(int64(limit)),
				":exp":   number(expires.Unix()),
				":now":   number(s.now().Unix()),
			},
			ReturnValues: "UPDATED_NEW",
		})
		if err == nil {
			used, err := intAttr(attrs, attrCount)
			if err != nil {
				return false, 0, fmt.Errorf("consume allowance: %w", err)
			}
			return true, storekey.Remaining(limit, int(used)), nil
		}
		if !isConditionFailed(err) {
			return false, 0, fmt.Errorf("consume allowance: %w", err)
		}
		restarted, err := s.restartExpiredCounter(ctx, client, day, limit, expires)
		if err != nil {
			return false, 0, fmt.Errorf("consume allowance: %w", err)
		}
		switch restarted {
		case counterLive:
			return false, 0, nil
		case counterRestarted:
			return true, storekey.Remaining(limit, 1), nil
		}
	}
	return false, 0, nil
}

type restartOutcome int

const (
	counterLive      restartOutcome = iota // the counter is live and spent: the refusal stands
	counterRestarted                       // this call restarted an expired counter at 1
	counterContended                       // the counter changed meanwhile: try the ADD again
)

// restartExpiredCounter is ConsumeAllowance's path after a refused ADD.
func (s *Store) restartExpiredCounter(ctx context.Context, client, day string, limit int, expires time.Time) (restartOutcome, error) {
	got, err := s.getItem(ctx, getItemInput{
		Key:            allowanceKey(client, day),
		ConsistentRead: true,
	})
	if err != nil {
		return 0, fmt.Errorf("read counter: %w", err)
	}
	if got == nil {
		return counterContended, nil // TTL deleted it just now
	}
	if !s.expired(got) {
		if used, err := intAttr(got, attrCount); err == nil && used < int64(limit) {
			return counterContended, nil // another caller restarted it meanwhile: room is left
		}
		return counterLive, nil
	}
	_, err = s.updateItem(ctx, updateItemInput{
		Key:                      allowanceKey(client, day),
		UpdateExpression:         "SET #n = :one, #exp = :exp",
		ConditionExpression:      "#exp < :now",
		ExpressionAttributeNames: map[string]string{"#n": attrCount, "#exp": attrExpiresAt},
		ExpressionAttributeValues: item{
			":one": number(1),
			":exp": number(expires.Unix()),
			":now": number(s.now().Unix()),
		},
	})
	if isConditionFailed(err) {
		return counterContended, nil
	}
	if err != nil {
		return 0, fmt.Errorf("restart expired counter: %w", err)
	}
	return counterRestarted, nil
}

// AllowanceUsed implements store.Store with a strongly consistent read, so a caller sees its own
// calls at once.
func (s *Store) AllowanceUsed(ctx context.Context, client, day string) (int, error) {
	if err := storekey.CheckAllowance(client, day); err != nil {
		return 0, fmt.Errorf("read allowance: %w", err)
	}
	got, err := s.getItem(ctx, getItemInput{
		Key:                      allowanceKey(client, day),
		ConsistentRead:           true,
		ProjectionExpression:     "#n, #exp",
		ExpressionAttributeNames: map[string]string{"#n": attrCount, "#exp": attrExpiresAt},
	})
	if err != nil {
		return 0, fmt.Errorf("read allowance: %w", err)
	}
	if got == nil || s.expired(got) {
		return 0, nil
	}
	used, err := intAttr(got, attrCount)
	if err != nil {
		return 0, fmt.Errorf("read allowance: %w", err)
	}
	return int(used), nil
}

// expired reports whether an item's expires_at has passed; an item without one never expires.
func (s *Store) expired(it item) bool {
	if _, ok := it[attrExpiresAt]; !ok {
		return false
	}
	exp, err := intAttr(it, attrExpiresAt)
	return err == nil && storekey.Expired(exp, s.now())
}

// ReservePayment implements store.Store with one conditional PutItem. The condition also accepts
// an expired leftover of the same id, because DynamoDB's TTL deletes late and an expired
// reservation must not block.
func (s *Store) ReservePayment(ctx context.Context, id string, expires time.Time) error {
	if err := storekey.CheckID("payment id", id); err != nil {
		return fmt.Errorf("reserve payment: %w", err)
	}
	it := paymentKey(id)
	it[attrExpiresAt] = number(expires.Unix())
	err := s.putItem(ctx, putItemInput{
		Item:                      it,
		ConditionExpression:       "attribute_not_exists(#pk) OR #exp < :now",
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#exp": attrExpiresAt},
		ExpressionAttributeValues: item{":now": number(s.now().Unix())},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("reserve payment %s: %w", id, store.ErrPaymentReplayed)
	}
	if err != nil {
		return fmt.Errorf("reserve payment %s: %w", id, err)
	}
	return nil
}

// ReleasePayment implements store.Store by expiring the reservation at once (one UpdateItem, so
// the store keeps to the operations it already uses): every read ignores an expired reservation,
// ReservePayment's condition accepts it, and TTL deletes it.
func (s *Store) ReleasePayment(ctx context.Context, id string) error {
	if err := storekey.CheckID("payment id", id); err != nil {
		return fmt.Errorf("release payment: %w", err)
	}
	_, err := s.updateItem(ctx, updateItemInput{
		Key:                       paymentKey(id),
		UpdateExpression:          "SET #exp = :past",
		ConditionExpression:       "attribute_exists(#pk)",
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#exp": attrExpiresAt},
		ExpressionAttributeValues: item{":past": number(s.now().Unix() - 1)},
	})
	if err != nil && !isConditionFailed(err) { // not reserved: nothing to release
		return fmt.Errorf("release payment %s: %w", id, err)
	}
	return nil
}

// PaymentReserved implements store.Store with a strongly consistent read.
func (s *Store) PaymentReserved(ctx context.Context, id string) (bool, error) {
	if err := storekey.CheckID("payment id", id); err != nil {
		return false, fmt.Errorf("read payment: %w", err)
	}
	got, err := s.getItem(ctx, getItemInput{Key: paymentKey(id), ConsistentRead: true})
	if err != nil {
		return false, fmt.Errorf("read payment %s: %w", id, err)
	}
	return got != nil && !s.expired(got), nil
}

// Aggregate updates under optimistic concurrency: how often a lost race is retried, and how long
// to back off between attempts (doubling from aggregateBackoff up to aggregateMaxBackoff, with full
// jitter, so that writers who collided spread out instead of colliding again).
const (
	aggregateAttempts   = 100
	aggregateBackoff    = 2 * time.Millisecond
	aggregateMaxBackoff = 100 * time.Millisecond
	// recentIDs is how many ids of the latest verifications counted or written out from the
	// outbox the aggregate remembers (step 1 of the package comment).
	recentIDs = 8
	// outboxGrace is how old a record in the outbox must be before another writer writes it to
	// the history on its owner's behalf: longer than any owner lives between steps 1 and 3 (its
	// context allows seconds), so that a live owner's record is rarely written twice.
	outboxGrace = time.Minute
	// maxOutbox bounds the records an aggregate holds: past it, the oldest are written out
	// whatever their age. A record with short ids takes well under 1 KB.
	maxOutbox = 32
	// maxOutboxBytes bounds the outbox's size in the item (ids and JSON texts): past it, too, the
	// oldest records are written out. DynamoDB refuses items over 400 KB. With the longest ids and
	// labels storekey allows, made of characters JSON escapes to six bytes, one record takes about
	// 25 KB and the rest of the item (keys, aggregate JSON, recent_ids) under 8 KB, so 256 KB keeps
	// the item under 270 KB, with room for records whose write failed and that stay past the bound.
	maxOutboxBytes = 256 << 10
)

// RecordVerification implements store.Store in the steps of the package comment.
func (s *Store) RecordVerification(ctx context.Context, v store.Verification) error {
	if err := storekey.CheckVerification(v); err != nil {
		return fmt.Errorf("record verification: %w", err)
	}
	rec := historyItem(v)
	// Step 0 and step 1's first read of the aggregate go out together, so that step 0 costs a
	// read but no round trip: a Lambda function records before it answers.
	type read struct {
		it  item
		err error
	}
	first := make(chan read, 1)
	go func() {
		it, err := s.getItem(ctx, getItemInput{Key: aggregateKey(v.AgentID), ConsistentRead: true})
		first <- read{it, err}
	}()
	done, err := s.recorded(ctx, v)
	agg := <-first
	if err != nil {
		return fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	if done {
		return nil // recorded and counted before: a retry must not count twice
	}
	if agg.err != nil {
		return fmt.Errorf("record verification %s: read aggregate: %w", v.VerificationID, agg.err)
	}
	rec, err = s.addToAggregate(ctx, v, rec, agg.it)
	if err != nil {
		return fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	if rec == nil {
		return nil // another call recorded it completely meanwhile
	}
	if err := s.putRecord(ctx, rec); err != nil {
		return fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	if err := s.removeFromOutbox(ctx, v.AgentID, v.VerificationID); err != nil {
		return fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	return nil
}

// removeFromOutbox is step 3: it removes a record that is in the history from the outbox of its
// agent's aggregate.
func (s *Store) removeFromOutbox(ctx context.Context, agentID, verificationID string) error {
	_, err := s.updateItem(ctx, updateItemInput{
		Key:                      aggregateKey(agentID),
		UpdateExpression:         "REMOVE #outbox.#id",
		ConditionExpression:      "attribute_exists(#outbox)",
		ExpressionAttributeNames: map[string]string{"#outbox": attrOutbox, "#id": verificationID},
	})
	if err != nil && !isConditionFailed(err) { // no outbox: another writer emptied it
		return fmt.Errorf("remove from the outbox: %w", err)
	}
	return nil
}

// recorded is step 0: whether v's history record is there (and not marked pending by an earlier
// version of this package).
func (s *Store) recorded(ctx context.Context, v store.Verification) (bool, error) {
	got, err := s.getItem(ctx, getItemInput{
		Key:                      historyItemKey(v),
		ConsistentRead:           true,
		ProjectionExpression:     "#pk, #pending",
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#pending": attrPending},
	})
	if err != nil {
		return false, fmt.Errorf("read history record: %w", err)
	}
	_, pending := got[attrPending]
	return got != nil && !pending, nil
}

// historyItem is v's history record, keys included.
func historyItem(v store.Verification) item {
	it := historyItemKey(v)
	it[attrAgentID] = str(v.AgentID)
	it[attrVerifID] = str(v.VerificationID)
	it[attrResult] = str(v.Result)
	ratio := strconv.FormatFloat(v.OverallRatio, 'g', -1, 64)
	it[attrRatio] = value{N: &ratio}
	it[attrVerifiedAt] = str(v.VerifiedAt.UTC().Format(time.RFC3339Nano))
	it[attrPaid] = boolean(v.Paid)
	// Empty strings are left out rather than stored: older DynamoDB-compatible servers refuse them.
	if v.TaskID != "" {
		it[attrTaskID] = str(v.TaskID)
	}
	if v.CallerID != "" {
		it[attrCallerID] = str(v.CallerID)
	}
	return it
}

// putRecord is step 2: it writes a history record unless it is there already (a record left
// pending by an earlier version of this package is replaced).
func (s *Store) putRecord(ctx context.Context, rec item) error {
	err := s.putItem(ctx, putItemInput{
		Item:                     rec,
		ConditionExpression:      "attribute_not_exists(#pk) OR attribute_exists(#pending)",
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#pending": attrPending},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("write history record: %w", err)
	}
	return nil
}

func historyItemKey(v store.Verification) item {
	return key(prefixAgent+v.AgentID, prefixHistory+storekey.HistoryKey(v.VerifiedAt, v.VerificationID))
}

func aggregateKey(agentID string) item {
	return key(prefixAgent+agentID, skAggregate)
}

// outboxEntry is one record in an aggregate's outbox, stored as JSON text under its verification
// id.
type outboxEntry struct {
	Queued int64 `json:"queued"` // when it was counted, epoch seconds
	Record item  `json:"record"` // the history record, keys included
	// text is the entry's JSON as the item holds it, written back as read: no entry but the
	// new one is encoded again on a put.
	text string
}

// overdue reports whether the entry has waited outboxGrace, so that a writer other than its owner
// may write its record.
func (e outboxEntry) overdue(now time.Time) bool {
	return now.Unix()-e.Queued >= int64(outboxGrace/time.Second)
}

// aggregateItem is an aggregate item decoded.
type aggregateItem struct {
	agg     reputation.Aggregate
	version int64
	recent  []string               // ids of the latest verifications counted or written out from the outbox
	outbox  map[string]outboxEntry // counted records that may not be in the history yet
}

// addToAggregate is step 1 of the package comment: add to got (the aggregate item as read, nil
// when there is none), conditional put, and read again on a lost race. Records that wait too long
// in the outbox, or make it too large, are written to the history first.
//
// It returns the record step 2 writes: rec when this call counted v; the outbox's copy when an
// earlier call did, so that the history shows the record that was counted; and nil when v's record
// is in the history already, so nothing is left to do.
func (s *Store) addToAggregate(ctx context.Context, v store.Verification, rec, got item) (item, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			var err error
			if got, err = s.getItem(ctx, getItemInput{Key: aggregateKey(v.AgentID), ConsistentRead: true}); err != nil {
				return nil, fmt.Errorf("read aggregate: %w", err)
			}
			// Step 0 ran once, before the first read. Since then another call may have recorded v
			// completely and more than recentIDs others pushed it out of recent_ids; the history
			// record, read after the aggregate, tells.
			done, err := s.recorded(ctx, v)
			if err != nil {
				return nil, err
			}
			if done {
				return nil, nil
			}
		}
		var a aggregateItem
		var err error
		if got != nil {
			if a, err = decodeAggregate(got); err != nil {
				return nil, err
			}
			if e, queued := a.outbox[v.VerificationID]; queued || slices.Contains(a.recent, v.VerificationID) {
				if len(e.Record) > 0 {
					return e.Record, nil // an earlier call counted it and may not have written it yet
				}
				return rec, nil // an earlier call counted it
			}
		}
		now := s.now()
		own, err := json.Marshal(outboxEntry{Queued: now.Unix(), Record: rec})
		if err != nil {
			return nil, fmt.Errorf("encode outbox: %w", err)
		}
		written := s.flushOutbox(ctx, a.outbox, now, maxOutboxBytes-len(v.VerificationID)-len(own))
		a.agg.Add(v.Observation())
		body, err := json.Marshal(a.agg)
		if err != nil {
			return nil, fmt.Errorf("encode aggregate: %w", err)
		}
		// The ids written out join recent_ids: a call recording one of them again whose step 0
		// ran before the write must still find it counted in this aggregate.
		a.recent = append(a.recent, written...)
		a.recent = append(a.recent, v.VerificationID)
		a.recent = a.recent[max(len(a.recent)-recentIDs, 0):]
		ids := make([]value, len(a.recent))
		for i, id := range a.recent {
			ids[i] = str(id)
		}
		outbox := make(item, len(a.outbox)+1)
		for id, e := range a.outbox {
			outbox[id] = str(e.text)
		}
		outbox[v.VerificationID] = str(string(own))
		it := aggregateKey(v.AgentID)
		it[attrAgentID] = str(v.AgentID)
		it[attrVersion] = number(a.version + 1)
		it[attrAggregate] = str(string(body))
		it[attrRecentIDs] = list(ids)
		it[attrOutbox] = mapOf(outbox)
		put := putItemInput{
			Item:                     it,
			ConditionExpression:      "attribute_not_exists(#pk)",
			ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		}
		if got != nil {
			put.ConditionExpression = "#v = :v"
			put.ExpressionAttributeNames = map[string]string{"#v": attrVersion}
			put.ExpressionAttributeValues = item{":v": number(a.version)}
		}
		err = s.putItem(ctx, put)
		if err == nil {
			return rec, nil
		}
		if !isConditionFailed(err) {
			return nil, fmt.Errorf("write aggregate: %w", err)
		}
		if attempt+1 >= aggregateAttempts {
			return nil, fmt.Errorf("write aggregate: still conflicting after %d attempts", aggregateAttempts)
		}
		backoff := min(aggregateBackoff<<min(attempt, 16), aggregateMaxBackoff)
		select {
		case <-time.After(rand.N(backoff) + 1):
		case <-ctx.Done():
			return nil, fmt.Errorf("write aggregate: %w", ctx.Err())
		}
	}
}

// flushOutbox writes to the history the records of outbox that have waited outboxGrace, and the
// oldest beyond maxOutbox records or beyond room bytes (leaving room for one more record), deletes
// from outbox those it wrote, and returns their ids. A record it could not write stays for a later
// writer: the caller's own recording does not fail for another's.
func (s *Store) flushOutbox(ctx context.Context, outbox map[string]outboxEntry, now time.Time, room int) []string {
	size := 0 // what the entries add to the item: their ids and JSON texts
	for id, e := range outbox {
		size += len(id) + len(e.text)
	}
	ids := slices.SortedFunc(maps.Keys(outbox), func(a, b string) int {
		return cmp.Or(cmp.Compare(outbox[a].Queued, outbox[b].Queued), strings.Compare(a, b))
	})
	var written []string
	for i, id := range ids {
		e := outbox[id]
		if !e.overdue(now) && len(ids)-i < maxOutbox && size <= room {
			break // the rest are younger and within the bounds
		}
		if len(e.Record) == 0 || s.putRecord(ctx, e.Record) != nil {
			continue
		}
		delete(outbox, id)
		size -= len(id) + len(e.text)
		written = append(written, id)
	}
	return written
}

// decodeAggregate reads an aggregate item.
func decodeAggregate(it item) (a aggregateItem, err error) {
	if a.version, err = intAttr(it, attrVersion); err != nil {
		return a, fmt.Errorf("decode aggregate: %w", err)
	}
	body, err := stringAttr(it, attrAggregate)
	if err != nil {
		return a, fmt.Errorf("decode aggregate: %w", err)
	}
	if a.agg, err = reputation.UnmarshalAggregate([]byte(body)); err != nil {
		return a, err
	}
	if l := it[attrRecentIDs].L; l != nil {
		for _, v := range *l {
			if v.S != nil {
				a.recent = append(a.recent, *v.S)
			}
		}
	}
	if m := it[attrOutbox].M; m != nil && len(*m) > 0 {
		a.outbox = make(map[string]outboxEntry, len(*m))
		for id, v := range *m {
			var e outboxEntry
			if v.S == nil || json.Unmarshal([]byte(*v.S), &e) != nil {
				return a, fmt.Errorf("decode aggregate: outbox record %s is malformed", id)
			}
			e.text = *v.S
			a.outbox[id] = e
		}
	}
	return a, nil
}

// AgentAggregate implements store.Store with one strongly consistent GetItem. It also writes to the
// history the records that have waited outboxGrace in the outbox: otherwise an orphan of an agent
// that records nothing more would never appear in its history, which would show fewer records than
// the aggregate counts. A record it could not write stays for later; the read does not fail for it.
// Unlike a writer's flush, this does not add the ids to recent_ids (an UpdateItem cannot keep that
// list short): a call recording such a record again, whose step 0 ran just before the write and
// whose aggregate read just after, counts it again if its id has already left recent_ids. That
// needs a retry over a minute late meeting a read within a few milliseconds, and is left open.
func (s *Store) AgentAggregate(ctx context.Context, agentID string) (reputation.Aggregate, bool, error) {
	if err := storekey.CheckAgentID(agentID); err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("read aggregate: %w", err)
	}
	got, err := s.getItem(ctx, getItemInput{Key: aggregateKey(agentID), ConsistentRead: true})
	if err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("read aggregate: %w", err)
	}
	if got == nil {
		return reputation.Aggregate{}, false, nil
	}
	a, err := decodeAggregate(got)
	if err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("read aggregate of %s: %w", agentID, err)
	}
	now := s.now()
	for id, e := range a.outbox {
		if !e.overdue(now) || len(e.Record) == 0 || s.putRecord(ctx, e.Record) != nil {
			continue
		}
		_ = s.removeFromOutbox(ctx, agentID, id) // if it fails, a later writer removes it
	}
	return a.agg, true, nil
}

// History implements store.Store with a descending Query on the agent's partition. It asks for one
// item more than the page, so next is "" exactly when nothing follows (DynamoDB's own
// LastEvaluatedKey would announce one empty page too many).
func (s *Store) History(ctx context.Context, agentID string, limit int, cursor string) ([]store.Verification, string, error) {
	if err := storekey.CheckAgentID(agentID); err != nil {
		return nil, "", fmt.Errorf("read history: %w", err)
	}
	limit, err := storekey.PageLimit(limit)
	if err != nil {
		return nil, "", fmt.Errorf("read history: %w", err)
	}
	var start item
	if cursor != "" {
		after, err := storekey.DecodeCursor(cursor)
		if err != nil {
			return nil, "", fmt.Errorf("read history: %w", err)
		}
		start = key(prefixAgent+agentID, prefixHistory+after)
	}
	var items []item
	for {
		var out queryOutput
		err := s.client.Call(ctx, "Query", &queryInput{
			TableName:                 s.table,
			KeyConditionExpression:    "#pk = :pk AND begins_with(#sk, :v)",
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
			ExpressionAttributeValues: item{":pk": str(prefixAgent + agentID), ":v": str(prefixHistory)},
			ScanIndexForward:          false,
			ConsistentRead:            true,
			Limit:                     limit + 1 - len(items),
			ExclusiveStartKey:         start,
		}, &out)
		if err != nil {
			return nil, "", fmt.Errorf("read history: %w", err)
		}
		items = append(items, out.Items...)
		// A query page also ends at 1 MB, before Limit; keep reading until the page is full.
		if len(items) > limit || out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	var next string
	if len(items) > limit {
		items = items[:limit]
		sk, err := stringAttr(items[limit-1], attrSK)
		if err != nil {
			return nil, "", fmt.Errorf("read history: %w", err)
		}
		next = storekey.EncodeCursor(sk[len(prefixHistory):])
	}
	page := make([]store.Verification, 0, len(items))
	for _, it := range items {
		v, err := decodeVerification(it)
		if err != nil {
			return nil, "", fmt.Errorf("read history: %w", err)
		}
		page = append(page, v)
	}
	return page, next, nil
}

func decodeVerification(it item) (store.Verification, error) {
	var v store.Verification
	var err error
	if v.AgentID, err = stringAttr(it, attrAgentID); err != nil {
		return v, err
	}
	if v.VerificationID, err = stringAttr(it, attrVerifID); err != nil {
		return v, err
	}
	if v.Result, err = stringAttr(it, attrResult); err != nil {
		return v, err
	}
	if _, ok := it[attrTaskID]; ok {
		if v.TaskID, err = stringAttr(it, attrTaskID); err != nil {
			return v, err
		}
	}
	if _, ok := it[attrCallerID]; ok {
		if v.CallerID, err = stringAttr(it, attrCallerID); err != nil {
			return v, err
		}
	}
	at, err := stringAttr(it, attrVerifiedAt)
	if err != nil {
		return v, err
	}
	if v.VerifiedAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return v, fmt.Errorf("attribute %s of %s: %w", attrVerifiedAt, v.VerificationID, err)
	}
	ratio := it[attrRatio].N
	if ratio == nil {
		return v, fmt.Errorf("attribute %s of %s is not a number", attrRatio, v.VerificationID)
	}
	if v.OverallRatio, err = strconv.ParseFloat(*ratio, 64); err != nil || math.IsInf(v.OverallRatio, 0) {
		return v, fmt.Errorf("attribute %s of %s is not a finite number", attrRatio, v.VerificationID)
	}
	paid := it[attrPaid].BOOL
	if paid == nil {
		return v, fmt.Errorf("attribute %s of %s is not a boolean", attrPaid, v.VerificationID)
	}
	v.Paid = *paid
	return v, nil
}

func stringAttr(it item, name string) (string, error) {
	s := it[name].S
	if s == nil {
		return "", fmt.Errorf("attribute %s is missing or not a string", name)
	}
	return *s, nil
}

func intAttr(it item, name string) (int64, error) {
	n := it[name].N
	if n == nil {
		return 0, fmt.Errorf("attribute %s is missing or not a number", name)
	}
	v, err := strconv.ParseInt(*n, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s is not an integer: %w", name, err)
	}
	return v, nil
}

// Ping implements store.Store with a GetItem of a key that never exists: it needs only the read
// permission the service already has, and proves the endpoint, credentials and table all work.
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.getItem(ctx, getItemInput{Key: key(pingKey, pingKey)}); err != nil {
		return newPingError(ctx, err)
	}
	return nil
}

// PingError is what Ping returns: its message names only the kind of failure (an AWS error code,
// "timeout" or "unreachable"), because the client's errors carry the endpoint URL and DynamoDB's
// messages the table name, which /health must not show. The full cause stays reachable with errors.Unwrap for the log.
type PingError struct {
	// Reason is the AWS error code (e.g. "ResourceNotFoundException"), "timeout" or "unreachable".
	Reason string
	cause  error
}

func newPingError(ctx context.Context, err error) *PingError {
	apiErr, answered := errors.AsType[*awsjson.Error](err)
	switch {
	case answered:
		return &PingError{Reason: apiErr.Code, cause: err}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return &PingError{Reason: "timeout", cause: err}
	default:
		return &PingError{Reason: "unreachable", cause: err}
	}
}

// Error returns the safe message.
func (e *PingError) Error() string { return "ping dynamodb: " + e.Reason }

// Unwrap returns the full cause, for logging only.
func (e *PingError) Unwrap() error { return e.cause }

// Close implements store.Store; the client holds nothing that needs releasing.
func (s *Store) Close() error { return nil }

// Limits of CreateTable's wait for the table to become ACTIVE, each with its reason.
const (
	// tableReadyTimeout bounds the whole wait; DynamoDB takes seconds, dynalite no time.
	tableReadyTimeout = 30 * time.Second
	// tablePollFirst and tablePollMax bound the wait between two reads of the table's status,
	// which doubles from the first to the most.
	tablePollFirst = 50 * time.Millisecond
	tablePollMax   = time.Second
)

// CreateTable creates table with the layout this package expects (string keys pk and sk,
// on-demand billing) and waits until it is ACTIVE. It is FOR TESTS ONLY: in production the table
// and its TTL setting come from template.yaml and the service never creates or alters tables. It
// does not enable TTL, since dynalite has no TTL API and reads ignore expired items anyway.
func CreateTable(ctx context.Context, client Client, table string) error {
	type attribute struct{ AttributeName, AttributeType string }
	type keyElement struct{ AttributeName, KeyType string }
	err := client.Call(ctx, "CreateTable", struct {
		TableName            string
		AttributeDefinitions []attribute
		KeySchema            []keyElement
		BillingMode          string
	}{
		TableName:            table,
		AttributeDefinitions: []attribute{{attrPK, "S"}, {attrSK, "S"}},
		KeySchema:            []keyElement{{attrPK, "HASH"}, {attrSK, "RANGE"}},
		BillingMode:          "PAY_PER_REQUEST",
	}, new(noOutput))
	if err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	ctx, cancel := context.WithTimeout(ctx, tableReadyTimeout)
	defer cancel()
	for wait := tablePollFirst; ; wait = min(2*wait, tablePollMax) {
		var out struct{ Table struct{ TableStatus string } }
		err := client.Call(ctx, "DescribeTable", struct{ TableName string }{table}, &out)
		if e, ok := errors.AsType[*awsjson.Error](err); err != nil && !(ok && e.Code == "ResourceNotFoundException") {
			return fmt.Errorf("create table %s: wait until active: %w", table, err)
		}
		if err == nil && out.Table.TableStatus == "ACTIVE" {
			return nil
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("create table %s: wait until active: %w", table, ctx.Err())
		}
	}
}
