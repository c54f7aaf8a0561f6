package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// The receipt log (SPEC §15) in the same table, written without transactions like the rest:
//
//	record   pk RECEIPT#<id>      sk RECORD                 record (JSON), expires_at
//	pending  pk LOG#PENDING       sk <verification id>      leaf (hex), record (JSON)
//	head     pk LOG               sk HEAD                   size, head (JSON: translog.Head)
//	identity pk LOG               sk IDENTITY               origin, verifier_key
//	index    pk LOG#ID#<id>       sk INDEX                  index
//	chunk    pk LOG#TILE          sk <level>#<n / 256>      hashes (base64 of up to 256 × 32 bytes), count
//
// A chunk holds 256 consecutive hashes of one level, as a tile does: level "data" the leaves, level
// 0, 1, … tlog's stored hashes of that level. A chunk only grows, and its content is determined by
// the committed tree (the package comment of translog), so a write replaces it only when it holds
// more hashes than the chunk stored (a condition on count): a slow sequencer finishing an old
// batch can never shorten what a faster one wrote. Only records expire. The pending entries are one
// partition, read in sort-key (verification id) order; it takes about 1,000 writes a second.
//
// Like the rest of the package it calls DynamoDB through the SDK's client.
const (
	attrRecord = "record"
	attrLeaf   = "leaf"
	attrSize   = "size"
	attrHead   = "head"
	attrIndex  = "index"
	attrHashes = "hashes"
	attrOrigin = "origin"
	attrLogKey = "verifier_key"

	prefixReceipt = "RECEIPT#"
	skRecord      = "RECORD"
	pkPending     = "LOG#PENDING"
	pkLog         = "LOG"
	skHead        = "HEAD"
	skIdentity    = "IDENTITY"
	prefixLogID   = "LOG#ID#"
	skIndex       = "INDEX"
	pkTiles       = "LOG#TILE"
	levelData     = "data"
)

// batchWriteMax is DynamoDB's limit of items in one BatchWriteItem, batchGetMax its limit of keys
// in one BatchGetItem.
const (
	batchWriteMax = 25
	batchGetMax   = 100
)

var _ store.ReceiptLog = (*Store)(nil)

func receiptKey(id string) item { return key(prefixReceipt+id, skRecord) }

// RecordReceipt implements store.ReceiptLog with one conditional PutItem: the pending leaf,
// holding the record. One write, so that no crash leaves a leaf without its record or a record
// without its leaf (DynamoDB's design here has no transactions, and dynalite, which the tests run
// on, has none either). The record moves to its own item (RECEIPT#<id>, with its expiry) when
// its leaf is sequenced (DeletePendingLeaves); until then Receipt reads it from the pending leaf.
// Recording again is harmless: the put is refused while the leaf is pending, a leaf already
// sequenced is dropped by the sequencer, and a record that has its own item already is not
// replaced.
func (s *Store) RecordReceipt(ctx context.Context, r store.Receipt) error {
	if err := storekey.CheckID("verification id", r.VerificationID); err != nil {
		return fmt.Errorf("record receipt: %w", err)
	}
	rec, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("record receipt %s: %w", r.VerificationID, err)
	}
	it := item{attrPK: str(pkPending), attrSK: str(r.VerificationID),
		attrLeaf: str(hex.EncodeToString(r.ReceiptHash[:])), attrRecord: str(string(rec))}
	err = s.putItem(ctx, &dynamodb.PutItemInput{
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("record receipt %s: %w", r.VerificationID, err)
	}
	return nil
}

// Receipt implements store.ReceiptLog: the record's own item, else the pending leaf holding it.
// The reads go in that order, and a third read of the record follows when both missed, since
// the sequencer writes the record's item before it deletes the pending leaf: a record moved
// between the first two reads is found by the third.
func (s *Store) Receipt(ctx context.Context, id string) (store.Receipt, bool, error) {
	if err := storekey.CheckID("verification id", id); err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt: %w", err)
	}
	r, found, err := s.receiptItem(ctx, id)
	if err != nil || found {
		return r, found, err
	}
	it, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: key(pkPending, id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt %s: %w", id, err)
	}
	if it == nil {
		return s.receiptItem(ctx, id)
	}
	if _, ok := it[attrRecord]; !ok {
		// A leaf recorded by an earlier version, which wrote the record apart.
		return s.receiptItem(ctx, id)
	}
	r, err = decodeReceipt(it)
	if err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt %s: %w", id, err)
	}
	if storekey.Expired(r.Expires.Unix(), s.now()) {
		return store.Receipt{}, false, nil
	}
	return r, true, nil
}

