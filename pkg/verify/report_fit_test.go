package verify

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// limitedSigner is a remote signer with a message limit, as a kms-sign: key is (KMS signs raw
// messages of at most 4096 bytes), signing in process; it records what it was asked to sign.
type limitedSigner struct {
	priv     ed25519.PrivateKey
	max      int
	messages [][]byte
}

func (s *limitedSigner) Sign(_ context.Context, msg []byte) ([]byte, error) {
	s.messages = append(s.messages, bytes.Clone(msg))
	return ed25519.Sign(s.priv, msg), nil
}

func (s *limitedSigner) MaxMessage() int { return s.max }

// kmsRawLimit is KMS Sign's limit on a raw message (keys.MaxKMSMessage).
const kmsRawLimit = 4096

func limitedKey(max int) (receipt.Key, *limitedSigner) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	s := &limitedSigner{priv: priv, max: max}
	return receipt.RemoteKey("test-key", priv.Public().(ed25519.PublicKey), s), s
}

// manyFailures is a request whose output fails its schema n times.
func manyFailures(n int, taskID string) []byte {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`"item %d"`, i)
	}
	return fmt.Appendf(nil, `{"task_id":%q,"agent_id":"seller-fit","expected_schema":{"type":"array","items":{"type":"integer"}},"submitted_output":[%s]}`,
		taskID, strings.Join(items, ","))
}

// The shown lengths and omitted counts of a signed report's four lists.
type listShape struct {
	shown, total, omitted map[string]int
}

func shapeOf(t *testing.T, out []byte) listShape {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	s := listShape{map[string]int{}, map[string]int{}, map[string]int{}}
	for _, name := range []string{"errors", "errors_detail", "flags", "hints"} {
		var list []json.RawMessage
		var total, omitted int
		if json.Unmarshal(doc[name], &list) != nil || json.Unmarshal(doc[name+"_total"], &total) != nil ||
			json.Unmarshal(doc[name+"_omitted"], &omitted) != nil {
			t.Fatalf("%s: not a list with its counts", name)
		}
		s.shown[name], s.total[name], s.omitted[name] = len(list), total, omitted
	}
	return s
}

