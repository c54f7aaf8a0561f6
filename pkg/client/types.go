package client

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// Request is a verification request (SPEC §4.1). ExpectedSchema and SubmittedOutput take any
// value encoding/json can marshal; a json.RawMessage is sent byte for byte, which is the way to
// keep number literals such as 135.0 exactly as written (rules compare them as exact decimals).
// Zero values are left out and take the service's defaults.
type Request struct {
	TaskID             string           `json:"task_id"`
	AgentID            string           `json:"agent_id,omitempty"`
	ExpectedSchema     any              `json:"expected_schema"`
	SubmittedOutput    any              `json:"submitted_output"`
	StrictContentCheck bool             `json:"strict_content_check,omitempty"`
	Bounds             map[string]Bound `json:"bounds,omitempty"`
	Rules              []Rule           `json:"rules,omitempty"`
	EnforceRules       bool             `json:"enforce_rules,omitempty"`
	// Detail is "full" (the default) or "compact"; it shapes the answer and is not hashed.
	Detail string `json:"detail,omitempty"`
}

// Rule is one cross-field rule (SPEC §4.3). Numbers are json.Number so that they travel as the
// exact decimal literals the rules compute with; Values takes any JSON values.
type Rule struct {
	Type        string      `json:"type"`
	Field       string      `json:"field"`
	EqualsField string      `json:"equals_field,omitempty"`
	Equals      json.Number `json:"equals,omitempty"`
	OtherField  string      `json:"other_field,omitempty"`
	Value       json.Number `json:"value,omitempty"`
	InField     string      `json:"in_field,omitempty"`
	Values      []any       `json:"values,omitempty"`
	Tolerance   json.Number `json:"tolerance,omitempty"`
	IfPresent   bool        `json:"if_present,omitempty"`
}

// Bound is one numeric range (SPEC §4.4); at least one of Min and Max is set.
type Bound struct {
	Min       json.Number `json:"min,omitempty"`
	Max       json.Number `json:"max,omitempty"`
	IfPresent bool        `json:"if_present,omitempty"`
}

// Answer is what every typed result carries besides its decoded fields: the answer exactly as it
// arrived (the signed receipt, for signed routes), its status and headers, the free allowance it
// reported, and the payment made for it, if any.
type Answer struct {
	// Status is the HTTP status of the answer.
	Status int
	// Header holds the answer's headers.
	Header http.Header
	// Body is the answer's body byte for byte. For signed routes it is the receipt whose
	// attestation the client checked: store these bytes, not a re-encoding of the typed fields.
	Body []byte
	// Allowance is the free allowance the answer reported (verify routes), or nil.
	Allowance *Allowance
	// Payment is the payment the client made for this answer, or nil for a free one.
	Payment *Payment
}

// Allowance is the caller's free allowance as the Free-Allowance-* headers report it.
type Allowance struct {
	Remaining int       // free calls left today
	Limit     int       // free calls per UTC day
	Resets    time.Time // the next UTC midnight
}

// parseAllowance reads the Free-Allowance-* headers; nil when the answer carries none (paid
// answers, routes without an allowance) or they cannot be read.
func parseAllowance(h http.Header) *Allowance {
	rem, lim, res := h.Get("Free-Allowance-Remaining"), h.Get("Free-Allowance-Limit"), h.Get("Free-Allowance-Resets")
	if rem == "" && lim == "" && res == "" {
		return nil
	}
	var a Allowance
	var err error
	if a.Remaining, err = strconv.Atoi(rem); err != nil {
		return nil
	}
	if a.Limit, err = strconv.Atoi(lim); err != nil {
		return nil
	}
	if a.Resets, err = time.Parse(time.RFC3339, res); err != nil {
		return nil
	}
	return &a
}

// Payment is a payment the client made: the requirement it paid, the price in USD, and the
// settlement the service passed on in PAYMENT-RESPONSE (nil when the answer carried none).
type Payment struct {
	Requirements x402.Requirements
	USD          string
	Settlement   *x402.SettleResponse
	// Identifier is the x402 payment-identifier the payment carried ("" when the service did not
	// declare the extension): a retry of the call sends it again and is not charged twice.
	Identifier string
	// Binding is the payment member (SPEC §16) the answer had to carry, computed from what the
	// client signed; the client refused any paid answer whose member differs.
	Binding receipt.Payment
}

