package verify

import (
	"time"

	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// The names below moved to pkg/wire (the request's contract) and pkg/receipt (the verify block
// and the time format of signed answers), which do not link the JSON Schema library, so that the
// routes that never verify can use them without linking the engine. They are kept here for
// compatibility during the move, so that every existing caller compiles unchanged; new code
// should use the new homes, and these go once no caller is left.

// Limits bound what one request may ask of the engine (wire.Limits).
type Limits = wire.Limits

// DefaultLimits are the limits of SPEC §4.1 (wire.DefaultLimits).
var DefaultLimits = wire.DefaultLimits

const (
	// MaxIDLen is wire.MaxIDLen.
	MaxIDLen = wire.MaxIDLen
	// DefaultTolerance is wire.DefaultTolerance.
	DefaultTolerance = wire.DefaultTolerance
	// VerifyInfoSchemaJSON is receipt.VerifyInfoSchemaJSON.
	VerifyInfoSchemaJSON = receipt.VerifyInfoSchemaJSON
)

// Version is wire.Version, copied when the package initializes: release builds set wire.Version.
var Version = wire.Version

// VerifyInfo is the verify block of signed answers (receipt.VerifyInfo).
type VerifyInfo = receipt.VerifyInfo

// Payment is the payment member of signed answers (receipt.Payment).
type Payment = receipt.Payment

// HashVector is one request-hash test vector (wire.HashVector).
type HashVector = wire.HashVector

// NewVerifyInfo is receipt.NewVerifyInfo.
func NewVerifyInfo(baseURL, keyVersion string) VerifyInfo {
	return receipt.NewVerifyInfo(baseURL, keyVersion)
}

// FormatTime is receipt.FormatTime.
func FormatTime(t time.Time) string { return receipt.FormatTime(t) }

// AgentID is wire.AgentID.
func AgentID(id string) (normalized, problem, fix string) { return wire.AgentID(id) }

// RequestHashVectors is wire.RequestHashVectors.
func RequestHashVectors() ([]HashVector, error) { return wire.RequestHashVectors() }

// RequestSchema is wire.RequestSchema.
func RequestSchema() map[string]any { return wire.RequestSchema() }

// RequestSchemaJSON is wire.RequestSchemaJSON.
func RequestSchemaJSON() []byte { return wire.RequestSchemaJSON() }

// ExampleRequest is wire.ExampleRequest.
func ExampleRequest() map[string]any { return wire.ExampleRequest() }

// ExampleRequestJSON is wire.ExampleRequestJSON.
func ExampleRequestJSON() []byte { return wire.ExampleRequestJSON() }

// ResponseSchema is wire.ResponseSchema.
func ResponseSchema() map[string]any { return wire.ResponseSchema() }

// ResponseSchemaJSON is wire.ResponseSchemaJSON.
func ResponseSchemaJSON() []byte { return wire.ResponseSchemaJSON() }

// Path is a rule or bound path; paths are read and rendered by pkg/jsonvalue, which rules,
// content checks and the schema check share.
type Path = jsonvalue.Path

// Step is one selection of a Path.
type Step = jsonvalue.Step

// StepKind says what one step of a path selects.
type StepKind = jsonvalue.StepKind

// The step kinds.
const (
	StepKey   = jsonvalue.StepKey
	StepAll   = jsonvalue.StepAll
	StepIndex = jsonvalue.StepIndex
)

// ParsePath parses a rule or bound path (see jsonvalue.ParsePath).
func ParsePath(s string) (Path, error) { return jsonvalue.ParsePath(s) }
