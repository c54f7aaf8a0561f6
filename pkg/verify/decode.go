package verify

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// errDepth, errNumberRange, errNumberSize and errSchemaSize are what the tree builder rejects
// beyond JSON syntax.
var (
	errDepth       = errors.New("nests deeper than the limit")
	errNumberRange = errors.New("has a number outside the range of IEEE-754 double precision")
	errNumberSize  = errors.New("has a number with more than 1000 significant digits or an exponent beyond ±400")
	errSchemaSize  = errors.New("has more subschemas than the limit")
)

// syntaxProblem turns a jsontext error into a problem phrase and its fix, never echoing the
// input: the library's own messages quote the offending bytes, so only the class of error and
// its offset are kept. fix is the answer for a syntax error; a value nested past the decoder's
// own depth limit (far beyond maxDepth) is named as what it is, a value deeper than maxDepth
// levels, with the fix for that.
func syntaxProblem(err error, offset int64, maxDepth int, fix string) (problem, fixed string) {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		return "has a duplicate object member name", fix
	case errors.As(err, &se) && strings.Contains(se.Error(), "exceeded max depth"):
		return depthProblem(maxDepth)
	case errors.As(err, &se) && strings.Contains(se.Error(), "UTF-8"):
		return fmt.Sprintf("contains invalid UTF-8 (near byte %d)", offset), fix
	case errors.As(err, &se) && strings.Contains(se.Error(), "surrogate"):
		return fmt.Sprintf("contains an invalid or lone UTF-16 surrogate escape (near byte %d)", offset), fix
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "is truncated JSON", fix
	}
	return fmt.Sprintf("is not valid JSON (near byte %d)", offset), fix
}

// depthProblem is the problem and fix of a value nested deeper than the limit (SPEC §4.1), found
// by the tree builder or by the decoder.
func depthProblem(maxDepth int) (problem, fix string) {
	return fmt.Sprintf("nests deeper than the limit of %d levels of arrays and objects (counted from the top of the body)", maxDepth),
		fmt.Sprintf("Flatten the value so that no array or object sits more than %d levels deep in the body.", maxDepth)
}

// errDuplicateName is a repeated member name found by the tree builder itself: readObject's
// decoder leaves duplicate detection to it (see readObject).
var errDuplicateName = fmt.Errorf("tree: %w", jsontext.ErrDuplicateName)

// isTreeLimit tells the tree builder's own refusals from syntax errors.
func isTreeLimit(err error) bool {
	return errors.Is(err, errDepth) || errors.Is(err, errNumberRange) || errors.Is(err, errNumberSize) || errors.Is(err, errSchemaSize)
}

// treeBuilder turns one JSON value into the engine's tree (nil, bool, string, json.Number,
// []any, map[string]any), enforcing the depth limit and the float64 range of numbers.
type treeBuilder struct {
	dec      *jsontext.Decoder
	maxDepth int
	base     int    // depth of the value's container in the whole body
	src      string // the decoder's whole input, when the tree's strings may share it (see text)

	// schema makes the builder weigh the tree as a schema and refuse one heavier than
	// MaxSchemaNodes: weight is the sum so far, pointer the length of the JSON pointer of the
	// value being read.
	schema  bool
	weight  int
	pointer int
}

// decodeTree parses raw (already known to be valid JSON) into a tree. base is the nesting depth
// at which raw sits inside the request body, so the limit applies to the body as a whole.
// The tree's strings are copies: the schema's tree may be kept by the schema cache.
func decodeTree(raw []byte, maxDepth, base int) (any, error) {
	d := getDecoder(raw)
	defer d.put()
	b := treeBuilder{dec: &d.dec, maxDepth: maxDepth, base: base}
	return b.value()
}

// decodeSchema is decodeTree for expected_schema, a member of the body, refusing a schema that
// weighs more than MaxSchemaNodes.
func decodeSchema(raw []byte, maxDepth int) (any, error) {
	d := getDecoder(raw)
	defer d.put()
	b := treeBuilder{dec: &d.dec, maxDepth: maxDepth, base: 1, schema: true}
	return b.value()
}

// weigh adds one to the schema's weight, and one more for every SchemaPointerBytes of size: the
// length of a subschema's JSON pointer, or of an id (see MaxSchemaNodes).
func (b *treeBuilder) weigh(size int) error {
	b.weight += 1 + size/SchemaPointerBytes
	if b.weight > MaxSchemaNodes {
		return errSchemaSize
	}
	return nil
}

// decimalDigits is the length of n (not negative) written in decimal.
func decimalDigits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// pooledDecoder is a decoder with the buffer it reads from. A new decoder allocates itself and
// grows its token and name stacks again, a measurable share of decoding a small request, so
// decoders are pooled and Reset. Nothing the callers return refers into a decoder: strings are
// copied out of it or cut from the caller's own input (see treeBuilder.text), and raw values are
// sliced from that input too (see readRaw).
type pooledDecoder struct {
	dec jsontext.Decoder
	in  bytes.Buffer
}

