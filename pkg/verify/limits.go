package verify

import "github.com/agent-output-verifier/verifier/pkg/jsonvalue"

// The engine's limits. The request's own (body size, depth, rules, bounds, path and id lengths)
// are in pkg/wire/limits.go, which the routes that do not verify share.

const (
	// ListCap is how many entries errors, errors_detail, flags and hints show; the rest are counted
	// in <list>_omitted so a response stays small whatever the input. A 422 names at most as many
	// problems, the last entry counting the rest.
	ListCap = 50
	// ShownNameMaxChars is the longest caller-chosen name a 422 shows: an unknown member longer
	// (or not printable) is counted, not named, and a bound's longer path is cut.
	ShownNameMaxChars = 40
	// FoundMaxChars is how much of an offending value (and of the keys of a location) a message
	// shows, so that a report never becomes a copy of the caller's output; jsonvalue holds it.
	FoundMaxChars = jsonvalue.ShownChars
	// SchemaCacheSize is how many compiled schemas the engine keeps (LRU by schema_hash).
	SchemaCacheSize = 256
	// SchemaCacheBytes bounds the heap the compiled schemas the engine keeps really hold, each
	// charged what schemacheck.HeapBytes measures of it (TestSchemaMemoryMeasured holds that to the
	// runtime's own count). 64 MiB is an eighth of the 512 MB a function has: with the Go collector
	// letting the heap grow to twice what is live, a full cache plus the largest request's working
	// memory stays well inside the function (docs/SECURITY.md). It holds a few hundred ordinary
	// schemas and at least two of the largest schemacheck.MaxSchemaMemory allows; a schema charged
	// more than the whole bound is used but not kept.
	SchemaCacheBytes = 64 << 20
	// SchemaCacheEntryBytes is what the cache itself keeps per entry besides the schema (its list
	// element, map entries and key), charged with it.
	SchemaCacheEntryBytes = 512
	// RuleWorkBase and RuleWorkPerValue bound the work of all rules of one request: the values
	// they resolve, plus the size of every value unique and exists_in hash. 200 rules over the
	// whole output would be 200 passes, seconds and gigabytes over a 1 MiB output; eight passes,
	// past a base that no small output reaches, cover real rule sets. Past the bound the remaining
	// rules are not evaluated and the request is the error rules_too_complex
	// (BenchmarkHostileRuleWork in docs/PERFORMANCE.md measures such rule sets at the bound).
	RuleWorkBase     = 100_000
	RuleWorkPerValue = 8
	// MaxSchemaNodes bounds the subschemas of expected_schema, because the schema compiler
	// (santhosh-tekuri/jsonschema v6.0.3) takes time quadratic in their number: it looks each one
	// up in a list of all before it, comparing JSON pointers, and compares every resource and
	// dynamic anchor with every other. So every object and boolean in the schema counts, whether it
	// sits where a schema goes or not, once and once more for every SchemaPointerBytes bytes of its
	// JSON pointer; a string $id (draft 4: id) or $dynamicAnchor counts the same way, by its own
	// length. The limit keeps the compile time of the most costly shapes a small fraction of a
	// request's deadline (BenchmarkHostileSchema in docs/PERFORMANCE.md measures each shape at the
	// limit), and sits above the largest real schema tried, a 280 KB AWS resource schema that
	// counts 4,136.
	MaxSchemaNodes = 5000
	// SchemaPointerBytes is how many bytes of a JSON pointer or id cost the compiler's comparisons
	// about as much as one more subschema.
	SchemaPointerBytes = 256
)
