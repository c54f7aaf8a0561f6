// Package storekey holds what both store adapters must agree on byte for byte: the history sort key,
// the opaque cursor built from it, and the checks on arguments. Keeping it in one place is what lets
// a cursor mean the same thing in bolt and in DynamoDB, and lets both adapters refuse the same inputs.
package storekey

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/store"
)

// timeLayout is fixed width (the nanoseconds are zero-padded, the zone is always Z), so sort keys
// compare as strings in the same order as the instants they start with.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// DayLayout is the form of the day argument of the allowance methods (a UTC calendar day).
const DayLayout = "2006-01-02"

// MaxIDLength bounds every id the store is given as part of a key (client, agent, verification,
// payment): DynamoDB keys are at most 1024 bytes for the sort key and 2048 for the partition key,
// and bbolt keys must stay small; 512 bytes leaves room for the prefixes.
const MaxIDLength = 512

// MaxAgentIDLength bounds an agent id, which is part of a partition key only (DynamoDB allows
// 2048 bytes there) and a bucket name in bbolt. The service sends agent ids of at most 200
// characters (wire.MaxIDLen), so up to 800 bytes of UTF-8, which MaxIDLength would refuse.
const MaxAgentIDLength = 1024

// MaxLabelLength bounds the task id and the caller id of a verification, which the store keeps but
// never uses in a key. The service sends task ids of at most 200 characters (wire.MaxIDLen), so
// up to 800 bytes of UTF-8, and caller ids of 64 hex digits; 1024 bytes takes all of them and
// keeps the size of a record known, which an aggregate's outbox in DynamoDB depends on.
const MaxLabelLength = 1024

// keySeparator sits between the time and the verification id in a sort key; the time part has a
// fixed width, so the id may contain the separator without making the key ambiguous.
const keySeparator = "#"

// HistoryKey is the sort key of a verification in its agent's history: the instant in fixed-width
// UTC then the verification id, so that newest-first is the descending key order and two
// verifications of the same instant still have one deterministic order.
func HistoryKey(verifiedAt time.Time, verificationID string) string {
	return verifiedAt.UTC().Format(timeLayout) + keySeparator + verificationID
}

// EncodeCursor turns the sort key of the last verification of a page into the opaque cursor that
// continues after it.
func EncodeCursor(historyKey string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(historyKey))
}

// DecodeCursor returns the sort key a cursor stands for. Anything History did not produce is an
// error wrapping store.ErrBadCursor; the cursor itself is not echoed, since it is caller input.
func DecodeCursor(cursor string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", fmt.Errorf("decode cursor: not base64url: %w", store.ErrBadCursor)
	}
	key := string(raw)
	width := len(timeLayout)
	if len(key) < width+len(keySeparator)+1 || key[width:width+len(keySeparator)] != keySeparator {
		return "", fmt.Errorf("decode cursor: malformed key: %w", store.ErrBadCursor)
	}
	// The time must be exactly as HistoryKey writes it: time.Parse also accepts variants (a
	// comma before the fraction) that would sort differently from every stored key.
	if t, err := time.Parse(timeLayout, key[:width]); err != nil || t.UTC().Format(timeLayout) != key[:width] {
		return "", fmt.Errorf("decode cursor: malformed time: %w", store.ErrBadCursor)
	}
	if err := CheckID("verification id", key[width+len(keySeparator):]); err != nil {
		return "", fmt.Errorf("decode cursor: %w: %w", store.ErrBadCursor, err)
	}
	return key, nil
}

// CheckID refuses ids that cannot be stored as (part of) a key.
func CheckID(what, id string) error { return checkKeyPart(what, id, MaxIDLength) }

func checkKeyPart(what, id string, max int) error {
	switch {
	case id == "":
		return fmt.Errorf("%s is empty", what)
	case len(id) > max:
		return fmt.Errorf("%s is longer than %d bytes", what, max)
	case strings.ContainsRune(id, 0):
		return fmt.Errorf("%s contains a NUL byte", what)
	}
	return nil
}

// CheckDay refuses a day that is not a UTC calendar day in DayLayout, since a malformed day would
// silently start a fresh allowance.
func CheckDay(day string) error {
	if _, err := time.Parse(DayLayout, day); err != nil {
		return errors.New("day is not in the form 2006-01-02")
	}
	return nil
}

