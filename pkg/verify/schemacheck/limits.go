package schemacheck

// What one compiled schema may hold.
const (
	// MaxSchemaMemory bounds what compiling one expected_schema may keep, judged before compiling
	// by an upper bound computed from the document (MemoryBound): the request's node limit (MaxSchemaNodes, pkg/verify)
	// bounds subschemas but not what each holds, and a 40 KB schema of a thousand patterns with
	// forty \p{L} classes each kept 336 MB (and allocated 750 MB compiling). 24 MiB admits every
	// schema within the other limits that is made of plain subschemas (5,000 empty ones bound
	// at 9 MB and keep 7.9 MB), real schemas by far (the largest measured, a 280 KB AWS resource
	// schema of 4,136 subschemas, stays well under it), and keeps the cache able to hold two of
	// the largest.
	MaxSchemaMemory = 24 << 20
	// MaxSchemaPatterns caps the regular expressions (pattern values and patternProperties keys)
	// in one expected_schema: each compiled one keeps about 2.3 KB, and compiling takes far
	// longer than the check, so 1,000 (2.3 MB) is ample for any real schema.
	MaxSchemaPatterns = 1000
	// MaxSchemaPatternSize caps the total estimated program size of those expressions, in
	// instructions: a compiled instruction keeps 42 bytes, and a seven-character pattern such as
	// .{1000} compiles to a thousand of them. 100,000 instructions keep about 4 MB.
	MaxSchemaPatternSize = 100_000
)
