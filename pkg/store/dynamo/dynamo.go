// Package dynamo is the store.Store (and the store.ReceiptLog of log.go) of the Lambda
// deployment: one DynamoDB table shared by every function, so the allowance, spent payments,
// histories and the receipt log are the same whichever function answers.
package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/agent-output-verifier/verifier/pkg/reputation"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
)

// Attribute names and key prefixes of the single-table layout. The table has string keys pk and
// sk and the TTL attribute expires_at (epoch seconds):
//
//	allowance    pk CLIENT#<client>   sk ALLOWANCE#<day>          n (count), expires_at
//	payment      pk PAYMENT#<id>      sk PAYMENT                  expires_at
//	inbox        pk AGENT#<agent id>  sk IN#<verification>        the record's fields
//	verification pk AGENT#<agent id>  sk V#<time>#<verification>  the record's fields
//	aggregate    pk AGENT#<agent id>  sk AGGREGATE                version, aggregate (JSON), batch
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
	attrVersion    = "version"
	attrAggregate  = "aggregate"
	attrRecentIDs  = "recent_ids" // an earlier version's, removed by the next fold
	attrOutbox     = "outbox"     // an earlier version's, removed by the next fold
	attrBatch      = "batch"

	prefixClient    = "CLIENT#"
	prefixAllowance = "ALLOWANCE#"
	prefixPayment   = "PAYMENT#"
	skPayment       = "PAYMENT"
	prefixAgent     = "AGENT#"
	prefixHistory   = "V#"
	prefixInbox     = "IN#"
	skAggregate     = "AGGREGATE"
	pingKey         = "PING"
)

// Store is the DynamoDB-backed store.Store. It is safe for concurrent use; it holds no state but
// the client, the table name and the clock.
//
// Every write is one single-item PutItem, UpdateItem or DeleteItem, conditional where a condition
// decides anything, and never a transaction, so the design runs on any DynamoDB-compatible server
// and each write is atomic on its own. DynamoDB deletes expired items late (within days), so every
// read ignores an item whose expires_at has passed.
type Store struct {
	client Client
	table  string
	now    func() time.Time
}

// Client is the part of the SDK's DynamoDB client (*dynamodb.Client) the store calls. The SDK
// signs, resolves endpoints and credentials, and retries throttling, server errors and network
// failures a bounded number of times (its standard retryer), and nothing else; a refused
// condition is a *types.ConditionalCheckFailedException. Records are encoded with
// feature/dynamodb/attributevalue; conditions and updates are fixed expression strings with named
// placeholders, written once here rather than rebuilt by the expression builder on every call.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	// BatchWriteItem writes the receipt log's indexes and deletes its pending leaves (log.go).
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

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

