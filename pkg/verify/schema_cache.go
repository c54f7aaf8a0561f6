package verify

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// SchemaCache is a bounded LRU of compiled schemas keyed by schema_hash (plus the strict flag, which
// changes what is compiled). Agents verify the same schema over and over, and compiling (meta-schema
// validation included) costs far more than checking, so a repeated schema never recompiles (SPEC
// §14). It is safe for concurrent use; concurrent misses for one key compile once and share the
// result. Compile errors are not cached: they are the caller's to fix, and caching them would let
// one bad schema evict good ones.
//
// An entry can also be found by the exact bytes a request sent (an alias: the SHA-256 of the raw
// expected_schema with the strict flag), so that a repeated schema is neither decoded nor
// canonicalized again: the entry holds its canonical form and schema_hash.
type SchemaCache struct {
	mu       sync.Mutex
	size     int
	order    *list.List // front is the most recently used; values are *schCacheEntry
	entries  map[string]*list.Element
	aliases  map[schemaAlias]*list.Element
	inflight map[string]*schCacheCall
}

// schemaAlias names a cached schema by the bytes it was sent as; see alias.
type schemaAlias struct {
	digest [sha256.Size]byte
	strict bool
}

// maxAliases bounds the spellings (whitespace, key order, escapes) remembered per schema, so that
// a caller sending endless variants of one schema cannot grow an entry.
const maxAliases = 4

type schCacheEntry struct {
	key     string
	schema  *Schema
	aliases []schemaAlias
}

// aliasOf is the alias of a schema sent as raw (the expected_schema member exactly as received).
func aliasOf(raw []byte, strict bool) schemaAlias {
	return schemaAlias{digest: sha256.Sum256(raw), strict: strict}
}

// known returns the schema an alias was attached to, or nil.
func (c *SchemaCache) known(a schemaAlias) *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.aliases[a]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*schCacheEntry).schema
}

// alias attaches a to the entry cached under key, if it is still there and has room.
func (c *SchemaCache) alias(key string, a schemaAlias) {
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
	e.aliases = append(e.aliases, a)
	c.aliases[a] = el
}

// schCacheCall is one compilation in progress that later callers for the same key wait on.
type schCacheCall struct {
	done   chan struct{}
	schema *Schema
	err    error
}

// NewSchemaCache returns a cache holding at most size compiled schemas (at least one).
func NewSchemaCache(size int) *SchemaCache {
	if size < 1 {
		size = 1
	}
	return &SchemaCache{size: size, order: list.New(), entries: map[string]*list.Element{},
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
				call.schema, call.err = nil, schemaProblem("could not be compiled", schemaFixGeneric)
			}
		}()
		call.schema, call.err = compile()
	}()

	c.mu.Lock()
	delete(c.inflight, key)
	if call.err == nil && call.schema != nil {
		c.entries[key] = c.order.PushFront(&schCacheEntry{key: key, schema: call.schema})
		for c.order.Len() > c.size {
			oldest := c.order.Back()
			c.order.Remove(oldest)
			e := oldest.Value.(*schCacheEntry)
			delete(c.entries, e.key)
			for _, a := range e.aliases {
				delete(c.aliases, a)
			}
		}
	}
	c.mu.Unlock()
	close(call.done)
	return call.schema, call.err
}

// Len reports how many compiled schemas the cache holds, for metrics and tests.
func (c *SchemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
