package dynamo

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
)

// Paid answers (SPEC §16, the x402 payment-identifier extension) are items of their own:
//
//	answer  pk ANSWER#<payment identifier>  sk ANSWER  request_hash, response, settlement, expires_at
//
// response and settlement are base64 strings (the store writes no binary attributes). They are
// kept in this file, apart from the rest of the store, so the item stays one small, separate part.
const (
	prefixAnswer    = "ANSWER#"
	skAnswer        = "ANSWER"
	attrRequestHash = "request_hash"
	attrResponse    = "response"
	attrSettlement  = "settlement"
)

func answerKey(id string) item { return key(prefixAnswer+id, skAnswer) }

// KeepPaidAnswer implements store.Store with one conditional PutItem, which, like
// ReservePayment's, also replaces an expired leftover that TTL has not deleted yet.
func (s *Store) KeepPaidAnswer(ctx context.Context, id string, a store.PaidAnswer, expires time.Time) error {
	if err := storekey.CheckPaidAnswer(id, a); err != nil {
		return fmt.Errorf("keep paid answer: %w", err)
	}
	it := answerKey(id)
	it[attrRequestHash] = str(a.RequestHash)
	it[attrResponse] = str(base64.StdEncoding.EncodeToString(a.Response))
	it[attrSettlement] = str(base64.StdEncoding.EncodeToString(a.Settlement))
	it[attrExpiresAt] = number(expires.Unix())
	err := s.putItem(ctx, &dynamodb.PutItemInput{
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #exp < :now"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#exp": attrExpiresAt},
		ExpressionAttributeValues: item{":now": number(s.now().Unix())},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("keep paid answer: %w", store.ErrPaidAnswerKept)
	}
	if err != nil {
		return fmt.Errorf("keep paid answer: %w", err)
	}
	return nil
}

// PaidAnswer implements store.Store with a strongly consistent read: a retry sent right after
// the answer must find it.
func (s *Store) PaidAnswer(ctx context.Context, id string) (store.PaidAnswer, bool, error) {
	if err := storekey.CheckID("payment identifier", id); err != nil {
		return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: %w", err)
	}
	got, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: answerKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: %w", err)
	}
	if got == nil || s.expired(got) {
		return store.PaidAnswer{}, false, nil
	}
	var a store.PaidAnswer
	hash, err1 := stringAttr(got, attrRequestHash)
	resp, err2 := stringAttr(got, attrResponse)
	settle, err3 := stringAttr(got, attrSettlement)
	for _, e := range []error{err1, err2, err3} {
		if e != nil {
			return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: %w", e)
		}
	}
	a.RequestHash = hash
	if a.Response, err = base64.StdEncoding.DecodeString(resp); err != nil {
		return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: response: %w", err)
	}
	if a.Settlement, err = base64.StdEncoding.DecodeString(settle); err != nil {
		return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: settlement: %w", err)
	}
	return a, true, nil
}