// item is a DynamoDB item, a key, or a set of expression values, by attribute name.
type item = map[string]types.AttributeValue

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func number(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func (s *Store) getItem(ctx context.Context, in *dynamodb.GetItemInput) (item, error) {
	in.TableName = &s.table
	out, err := s.client.GetItem(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

func (s *Store) putItem(ctx context.Context, in *dynamodb.PutItemInput) error {
	in.TableName = &s.table
	_, err := s.client.PutItem(ctx, in)
	return err
}

func (s *Store) updateItem(ctx context.Context, in *dynamodb.UpdateItemInput) (item, error) {
	in.TableName = &s.table
	out, err := s.client.UpdateItem(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
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
	_, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	return ok
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
		attrs, err := s.updateItem(ctx, &dynamodb.UpdateItemInput{
			Key:                 allowanceKey(client, day),
			UpdateExpression:    aws.String("ADD #n :one SET #exp = :exp"),
			ConditionExpression: aws.String("(attribute_not_exists(#n) OR #n < :limit) AND (attribute_not_exists(#exp) OR #exp >= :now)"),
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
			ReturnValues: types.ReturnValueUpdatedNew,
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
	got, err := s.getItem(ctx, &dynamodb.GetItemInput{
		Key:            allowanceKey(client, day),
		ConsistentRead: aws.Bool(true),
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
	_, err = s.updateItem(ctx, &dynamodb.UpdateItemInput{
		Key:                      allowanceKey(client, day),
		UpdateExpression:         aws.String("SET #n = :one, #exp = :exp"),
		ConditionExpression:      aws.String("#exp < :now"),
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
	got, err := s.getItem(ctx, &dynamodb.GetItemInput{
		Key:                      allowanceKey(client, day),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#n, #exp"),
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
	err := s.putItem(ctx, &dynamodb.PutItemInput{
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #exp < :now"),
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
	_, err := s.updateItem(ctx, &dynamodb.UpdateItemInput{
		Key:                       paymentKey(id),
		UpdateExpression:          aws.String("SET #exp = :past"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
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
	got, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: paymentKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("read payment %s: %w", id, err)
	}
	return got != nil && !s.expired(got), nil
}

// Limits of recording and folding, each with its reason.
const (
	// foldBatch is how many inbox records one fold step reads and counts with one aggregate write:
	// one Query page, and one BatchGetItem, whose limit is 100 keys.
	foldBatch = 100
	// maxBatchBytes bounds the records one fold step keeps in the aggregate item's batch (their
	// JSON, which is longer than what DynamoDB counts). DynamoDB refuses items over 400 KB. With the
	// longest ids and labels storekey allows, made of characters JSON escapes to six bytes, one
	// record takes about 25 KB and the rest of the item (keys, aggregate JSON) under 8 KB, so
	// 256 KB keeps the item under 290 KB. A step always takes at least one record.
	maxBatchBytes = 256 << 10
	// foldAttempts bounds how often one Fold retries after losing its aggregate write to another
	// folder of the same agent; each loss means the other folder made progress, so running out of
	// attempts leaves nothing behind that the next fold does not count.
	foldAttempts = 100
	// foldBackoff and foldMaxBackoff bound the wait after a lost aggregate write (doubling, with
	// full jitter, so folders that collided spread out instead of colliding again).
	foldBackoff    = 2 * time.Millisecond
	foldMaxBackoff = 100 * time.Millisecond
	// finishWorkers is how many history writes and inbox deletes of one batch are in flight at
	// once: a batch of 100 is written in a few round trips without opening a hundred connections.
	finishWorkers = 16
	// batchGetAttempts bounds the rounds of a BatchGetItem whose keys DynamoDB left unprocessed
	// (it does so under throttling); unprocessed keys after the last are an error, and the fold is
	// tried again by its next caller.
	batchGetAttempts = 8
)

// RecordVerification implements store.Store with one conditional PutItem of the record into the
// agent's inbox, keyed by the verification id: no item is read, no version, and no other writer's
// put can make it fail, so any number of writers record for one agent at once and each answers
// after one write. Recording the same verification again finds it waiting (the condition refuses
// the put) or, once it has been counted, puts it in the inbox again, where the next fold
// recognises it (step 2 of Fold). The record is counted, and moved to the history, by the next
// Fold, which every read of the aggregate or the history runs first.
func (s *Store) RecordVerification(ctx context.Context, v store.Verification) error {
	if err := storekey.CheckVerification(v); err != nil {
		return fmt.Errorf("record verification: %w", err)
	}
	it, err := historyItem(v)
	if err != nil {
		return fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	it[attrSK] = str(prefixInbox + v.VerificationID)
	err = s.putItem(ctx, &dynamodb.PutItemInput{
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if err != nil && !isConditionFailed(err) { // refused: the same record waits already
		return fmt.Errorf("record verification %s: %w", v.VerificationID, err)
	}
	return nil
}

// Fold counts the records waiting in agentID's inbox into its aggregate and moves them to its
// history, until the inbox is empty. It returns the aggregate as it stands then; ok is false when
// nothing was ever recorded for the agent. Folds of the same agent may run at once, in any number
// of processes: each counts a record at most once, and one that is cut off (an error, a timeout,
// a crash) leaves the rest to the next.
//
// Every read of the aggregate or the history runs a fold first, and the service runs one after
// recording, off the answer path. A fold repeats these steps until the inbox is empty:
//
//  1. Read the aggregate (with its version and batch: the records the previous step counted) and
//     the first foldBatch records of the inbox, at once, strongly consistent.
//  2. Finish the batch read (step 4 of the previous step, whose folder may have died). Of the
//     inbox's records, keep those not in the batch whose history record does not exist (one
//     BatchGetItem): a history record is written only after its verification is counted, so one
//     that exists was counted before and is in the inbox again because it was recorded again; its
//     inbox item is deleted. Add the rest to the aggregate (reputation.Aggregate.Add) and PutItem
//     it with its version one up and the rest as its batch, on condition that the version is still
//     the one read (or that no aggregate exists). A lost race means another folder counted first:
//     read again (step 1).
//  3. Finish the batch: PutItem each history record unless it exists, then DeleteItem its inbox
//     item.
//  4. Remove the batch from the aggregate, on condition that the version is unchanged.
//
// A verification is counted at most once: it is counted only by a put that replaces the version
// read, and the version read either counts it already (then it is in that version's batch or its
// history record exists, since a batch is finished before the put that replaces it and before it
// is removed) or does not (then a put of the same version by another folder that counts it makes
// this folder's put fail). A folder may stop after any write, by error, timeout or crash: what it
// left is a record in the inbox (counted by the next fold) or a batch not finished (finished by
// the next fold before anything else). So a timeout never loses a record once its one PutItem
// into the inbox has succeeded: the inbox is the durable retry.
//
// Folds contend with each other on the aggregate's version, as writers did when every record
// updated the aggregate; but a fold counts up to foldBatch records with one aggregate write, a
// lost race only means another fold made progress, and no answer waits for a fold: only reads
// do, and only for what waits in the inbox, which is empty when the folds after recording keep up.
// Each verification costs O(1) work and a lookup two reads sent at once (the aggregate and the
// inbox's first page), plus the fold of whatever waits.
//
// An aggregate written by an earlier version of this package holds an outbox of counted records
// and recent_ids; the next fold finishes the outbox's records as a batch and removes both.
func (s *Store) Fold(ctx context.Context, agentID string) (agg reputation.Aggregate, ok bool, err error) {
	if err := storekey.CheckAgentID(agentID); err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", err)
	}
	for lost := 0; ; {
		a, found, inbox, more, err := s.readFoldState(ctx, agentID)
		if err != nil {
			return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", err)
		}
		// Step 3 of the previous fold step, whose folder may have died before it or still be at it.
		if err := s.finish(ctx, agentID, a.batch); err != nil {
			return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", err)
		}
		pending, truncated, err := s.uncounted(ctx, agentID, inbox, a.batch)
		if err != nil {
			return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", err)
		}
		more = more || truncated
		if len(pending) == 0 {
			if len(a.batch) > 0 || a.legacy {
				if err := s.clearBatch(ctx, agentID, a.version); err != nil {
					return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", err)
				}
			}
			if !more {
				return a.agg, found, nil
			}
			continue
		}
		for _, v := range pending {
			a.agg.Add(v.Observation())
		}
		err = s.putAggregate(ctx, agentID, a, found, pending)
		if isConditionFailed(err) {
			// Another folder wrote first: read again, and count what it left.
			if lost++; lost >= foldAttempts {
				return reputation.Aggregate{}, false, fmt.Errorf("fold: the aggregate still changed under %d attempts", foldAttempts)
			}
			select {
			case <-time.After(rand.N(min(foldBackoff<<min(lost, 16), foldMaxBackoff)) + 1):
			case <-ctx.Done():
				return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", ctx.Err())
			}
			continue
		}
		if err != nil {
			return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", err)
		}
		if err := s.finish(ctx, agentID, pending); err != nil {
			return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", err)
		}
		if err := s.clearBatch(ctx, agentID, a.version+1); err != nil {
			return reputation.Aggregate{}, false, fmt.Errorf("fold: %w", err)
		}
		if !more {
			return a.agg, true, nil
		}
	}
}

// readFoldState is step 1: the aggregate (strongly consistent) and the first foldBatch records of
// the inbox, read at once. more says the inbox may hold more.
func (s *Store) readFoldState(ctx context.Context, agentID string) (a aggregateItem, found bool, inbox []store.Verification, more bool, err error) {
	type read struct {
		it  item
		err error
	}
	first := make(chan read, 1)
	go func() {
		it, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: aggregateKey(agentID), ConsistentRead: aws.Bool(true)})
		first <- read{it, err}
	}()
	out, qerr := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :in)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: item{":pk": str(prefixAgent + agentID), ":in": str(prefixInbox)},
		ScanIndexForward:          aws.Bool(true),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(foldBatch),
	})
	agg := <-first
	if agg.err != nil {
		return a, false, nil, false, fmt.Errorf("read aggregate: %w", agg.err)
	}
	if qerr != nil {
		return a, false, nil, false, fmt.Errorf("read inbox: %w", qerr)
	}
	if agg.it != nil {
		if a, err = decodeAggregate(agg.it); err != nil {
			return a, false, nil, false, fmt.Errorf("read aggregate of %s: %w", agentID, err)
		}
	}
	for _, it := range out.Items {
		v, err := decodeVerification(it)
		if err != nil {
			return a, false, nil, false, fmt.Errorf("read inbox: %w", err)
		}
		inbox = append(inbox, v)
	}
	return a, agg.it != nil, inbox, out.LastEvaluatedKey != nil, nil
}

// uncounted is step 2: the records of inbox that no folder has counted, at most maxBatchBytes of
// them (truncated says some were left for the next step). A record in batch was counted by the
// aggregate as read. A record whose history record exists was counted earlier (history records
// are written only after they are counted) and is in the inbox again because it was recorded
// again: its inbox item is deleted here.
func (s *Store) uncounted(ctx context.Context, agentID string, inbox, batch []store.Verification) (pending []store.Verification, truncated bool, err error) {
	inBatch := make(map[string]bool, len(batch))
	for _, v := range batch {
		inBatch[v.VerificationID] = true
	}
	var rest []store.Verification
	for _, v := range inbox {
		if !inBatch[v.VerificationID] {
			rest = append(rest, v)
		}
	}
	if len(rest) == 0 {
		return nil, false, nil
	}
	keys := make([]item, len(rest))
	for i, v := range rest {
		keys[i] = historyItemKey(v)
	}
	written, err := s.existing(ctx, keys)
	if err != nil {
		return nil, false, err
	}
	size := 0
	for _, v := range rest {
		if written[historySK(v)] {
			if err := s.deleteItem(ctx, inboxKey(agentID, v.VerificationID)); err != nil {
				return nil, false, err
			}
			continue
		}
		n, err := recordSize(v)
		if err != nil {
			return nil, false, err
		}
		if len(pending) > 0 && size+n > maxBatchBytes {
			return pending, true, nil
		}
		size += n
		pending = append(pending, v)
	}
	return pending, false, nil
}

// recordSize is the length of v's record in DynamoDB's JSON form, a bound on what it adds to the
// aggregate item's batch.
func recordSize(v store.Verification) (int, error) {
	it, err := historyItem(v)
	if err != nil {
		return 0, err
	}
	b, err := attributevalue.MarshalMapJSON(it)
	if err != nil {
		return 0, fmt.Errorf("encode record: %w", err)
	}
	return len(b), nil
}

// existing reads which of keys (history records of one agent, at most foldBatch) exist, with
// strongly consistent reads, by sort key.
func (s *Store) existing(ctx context.Context, keys []item) (map[string]bool, error) {
	found := make(map[string]bool, len(keys))
	for attempt := 0; len(keys) > 0; attempt++ {
		if attempt >= batchGetAttempts {
			return nil, fmt.Errorf("read history records: %d keys still unprocessed after %d attempts", len(keys), batchGetAttempts)
		}
		if attempt > 0 {
			select {
			case <-time.After(rand.N(min(foldBackoff<<attempt, foldMaxBackoff)) + 1):
			case <-ctx.Done():
				return nil, fmt.Errorf("read history records: %w", ctx.Err())
			}
		}
		out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{s.table: {
				Keys: keys, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("#pk, #sk"),
				ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
			}},
		})
		if err != nil {
			return nil, fmt.Errorf("read history records: %w", err)
		}
		for _, it := range out.Responses[s.table] {
			if sk, err := stringAttr(it, attrSK); err == nil {
				found[sk] = true
			}
		}
		keys = out.UnprocessedKeys[s.table].Keys
	}
	return found, nil
}

// putAggregate is step 2's write: the aggregate a, with pending added, its version one up, and
// pending as its batch, on condition that the version is still the one read (or that there was
// no aggregate, when exists is false). The put drops the attributes of an earlier version of this
// package (outbox, recent_ids), whose records the caller has finished.
func (s *Store) putAggregate(ctx context.Context, agentID string, a aggregateItem, exists bool, pending []store.Verification) error {
	body, err := json.Marshal(a.agg)
	if err != nil {
		return fmt.Errorf("encode aggregate: %w", err)
	}
	batch := make([]types.AttributeValue, len(pending))
	for i, v := range pending {
		rec, err := historyItem(v)
		if err != nil {
			return err
		}
		batch[i] = &types.AttributeValueMemberM{Value: rec}
	}
	it := aggregateKey(agentID)
	it[attrAgentID] = str(agentID)
	it[attrVersion] = number(a.version + 1)
	it[attrAggregate] = str(string(body))
	it[attrBatch] = &types.AttributeValueMemberL{Value: batch}
	put := &dynamodb.PutItemInput{
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
	if exists {
		put.ConditionExpression = aws.String("#v = :v")
		put.ExpressionAttributeNames = map[string]string{"#v": attrVersion}
		put.ExpressionAttributeValues = item{":v": number(a.version)}
	}
	if err := s.putItem(ctx, put); err != nil {
		return fmt.Errorf("write aggregate: %w", err)
	}
	return nil
}

// finish is step 3: it writes the history records of batch (counted already), unless they are
// there, and deletes their inbox items, finishWorkers at a time. Every write is idempotent, so
// folders finishing the same batch at once do no harm.
func (s *Store) finish(ctx context.Context, agentID string, batch []store.Verification) error {
	if len(batch) == 0 {
		return nil
	}
	work := make(chan store.Verification)
	errs := make(chan error, finishWorkers)
	var wg sync.WaitGroup
	for range min(finishWorkers, len(batch)) {
		wg.Go(func() {
			var first error
			for v := range work {
				if first != nil {
					continue
				}
				rec, err := historyItem(v)
				if err == nil {
					err = s.putRecord(ctx, rec)
				}
				if err != nil {
					first = err
					continue
				}
				first = s.deleteItem(ctx, inboxKey(agentID, v.VerificationID))
			}
			errs <- first
		})
	}
	for _, v := range batch {
		work <- v
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// clearBatch is step 4: it removes the finished batch from the aggregate, unless the version
// changed meanwhile (then a later folder finished it before replacing it), so that the next folder
// does not write it again. It removes an earlier version's outbox and recent_ids too.
func (s *Store) clearBatch(ctx context.Context, agentID string, version int64) error {
	_, err := s.updateItem(ctx, &dynamodb.UpdateItemInput{
		Key:                       aggregateKey(agentID),
		UpdateExpression:          aws.String("REMOVE #batch, #outbox, #recent"),
		ConditionExpression:       aws.String("#v = :v"),
		ExpressionAttributeNames:  map[string]string{"#batch": attrBatch, "#outbox": attrOutbox, "#recent": attrRecentIDs, "#v": attrVersion},
		ExpressionAttributeValues: item{":v": number(version)},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("clear batch: %w", err)
	}
	return nil
}

// record is a verification's item (in the inbox, the history or an aggregate's batch), as
// attributevalue encodes and decodes it. Empty strings are left out rather than stored: older
// DynamoDB-compatible servers refuse them.
type record struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	AgentID        string `dynamodbav:"agent_id"`
	VerificationID string `dynamodbav:"verification_id"`
	TaskID         string `dynamodbav:"task_id,omitempty"`
	CallerID       string `dynamodbav:"caller_id,omitempty"`
	Result         string `dynamodbav:"result"`
	OverallRatio   ratio  `dynamodbav:"overall_ratio"`
	VerifiedAt     string `dynamodbav:"verified_at"`
	Paid           bool   `dynamodbav:"paid"`
}

// ratio is a number written in Go's shortest form ('g'): attributevalue's own ('f') spells a tiny
// ratio with more digits than DynamoDB's 38 of precision.
type ratio float64

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (r ratio) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(float64(r), 'g', -1, 64)}, nil
}

// historyItem is v's history record, keys included.
func historyItem(v store.Verification) (item, error) {
	it, err := attributevalue.MarshalMap(record{
		PK: prefixAgent + v.AgentID, SK: historySK(v),
		AgentID: v.AgentID, VerificationID: v.VerificationID, TaskID: v.TaskID, CallerID: v.CallerID,
		Result: v.Result, OverallRatio: ratio(v.OverallRatio),
		VerifiedAt: v.VerifiedAt.UTC().Format(time.RFC3339Nano), Paid: v.Paid,
	})
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return it, nil
}

// putRecord writes a history record unless it is there already.
func (s *Store) putRecord(ctx context.Context, rec item) error {
	err := s.putItem(ctx, &dynamodb.PutItemInput{
		Item:                     rec,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("write history record: %w", err)
	}
	return nil
}

// deleteItem deletes one item; deleting an item that is gone already is no error.
func (s *Store) deleteItem(ctx context.Context, k item) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: k})
	if err != nil {
		return fmt.Errorf("delete inbox record: %w", err)
	}
	return nil
}

func historySK(v store.Verification) string {
	return prefixHistory + storekey.HistoryKey(v.VerifiedAt, v.VerificationID)
}

func historyItemKey(v store.Verification) item {
	return key(prefixAgent+v.AgentID, historySK(v))
}

func inboxKey(agentID, verificationID string) item {
	return key(prefixAgent+agentID, prefixInbox+verificationID)
}

func aggregateKey(agentID string) item {
	return key(prefixAgent+agentID, skAggregate)
}

// aggregateItem is an aggregate item decoded.
type aggregateItem struct {
	agg     reputation.Aggregate
	version int64
	// batch is the records the last fold step counted, which may not be in the history yet.
	batch []store.Verification
	// legacy says the item holds an earlier version's outbox or recent_ids, which the next fold
	// removes (the outbox's records are in batch).
	legacy bool
}

// decodeAggregate reads an aggregate item. The records of an earlier version's outbox (counted,
// and perhaps not in the history yet) join the batch, so that a fold finishes them.
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
	if l, ok := it[attrBatch].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			m, ok := e.(*types.AttributeValueMemberM)
			if !ok {
				return a, errors.New("decode aggregate: a batch record is not a map")
			}
			v, err := decodeVerification(m.Value)
			if err != nil {
				return a, fmt.Errorf("decode aggregate: batch: %w", err)
			}
			a.batch = append(a.batch, v)
		}
	}
	_, a.legacy = it[attrRecentIDs]
	if m, ok := it[attrOutbox].(*types.AttributeValueMemberM); ok {
		a.legacy = true
		for id, e := range m.Value {
			// An outbox entry is JSON holding the record in DynamoDB's JSON form.
			var entry struct {
				Record json.RawMessage `json:"record"`
			}
			es, ok := e.(*types.AttributeValueMemberS)
			if !ok || json.Unmarshal([]byte(es.Value), &entry) != nil {
				return a, fmt.Errorf("decode aggregate: outbox record %s is malformed", id)
			}
			rec, err := attributevalue.UnmarshalMapJSON(entry.Record)
			if err != nil {
				return a, fmt.Errorf("decode aggregate: outbox record %s is malformed", id)
			}
			v, err := decodeVerification(rec)
			if err != nil {
				return a, fmt.Errorf("decode aggregate: outbox: %w", err)
			}
			a.batch = append(a.batch, v)
		}
	}
	return a, nil
}

// AgentAggregate implements store.Store: it folds the agent's inbox first (see Fold), so that the
// aggregate counts every recorded verification. When the inbox is empty, as it is when folds keep
// up, that is one strongly consistent GetItem of the aggregate and one Query of the inbox, sent
// at once.
func (s *Store) AgentAggregate(ctx context.Context, agentID string) (reputation.Aggregate, bool, error) {
	if err := storekey.CheckAgentID(agentID); err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("read aggregate: %w", err)
	}
	agg, ok, err := s.Fold(ctx, agentID)
	if err != nil {
		return reputation.Aggregate{}, false, fmt.Errorf("read aggregate: %w", err)
	}
	return agg, ok, nil
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
	if _, _, err := s.Fold(ctx, agentID); err != nil {
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
		out, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 &s.table,
			KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :v)"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
			ExpressionAttributeValues: item{":pk": str(prefixAgent + agentID), ":v": str(prefixHistory)},
			ScanIndexForward:          aws.Bool(false),
			ConsistentRead:            aws.Bool(true),
			Limit:                     aws.Int32(int32(limit + 1 - len(items))),
			ExclusiveStartKey:         start,
		})
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

// decodeVerification reads a record. Besides attributevalue's type checks, it requires the
// attributes every record has, so a damaged item fails instead of reading as zero values.
func decodeVerification(it item) (store.Verification, error) {
	for _, name := range []string{attrAgentID, attrVerifID, attrResult, attrVerifiedAt} {
		if _, err := stringAttr(it, name); err != nil {
			return store.Verification{}, err
		}
	}
	if _, ok := it[attrRatio].(*types.AttributeValueMemberN); !ok {
		return store.Verification{}, fmt.Errorf("attribute %s is missing or not a number", attrRatio)
	}
	if _, ok := it[attrPaid].(*types.AttributeValueMemberBOOL); !ok {
		return store.Verification{}, fmt.Errorf("attribute %s is missing or not a boolean", attrPaid)
	}
	var r record
	if err := attributevalue.UnmarshalMap(it, &r); err != nil {
		return store.Verification{}, fmt.Errorf("decode record: %w", err)
	}
	v := store.Verification{AgentID: r.AgentID, VerificationID: r.VerificationID, TaskID: r.TaskID,
		CallerID: r.CallerID, Result: r.Result, OverallRatio: float64(r.OverallRatio), Paid: r.Paid}
	if math.IsInf(v.OverallRatio, 0) || math.IsNaN(v.OverallRatio) {
		return v, fmt.Errorf("attribute %s of %s is not a finite number", attrRatio, v.VerificationID)
	}
	var err error
	if v.VerifiedAt, err = time.Parse(time.RFC3339Nano, r.VerifiedAt); err != nil {
		return v, fmt.Errorf("attribute %s of %s: %w", attrVerifiedAt, v.VerificationID, err)
	}
	return v, nil
}

func stringAttr(it item, name string) (string, error) {
	s, ok := it[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("attribute %s is missing or not a string", name)
	}
	return s.Value, nil
}

func intAttr(it item, name string) (int64, error) {
	n, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s is missing or not a number", name)
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s is not an integer: %w", name, err)
	}
	return v, nil
}

// Ping implements store.Store with a GetItem of a key that never exists: it needs only the read
// permission the service already has, and proves the endpoint, credentials and table all work.
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: key(pingKey, pingKey)}); err != nil {
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
	apiErr, answered := errors.AsType[smithy.APIError](err)
	switch {
	case answered:
		return &PingError{Reason: apiErr.ErrorCode(), cause: err}
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

// TableAdmin is the part of the SDK's DynamoDB client CreateTable calls.
type TableAdmin interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	dynamodb.DescribeTableAPIClient
}

// CreateTable creates table with the layout this package expects (string keys pk and sk,
// on-demand billing) and waits until it is ACTIVE (the SDK's TableExists waiter). It is FOR TESTS
// ONLY: in production the table and its TTL setting come from template.yaml and the service never
// creates or alters tables. It does not enable TTL, since dynalite has no TTL API and reads ignore
// expired items anyway.
func CreateTable(ctx context.Context, client TableAdmin, table string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: &table,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = tablePollFirst, tablePollMax
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, tableReadyTimeout); err != nil {
		return fmt.Errorf("create table %s: wait until active: %w", table, err)
	}
	return nil
}
