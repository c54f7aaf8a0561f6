package verify

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"github.com/agent-output-verifier/verifier/pkg/verify/schemacheck"
	"hash/maphash"
	"slices"
	"sync"
)

// SchemaCache is a bounded LRU of compiled schemas keyed by schema_hash (plus the strict flag, which
// changes what is compiled). Agents verify the same schema over and over, and compiling (meta-schema
// validation included) costs far more than checking, so a repeated schema never recompiles (SPEC
// §14). It is safe for concurrent use; concurrent misses for one key compile once and share the
// result. Compile errors are not cached: they are the caller's to fix, and caching them would let
// one bad schema evict good ones.
//
// An entry can also be found by the exact bytes a request sent (an alias of the raw
// expected_schema with the strict flag, see aliasOf), so that a repeated schema is neither decoded
// nor canonicalized again: the entry holds its canonical form and schema_hash.
type SchemaCache struct {
	mu       sync.Mutex
	size     int // entries at most
	maxBytes int // bytes charged at most (see charge)
	bytes    int
	order    *list.List // front is the most recently used; values are *schCacheEntry
	entries  map[string]*list.Element
	aliases  map[schemaAlias]*list.Element
	inflight map[string]*schCacheCall
}

// schemaAlias names a cached schema by the bytes it was sent as; see aliasOf.
type schemaAlias struct {
	digest [sha256.Size]byte
	short  bool // digest holds a maphash of the bytes, which the entry keeps to compare
	strict bool
}

// maxAliases bounds the spellings (whitespace, key order, escapes) remembered per schema, so that
// a caller sending endless variants of one schema cannot grow an entry.
const maxAliases = 4

// maxShortAlias is the longest schema aliased by a fast hash of its bytes plus the bytes
// themselves. Keeping the bytes is what makes a fast, non-cryptographic hash safe (a lookup
// compares them exactly, so a collision can only miss, never match the wrong schema), and this
// bound is what keeps them cheap: the entry is charged them (see alias), and they are a few KiB
// for the schemas agents send. A longer schema is
// aliased by its SHA-256 alone, as collision-resistant as schema_hash itself; at that length
// its hashing is a small share of decoding the rest of such a request.
const maxShortAlias = 16 << 10

// aliasSeed keys the fast alias hash; a per-process random seed keeps callers from choosing
// colliding schemas (which would only cost cache misses anyway).
var aliasSeed = maphash.MakeSeed()

type schCacheEntry struct {
	key     string
	schema  *Schema
	charge  int // the schema's memory, the key and the aliases' bytes
	aliases []aliasRecord
}

// aliasRecord is one alias of an entry with, for a short alias, the bytes it stands for.
type aliasRecord struct {
	alias schemaAlias
	raw   []byte
}

// aliasOf is the alias of a schema sent as raw (the expected_schema member exactly as received):
// the SHA-256 of the bytes took a tenth of decoding a small request, so a short schema gets a
// maphash instead, and its bytes are compared on lookup (see maxShortAlias).
func aliasOf(raw []byte, strict bool) schemaAlias {
	a := schemaAlias{strict: strict}
	if len(raw) <= maxShortAlias {
		a.short = true
		binary.LittleEndian.PutUint64(a.digest[:], maphash.Bytes(aliasSeed, raw))
	} else {
		a.digest = sha256.Sum256(raw)
	}
	return a
}

// known returns the schema that raw, whose alias is a, was attached to, or nil.
func (c *SchemaCache) known(a schemaAlias, raw []byte) *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.aliases[a]
	if !ok {
		return nil
	}
	e := el.Value.(*schCacheEntry)
	if a.short && !slices.ContainsFunc(e.aliases, func(r aliasRecord) bool { return r.alias == a && bytes.Equal(r.raw, raw) }) {
		return nil // another schema's bytes with the same fast hash
	}
	c.order.MoveToFront(el)
	return e.schema
}

