package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// errDepth and errNumberRange are the two things the tree builder rejects beyond JSON syntax.
var (
	errDepth       = errors.New("nests deeper than the limit")
	errNumberRange = errors.New("has a number outside the range of IEEE-754 double precision")
	errNumberSize  = errors.New("has a number with more than 1000 significant digits or an exponent beyond ±400")
)

// syntaxProblem turns a jsontext error into a problem phrase that never echoes the input: the
// library's own messages quote the offending bytes, so only the class of error and its offset
// are kept.
func syntaxProblem(err error, offset int64) string {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		return "has a duplicate object member name"
	case errors.As(err, &se) && bytes.Contains([]byte(se.Error()), []byte("UTF-8")):
		return fmt.Sprintf("contains invalid UTF-8 (near byte %d)", offset)
	case errors.As(err, &se) && bytes.Contains([]byte(se.Error()), []byte("surrogate")):
		return fmt.Sprintf("contains an invalid or lone UTF-16 surrogate escape (near byte %d)", offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "is truncated JSON"
	}
	return fmt.Sprintf("is not valid JSON (near byte %d)", offset)
}

// errDuplicateName is a repeated member name found by the tree builder itself: readObject's
// decoder leaves duplicate detection to it (see readObject).
var errDuplicateName = fmt.Errorf("tree: %w", jsontext.ErrDuplicateName)

// isTreeLimit tells the tree builder's own refusals from syntax errors.
func isTreeLimit(err error) bool {
	return errors.Is(err, errDepth) || errors.Is(err, errNumberRange) || errors.Is(err, errNumberSize)
}

// treeBuilder turns one JSON value into the engine's tree (nil, bool, string, json.Number,
// []any, map[string]any), enforcing the depth limit and the float64 range of numbers.
type treeBuilder struct {
	dec      *jsontext.Decoder
	maxDepth int
	base     int // depth of the value's container in the whole body
}

// decodeTree parses raw (already known to be valid JSON) into a tree. base is the nesting depth
// at which raw sits inside the request body, so the limit applies to the body as a whole.
func decodeTree(raw []byte, maxDepth, base int) (any, error) {
	b := treeBuilder{dec: jsontext.NewDecoder(bytes.NewBuffer(raw)), maxDepth: maxDepth, base: base}
	return b.value()
}

func (b *treeBuilder) value() (any, error) {
	tok, err := b.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case '"':
		return tok.String(), nil
	case '0':
		lit := tok.String()
		if _, err := strconv.ParseFloat(lit, 64); err != nil {
			return nil, errNumberRange
		}
		// Literals such as 1e-1999999 parse as 0 but cost exact arithmetic dearly: refuse them.
		if p, ok := splitNumber(lit); !ok || p.check() != nil {
			return nil, errNumberSize
		}
		return json.Number(lit), nil
	case '{':
		if b.base+b.dec.StackDepth() > b.maxDepth {
			return nil, errDepth
		}
		obj := make(map[string]any)
		for b.dec.PeekKind() != '}' {
			name, err := b.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := name.String() // the token is void once the decoder moves on
			if _, dup := obj[key]; dup {
				return nil, errDuplicateName
			}
			v, err := b.value()
			if err != nil {
				return nil, err
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
			v, err := b.value()
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := b.dec.ReadToken(); err != nil {
			return nil, err
		}
		return arr, nil
	}
	return nil, fmt.Errorf("unexpected token kind %v", tok.Kind())
}
