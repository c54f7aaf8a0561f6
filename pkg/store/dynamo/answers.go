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

// The claims of payment identifiers (SPEC §16, the x402 payment-identifier extension) are items
// of their own:
//
//	answer  pk ANSWER#<payment identifier>  sk ANSWER  request_hash, payer, holder, state,
//	        lease_until (epoch ms), payment, response, settlement, expires_at
//
// payment, response and settlement are base64 strings (the store writes no binary attributes).
// An item an earlier version wrote (request_hash, response, settlement, no state) reads as a
// settled claim. They are kept in this file, apart from the rest of the store, so the item
// stays one small, separate part.
const (
	prefixAnswer    = "ANSWER#"
	skAnswer        = "ANSWER"
	attrRequestHash = "request_hash"
	attrPayer       = "payer"
	attrHolder      = "holder"
	attrState       = "state"
	attrLeaseUntil  = "lease_until"
	attrPayment     = "payment"
	attrResponse    = "response"
	attrSettlement  = "settlement"
)

// claimAttempts bounds ClaimPayment's rounds of a refused claim followed by a read that finds
// none (the claim was released or expired in between).
const claimAttempts = 4

func answerKey(id string) item { return key(prefixAnswer+id, skAnswer) }

func claimItem(id string, c store.PaymentClaim, expires time.Time) item {
	it := answerKey(id)
	it[attrRequestHash] = str(c.RequestHash)
	it[attrPayer] = str(c.Payer)
	it[attrHolder] = str(c.Holder)
	it[attrState] = str(string(c.State))
	it[attrLeaseUntil] = number(c.LeaseUntil.UnixMilli())
	for name, b := range map[string][]byte{attrPayment: c.Payment, attrResponse: c.Response, attrSettlement: c.Settlement} {
		it[name] = str(base64.StdEncoding.EncodeToString(b))
	}
	it[attrExpiresAt] = number(expires.Unix())
	return it
}

// ClaimPayment implements store.Store with one conditional PutItem: it succeeds when there is no
// claim, an expired leftover that TTL has not deleted yet, or an abandoned working claim. A
// refused claim is read back (strongly consistent) to return the live one.
func (s *Store) ClaimPayment(ctx context.Context, id string, c store.PaymentClaim, expires time.Time) (store.PaymentClaim, bool, error) {
	if err := storekey.CheckNewClaim(id, c); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: %w", err)
	}
	for range claimAttempts {
		now := s.now()
		err := s.putItem(ctx, &dynamodb.PutItemInput{
			Item:                     claimItem(id, c, expires),
			ConditionExpression:      aws.String("attribute_not_exists(#pk) OR #exp < :now OR (#state = :working AND #lease <= :nowms)"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#exp": attrExpiresAt, "#state": attrState, "#lease": attrLeaseUntil},
			ExpressionAttributeValues: item{":now": number(now.Unix()), ":nowms": number(now.UnixMilli()),
				":working": str(string(store.ClaimWorking))},
		})
		if err == nil {
			return store.PaymentClaim{}, true, nil
		}
		if !isConditionFailed(err) {
			return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: %w", err)
		}
		held, ok, err := s.PaymentClaim(ctx, id)
		if err != nil || ok {
			return held, false, err
		}
	}
	return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: claimed and gone %d times in a row", claimAttempts)
}

// UpdatePaymentClaim implements store.Store with one PutItem on the condition that the live
// claim is held by holder.
func (s *Store) UpdatePaymentClaim(ctx context.Context, id, holder string, c store.PaymentClaim, expires time.Time) error {
	if err := storekey.CheckPaymentClaim(id, c); err != nil {
		return fmt.Errorf("update payment claim: %w", err)
	}
	err := s.putItem(ctx, &dynamodb.PutItemInput{
		Item:                      claimItem(id, c, expires),
		ConditionExpression:       aws.String("attribute_exists(#pk) AND #exp >= :now AND #holder = :holder"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#exp": attrExpiresAt, "#holder": attrHolder},
		ExpressionAttributeValues: item{":now": number(s.now().Unix()), ":holder": str(holder)},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("update payment claim: %w", store.ErrClaimLost)
	}
	if err != nil {
		return fmt.Errorf("update payment claim: %w", err)
	}
	return nil
}

// ReleasePaymentClaim implements store.Store by expiring a working claim of holder at once (one
// UpdateItem, as ReleasePayment does): every read ignores it, ClaimPayment's condition accepts
// it, and TTL deletes it.
func (s *Store) ReleasePaymentClaim(ctx context.Context, id, holder string) error {
	if err := storekey.CheckID("payment identifier", id); err != nil {
		return fmt.Errorf("release payment claim: %w", err)
	}
	_, err := s.updateItem(ctx, &dynamodb.UpdateItemInput{
		Key:                      answerKey(id),
		UpdateExpression:         aws.String("SET #exp = :past"),
		ConditionExpression:      aws.String("#holder = :holder AND #state = :working"),
		ExpressionAttributeNames: map[string]string{"#exp": attrExpiresAt, "#holder": attrHolder, "#state": attrState},
		ExpressionAttributeValues: item{":past": number(s.now().Unix() - 1), ":holder": str(holder),
			":working": str(string(store.ClaimWorking))},
	})
	if err != nil && !isConditionFailed(err) { // another holder's, or past working: nothing to release
		return fmt.Errorf("release payment claim: %w", err)
	}
	return nil
}

// PaymentClaim implements store.Store with a strongly consistent read: a retry sent right after
// the answer must find it.
func (s *Store) PaymentClaim(ctx context.Context, id string) (store.PaymentClaim, bool, error) {
	if err := storekey.CheckID("payment identifier", id); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("read payment claim: %w", err)
	}
	got, err := s.getItem(ctx, &dynamodb.GetItemInput{Key: answerKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("read payment claim: %w", err)
	}
	if got == nil || s.expired(got) {
		return store.PaymentClaim{}, false, nil
	}
	c, err := decodeClaim(got)
	if err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("read payment claim: %w", err)
	}
	return c, true, nil
}

// decodeClaim reads a claim item; the attributes an earlier version did not write are optional.
func decodeClaim(it item) (store.PaymentClaim, error) {
	var c store.PaymentClaim
	var err error
	if c.RequestHash, err = stringAttr(it, attrRequestHash); err != nil {
		return c, err
	}
	optional := func(name string) (string, error) {
		if _, ok := it[name]; !ok {
			return "", nil
		}
		return stringAttr(it, name)
	}
	var state string
	for _, f := range []struct {
		name string
		to   *string
	}{{attrPayer, &c.Payer}, {attrHolder, &c.Holder}, {attrState, &state}} {
		if *f.to, err = optional(f.name); err != nil {
			return c, err
		}
	}
	c.State = store.ClaimState(state)
	if c.State == "" {
		c.State = store.ClaimSettled
	}
	if _, ok := it[attrLeaseUntil]; ok {
		ms, err := intAttr(it, attrLeaseUntil)
		if err != nil {
			return c, err
		}
		c.LeaseUntil = time.UnixMilli(ms)
	}
	for _, f := range []struct {
		name string
		to   *[]byte
	}{{attrPayment, &c.Payment}, {attrResponse, &c.Response}, {attrSettlement, &c.Settlement}} {
		b64, err := optional(f.name)
		if err != nil {
			return c, err
		}
		if *f.to, err = base64.StdEncoding.DecodeString(b64); err != nil {
			return c, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return c, nil
}