// A report too large for a key's message limit is signed with its lists shortened until it fits,
// in the documented order (hints, flags, errors_detail, errors, round and round), by the fewest
// entries that make it fit, with one signing call; it verifies like any receipt. The same request
// signed with a local key keeps ListCap entries in each list.
func TestReportFitsTheSigningKey(t *testing.T) {
	body := manyFailures(200, "t-fit")
	eng := NewEngine(wire.Limits{})

	local := receipt.Key{Version: "test-key", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))}
	out, _, err := eng.Respond(body, testEnv, local)
	if err != nil {
		t.Fatal(err)
	}
	full := shapeOf(t, out)
	if got := shortenedOf(t, out); got != "" {
		t.Errorf("a local key's report says it was shortened: %s", got)
	}
	for name, n := range full.shown {
		if n != ListCap || full.total[name] != 200 || full.omitted[name] != 200-ListCap {
			t.Fatalf("local key: %s shows %d of %d (%d omitted), want %d of 200", name, n, full.total[name], full.omitted[name], ListCap)
		}
	}

	key, signer := limitedKey(kmsRawLimit)
	out, _, err = eng.Respond(body, testEnv, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := receipt.VerifyReceipt(out, []receipt.PublicKey{key.Public()}, body); err != nil {
		t.Fatalf("the fitted receipt does not verify: %v", err)
	}
	if len(signer.messages) != 1 || len(signer.messages[0]) > signer.max {
		t.Fatalf("%d signing calls, last message %d bytes; want one of at most %d", len(signer.messages), len(signer.messages[len(signer.messages)-1]), signer.max)
	}
	fit := shapeOf(t, out)
	if got := shortenedOf(t, out); got != `{"max_signed_bytes":4096,"reason":"signing_key_limit"}` {
		t.Errorf("the fitted report's shortened member is %s, want it to say the signing key's limit cut its lists", got)
	}
	for name, n := range fit.shown {
		if fit.total[name] != 200 || n+fit.omitted[name] != 200 {
			t.Errorf("%s shows %d, omits %d, of %d: the counts do not add up to 200", name, n, fit.omitted[name], fit.total[name])
		}
	}
	// hints give up entries first and errors last, one each in turn.
	h, f, d, e := fit.shown["hints"], fit.shown["flags"], fit.shown["errors_detail"], fit.shown["errors"]
	if !(h <= f && f <= d && d <= e && e-h <= 1) || e == 0 || e == ListCap {
		t.Errorf("lists shortened to hints %d, flags %d, errors_detail %d, errors %d: not the round-robin order", h, f, d, e)
	}
	// The fewest left out: one entry more, the next in the order to come back, would not fit.
	req, sch, err := eng.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eng.Check(req, sch, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	rep.Shortened = &Shortened{Reason: ShortenedForSigningKey, MaxSignedBytes: kmsRawLimit} // as the fitted report says
	lists := rep.fitLists()
	removed := 4*ListCap - (h + f + d + e)
	rep.keepAllBut(lists, removed-1)
	canon, err := rep.canonicalJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	overhead := len(signer.messages[0]) - len(mustCanonical(t, out))
	if overhead+len(canon) <= signer.max {
		t.Errorf("%d entries were left out, but %d would have fitted (%d bytes)", removed, removed-1, overhead+len(canon))
	}
}

// shortenedOf is a signed report's shortened member as canonical JSON, or "" when it has none.
func shortenedOf(t *testing.T, out []byte) string {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["shortened"] == nil {
		return ""
	}
	c, err := receipt.Canonicalize(doc["shortened"])
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// A report that fits its key as it is says nothing of shortening, under a limited key too; one
// that does not, however little it is over, says so, and shows every entry but the fewest left
// out for the limit.
func TestReportSaysWhenShortened(t *testing.T) {
	eng := NewEngine(wire.Limits{})
	for _, n := range []int{1, 2, 5, 10, 30} {
		body := manyFailures(n, "t-say")
		local := receipt.Key{Version: "test-key", Private: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))}
		full, _, err := eng.Respond(body, testEnv, local)
		if err != nil {
			t.Fatal(err)
		}
		fullShape := shapeOf(t, full)
		key, signer := limitedKey(kmsRawLimit)
		out, _, err := eng.Respond(body, testEnv, key)
		if err != nil {
			t.Fatal(err)
		}
		fit := shapeOf(t, out)
		cut := false
		for name := range fit.shown {
			cut = cut || fit.shown[name] < fullShape.shown[name]
		}
		said := shortenedOf(t, out)
		if cut != (said != "") || cut != (len(signer.messages[0]) > 0 && fit.shown["hints"] < fullShape.shown["hints"]) {
			t.Errorf("%d failures: lists cut %v, hints %d of %d, shortened member %q: it must be there exactly when entries were left out for the key",
				n, cut, fit.shown["hints"], fullShape.shown["hints"], said)
		}
		if n <= 2 && cut {
			t.Errorf("%d failures were shortened: a report this small fits 4096 bytes", n)
		}
		if n >= 30 && !cut {
			t.Errorf("%d failures were not shortened: such a report is over 4096 bytes", n)
		}
	}
}

// mustCanonical is the canonical form of a signed response without its attestation.
func mustCanonical(t *testing.T, signed []byte) []byte {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(signed, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "attestation")
	b, _ := json.Marshal(doc)
	c, err := receipt.Canonicalize(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A report that cannot fit even with every list empty is refused as the request's error
// (invalid_request naming task_id and agent_id, not charged, not retryable), and nothing is signed.
func TestReportThatCannotFit(t *testing.T) {
	key, signer := limitedKey(900)
	_, _, err := NewEngine(wire.Limits{}).Respond(manyFailures(5, strings.Repeat("t", 200)), testEnv, key)
	e, ok := apperr.As(err)
	if !ok || e.Code != apperr.InvalidRequest || e.Retryable || e.Charged || len(e.Fields) != 2 ||
		e.Fields[0].Field != "task_id" || e.Fields[1].Field != "agent_id" || !strings.Contains(e.Fields[0].Fix, "900 bytes") {
		t.Fatalf("got %v, want invalid_request naming task_id and agent_id", err)
	}
	if len(signer.messages) != 0 {
		t.Errorf("%d messages were sent to the signer", len(signer.messages))
	}
	if errors.Is(err, receipt.ErrSignerUnavailable) {
		t.Error("a report too large is not the signer's failure")
	}
}