// alias attaches a, the alias of raw, to the entry cached under key, if it is still there and
// has room.
func (c *SchemaCache) alias(key string, a schemaAlias, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if _, known := c.aliases[a]; !ok || known {
		return
	}
	e := el.Value.(*schCacheEntry)
	if len(e.aliases) >= maxAliases {
		return
	}
	rec := aliasRecord{alias: a}
	if a.short {
		rec.raw = bytes.Clone(raw) // raw is the caller's request body
	}
	e.aliases = append(e.aliases, rec)
	c.aliases[a] = el
	// The bytes kept and the alias's map entry and record.
	charge := schemacheck.HeapAllocSize(len(rec.raw)) + aliasEntryBytes
	e.charge += charge
	c.bytes += charge
	c.evict()
}

// aliasEntryBytes is what an alias keeps besides its bytes: its entry in the alias map and its
// record in the entry's list, rounded up.
const aliasEntryBytes = 128

// schCacheCall is one compilation in progress that later callers for the same key wait on.
type schCacheCall struct {
	done   chan struct{}
	schema *Schema
	err    error
}

// NewSchemaCache returns a cache holding at most size compiled schemas (at least one) charged at
// most maxBytes in all.
func NewSchemaCache(size, maxBytes int) *SchemaCache {
	if size < 1 {
		size = 1
	}
	return &SchemaCache{size: size, maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{},
		aliases: map[schemaAlias]*list.Element{}, inflight: map[string]*schCacheCall{}}
}

// Get returns the schema cached under key, or compiles it with compile, caches it and returns it.
// A compile error is returned as is and nothing is cached.
func (c *SchemaCache) Get(key string, compile func() (*Schema, error)) (*Schema, error) {
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		s := el.Value.(*schCacheEntry).schema
		c.mu.Unlock()
		return s, nil
	}
	if call, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		<-call.done
		return call.schema, call.err
	}
	call := &schCacheCall{done: make(chan struct{})}
	c.inflight[key] = call
	c.mu.Unlock()

	func() {
		defer func() {
			// A panicking compile must not leave waiters blocked forever.
			if r := recover(); r != nil {
				call.schema, call.err = nil, schemacheck.CompileFailed()
			}
		}()
		call.schema, call.err = compile()
	}()

	if call.err == nil && call.schema != nil {
		// Measured before anyone else sees the schema, outside the lock: it takes about as long
		// as a tenth of the compilation.
		call.schema.memory = schemaCharge(call.schema)
	}
	c.mu.Lock()
	delete(c.inflight, key)
	if call.err == nil && call.schema != nil && call.schema.memory+len(key) <= c.maxBytes {
		e := &schCacheEntry{key: key, schema: call.schema, charge: call.schema.memory + len(key)}
		c.entries[key] = c.order.PushFront(e)
		c.bytes += e.charge
		c.evict()
	}
	c.mu.Unlock()
	close(call.done)
	return call.schema, call.err
}

// evict drops the least recently used entries until the cache is within its bounds.
func (c *SchemaCache) evict() {
	for c.order.Len() > c.size || c.bytes > c.maxBytes {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		e := oldest.Value.(*schCacheEntry)
		c.bytes -= e.charge
		delete(c.entries, e.key)
		for _, a := range e.aliases {
			delete(c.aliases, a.alias)
		}
	}
}

// schemaCharge is what the cache charges for keeping s: what s holds on the heap as
// schemacheck.HeapBytes measures it, an eighth more for what the measurement cannot see (it comes
// out short of the runtime's count on enums of short strings the allocator packs;
// TestSchemaMemoryMeasured holds the charge at or above that count), and the entry's own
// bookkeeping. The key and the aliases' bytes are charged by the entry.
func schemaCharge(s *Schema) int {
	b := schemacheck.HeapBytes(s)
	return b + b/8 + SchemaCacheEntryBytes
}

// Bytes reports what the cache is charged for all it holds, for metrics and tests.
func (c *SchemaCache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Len reports how many compiled schemas the cache holds, for metrics and tests.
func (c *SchemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
