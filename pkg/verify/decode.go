package verify

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"io"
	"math/bits"
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

// treeBuilder reads one JSON value (RFC 8259, from valid UTF-8) and turns it into the engine's
// tree (nil, bool, string, json.Number, []any, map[string]any), enforcing the depth limit, the
// float64 range of numbers and unique member names. It checks the syntax as it reads: on bytes
// that are not JSON it stops with errSyntax, and readObject then reads the body with the decoder,
// whose account of what is wrong the answer gives. One pass over the bytes costs less than
// checking them with the decoder and then building the tree.
type treeBuilder struct {
	in       []byte // the value
	i        int    // the next byte of in to read
	maxDepth int
	depth    int    // depth of the container being read in the whole body (base, then one per level)
	src      string // the whole input in is cut from, when the tree's strings may share it (see text)
	off      int    // where in starts in src

	// skip makes the builder only check the syntax, building nothing: for expected_schema, which
	// the engine may know by its bytes, and for unknown members, which are refused anyway.
	skip bool

	// schema makes the builder weigh the tree as a schema and refuse one heavier than
	// MaxSchemaNodes: weight is the sum so far, pointer the length of the JSON pointer of the
	// value being read.
	schema  bool
	weight  int
	pointer int
}

// errSyntax is the tree builder's refusal of bytes that are not JSON, or of a value nested past
// skipDepth. The decoder says what is wrong with them (see readObject).
var errSyntax = errors.New("tree: not well-formed JSON")

// skipDepth is how deep a value read only for its syntax may nest: the decoder's own limit, so
// that a value nested deeper is described as the decoder describes it.
const skipDepth = 10000

// decodeTree parses raw (valid UTF-8) into a tree. base is the nesting depth at which raw sits
// inside the request body, so the limit applies to the body as a whole. The tree's strings are
// copies: the schema's tree may be kept by the schema cache.
func decodeTree(raw []byte, maxDepth, base int) (any, error) {
	b := treeBuilder{in: raw, maxDepth: maxDepth, depth: base}
	return b.root()
}

// decodeSchema is decodeTree for expected_schema, a member of the body, refusing a schema that
// weighs more than MaxSchemaNodes.
func decodeSchema(raw []byte, maxDepth int) (any, error) {
	b := treeBuilder{in: raw, maxDepth: maxDepth, depth: 1, schema: true}
	return b.root()
}

// root reads the whole of b.in as one value.
func (b *treeBuilder) root() (any, error) {
	v, err := b.value()
	if err != nil {
		return nil, err
	}
	if b.space(); b.i != len(b.in) {
		return nil, errSyntax
	}
	return v, nil
}