var decoderPool = sync.Pool{New: func() any { return new(pooledDecoder) }}

// getDecoder returns a pooled decoder reading src (parsed in place) with opts; put it back when done.
func getDecoder(src []byte, opts ...jsontext.Options) *pooledDecoder {
	d := decoderPool.Get().(*pooledDecoder)
	d.in = *bytes.NewBuffer(src)
	d.dec.Reset(&d.in, opts...)
	return d
}

// put returns d to the pool after dropping its input, so that the pool does not keep a request's
// bytes alive.
func (d *pooledDecoder) put() {
	d.in = bytes.Buffer{}
	d.dec.Reset(&d.in)
	decoderPool.Put(d)
}

// errNotName is what the tree builder would report if the decoder accepted a non-string where
// a member name belongs; it never does.
var errNotName = errors.New("object member name is not a string")

// text reads the next string (a member name too) or number and returns its text: unquoted for a
// string, the literal for a number. Where the text is written in the input as is (no escapes)
// and src is set, it is a substring of src, which saves an allocation per string and number;
// otherwise a copy.
func (b *treeBuilder) text() (string, error) {
	v, err := b.dec.ReadValue()
	if err != nil {
		return "", err
	}
	quoted := v[0] == '"'
	if bytes.IndexByte(v, '\\') >= 0 { // only a string can hold a backslash
		u, err := jsontext.AppendUnquote(nil, v)
		return string(u), err
	}
	if b.src != "" {
		// v is the last value read, so it ends at the decoder's offset in its input.
		end := int(b.dec.InputOffset())
		if quoted {
			return b.src[end-len(v)+1 : end-1], nil
		}
		return b.src[end-len(v) : end], nil
	}
	if quoted {
		return string(v[1 : len(v)-1]), nil
	}
	return string(v), nil
}

func (b *treeBuilder) value() (any, error) {
	switch b.dec.PeekKind() {
	case '"':
		return b.text()
	case '0':
		lit, err := b.text()
		if err != nil {
			return nil, err
		}
		if wire.SmallInteger(lit) {
			return json.Number(lit), nil
		}
		if _, err := strconv.ParseFloat(lit, 64); err != nil {
			return nil, errNumberRange
		}
		// Literals such as 1e-1999999 parse as 0 but cost exact arithmetic dearly: refuse them.
		if jsonvalue.CheckNumber(lit) != nil {
			return nil, errNumberSize
		}
		return json.Number(lit), nil
	}
	tok, err := b.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		if b.schema {
			if err := b.weigh(b.pointer); err != nil {
				return nil, err
			}
		}
		if tok.Kind() == 't' {
			return true, nil
		}
		return false, nil
	case '{':
		if b.base+b.dec.StackDepth() > b.maxDepth {
			return nil, errDepth
		}
		if b.schema {
			if err := b.weigh(b.pointer); err != nil {
				return nil, err
			}
		}
		obj := make(map[string]any)
		for b.dec.PeekKind() != '}' {
			if b.dec.PeekKind() != '"' {
				// Not a name: ReadToken reports the error (ReadValue would read a whole value here).
				_, err := b.dec.ReadToken()
				return nil, cmp.Or(err, errNotName)
			}
			key, err := b.text()
			if err != nil {
				return nil, err
			}
			if _, dup := obj[key]; dup {
				return nil, errDuplicateName
			}
			// A member's pointer adds "/" and its name, with "~" and "/" escaped as two bytes.
			step := 0
			if b.schema {
				step = 1 + len(key) + strings.Count(key, "~") + strings.Count(key, "/")
				b.pointer += step
			}
			v, err := b.value()
			if err != nil {
				return nil, err
			}
			b.pointer -= step
			// The compiler also compares every resource and dynamic anchor with every other.
			if name, ok := v.(string); ok && b.schema && (key == "$id" || key == "id" || key == "$dynamicAnchor") {
				if err := b.weigh(len(name)); err != nil {
					return nil, err
				}
			}
			obj[key] = v
		}
		if _, err := b.dec.ReadToken(); err != nil {
			return nil, err
		}
		return obj, nil
	case '[':
		if b.base+b.dec.StackDepth() > b.maxDepth {
			return nil, errDepth
		}
		arr := make([]any, 0, 4)
		for b.dec.PeekKind() != ']' {
			// An element's pointer adds "/" and its index.
			step := 0
			if b.schema {
				step = 1 + decimalDigits(len(arr))
				b.pointer += step
			}
			v, err := b.value()
			if err != nil {
				return nil, err
			}
			b.pointer -= step
			arr = append(arr, v)
		}
		if _, err := b.dec.ReadToken(); err != nil {
			return nil, err
		}
		return arr, nil
	}
	return nil, fmt.Errorf("unexpected token kind %v", tok.Kind())
}