// receiptItem reads the record's own item.
func (s *Store) receiptItem(ctx context.Context, id string) (store.Receipt, bool, error) {
	it, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: receiptKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt %s: %w", id, err)
	}
	if it == nil || s.expired(it) {
		return store.Receipt{}, false, nil
	}
	r, err := decodeReceipt(it)
	if err != nil {
		return store.Receipt{}, false, fmt.Errorf("receipt %s: %w", id, err)
	}
	return r, true, nil
}

func decodeReceipt(it item) (store.Receipt, error) {
	raw, err := stringAttr(it, attrRecord)
	if err != nil {
		return store.Receipt{}, err
	}
	var r store.Receipt
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return store.Receipt{}, err
	}
	return r, nil
}

// moveRecords writes the records that the pending leaves of ids hold into their own items, with
// their expiry, unless such an item exists already (the first record of an id stays). It runs
// before the leaves are deleted; run again (a sequencer that crashed between the two), it
// writes nothing twice.
func (s *Store) moveRecords(ctx context.Context, ids []string) error {
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = key(pkPending, id)
	}
	pending, err := s.batchGetAll(ctx, keys)
	if err != nil {
		return fmt.Errorf("read pending records: %w", err)
	}
	records := map[string]item{}
	var recordKeys []item
	for _, it := range pending {
		if _, ok := it[attrRecord]; !ok {
			continue // an earlier version's leaf, whose record has its own item
		}
		id, err := stringAttr(it, attrSK)
		if err != nil {
			return err
		}
		records[id] = it
		recordKeys = append(recordKeys, receiptKey(id))
	}
	if len(records) == 0 {
		return nil
	}
	have, err := s.batchGetAll(ctx, recordKeys)
	if err != nil {
		return fmt.Errorf("read records: %w", err)
	}
	for _, it := range have {
		pk, err := stringAttr(it, attrPK)
		if err != nil {
			return err
		}
		delete(records, pk[len(prefixReceipt):])
	}
	puts := make([]item, 0, len(records))
	for id, it := range records {
		r, err := decodeReceipt(it)
		if err != nil {
			return fmt.Errorf("pending record %s: %w", id, err)
		}
		puts = append(puts, item{attrPK: str(prefixReceipt + id), attrSK: str(skRecord), attrRecord: it[attrRecord],
			attrExpiresAt: number(r.Expires.Unix())})
	}
	return wrapErr("write records", s.batchWrite(ctx, puts, nil))
}

// batchGetAll is batchGet over any number of keys.
func (s *Store) batchGetAll(ctx context.Context, keys []item) ([]item, error) {
	var out []item
	for len(keys) > 0 {
		part := keys[:min(len(keys), batchGetMax)]
		keys = keys[len(part):]
		items, err := s.batchGet(ctx, part)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// LogHead implements translog.Storage.
func (s *Store) LogHead(ctx context.Context) (translog.Head, error) {
	it, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: key(pkLog, skHead), ConsistentRead: aws.Bool(true)})
	if err != nil || it == nil {
		return translog.Head{}, wrapErr("log head", err)
	}
	raw, err := stringAttr(it, attrHead)
	if err != nil {
		return translog.Head{}, fmt.Errorf("log head: %w", err)
	}
	var h translog.Head
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return translog.Head{}, fmt.Errorf("log head: %w", err)
	}
	return h, nil
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// SwapLogHead implements translog.Storage with one conditional PutItem on the head's size.
func (s *Store) SwapLogHead(ctx context.Context, prevSize int64, next translog.Head) error {
	raw, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("swap log head: %w", err)
	}
	in := &dynamodb.PutItemInput{
		Item:                     item{attrPK: str(pkLog), attrSK: str(skHead), attrSize: number(next.Size), attrHead: str(string(raw))},
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
	}
	if prevSize > 0 {
		in.ExpressionAttributeNames = map[string]string{"#size": attrSize}
		in.ConditionExpression = aws.String("#size = :prev")
		in.ExpressionAttributeValues = item{":prev": number(prevSize)}
	}
	if err := s.putItem(ctx, in); err != nil {
		if isConditionFailed(err) {
			return fmt.Errorf("swap log head from %d: %w", prevSize, translog.ErrHeadMoved)
		}
		return fmt.Errorf("swap log head from %d: %w", prevSize, err)
	}
	return nil
}

