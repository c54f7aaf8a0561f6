package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/internal/storekey"
)

// claim is a payment identifier's claim as stored, after its 8-byte expiry. A value an earlier
// version wrote (a kept answer: request hash, response, settlement, no state) reads as a
// settled claim.
type claim struct {
	RequestHash string `json:"request_hash"`
	Payer       string `json:"payer,omitempty"`
	Holder      string `json:"holder,omitempty"`
	State       string `json:"state,omitempty"`
	LeaseUntil  int64  `json:"lease_until_ms,omitempty"`
	Payment     []byte `json:"payment,omitempty"`
	Response    []byte `json:"response,omitempty"`
	Settlement  []byte `json:"settlement,omitempty"`
}

func encodeClaim(c store.PaymentClaim, expires time.Time) ([]byte, error) {
	raw, err := json.Marshal(claim{RequestHash: c.RequestHash, Payer: c.Payer, Holder: c.Holder, State: string(c.State),
		LeaseUntil: c.LeaseUntil.UnixMilli(), Payment: c.Payment, Response: c.Response, Settlement: c.Settlement})
	if err != nil {
		return nil, err
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(raw)), uint64(expires.Unix()))
	return append(v, raw...), nil
}

// liveClaim reads the live claim of id in tx; the bytes are copies, valid after tx ends.
func (s *Store) liveClaim(tx *bbolt.Tx, id string) (store.PaymentClaim, bool, error) {
	exp, raw, found := decodeAnswer(getIn(tx, bucketAnswers, []byte(id)))
	if !found || storekey.Expired(exp, s.now()) {
		return store.PaymentClaim{}, false, nil
	}
	var c claim
	if err := json.Unmarshal(raw, &c); err != nil { // json copies the bytes out of tx's memory
		return store.PaymentClaim{}, false, err
	}
	state := store.ClaimState(c.State)
	if state == "" {
		state = store.ClaimSettled
	}
	return store.PaymentClaim{RequestHash: c.RequestHash, Payer: c.Payer, Holder: c.Holder, State: state,
		LeaseUntil: time.UnixMilli(c.LeaseUntil), Payment: c.Payment, Response: c.Response, Settlement: c.Settlement}, true, nil
}

// ClaimPayment implements store.Store in one write transaction, on disk when it returns: a claim
// lost in a crash after settlement could let the identifier buy a second call.
func (s *Store) ClaimPayment(ctx context.Context, id string, c store.PaymentClaim, expires time.Time) (store.PaymentClaim, bool, error) {
	if err := storekey.CheckNewClaim(id, c); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: %w", err)
	}
	v, err := encodeClaim(c, expires)
	if err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: %w", err)
	}
	var (
		held    store.PaymentClaim
		claimed bool
	)
	err = s.db.Update(func(tx *bbolt.Tx) error {
		cur, ok, err := s.liveClaim(tx, id)
		if err != nil {
			return err
		}
		if ok && !storekey.Abandoned(cur, s.now()) {
			held = cur
			return nil
		}
		claimed = true
		return putIn(tx, bucketAnswers, []byte(id), v)
	})
	if err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("claim payment identifier: %w", err)
	}
	return held, claimed, nil
}

// UpdatePaymentClaim implements store.Store in one write transaction, on disk when it returns.
func (s *Store) UpdatePaymentClaim(ctx context.Context, id, holder string, c store.PaymentClaim, expires time.Time) error {
	if err := storekey.CheckPaymentClaim(id, c); err != nil {
		return fmt.Errorf("update payment claim: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("update payment claim: %w", err)
	}
	v, err := encodeClaim(c, expires)
	if err != nil {
		return fmt.Errorf("update payment claim: %w", err)
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		cur, ok, err := s.liveClaim(tx, id)
		if err != nil {
			return err
		}
		if !ok || cur.Holder != holder {
			return store.ErrClaimLost
		}
		return putIn(tx, bucketAnswers, []byte(id), v)
	})
	if err != nil {
		return fmt.Errorf("update payment claim: %w", err)
	}
	return nil
}

// ReleasePaymentClaim implements store.Store in one write transaction.
func (s *Store) ReleasePaymentClaim(ctx context.Context, id, holder string) error {
	if err := storekey.CheckID("payment identifier", id); err != nil {
		return fmt.Errorf("release payment claim: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release payment claim: %w", err)
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		cur, ok, err := s.liveClaim(tx, id)
		if err != nil || !ok || cur.Holder != holder || cur.State != store.ClaimWorking {
			return err
		}
		return tx.Bucket(bucketAnswers).Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("release payment claim: %w", err)
	}
	return nil
}

// PaymentClaim implements store.Store.
func (s *Store) PaymentClaim(ctx context.Context, id string) (store.PaymentClaim, bool, error) {
	if err := storekey.CheckID("payment identifier", id); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("read payment claim: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("read payment claim: %w", err)
	}
	var (
		c  store.PaymentClaim
		ok bool
	)
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		c, ok, err = s.liveClaim(tx, id)
		return err
	})
	if err != nil {
		return store.PaymentClaim{}, false, fmt.Errorf("read payment claim: %w", err)
	}
	return c, ok, nil
}

// decodeAnswer splits a stored claim into its expiry and its JSON; ok is false for a value this
// version did not write.
func decodeAnswer(v []byte) (expires int64, raw []byte, ok bool) {
	if len(v) < 8 {
		return 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(v[:8])), v[8:], true
}
