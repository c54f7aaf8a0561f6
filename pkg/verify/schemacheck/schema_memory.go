package schemacheck

import (
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"regexp/syntax"
	"strconv"
)

// What compiling a schema may keep, at most, by what its document holds (an upper bound of what
// HeapBytes measures afterwards, held to it by pkg/verify's TestSchemaMemoryMeasured over schemas
// of every shape the reviewers named): an object or boolean may become a subschema (the library's
// schema object, the walker's node, their location strings and the parent's map or slice entries)
// and a member a map entry, a bound or a copy of a list; an array keeps its items' interface
// values; a string or number its bytes, boxed, and, in an enum, a set entry. A location string
// grows with the subschema's JSON pointer. A regular expression keeps its program: its instructions
// (and their copy in the one-pass program of an anchored pattern), a character class 4 bytes per
// rune of its ranges in each (\p{L} has 1,300), plus the pattern's own objects. The constants are
// set above what each part keeps; TestSchemaMemoryMeasured holds the bound above the measured
// charge.
const (
	schemaBoundObject     = 1800
	schemaBoundMember     = 192
	schemaBoundArray      = 96
	schemaBoundItem       = 32
	schemaBoundScalar     = 128
	schemaBoundPerByte    = 2 // a key, string or number literal, counted twice (it may be copied)
	schemaBoundPointer    = 3 // per byte of a subschema's JSON pointer (its location strings)
	schemaBoundPattern    = 2048
	schemaBoundInst       = 160
	schemaBoundRune       = 8
	schemaBoundRegexLimit = 1 << 40 // where a pattern's bound stops growing, far above MaxSchemaMemory
)

// MemoryBound is an upper bound of the bytes that compiling doc would keep (see the
// schemaBound constants), computed from the document alone, before anything is compiled: the
// compiler's own working memory grows with the same things, so refusing a schema past
// MaxSchemaMemory here bounds what one request may make the process allocate as well as what the
// cache would have to hold.
func MemoryBound(doc any) int {
	total := 0
	var walk func(v any, pointer int)
	walk = func(v any, pointer int) {
		switch v := v.(type) {
		case map[string]any:
			total += schemaBoundObject + schemaBoundPointer*pointer
			for k, e := range v {
				total += schemaBoundMember + schemaBoundPerByte*len(k)
				walk(e, pointer+1+len(k))
			}
			if p, ok := v["pattern"].(string); ok {
				total += schemaRegexBound(p)
			}
			if pp, ok := v["patternProperties"].(map[string]any); ok {
				for p := range pp {
					total += schemaRegexBound(p)
				}
			}
		case []any:
			total += schemaBoundArray + schemaBoundItem*len(v)
			for i, e := range v {
				walk(e, pointer+1+len(strconv.Itoa(i)))
			}
		case bool:
			total += schemaBoundObject + schemaBoundPointer*pointer
		case string:
			total += schemaBoundScalar + schemaBoundPerByte*len(v)
		case nil:
			total += schemaBoundItem
		default:
			lit, _ := jsonvalue.NumberLiteral(v)
			total += schemaBoundScalar + schemaBoundPerByte*len(lit)
		}
	}
	walk(doc, 0)
	return total
}

// schemaRegexBound bounds what a compiled pattern keeps: the program of its RE2 translation
// (patterns are ECMA-262, and the translation is what compiles: \d and . become classes), as
// schRegexSize measures it. A pattern that does not translate or parse keeps nothing (the
// compiler refuses it).
func schemaRegexBound(pattern string) int {
	t, err := ecmaTranslate(pattern)
	if err != nil {
		return 0
	}
	re, err := syntax.Parse(t.re2, syntax.Perl)
	if err != nil {
		return 0
	}
	return schemaBoundPattern + schemaRegexTreeBound(re)
}

// schemaRegexTreeBound follows schRegexTreeSize (the program's instructions), weighing each
// instruction by what it keeps: a character class also its ranges' runes.
func schemaRegexTreeBound(re *syntax.Regexp) int {
	var n int
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune) * (schemaBoundInst + schemaBoundRune)
	case syntax.OpCharClass:
		n = schemaBoundInst + schemaBoundRune*len(re.Rune)
	case syntax.OpCapture, syntax.OpStar:
		n = 2*schemaBoundInst + schemaRegexTreeBound(re.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		n = schemaBoundInst + schemaRegexTreeBound(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		n = len(re.Sub) * schemaBoundInst
		for _, sub := range re.Sub {
			n += schemaRegexTreeBound(sub)
		}
	case syntax.OpRepeat:
		// Counts are at most 1000 and a sub-bound at most schemaBoundRegexLimit: no overflow.
		sub := schemaRegexTreeBound(re.Sub[0])
		optional := re.Max - re.Min
		if re.Max < 0 {
			optional = 1
		}
		n = re.Min*sub + optional*(sub+schemaBoundInst)
	default:
		n = schemaBoundInst
	}
	return min(n, schemaBoundRegexLimit)
}

// schemaMemoryError is the 422 for a schema whose compiled form would keep more than
// MaxSchemaMemory.
func schemaMemoryError() error {
	return schemaProblem(fmt.Sprintf("would take more memory to compile than the limit of %d MiB for one schema "+
		"(every subschema counts about 2 KB, every value in enum, const, default or examples its size, "+
		"every pattern its compiled program, a character class such as \\p{L} about 10 KB per repetition)", MaxSchemaMemory>>20),
		"Send a smaller schema: share repeated parts through $defs and $ref, keep enum and const values short, "+
			"and use narrow character classes and few repetitions in patterns (maxLength bounds a length far more cheaply).")
}
