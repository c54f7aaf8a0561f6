package wire

// Limits bound what one request may ask of the engine. Each default has a reason; operators may
// lower or raise them through configuration, never past what the engine is tested with. The
// engine's own limits (schema cache, evaluation budgets) are in pkg/verify/limits.go.
type Limits struct {
	// MaxBody is the largest request body in bytes (413 beyond). 1 MiB keeps one verification
	// well inside a Lambda's memory and API Gateway's payload limit.
	MaxBody int64
	// MaxDepth is the deepest nesting of arrays and objects anywhere in the body. Recursive
	// walkers (validation, counting, canonicalization) stay far from stack limits.
	MaxDepth int
	// MaxRules and MaxBounds cap the integrity work per request.
	MaxRules  int
	MaxBounds int
	// MaxPathLen caps one rule or bound path in bytes.
	MaxPathLen int
}

// DefaultLimits are the limits of SPEC §4.1.
var DefaultLimits = Limits{MaxBody: 1 << 20, MaxDepth: 128, MaxRules: 200, MaxBounds: 200, MaxPathLen: 512}

const (
	// MaxIDLen is the longest task_id or agent_id in characters: ids are labels, not payloads.
	MaxIDLen = 200
	// DefaultTolerance is the rule tolerance when none is given (and its canonical literal).
	DefaultTolerance = "1e-9"
)