// chunkKey is the key of the chunk of level (levelData for leaves) holding entry n, chunkSK its
// sort key.
func chunkKey(level string, n int64) item { return key(pkTiles, chunkSK(level, n)) }

func chunkSK(level string, n int64) string {
	return fmt.Sprintf("%s#%012d", level, n>>translog.TileHeight)
}

// chunkEntry is one hash to write into a chunk, at its place.
type chunkEntry struct {
	n int64 // the entry's number within its level
	h tlog.Hash
}

// putEntries writes entries of level into their chunks: each chunk is read, the entries placed,
// and written back if it grew (see the layout comment).
func (s *Store) putEntries(ctx context.Context, level string, entries []chunkEntry) error {
	byChunk := map[int64][]chunkEntry{}
	for _, e := range entries {
		byChunk[e.n>>translog.TileHeight] = append(byChunk[e.n>>translog.TileHeight], e)
	}
	for c, es := range byChunk {
		k := chunkKey(level, c<<translog.TileHeight)
		for {
			it, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: k, ConsistentRead: aws.Bool(true)})
			if err != nil {
				return fmt.Errorf("read chunk: %w", err)
			}
			old, err := chunkHashes(it)
			if err != nil {
				return err
			}
			hs := slices.Clone(old)
			for _, e := range es {
				i := int(e.n - c<<translog.TileHeight)
				for len(hs) <= i {
					hs = append(hs, tlog.Hash{})
				}
				hs[i] = e.h
			}
			if len(hs) <= len(old) {
				break // nothing to add: what is there holds these entries already
			}
			blob := make([]byte, 0, len(hs)*tlog.HashSize)
			for _, h := range hs {
				blob = append(blob, h[:]...)
			}
			in := &dynamodb.PutItemInput{
				Item: item{attrPK: k[attrPK], attrSK: k[attrSK], attrCount: number(int64(len(hs))),
					attrHashes: str(base64.StdEncoding.EncodeToString(blob))},
				ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #n < :n"),
				ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#n": attrCount},
				ExpressionAttributeValues: item{":n": number(int64(len(hs)))},
			}
			err = s.putItem(ctx, in)
			if err == nil {
				break
			}
			if !isConditionFailed(err) {
				return fmt.Errorf("write chunk: %w", err)
			}
			// A longer chunk was written meanwhile; read it again and add what it lacks.
		}
	}
	return nil
}

// chunkHashes decodes a chunk item (nil: an empty chunk).
func chunkHashes(it item) ([]tlog.Hash, error) {
	if it == nil {
		return nil, nil
	}
	raw, err := stringAttr(it, attrHashes)
	if err != nil {
		return nil, fmt.Errorf("chunk: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(b)%tlog.HashSize != 0 {
		return nil, fmt.Errorf("chunk: malformed hashes")
	}
	hs := make([]tlog.Hash, len(b)/tlog.HashSize)
	for i := range hs {
		copy(hs[i][:], b[i*tlog.HashSize:])
	}
	return hs, nil
}

// readEntries reads entries (level, n) from their chunks, with one BatchGetItem per 100 chunks.
func (s *Store) readEntries(ctx context.Context, level func(i int) (string, int64), count int) ([]tlog.Hash, error) {
	type at struct {
		sk string
		i  int64
	}
	places := make([]at, count)
	var keys []item
	seen := map[string]bool{}
	for i := range count {
		l, n := level(i)
		sk := chunkSK(l, n)
		k := key(pkTiles, sk)
		places[i] = at{sk, n & (1<<translog.TileHeight - 1)}
		if !seen[sk] {
			seen[sk] = true
			keys = append(keys, k)
		}
	}
	chunks := map[string][]tlog.Hash{}
	for len(keys) > 0 {
		part := keys[:min(len(keys), batchGetMax)]
		keys = keys[len(part):]
		items, err := s.batchGet(ctx, part)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			hs, err := chunkHashes(it)
			if err != nil {
				return nil, err
			}
			sk, err := stringAttr(it, attrSK)
			if err != nil {
				return nil, err
			}
			chunks[sk] = hs
		}
	}
	out := make([]tlog.Hash, count)
	for i, p := range places {
		hs := chunks[p.sk]
		if p.i >= int64(len(hs)) {
			return nil, fmt.Errorf("log entry %s/%d: %w", p.sk, p.i, translog.ErrNotFound)
		}
		out[i] = hs[p.i]
	}
	return out, nil
}

