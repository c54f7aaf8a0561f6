package schemacheck

// What one compiled schema may hold.
const (
	// MaxSchemaMemory bounds what compiling one expected_schema may keep, judged before compiling
	// by an upper bound computed from the document (MemoryBound): the request's node limit
	// (MaxSchemaNodes, pkg/verify) bounds subschemas but not what each holds, and a small schema
	// of many patterns with large Unicode classes keeps hundreds of megabytes. 24 MiB admits every
	// schema within the other limits that is made of plain subschemas, real schemas by far, and
	// keeps the cache able to hold two of the largest (TestSchemaMemoryMeasured prints what each
	// shape at the limits keeps, its charge and its bound; docs/SECURITY.md has the history).
	MaxSchemaMemory = 24 << 20
	// MaxSchemaPatterns caps the regular expressions (pattern values and patternProperties keys)
	// in one expected_schema: each compiled one keeps its program, and compiling takes far longer
	// than the check, so 1,000 is ample for any real schema.
	MaxSchemaPatterns = 1000
	// MaxSchemaPatternSize caps the total estimated program size of those expressions, in
	// instructions: a seven-character pattern such as .{1000} compiles to a thousand of them, and
	// MemoryBound charges each what a compiled one keeps.
	MaxSchemaPatternSize = 100_000
)