// CheckAgentID checks an agent id as CheckID does, up to MaxAgentIDLength.
func CheckAgentID(id string) error { return checkKeyPart("agent id", id, MaxAgentIDLength) }

// CheckAllowance checks the client key and the day of an allowance counter.
func CheckAllowance(client, day string) error {
	if err := CheckID("client", client); err != nil {
		return err
	}
	return CheckDay(day)
}

// CheckVerification refuses a record that could not be stored faithfully or sorted.
func CheckVerification(v store.Verification) error {
	if err := CheckAgentID(v.AgentID); err != nil {
		return err
	}
	if err := CheckID("verification id", v.VerificationID); err != nil {
		return err
	}
	if len(v.TaskID) > MaxLabelLength {
		return fmt.Errorf("task id is longer than %d bytes", MaxLabelLength)
	}
	if len(v.CallerID) > MaxLabelLength {
		return fmt.Errorf("caller id is longer than %d bytes", MaxLabelLength)
	}
	if v.Result != "pass" && v.Result != "fail" {
		return errors.New(`result is neither "pass" nor "fail"`)
	}
	if math.IsNaN(v.OverallRatio) || math.IsInf(v.OverallRatio, 0) {
		return errors.New("overall ratio is not a finite number")
	}
	if v.VerifiedAt.IsZero() {
		return errors.New("verified_at is not set")
	}
	if y := v.VerifiedAt.UTC().Year(); y < 1 || y > 9999 {
		return errors.New("verified_at is outside years 1 to 9999")
	}
	return nil
}

// Remaining is how many free calls are left after used calls of a limit of limit.
func Remaining(limit, used int) int {
	return max(limit-used, 0)
}

// Expired reports whether an item with the given expiry (epoch seconds) is gone at now. Both
// adapters count in whole seconds, because DynamoDB's TTL attribute is epoch seconds: an item is
// alive through the whole second it expires in.
func Expired(expiresAt int64, now time.Time) bool {
	return expiresAt < now.Unix()
}

// PageLimit checks a History limit and lowers it to store.MaxHistoryPage.
func PageLimit(limit int) (int, error) {
	if limit < 1 {
		return 0, errors.New("history limit must be at least 1")
	}
	return min(limit, store.MaxHistoryPage), nil
}

// CheckPaymentClaim checks what ClaimPayment and UpdatePaymentClaim are given: a key-safe id,
// a request hash, a payer, a holder, a known state, and bytes within store.MaxPaidAnswer.
func CheckPaymentClaim(id string, c store.PaymentClaim) error {
	if err := CheckID("payment identifier", id); err != nil {
		return err
	}
	if c.RequestHash == "" || c.Payer == "" || c.Holder == "" {
		return errors.New("payment claim: request hash, payer and holder are required")
	}
	switch c.State {
	case store.ClaimWorking, store.ClaimSettling, store.ClaimSettled:
	default:
		return fmt.Errorf("payment claim: unknown state %q", c.State)
	}
	if c.State != store.ClaimWorking && len(c.Response) == 0 {
		return errors.New("payment claim: a settling or settled claim keeps its answer")
	}
	if len(c.RequestHash)+len(c.Payer)+len(c.Holder)+len(c.Payment)+len(c.Response)+len(c.Settlement) > store.MaxPaidAnswer {
		return fmt.Errorf("payment claim: over %d bytes", store.MaxPaidAnswer)
	}
	return nil
}

// CheckNewClaim checks what ClaimPayment is given: a claim as CheckPaymentClaim wants it, in
// the state every claim starts in.
func CheckNewClaim(id string, c store.PaymentClaim) error {
	if err := CheckPaymentClaim(id, c); err != nil {
		return err
	}
	if c.State != store.ClaimWorking {
		return fmt.Errorf("payment claim: a new claim is %q, not %q", store.ClaimWorking, c.State)
	}
	return nil
}

// Abandoned says a live claim may be taken by another call: its holder was still working (it
// had sent nothing to settlement) when its lease ran out at now.
func Abandoned(c store.PaymentClaim, now time.Time) bool {
	return c.State == store.ClaimWorking && !c.LeaseUntil.After(now)
}