// skipValue checks the syntax of the value at b.i and reads past it.
func (b *treeBuilder) skipValue() bool {
	b.skip = true
	_, err := b.value()
	b.skip = false
	return err == nil
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

// space skips white space.
func (b *treeBuilder) space() {
	for b.i < len(b.in) {
		switch b.in[b.i] {
		case ' ', '\t', '\n', '\r':
			b.i++
		default:
			return
		}
	}
}

// next skips white space and returns the next byte, or 0 at the end.
func (b *treeBuilder) next() byte {
	if b.space(); b.i < len(b.in) {
		return b.in[b.i]
	}
	return 0
}

// text reads the string (a member name too) at b.i and returns it unquoted. Where it is written
// without escapes and src is set, it is a substring of src, which saves an allocation per string;
// otherwise a copy. Skipping, it returns "".
func (b *treeBuilder) text() (string, error) {
	in, start, escaped := b.in, b.i, false
	for i := start + 1; ; {
		// Plain bytes are passed over eight at a time, up to the first that is not plain.
		for i+8 <= len(in) {
			if m := wire.SpecialBytes(binary.LittleEndian.Uint64(in[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(in) && in[i] >= 0x20 && in[i] != '"' && in[i] != '\\' {
			i++
		}
		if i == len(in) {
			return "", errSyntax
		}
		switch in[i] {
		case '"':
			b.i = i + 1
			switch {
			case b.skip:
				return "", nil
			case escaped:
				u, err := jsontext.AppendUnquote(nil, in[start:b.i])
				if err != nil {
					return "", errSyntax
				}
				return string(u), nil
			case b.src != "":
				return b.src[b.off+start+1 : b.off+i], nil
			}
			return string(in[start+1 : i]), nil
		case '\\':
			n := escapeLen(in[i:])
			if n == 0 {
				return "", errSyntax
			}
			escaped = true
			i += n
		default: // a control character
			return "", errSyntax
		}
	}
}

// escapeLen is the length of the escape at the start of s (s[0] is a backslash): a \u escape of
// a character outside the Basic Multilingual Plane is a pair of them. It is 0 for an escape that
// is not JSON's or for a lone surrogate, which the decoder refuses too.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		r, ok := hex4(s[2:])
		switch {
		case !ok:
			return 0
		case 0xD800 <= r && r < 0xDC00:
			if len(s) < 12 || s[6] != '\\' || s[7] != 'u' {
				return 0
			}
			if low, ok := hex4(s[8:]); !ok || low < 0xDC00 || low >= 0xE000 {
				return 0
			}
			return 12
		case 0xDC00 <= r && r < 0xE000:
			return 0
		}
		return 6
	}
	return 0
}

// hex4 reads four hexadecimal digits.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// digits reads past a run of decimal digits and tells whether there was one.
func (b *treeBuilder) digits() bool {
	start := b.i
	for b.i < len(b.in) && '0' <= b.in[b.i] && b.in[b.i] <= '9' {
		b.i++
	}
	return b.i > start
}

// number reads the number at b.i: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (b *treeBuilder) number() (any, error) {
	start := b.i
	if b.in[b.i] == '-' {
		b.i++
	}
	switch {
	case b.i < len(b.in) && b.in[b.i] == '0':
		b.i++
	case !b.digits():
		return nil, errSyntax
	}
	if b.i < len(b.in) && b.in[b.i] == '.' {
		if b.i++; !b.digits() {
			return nil, errSyntax
		}
	}
	if b.i < len(b.in) && (b.in[b.i] == 'e' || b.in[b.i] == 'E') {
		if b.i++; b.i < len(b.in) && (b.in[b.i] == '+' || b.in[b.i] == '-') {
			b.i++
		}
		if !b.digits() {
			return nil, errSyntax
		}
	}
	if b.skip {
		return nil, nil
	}
	lit := string(b.in[start:b.i])
	if b.src != "" {
		lit = b.src[b.off+start : b.off+b.i]
	}
	if wire.SmallInteger(lit) {
		return json.Number(lit), nil
	}
	if jsonvalue.Overflows(lit) {
		return nil, errNumberRange
	}
	// Literals such as 1e-1999999 parse as 0 but cost exact arithmetic dearly: refuse them.
	if jsonvalue.CheckNumber(lit) != nil {
		return nil, errNumberSize
	}
	return json.Number(lit), nil
}

// literal reads the literal word at b.i (true, false or null).
func (b *treeBuilder) literal(word string) error {
	if len(b.in)-b.i < len(word) || string(b.in[b.i:b.i+len(word)]) != word {
		return errSyntax
	}
	b.i += len(word)
	return nil
}

func (b *treeBuilder) value() (any, error) {
	switch c := b.next(); c {
	case '"':
		return b.text()
	case '{':
		return b.object()
	case '[':
		return b.array()
	case 't', 'f':
		word := "true"
		if c == 'f' {
			word = "false"
		}
		if err := b.literal(word); err != nil {
			return nil, err
		}
		if b.schema && !b.skip {
			if err := b.weigh(b.pointer); err != nil {
				return nil, err
			}
		}
		return c == 't', nil
	case 'n':
		return nil, b.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return b.number()
	}
	return nil, errSyntax
}

// enter opens the object or array at b.i.
func (b *treeBuilder) enter() error {
	b.i++
	b.depth++
	switch {
	case b.skip && b.depth > skipDepth:
		return errSyntax
	case !b.skip && b.depth > b.maxDepth:
		return errDepth
	}
	return nil
}

// after reads the ',' or the closing byte that follows a member or an element, and tells
// whether the container goes on.
func (b *treeBuilder) after(closing byte) (more bool, err error) {
	switch b.next() {
	case ',':
		b.i++
		return true, nil
	case closing:
		b.i++
		b.depth--
		return false, nil
	}
	return false, errSyntax
}

func (b *treeBuilder) object() (any, error) {
	if err := b.enter(); err != nil {
		return nil, err
	}
	var obj map[string]any
	if !b.skip {
		if b.schema {
			if err := b.weigh(b.pointer); err != nil {
				return nil, err
			}
		}
		obj = make(map[string]any)
	}
	if b.next() == '}' {
		b.i++
		b.depth--
		return obj, nil
	}
	for {
		if b.next() != '"' {
			return nil, errSyntax
		}
		key, err := b.text()
		if err != nil {
			return nil, err
		}
		if _, dup := obj[key]; dup && !b.skip {
			return nil, errDuplicateName
		}
		if b.next() != ':' {
			return nil, errSyntax
		}
		b.i++
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
		if !b.skip {
			// The compiler also compares every resource and dynamic anchor with every other.
			if name, ok := v.(string); ok && b.schema && (key == "$id" || key == "id" || key == "$dynamicAnchor") {
				if err := b.weigh(len(name)); err != nil {
					return nil, err
				}
			}
			obj[key] = v
		}
		if more, err := b.after('}'); err != nil || !more {
			return obj, err
		}
	}
}

func (b *treeBuilder) array() (any, error) {
	if err := b.enter(); err != nil {
		return nil, err
	}
	var arr []any
	if !b.skip {
		arr = make([]any, 0, 4)
	}
	if b.next() == ']' {
		b.i++
		b.depth--
		return arr, nil
	}
	for n := 0; ; n++ {
		// An element's pointer adds "/" and its index.
		step := 0
		if b.schema {
			step = 1 + decimalDigits(n)
			b.pointer += step
		}
		v, err := b.value()
		if err != nil {
			return nil, err
		}
		b.pointer -= step
		if !b.skip {
			arr = append(arr, v)
		}
		if more, err := b.after(']'); err != nil || !more {
			return arr, err
		}
	}
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