// FreeTrial is the caller's free allowance state that a 402 answer's body carries (SPEC §8.2).
type FreeTrial struct {
	Available            bool   `json:"available"`
	Via                  string `json:"via"`
	Transport            string `json:"transport"`
	URL                  string `json:"url"`
	Tool                 string `json:"tool"`
	CallsPerClientPerDay int    `json:"calls_per_client_per_day"`
	RemainingCallsToday  int    `json:"remaining_calls_today"`
	ResetsAt             string `json:"resets_at"`
	Client               string `json:"client"`
	RESTFree             bool   `json:"rest_free"`
	Message              string `json:"message"`
	// Code is "free_trial_exhausted" once the day's allowance is spent, empty before.
	Code string `json:"code,omitempty"`
}

// VerifyInfo is a signed answer's "verify" block: where the keys are and how it was signed.
type VerifyInfo struct {
	PublicKeyURL     string `json:"public_key_url"`
	KeyVersion       string `json:"key_version"`
	Canonicalization string `json:"canonicalization"`
	HashAlgorithm    string `json:"hash_algorithm"`
	Service          string `json:"service"`
	MCP              string `json:"mcp"`
}

// Attestation is a signed answer's Ed25519 signature (SPEC §6), already checked by the client.
type Attestation struct {
	Algorithm  string `json:"algorithm"`
	KeyVersion string `json:"key_version"`
	Timestamp  string `json:"timestamp"`
	Signature  string `json:"signature"`
}

// Ratio is one pass ratio of a verification.
type Ratio struct {
	Ratio  float64 `json:"ratio"`
	Passed int     `json:"passed"`
	Total  int     `json:"total"`
}

// Summary is a verification's verdict with the checks that blocked it.
type Summary struct {
	Result         string   `json:"result"`
	BlockingChecks []string `json:"blocking_checks"`
}

// NextAction is a machine-readable suggestion: what to do next, for whom, using what.
type NextAction struct {
	Action string `json:"action"`
	For    string `json:"for,omitempty"`
	Using  string `json:"using,omitempty"`
}

// ErrorDetail is one blocking failure.
type ErrorDetail struct {
	Check    string `json:"check"`
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
	Message  string `json:"message"`
}

// Flag is one failed check of any severity (error, warning, info).
type Flag struct {
	Check    string `json:"check"`
	Field    string `json:"field"`
	Severity string `json:"severity"`
	Detail   string `json:"detail"`
}

