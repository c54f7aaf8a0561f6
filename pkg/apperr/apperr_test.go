package apperr

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// Codes lists every code of the table once, and each has what the documents need.
func TestCodesAreDocumented(t *testing.T) {
	codes := Codes()
	if len(codes) != len(codeTable) {
		t.Errorf("Codes() has %d codes, the table %d", len(codes), len(codeTable))
	}
	seen := map[Code]bool{}
	for _, c := range codes {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
		if _, ok := codeTable[c]; !ok {
			t.Errorf("%s has no table entry", c)
		}
		if len(c.Meaning()) < 20 {
			t.Errorf("%s has no meaning to show callers", c)
		}
	}
}

// The payment codes are SPEC §8.3's list, no more and no fewer.
func TestPaymentCodes(t *testing.T) {
	want := []Code{PaymentRequired, FreeTrialExhausted, PaymentInvalid, PaymentMismatch, PaymentVerifyFail,
		PaymentReplayed, PaymentSettleFail, FacilitatorDown}
	var got []Code
	for _, c := range Codes() {
		if c.Payment() {
			got = append(got, c)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("payment codes %v, want %v", got, want)
	}
}

// The envelope's schema lists exactly the codes there are, in Codes' order.
func TestSchemaListsEveryCode(t *testing.T) {
	var s struct {
		Properties struct {
			Code struct {
				Enum []Code `json:"enum"`
			} `json:"code"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(SchemaJSON), &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Properties.Code.Enum, Codes()) {
		t.Errorf("the schema's code enum is %v, want %v", s.Properties.Code.Enum, Codes())
	}
}

// Each kind answers with its own status for its code only; for any other code it is Plain, and
// KindOf reads back the kind a status was rendered with.
func TestKindStatus(t *testing.T) {
	want := map[Kind]struct {
		code   Code
		status int
	}{
		Unread: {InvalidRequest, 400}, UnsupportedMedia: {InvalidRequest, 415}, UnknownCoding: {InvalidRequest, 501},
		UnsupportedVersion: {InvalidRequest, 505}, HeaderSection: {PayloadTooLarge, 431}, FreeOnly: {FreeTrialExhausted, 429},
	}
	if len(want) != len(kindTable)-1 {
		t.Fatalf("the test names %d kinds, the table has %d", len(want), len(kindTable)-1)
	}
	for k, w := range want {
		for _, c := range Codes() {
			e := New(c, "m").WithKind(k)
			got, exp := e.Status(), c.Status()
			if c == w.code {
				exp = w.status
			}
			if got != exp {
				t.Errorf("%s of kind %d answers %d, want %d", c, k, got, exp)
			}
			if back := KindOf(c, e.Status()); c == w.code && back != k {
				t.Errorf("KindOf(%s, %d) = %d, want %d", c, e.Status(), back, k)
			}
		}
	}
	for _, c := range Codes() {
		if e := New(c, "m"); e.Status() != c.Status() || KindOf(c, c.Status()) != Plain {
			t.Errorf("%s answers %d, its table says %d", c, e.Status(), c.Status())
		}
	}
	if s := New("no_such_code", "m").WithKind(Unread).Status(); s != 500 {
		t.Errorf("an unknown code of kind Unread answers %d, want 500", s)
	}
	if s := New(InvalidRequest, "m").WithKind(Kind(200)).Status(); s != 422 {
		t.Errorf("an unknown kind answers %d, want invalid_request's 422", s)
	}
	if h := HeadersTooLarge(8192); h.Status() != 431 || h.Limit != 8192 || h.Code != PayloadTooLarge {
		t.Errorf("HeadersTooLarge: %d %s limit %d", h.Status(), h.Code, h.Limit)
	}
}

// WithKind copies: the error it is called on, which may be shared, keeps its kind and fields.
func TestWithKindCopies(t *testing.T) {
	shared := Field("body", "is not JSON", "Send JSON.")
	before, _ := json.Marshal(shared)
	c := shared.WithKind(Unread)
	c.RetryAfter = 3
	if after, _ := json.Marshal(shared); !bytes.Equal(before, after) || shared.Status() != 422 {
		t.Errorf("WithKind changed the error it copied: %s, then %s", before, after)
	}
	if c.Status() != 400 || c.Message != shared.Message || c.RetryAfter != 3 {
		t.Errorf("the copy: %d %q %d", c.Status(), c.Message, c.RetryAfter)
	}
}

// The envelope's bytes are those of the struct the error was before its status moved to the
// table: the same members in the same order, omitted alike, escaped alike.
func TestEnvelopeBytes(t *testing.T) {
	type before struct {
		Code       Code           `json:"code"`
		Message    string         `json:"message"`
		Status     int            `json:"status"`
		Retryable  bool           `json:"retryable"`
		Charged    bool           `json:"charged"`
		RetryAfter int            `json:"retry_after,omitempty"`
		Limit      int64          `json:"limit,omitempty"`
		NextAction []NextAction   `json:"next_actions"`
		Fields     []FieldProblem `json:"fields,omitempty"`
	}
	charged := New(Unavailable, "settled <but> not & recorded \u2028")
	charged.Retryable, charged.Charged, charged.NextAction = false, true, []NextAction{{Action: "check_payment"}}
	bare := &Error{Code: Internal, Message: "no next actions"}
	for _, e := range []*Error{
		New(Internal, "x"), Invalid(FieldProblem{"a", "is <wrong>", "fix & go"}, FieldProblem{"b", "is \"bad\"", "fix"}),
		TooLarge(1 << 20), HeadersTooLarge(8192), New(RateLimited, "wait").WithKind(FreeOnly), charged, bare,
		New(InvalidRequest, "unread").WithKind(Unread), New("", "no code"),
	} {
		old, _ := json.Marshal(before{e.Code, e.Message, e.Status(), e.Retryable, e.Charged, e.RetryAfter, e.Limit, e.NextAction, e.Fields})
		got, err := json.Marshal(e)
		if err != nil || !bytes.Equal(got, old) {
			t.Errorf("envelope %s (%v), want %s", got, err, old)
		}
		var back Error
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		back = *back.WithKind(KindOf(back.Code, e.Status()))
		if again, _ := json.Marshal(back); !bytes.Equal(again, old) {
			t.Errorf("decoded and encoded again %s, want %s", again, old)
		}
		if v, _ := json.Marshal(*e); !bytes.Equal(v, old) {
			t.Errorf("the value's envelope %s, want %s", v, old)
		}
		oldInd, _ := json.MarshalIndent(before{e.Code, e.Message, e.Status(), e.Retryable, e.Charged, e.RetryAfter, e.Limit, e.NextAction, e.Fields}, "", "  ")
		if ind, _ := json.MarshalIndent(e, "", "  "); !bytes.Equal(ind, oldInd) {
			t.Errorf("indented %s, want %s", ind, oldInd)
		}
	}
	if b, _ := json.Marshal(struct{ E *Error }{}); string(b) != `{"E":null}` {
		t.Errorf("a nil error is %s, want null", b)
	}
}
