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

// answer is a paid answer as stored, after its 8-byte expiry.
type answer struct {
	RequestHash string `json:"request_hash"`
	Response    []byte `json:"response"`
	Settlement  []byte `json:"settlement"`
}

// KeepPaidAnswer implements store.Store in one write transaction, on disk when it returns: the
// answer was delivered for a settled payment, and a retry must find it after a restart.
func (s *Store) KeepPaidAnswer(ctx context.Context, id string, a store.PaidAnswer, expires time.Time) error {
	if err := storekey.CheckPaidAnswer(id, a); err != nil {
		return fmt.Errorf("keep paid answer: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("keep paid answer: %w", err)
	}
	raw, err := json.Marshal(answer{RequestHash: a.RequestHash, Response: a.Response, Settlement: a.Settlement})
	if err != nil {
		return fmt.Errorf("keep paid answer: %w", err)
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(raw)), uint64(expires.Unix()))
	v = append(v, raw...)
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if exp, _, ok := decodeAnswer(getIn(tx, bucketAnswers, []byte(id))); ok && !storekey.Expired(exp, s.now()) {
			return store.ErrPaidAnswerKept
		}
		return putIn(tx, bucketAnswers, []byte(id), v)
	})
	if err != nil {
		return fmt.Errorf("keep paid answer: %w", err)
	}
	return nil
}

// PaidAnswer implements store.Store.
func (s *Store) PaidAnswer(ctx context.Context, id string) (store.PaidAnswer, bool, error) {
	if err := storekey.CheckID("payment identifier", id); err != nil {
		return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: %w", err)
	}
	var (
		exp   int64
		raw   []byte
		found bool
	)
	err := s.db.View(func(tx *bbolt.Tx) error {
		var r []byte
		exp, r, found = decodeAnswer(getIn(tx, bucketAnswers, []byte(id)))
		raw = append([]byte(nil), r...) // the transaction's memory is not ours after it ends
		return nil
	})
	if err != nil {
		return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: %w", err)
	}
	if !found || storekey.Expired(exp, s.now()) {
		return store.PaidAnswer{}, false, nil
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return store.PaidAnswer{}, false, fmt.Errorf("read paid answer: %w", err)
	}
	return store.PaidAnswer{RequestHash: a.RequestHash, Response: a.Response, Settlement: a.Settlement}, true, nil
}

// decodeAnswer splits a stored answer into its expiry and its JSON; ok is false for a value this
// version did not write.
func decodeAnswer(v []byte) (expires int64, raw []byte, ok bool) {
	if len(v) < 8 {
		return 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(v[:8])), v[8:], true
}