// batchGet reads up to batchGetMax items at once, strongly consistent, retrying the keys DynamoDB
// leaves unprocessed.
func (s *Store) batchGet(ctx context.Context, keys []item) ([]item, error) {
	var found []item
	for attempt := 0; len(keys) > 0; attempt++ {
		if err := backoff(ctx, attempt, len(keys)); err != nil {
			return nil, fmt.Errorf("batch read: %w", err)
		}
		out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{s.table: {Keys: keys, ConsistentRead: aws.Bool(true)}},
		})
		if err != nil {
			return nil, fmt.Errorf("batch read: %w", err)
		}
		found = append(found, out.Responses[s.table]...)
		keys = out.UnprocessedKeys[s.table].Keys
	}
	return found, nil
}

// backoff waits before a batch call's attempt (none before the first), and gives up after
// batchGetAttempts with what is still unprocessed.
func backoff(ctx context.Context, attempt, unprocessed int) error {
	if attempt >= batchGetAttempts {
		return fmt.Errorf("%d items still unprocessed after %d attempts", unprocessed, batchGetAttempts)
	}
	if attempt == 0 {
		return nil
	}
	select {
	case <-time.After(rand.N(min(foldBackoff<<attempt, foldMaxBackoff)) + 1):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// batchWrite writes items (puts) or deletes keys with BatchWriteItem, 25 at a time, retrying what
// DynamoDB leaves unprocessed.
func (s *Store) batchWrite(ctx context.Context, puts, deletes []item) error {
	var reqs []types.WriteRequest
	for _, it := range puts {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	}
	for _, k := range deletes {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
	}
	for len(reqs) > 0 {
		part := reqs[:min(len(reqs), batchWriteMax)]
		reqs = reqs[len(part):]
		for attempt := 0; len(part) > 0; attempt++ {
			if err := backoff(ctx, attempt, len(part)); err != nil {
				return fmt.Errorf("batch write: %w", err)
			}
			out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{s.table: part}})
			if err != nil {
				return fmt.Errorf("batch write: %w", err)
			}
			part = out.UnprocessedItems[s.table]
		}
	}
	return nil
}

// PutLogHashes implements translog.Storage.
func (s *Store) PutLogHashes(ctx context.Context, start int64, hashes []translog.Hash) error {
	byLevel := map[int][]chunkEntry{}
	for i, h := range hashes {
		level, n := tlog.SplitStoredHashIndex(start + int64(i))
		byLevel[level] = append(byLevel[level], chunkEntry{n, h})
	}
	for level, es := range byLevel {
		if err := s.putEntries(ctx, strconv.Itoa(level), es); err != nil {
			return fmt.Errorf("put log hashes at %d: %w", start, err)
		}
	}
	return nil
}

// ReadLogHashes implements translog.Storage.
func (s *Store) ReadLogHashes(ctx context.Context, indexes []int64) ([]translog.Hash, error) {
	hs, err := s.readEntries(ctx, func(i int) (string, int64) {
		level, n := tlog.SplitStoredHashIndex(indexes[i])
		return strconv.Itoa(level), n
	}, len(indexes))
	return hs, wrapErr("read log hashes", err)
}

// PutLogLeaves implements translog.Storage: the leaves into their data chunks, then each id's
// index.
func (s *Store) PutLogLeaves(ctx context.Context, start int64, leaves []translog.Leaf) error {
	es := make([]chunkEntry, len(leaves))
	puts := make([]item, len(leaves))
	for i, l := range leaves {
		es[i] = chunkEntry{start + int64(i), l.Hash}
		puts[i] = item{attrPK: str(prefixLogID + l.ID), attrSK: str(skIndex), attrIndex: number(start + int64(i))}
	}
	if err := s.putEntries(ctx, levelData, es); err != nil {
		return fmt.Errorf("put log leaves at %d: %w", start, err)
	}
	return wrapErr("put log indexes", s.batchWrite(ctx, puts, nil))
}