// Hint is one thing to repair, blocking first.
type Hint struct {
	Source   string `json:"source"`
	Check    string `json:"check"`
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

// Verification is a checked /verify answer (SPEC §4.6). The lists are empty in compact detail.
// By the time a caller sees it, its attestation verified under the verify context and its
// output_hash, schema_hash, rules_hash (and request_hash in full detail) were recomputed from
// the request the client sent.
type Verification struct {
	Summary            Summary       `json:"summary"`
	NextActions        []NextAction  `json:"next_actions"`
	Result             string        `json:"result"`
	VerificationID     string        `json:"verification_id"`
	TaskID             string        `json:"task_id"`
	AgentID            *string       `json:"agent_id"`
	OutputHash         string        `json:"output_hash"`
	SchemaHash         string        `json:"schema_hash"`
	RulesHash          string        `json:"rules_hash"`
	RequestHash        string        `json:"request_hash,omitempty"`
	VerifiedAt         string        `json:"verified_at"`
	VerifierVersion    string        `json:"verifier_version"`
	EnforceRules       bool          `json:"enforce_rules"`
	StrictContentCheck bool          `json:"strict_content_check"`
	Errors             []string      `json:"errors,omitempty"`
	ErrorsDetail       []ErrorDetail `json:"errors_detail,omitempty"`
	Flags              []Flag        `json:"flags,omitempty"`
	Hints              []Hint        `json:"hints,omitempty"`
	SchemaCompliance   *Ratio        `json:"schema_compliance,omitempty"`
	IntegrityChecks    *Ratio        `json:"integrity_checks,omitempty"`
	Overall            *Ratio        `json:"overall,omitempty"`
	// PaymentBinding is the signed answer's payment member (SPEC §16): free_allowance, or what
	// was paid, which the client held to what it signed.
	PaymentBinding *receipt.Payment `json:"payment,omitempty"`
	Verify         VerifyInfo       `json:"verify"`
	Attestation    Attestation      `json:"attestation"`

	Answer `json:"-"`
}

// Passed tells whether the verdict is pass.
func (v *Verification) Passed() bool { return v.Result == "pass" }

// Counts are an agent's verification counts in a Score (Paid is absent from last_30_days).
type Counts struct {
	Total  int `json:"total"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	Paid   int `json:"paid"`
}

// Totals are an agent's verification counts in a Reputation.
type Totals struct {
	Verifications int `json:"verifications"`
	Passed        int `json:"passed"`
	Failed        int `json:"failed"`
	Paid          int `json:"paid"`
}

// Score is a checked /score answer (SPEC §9): an agent's trust score, or Score nil with Reason
// "no_data" for an agent without recorded verifications. Its attestation verified under the
// trust score context, and AgentID is the one asked for.
type Score struct {
	AgentID          string      `json:"agent_id"`
	Score            *float64    `json:"score"`
	Reason           string      `json:"reason,omitempty"`
	Confidence       string      `json:"confidence,omitempty"`
	Verifications    *Counts     `json:"verifications,omitempty"`
	Last30Days       *Counts     `json:"last_30_days,omitempty"`
	PassRate         *float64    `json:"pass_rate,omitempty"`
	MeanOverallRatio *float64    `json:"mean_overall_ratio,omitempty"`
	FirstSeen        string      `json:"first_seen,omitempty"`
	LastSeen         string      `json:"last_seen,omitempty"`
	DistinctTasks    int         `json:"distinct_tasks,omitempty"`
	DistinctCallers  int         `json:"distinct_callers,omitempty"`
	Method           string      `json:"method,omitempty"`
	ComputedAt       string      `json:"computed_at,omitempty"`
	Verify           VerifyInfo  `json:"verify"`
	Attestation      Attestation `json:"attestation"`

	Answer `json:"-"`
}

// HistoryEntry is one recorded verification of an agent, newest first in a Reputation.
type HistoryEntry struct {
	VerificationID string  `json:"verification_id"`
	TaskID         string  `json:"task_id"`
	Result         string  `json:"result"`
	OverallRatio   float64 `json:"overall_ratio"`
	VerifiedAt     string  `json:"verified_at"`
	Paid           bool    `json:"paid"`
}

// Reputation is a checked /reputation answer (SPEC §9): one page of an agent's pass/fail history.
// Its attestation verified under the reputation context, and AgentID is the one asked for.
type Reputation struct {
	AgentID     string         `json:"agent_id"`
	Totals      Totals         `json:"totals"`
	FirstSeen   string         `json:"first_seen,omitempty"`
	LastSeen    string         `json:"last_seen,omitempty"`
	History     []HistoryEntry `json:"history"`
	NextCursor  string         `json:"next_cursor,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	Verify      VerifyInfo     `json:"verify"`
	Attestation Attestation    `json:"attestation"`

	Answer `json:"-"`
}

// Page selects one page of a Reputation history: at most Limit entries (0: the service's
// default) after Cursor (a previous page's NextCursor; empty for the first page).
type Page struct {
	Limit  int
	Cursor string
}

// AgentCard is the service's A2A agent card, with the public keys that sign its answers.
type AgentCard struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Version     string `json:"version"`
	// URL is the service's base URL: the card's first supportedInterfaces entry (A2A v1.0).
	URL string `json:"-"`
	// Keys are the Ed25519 keys of the attestation extension, current and earlier ones.
	Keys []receipt.PublicKey `json:"-"`

	Answer `json:"-"`
}

// Health is the service's liveness answer. A degraded service answers 503 with the same shape;
// Health returns it with Status "degraded" rather than as an error.
type Health struct {
	Status     string `json:"status"`
	Version    string `json:"version"`
	KeyVersion string `json:"key_version"`
	Store      string `json:"store,omitempty"`
	Key        string `json:"key,omitempty"` // whether the signing key answers

	Answer `json:"-"`
}
