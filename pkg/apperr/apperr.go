// Package apperr holds the service's one error type. Every error a caller can see, over REST, MCP
// or the CLI, is an *Error with a stable machine code and a message that is safe to show: it never
// echoes the caller's input and never carries internal details (those go to the log).
package apperr

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Code is a stable machine-readable error code. Codes are part of the public contract (llms.txt,
// OpenAPI); never rename one.
type Code string

// The error codes. The payment codes are answered with 402 by the payment layer; they live here so
// that one table maps every code to its HTTP status.
const (
	InvalidRequest     Code = "invalid_request"
	SchemaTooComplex   Code = "schema_too_complex"
	RulesTooComplex    Code = "rules_too_complex"
	PayloadTooLarge    Code = "payload_too_large"
	NotFound           Code = "not_found"
	MethodNotAllowed   Code = "method_not_allowed"
	Forbidden          Code = "forbidden"
	RateLimited        Code = "rate_limited"
	Internal           Code = "internal_error"
	Unavailable        Code = "service_unavailable"
	DeadlineExceeded   Code = "deadline_exceeded"
	PaymentRequired    Code = "payment_required"
	FreeTrialExhausted Code = "free_trial_exhausted"
	PaymentInvalid     Code = "payment_invalid"
	PaymentMismatch    Code = "payment_requirements_mismatch"
	PaymentVerifyFail  Code = "payment_verification_failed"
	PaymentReplayed    Code = "payment_replayed"
	PaymentSettleFail  Code = "payment_settlement_failed"
	FacilitatorDown    Code = "facilitator_unavailable"
	PaymentIDConflict  Code = "payment_identifier_conflict"
)

// codeTable is the one place that maps a code to its HTTP status, its retryability and what it
// means to a caller (the documents that list the codes, llms.txt and OpenAPI, take it from here).
var codeTable = map[Code]struct {
	status    int
	retryable bool
	payment   bool
	meaning   string
}{
	InvalidRequest:     {422, false, false, "The request is invalid (not JSON, a wrong or unknown field, a schema that does not compile, ...). fields[] names each offending field with a fix. Nothing is charged or counted."},
	SchemaTooComplex:   {422, false, false, "The check could not finish: expected_schema needs more evaluation work for this submitted_output than the verifier's evaluation limit, which grows with the size of the output, so there is no verdict. fields[] gives the limit in work units and how to stay under it (subschemas that multiply through allOf/anyOf/oneOf and $ref). Nothing is charged, counted against the free allowance or recorded; the same request always gets this answer."},
	RulesTooComplex:    {422, false, false, "The check could not finish: the rules resolve and compare more values for this submitted_output than the verifier's rule work limit, which grows with the size of the output, so there is no verdict. fields[] names the rule that went past it, the limit and how to stay under it. Nothing is charged, counted against the free allowance or recorded; the same request always gets this answer."},
	PayloadTooLarge:    {413, false, false, "The body is over the size limit, which `limit` gives in bytes; with status 431, the request's header section is over its limit (`limit` bytes)."},
	NotFound:           {404, false, false, "No route matches the path. GET / lists every route."},
	MethodNotAllowed:   {405, false, false, "The route exists but not with this method; the Allow header lists the methods it takes."},
	Forbidden:          {403, false, false, "The request was refused (for MCP: a Host or Origin header the endpoint does not serve)."},
	RateLimited:        {429, true, false, "Too many requests; wait retry_after seconds."},
	Internal:           {500, true, false, "An internal error; nothing was charged. Retry after retry_after seconds."},
	Unavailable:        {503, true, false, "A store the answer needs is unavailable; nothing was charged. Retry after retry_after seconds. The one exception: when a paid call was settled but its receipt could not be recorded in the receipt log, the answer is withheld (a delivered receipt is always provable) and the error says the payment was charged (retryable false, charged true, next action check_payment)."},
	DeadlineExceeded:   {503, true, false, "The work did not finish within the per-request deadline; nothing was charged. Retry, or send a smaller request."},
	PaymentRequired:    {402, false, true, "This call must be paid: sign one of the PAYMENT-REQUIRED header's accepts and send the request again with PAYMENT-SIGNATURE. Also the answer to an empty-body discovery probe, and to a body over the free size limit, which a deployment that takes no payments answers with 413 payload_too_large instead."},
	FreeTrialExhausted: {402, false, true, "This client's free calls for today are used up; pay with x402 as for payment_required. A deployment that takes no payments answers 429 instead, retryable at the next UTC midnight."},
	PaymentInvalid:     {402, false, true, "The PAYMENT-SIGNATURE header (MCP: _meta[\"x402/payment\"]) could not be decoded as an x402 v2 PaymentPayload. Nothing was charged."},
	PaymentMismatch:    {402, false, true, "The payment's accepted requirements (scheme, network, amount, asset, payTo) match none this route offers. Nothing was charged; pay one of the accepts of the 402 answer."},
	PaymentVerifyFail:  {402, false, true, "The facilitator found the payment invalid (signature, balance, validity window, ...); the message gives its reason. Nothing was charged."},
	PaymentReplayed:    {402, false, true, "This payment was already used. Nothing was charged again; sign a new payment."},
	PaymentSettleFail:  {402, false, true, "The payment could not be settled on chain; PAYMENT-RESPONSE carries the failed settlement and no answer is delivered. Nothing was charged."},
	PaymentIDConflict:  {409, false, false, "The payment's payment-identifier id was already used for another request (another body or route) or by another payer within the time answers are kept. Nothing was verified or charged; use a new id for a new request, the same id only to retry the same request. With retryable true, another call with the same id and request is still being verified or settled: nothing was charged for this one; send the same request with the same id again after retry_after to get that call's answer."},
	FacilitatorDown:    {503, true, true, "The payment facilitator is unavailable or slow; nothing was charged. Retry after retry_after seconds. The one exception: when the facilitator did not answer the settlement itself, the payment may have been charged, and the error says so (retryable false, charged true, next action check_payment); check the payment before paying for the same work again. A call with a payment identifier says the same with retryable true: send the same request with the same identifier again, which resolves the first payment's outcome and takes no second payment."},
}

// Codes lists every code in a stable order, for documents that enumerate them.
func Codes() []Code {
	return []Code{InvalidRequest, SchemaTooComplex, RulesTooComplex, PayloadTooLarge, NotFound, MethodNotAllowed, Forbidden, RateLimited, Internal,
		Unavailable, DeadlineExceeded, PaymentRequired, FreeTrialExhausted, PaymentInvalid,
		PaymentMismatch, PaymentVerifyFail, PaymentReplayed, PaymentSettleFail, FacilitatorDown, PaymentIDConflict}
}

// Kind says which of its code's answers an error is, where HTTP has a more precise status for
// the same fix than the code's own: a request that could not be read at all is invalid_request
// with 400 rather than 422, a header section over its limit is payload_too_large with 431. The
// zero Kind, Plain, is the code's own answer; a kind that is not one of its code's (kindTable)
// answers as Plain does.
type Kind uint8

// The kinds, each with its code and its HTTP status in kindTable.
const (
	Plain              Kind = iota // the code's own answer
	Unread                         // invalid_request: no request was read (HTTP framing, an MCP transport's message, an API Gateway event)
	UnsupportedMedia               // invalid_request: the MCP transport's refusal of a body not sent as application/json
	UnknownCoding                  // invalid_request: a Transfer-Encoding the server does not implement
	UnsupportedVersion             // invalid_request: an HTTP version the server does not speak
	HeaderSection                  // payload_too_large: the request's header section, not its body, is over the limit
	FreeOnly                       // free_trial_exhausted of a deployment that takes no payments (SPEC §8.6)
)

// kindTable maps each kind but Plain to the code it belongs to and the HTTP status it answers
// with, next to codeTable.
var kindTable = [...]struct {
	code   Code
	status int
}{
	Unread:             {InvalidRequest, 400},     // Bad Request
	UnsupportedMedia:   {InvalidRequest, 415},     // Unsupported Media Type
	UnknownCoding:      {InvalidRequest, 501},     // Not Implemented (RFC 9112 §6.1)
	UnsupportedVersion: {InvalidRequest, 505},     // HTTP Version Not Supported
	HeaderSection:      {PayloadTooLarge, 431},    // Request Header Fields Too Large
	FreeOnly:           {FreeTrialExhausted, 429}, // Too Many Requests: retryable, not payable
}

// status is the HTTP status of an error of code c and kind k.
func (c Code) status(k Kind) int {
	if k != Plain && int(k) < len(kindTable) && kindTable[k].code == c {
		return kindTable[k].status
	}
	return c.Status()
}

// KindOf is the kind of an error envelope received with code and HTTP status, as this service
// renders them: the kind of code with that status, Plain when there is none (a client reads
// back what the table wrote).
func KindOf(code Code, status int) Kind {
	for k := Unread; int(k) < len(kindTable); k++ {
		if kindTable[k].code == code && kindTable[k].status == status {
			return k
		}
	}
	return Plain
}

// Status is the HTTP status of a code; unknown codes are internal errors.
func (c Code) Status() int {
	if e, ok := codeTable[c]; ok {
		return e.status
	}
	return 500
}

// Retryable tells whether sending the same request again may succeed.
func (c Code) Retryable() bool { return codeTable[c].retryable }

// Payment tells whether the code belongs to the payment flow (SPEC §8.3's payment error codes).
func (c Code) Payment() bool { return codeTable[c].payment }

// Meaning says what the code tells a caller and what to do about it, for the documents that list
// the codes.
func (c Code) Meaning() string { return codeTable[c].meaning }

// FieldProblem names one offending request field, what is wrong with it and how to fix it.
type FieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

// NextAction is a machine-readable suggestion of what the caller should do next.
type NextAction struct {
	Action string   `json:"action"`
	Fields []string `json:"fields,omitempty"`
}

// Error is the service's error: a code, a message and the fields that go with them. It carries
// no HTTP status: Status computes it from the code and the error's kind whenever the error is
// rendered, and its JSON form, the §7 envelope, says it. An error is built fresh for each answer
// (New and the functions below); one shared by many answers, such as a package-level value, is
// never changed, and WithKind copies. Decoding an envelope into an Error reads all but its
// status (KindOf reads that).
type Error struct {
	Code       Code   `json:"code"`
	Message    string `json:"message"`
	kind       Kind
	Retryable  bool           `json:"retryable"`
	Charged    bool           `json:"charged"`
	RetryAfter int            `json:"retry_after,omitempty"`
	Limit      int64          `json:"limit,omitempty"`
	NextAction []NextAction   `json:"next_actions"`
	Fields     []FieldProblem `json:"fields,omitempty"`
}

// envelope is an Error's JSON form (SPEC §7), in the order of its members.
type envelope struct {
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

// MarshalJSON writes the §7 envelope, its status from the table.
func (e Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(envelope{
		Code: e.Code, Message: e.Message, Status: e.Status(), Retryable: e.Retryable, Charged: e.Charged,
		RetryAfter: e.RetryAfter, Limit: e.Limit, NextAction: e.NextAction, Fields: e.Fields,
	})
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Status is the HTTP status the error answers with (over MCP, the status its REST twin answers
// with): its code's, or its kind's where the error has one of its code's kinds.
func (e *Error) Status() int { return e.Code.status(e.kind) }

// WithKind is a copy of e that answers as kind k of its code.
func (e *Error) WithKind(k Kind) *Error {
	c := *e
	c.kind = k
	return &c
}

// New builds an error of code with a safe message.
func New(code Code, message string) *Error {
	e := &Error{Code: code, Message: message, Retryable: code.Retryable()}
	e.NextAction = []NextAction{{Action: defaultAction(code)}}
	return e
}

func defaultAction(code Code) string {
	switch {
	case code == PayloadTooLarge:
		return "reduce_request_size"
	case code == NotFound:
		return "check_route"
	case code == MethodNotAllowed:
		return "use_allowed_method"
	case code == PaymentIDConflict:
		return "use_new_payment_identifier"
	case code.Retryable():
		return "retry_later"
	case code.Status() == 402:
		return "pay_and_retry"
	}
	return "fix_request"
}

// Invalid builds a 422 naming the offending fields. Problems should be phrased so that
// "<field> <problem>" reads as a sentence.
func Invalid(problems ...FieldProblem) *Error {
	names := make([]string, len(problems))
	for i, p := range problems {
		names[i] = p.Field
	}
	var b strings.Builder
	b.WriteString("The request is invalid: ")
	for i, p := range problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Field)
		b.WriteByte(' ')
		b.WriteString(p.Problem)
	}
	b.WriteString(". Nothing was charged; fix the field(s) and send it again.")
	return &Error{
		Code: InvalidRequest, Message: b.String(),
		NextAction: []NextAction{{Action: "fix_request_fields", Fields: names}},
		Fields:     problems,
	}
}

// Field is shorthand for a single-field 422.
func Field(field, problem, fix string) *Error {
	return Invalid(FieldProblem{Field: field, Problem: problem, Fix: fix})
}

// TooLarge is the 413 answer naming the limit in bytes.
func TooLarge(limit int64) *Error {
	e := New(PayloadTooLarge, fmt.Sprintf("The request body is larger than the limit of %d bytes. Nothing was charged.", limit))
	e.Limit = limit
	return e
}

// HeadersTooLarge is the 431 answer to a request whose header section is over limit bytes: the
// same code as a body over its limit, since the fix is the same, with HTTP's own status for it.
func HeadersTooLarge(limit int64) *Error {
	e := New(PayloadTooLarge, fmt.Sprintf("The request's header section is larger than the limit of %d bytes. Nothing was charged.", limit))
	e.kind, e.Limit = HeaderSection, limit
	return e
}

// As returns err as an *Error when it is one (or wraps one).
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