// LogLeaves implements translog.Storage.
func (s *Store) LogLeaves(ctx context.Context, start, n int64) ([]translog.Hash, error) {
	hs, err := s.readEntries(ctx, func(i int) (string, int64) { return levelData, start + int64(i) }, int(n))
	return hs, wrapErr("log leaves", err)
}

// LogIndexes implements translog.Storage.
func (s *Store) LogIndexes(ctx context.Context, ids []string) (map[string]int64, error) {
	out := map[string]int64{}
	for len(ids) > 0 {
		part := ids[:min(len(ids), batchGetMax)]
		ids = ids[len(part):]
		keys := make([]item, len(part))
		for i, id := range part {
			keys[i] = key(prefixLogID+id, skIndex)
		}
		items, err := s.batchGet(ctx, keys)
		if err != nil {
			return nil, fmt.Errorf("log indexes: %w", err)
		}
		for _, it := range items {
			pk, err := stringAttr(it, attrPK)
			if err != nil {
				return nil, fmt.Errorf("log indexes: %w", err)
			}
			n, err := intAttr(it, attrIndex)
			if err != nil {
				return nil, fmt.Errorf("log indexes: %w", err)
			}
			out[pk[len(prefixLogID):]] = n
		}
	}
	return out, nil
}

// PendingLeaves implements translog.Storage: the first limit pending entries in id order.
func (s *Store) PendingLeaves(ctx context.Context, limit int) ([]translog.Leaf, error) {
	var out []translog.Leaf
	var start item
	for len(out) < limit {
		q, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 &s.table,
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
			ExpressionAttributeValues: item{":pk": str(pkPending)},
			ScanIndexForward:          aws.Bool(true),
			ConsistentRead:            aws.Bool(true),
			Limit:                     aws.Int32(int32(limit - len(out))),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("pending leaves: %w", err)
		}
		for _, it := range q.Items {
			id, err := stringAttr(it, attrSK)
			if err != nil {
				return nil, fmt.Errorf("pending leaves: %w", err)
			}
			raw, err := stringAttr(it, attrLeaf)
			if err != nil {
				return nil, fmt.Errorf("pending leaves: %w", err)
			}
			l := translog.Leaf{ID: id}
			if b, err := hex.DecodeString(raw); err != nil || len(b) != len(l.Hash) {
				return nil, fmt.Errorf("pending leaf %s: malformed", id)
			} else {
				copy(l.Hash[:], b)
			}
			out = append(out, l)
		}
		if q.LastEvaluatedKey == nil {
			break
		}
		start = q.LastEvaluatedKey
	}
	return out, nil
}

// DeletePendingLeaves implements translog.Storage: the records the leaves hold move to their
// own items first (moveRecords).
func (s *Store) DeletePendingLeaves(ctx context.Context, ids []string) error {
	if err := s.moveRecords(ctx, ids); err != nil {
		return fmt.Errorf("delete pending leaves: %w", err)
	}
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = key(pkPending, id)
	}
	return wrapErr("delete pending leaves", s.batchWrite(ctx, nil, keys))
}

var _ translog.IdentityKeeper = (*Store)(nil)

// ClaimLogIdentity implements translog.IdentityKeeper with one conditional PutItem, and a
// strongly consistent read of the identity that won when it was refused.
func (s *Store) ClaimLogIdentity(ctx context.Context, id translog.Identity) (translog.Identity, error) {
	err := s.putItem(ctx, &dynamodb.PutItemInput{
		Item:                     item{attrPK: str(pkLog), attrSK: str(skIdentity), attrOrigin: str(id.Origin), attrLogKey: str(id.VerifierKey)},
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	if err == nil {
		return id, nil
	}
	if !isConditionFailed(err) {
		return translog.Identity{}, fmt.Errorf("claim log identity: %w", err)
	}
	it, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: key(pkLog, skIdentity), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return translog.Identity{}, fmt.Errorf("claim log identity: read the stored one: %w", err)
	}
	if it == nil {
		return translog.Identity{}, errors.New("claim log identity: refused, and no identity is stored")
	}
	origin, err := stringAttr(it, attrOrigin)
	if err != nil {
		return translog.Identity{}, fmt.Errorf("claim log identity: %w", err)
	}
	vkey, err := stringAttr(it, attrLogKey)
	if err != nil {
		return translog.Identity{}, fmt.Errorf("claim log identity: %w", err)
	}
	return translog.Identity{Origin: origin, VerifierKey: vkey}, nil
}
