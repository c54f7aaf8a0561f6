package schemacheck

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaBaseURL is where the caller's schema is registered with the compiler. It is deliberately
// neither a file: URL (the library's default loader would read relative references from disk) nor
// an opaque urn: (a relative $ref against an opaque base resolves to the document itself, and a
// relative $id would collide with it), and the custom scheme cannot name anything on a network.
// Every reference that leaves the document is refused by schemaRefusingLoader whatever its URL.
const schemaBaseURL = "verifier://local/expected_schema.json"

// errSchemaRemoteRefused is what the loader answers for every URL: remote references are never
// fetched (SPEC §4.1, §14).
var errSchemaRemoteRefused = errors.New("remote references are never fetched")

// schemaRefusingLoader is the compiler's only loader. It refuses every URL: file:, http(s):, and a
// relative reference resolved against schemaBaseURL alike. The drafts' meta-schemas are embedded in
// the library and resolve before a loader is consulted.
type schemaRefusingLoader struct{}

func (schemaRefusingLoader) Load(string) (any, error) { return nil, errSchemaRemoteRefused }

// Schema is a compiled expected_schema together with the graph the counting walker follows. It is
// immutable once built, so one compiled schema serves any number of concurrent checks (the cache
// shares it between requests).
type Schema struct {
	lib  *jsonschema.Schema
	root *schNode
}

// Compile compiles the caller's expected_schema (a decoded tree: an object or a boolean).
// strict turns on content assertion (contentEncoding, contentMediaType, contentSchema), which
// SPEC §4.2 asserts only under strict_content_check; formats are always asserted. Every error is an
// *apperr.Error (422 on field expected_schema) whose message never echoes the caller's input. The
// tree must not be modified afterwards: the compiled schema keeps references into it (enum and
// const values).
func Compile(doc any, strict bool) (*Schema, error) {
	return compileSchema(doc, strict, jsonschema.Draft2020)
}

// compileSchema is Compile with the draft used when $schema is absent; the test suite runs
// its draft-7 files through it.
func compileSchema(doc any, strict bool, defaultDraft *jsonschema.Draft) (s *Schema, err error) {
	switch doc.(type) {
	case bool, map[string]any:
	default:
		return nil, schemaProblem("must be a JSON Schema (an object or a boolean)",
			"Send a JSON Schema object such as {\"type\":\"object\"}, or true/false.")
	}
	if d, ok := doc.(map[string]any); ok {
		if v, ok := d["$schema"].(string); ok && !schemaKnownDialect(v) {
			return nil, schemaDialectError()
		}
	}
	if _, _, err := schemaPatterns(doc); err != nil {
		return nil, err
	}
	if MemoryBound(doc) > MaxSchemaMemory {
		return nil, schemaMemoryError()
	}
	defer func() {
		// The library has internal consistency panics; no input may crash the service.
		if r := recover(); r != nil {
			s, err = nil, schemaProblem("could not be compiled", schemaFixGeneric)
		}
	}()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(defaultDraft)
	c.UseLoader(schemaRefusingLoader{})
	c.AssertFormat()
	for _, f := range schemaFormatCheckers {
		c.RegisterFormat(f)
	}
	if strict {
		c.AssertContent()
	}
	// Patterns are ECMA-262 run on Go's regexp (RE2, linear time): hostile patterns cannot
	// backtrack, and what RE2 cannot run is refused below.
	c.UseRegexpEngine(schemaRegexpEngine)
	if err := c.AddResource(schemaBaseURL, doc); err != nil {
		return nil, schemaProblem("could not be compiled", schemaFixGeneric)
	}
	lib, err := c.Compile(schemaBaseURL)
	if err != nil {
		return nil, schemaCompileError(doc, err)
	}
	if err := schemaCheckFormats(doc, schemaDraftVersion(defaultDraft)); err != nil {
		return nil, err
	}
	if err := schemaCheckRunnablePatterns(doc); err != nil {
		return nil, err
	}
	return &Schema{lib: lib, root: schBuildGraph(lib, &schemaResources{doc: doc, compiler: c})}, nil
}

// schemaPatterns counts the regular expressions of a schema document (pattern values and
// patternProperties keys) and adds up their estimated program sizes, refusing a schema past
// MaxSchemaPatterns or MaxSchemaPatternSize before anything compiles them: compiling is what
// costs the time and memory. A pattern that does not parse counts for nothing here; the compiler
// reports it.
func schemaPatterns(doc any) (count, size int, err error) {
	add := func(p string) bool {
		n, perr := schRegexSize(p)
		if perr != nil {
			return true
		}
		count++
		size += n
		return count <= MaxSchemaPatterns && size <= MaxSchemaPatternSize
	}
	within := true
	schemaRawWalk(doc, func(obj map[string]any, _ []string, _ string) bool {
		if p, ok := obj["pattern"].(string); ok && !add(p) {
			within = false
			return false
		}
		if pp, ok := obj["patternProperties"].(map[string]any); ok {
			for p := range pp {
				if !add(p) {
					within = false
					return false
				}
			}
		}
		return true
	})
	if !within {
		return 0, 0, schemaProblem(fmt.Sprintf("has too many or too large patterns: at most %d patterns and patternProperties, "+
			"compiling to at most %d regular-expression instructions in all", MaxSchemaPatterns, MaxSchemaPatternSize),
			"Use fewer patterns, or shorter ones: a counted repetition such as .{1000} compiles to a thousand instructions; maxLength bounds a length far more cheaply.")
	}
	return count, size, nil
}

const schemaFixGeneric = "Send a valid JSON Schema (draft 2020-12 unless $schema names draft 4, 6, 7 or 2019-09)."

// schemaProblem is the one shape of every compile error.
func schemaProblem(problem, fix string) *apperr.Error {
	return apperr.Field("expected_schema", problem, fix)
}

func schemaDialectError() *apperr.Error {
	return schemaProblem("uses an unsupported dialect: $schema must name JSON Schema draft 4, 6, 7, 2019-09 or 2020-12",
		"Set $schema to \"https://json-schema.org/draft/2020-12/schema\" (or draft 4, 6, 7, 2019-09), or leave it out for 2020-12.")
}

// schemaKnownDialect mirrors the library's list of built-in drafts, so that an unknown $schema is
// reported as an unsupported dialect instead of an attempt to load it.
func schemaKnownDialect(u string) bool { return schemaDialectVersion(u) != 0 }

// schemaDialectVersion is the draft a $schema value names (4, 6, 7, 2019 or 2020; the
// unversioned json-schema.org/schema is the latest, 2020-12), or 0 for none the library knows.
func schemaDialectVersion(u string) int {
	u, frag, _ := strings.Cut(u, "#")
	if frag != "" {
		return 0
	}
	if v, ok := strings.CutPrefix(u, "http://"); ok {
		u = v
	} else {
		u = strings.TrimPrefix(u, "https://")
	}
	switch u {
	case "json-schema.org/schema", "json-schema.org/draft/2020-12/schema":
		return 2020
	case "json-schema.org/draft/2019-09/schema":
		return 2019
	case "json-schema.org/draft-07/schema":
		return 7
	case "json-schema.org/draft-06/schema":
		return 6
	case "json-schema.org/draft-04/schema":
		return 4
	}
	return 0
}

// schemaDraftVersion is the version number of one of the library's drafts.
func schemaDraftVersion(d *jsonschema.Draft) int {
	switch d {
	case jsonschema.Draft4:
		return 4
	case jsonschema.Draft6:
		return 6
	case jsonschema.Draft7:
		return 7
	case jsonschema.Draft2019:
		return 2019
	}
	return 2020
}

// schemaCompileError turns a library error into a safe 422: it names where in the schema the
// problem is (built from the schema's structure, keys shortened) and never quotes the library's
// message, which embeds the caller's values.
func schemaCompileError(doc any, err error) error {
	var (
		sve  *jsonschema.SchemaValidationError
		lue  *jsonschema.LoadURLError
		rxe  *jsonschema.InvalidRegexError
		anf  *jsonschema.AnchorNotFoundError
		pnf  *jsonschema.JSONPointerNotFoundError
		ijp  *jsonschema.InvalidJsonPointerError
		did  *jsonschema.DuplicateIDError
		dan  *jsonschema.DuplicateAnchorError
		pue  *jsonschema.ParseURLError
		pie  *jsonschema.ParseIDError
		pae  *jsonschema.ParseAnchorError
		udr  *jsonschema.UnsupportedDraftError
		msc  *jsonschema.MetaSchemaCycleError
		imu  *jsonschema.InvalidMetaSchemaURLError
		mmm  *jsonschema.MetaSchemaMismatchError
		uvoc *jsonschema.UnsupportedVocabularyError
	)
	switch {
	case errors.As(err, &sve):
		return schemaMetaError(doc, sve)
	case errors.As(err, &lue):
		if schemaIsDialectURL(doc, lue.URL) {
			return schemaDialectError()
		}
		where := ""
		if loc := schemaFindRef(doc, lue.URL); loc != "" {
			where = " (at " + loc + ")"
		}
		return schemaProblem("has a $ref to a document outside itself"+where+"; remote and file references are never fetched",
			"Inline the referenced schema under $defs and refer to it locally, e.g. {\"$ref\":\"#/$defs/item\"}.")
	case errors.As(err, &rxe):
		loc := schemaLocFromURL(doc, rxe.URL)
		return schemaProblem(fmt.Sprintf("has a pattern the verifier cannot compile at %s: it %s", loc, schemaRegexProblem(rxe.Regex)), schemaFixRegex)
	case errors.As(err, &anf):
		return schemaProblem("has a $ref to an anchor that is not defined in the document", "Define the anchor or correct the $ref.")
	case errors.As(err, &pnf), errors.As(err, &ijp):
		return schemaProblem("has a $ref to a JSON pointer that does not exist in the document", "Point the $ref at an existing location, e.g. \"#/$defs/item\".")
	case errors.As(err, &did):
		return schemaProblem("declares the same $id twice", "Give every embedded resource a distinct $id.")
	case errors.As(err, &dan):
		return schemaProblem("declares the same anchor twice", "Give every $anchor a distinct name within its resource.")
	case errors.As(err, &pue), errors.As(err, &pie), errors.As(err, &pae):
		return schemaProblem("has a malformed URI reference in $ref, $id or an anchor", "Use RFC 3986 URI references.")
	case errors.As(err, &udr), errors.As(err, &msc), errors.As(err, &imu), errors.As(err, &mmm), errors.As(err, &uvoc):
		return schemaDialectError()
	}
	return schemaProblem("could not be compiled", schemaFixGeneric)
}

const schemaFixRegex = "Write the pattern in ECMA-262 syntax without lookaround, backreferences or repetition counts above 1000: " +
	"patterns run on RE2, which takes linear time and never backtracks (match a wider pattern and add another keyword, such as not or maxLength, for the rest)."

// schemaMetaError explains a schema that is invalid against its meta-schema: the deepest failing
// location in the schema, and what is wrong there in the meta-schema's terms.
func schemaMetaError(doc any, sve *jsonschema.SchemaValidationError) error {
	verr, ok := sve.Err.(*jsonschema.ValidationError)
	if !ok {
		return schemaProblem("is not a valid JSON Schema", schemaFixGeneric)
	}
	// A pattern the regex engine rejects shows up as a failed "regex" format anywhere in the tree.
	if at, got, inName := schemaFindRegexFailure(verr, nil, false); at != nil {
		loc := schemaLocFromTokens(doc, at)
		pat, _ := got.(string)
		if inName {
			return schemaProblem(fmt.Sprintf("has a property name at %s that is a pattern the verifier cannot compile: it %s", loc, schemaRegexProblem(pat)), schemaFixRegex)
		}
		return schemaProblem(fmt.Sprintf("has a pattern the verifier cannot compile at %s: it %s", loc, schemaRegexProblem(pat)), schemaFixRegex)
	}
	leaf := schemaDeepestLeaf(verr)
	loc := schemaLocFromTokens(doc, leaf.InstanceLocation)
	var what string
	switch k := leaf.ErrorKind.(type) {
	case *kind.Type:
		what = fmt.Sprintf("is %s where the meta-schema expects %s", schemaArticle(k.Got), strings.Join(k.Want, " or "))
	case *kind.Minimum:
		what = "is below the meta-schema's minimum " + k.Want.RatString()
	case *kind.Required:
		what = "misses " + strings.Join(k.Missing, ", ") + ", which the meta-schema requires"
	case *kind.UniqueItems:
		what = "has duplicate items, which the meta-schema forbids"
	case *kind.MinItems:
		what = fmt.Sprintf("has fewer than %d items, which the meta-schema forbids", k.Want)
	case *kind.Format:
		what = "is not a valid " + k.Want
	default:
		got := schJSONType(schLookup(doc, leaf.InstanceLocation))
		kw := ""
		if p := leaf.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = " (meta-schema keyword " + p[len(p)-1] + ")"
		}
		what = "is " + schemaArticle(got) + ", which the meta-schema does not allow there" + kw
	}
	return schemaProblem("is not a valid JSON Schema: "+loc+" "+what,
		"Correct that keyword so the schema is valid for its draft (2020-12 unless $schema names another).")
}

func schemaArticle(t string) string {
	switch t {
	case "":
		return "a value"
	case "array", "object", "integer":
		return "an " + t
	}
	return "a " + t
}

// schemaFindRegexFailure finds a failed "regex" format in a meta-schema validation tree, the one
// at the first location in schemaLocLess's order when there are several. For patternProperties
// the failure sits under a propertyNames error whose own location is the object holding the
// pattern.
func schemaFindRegexFailure(e *jsonschema.ValidationError, nameAt []string, inName bool) ([]string, any, bool) {
	if f, ok := e.ErrorKind.(*kind.Format); ok && f.Want == "regex" {
		if inName {
			return nameAt, f.Got, true
		}
		return e.InstanceLocation, f.Got, false
	}
	if _, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		nameAt, inName = e.InstanceLocation, true
	}
	var (
		bestAt  []string
		bestGot any
		bestIn  bool
	)
	for _, c := range e.Causes {
		at, got, in := schemaFindRegexFailure(c, nameAt, inName)
		if at == nil {
			continue
		}
		// Two patterns under one name object share its location: the pattern text decides.
		gs, _ := got.(string)
		bs, _ := bestGot.(string)
		if bestAt == nil || schemaLocLess(at, bestAt) || !schemaLocLess(bestAt, at) && gs < bs {
			bestAt, bestGot, bestIn = at, got, in
		}
	}
	return bestAt, bestGot, bestIn
}

// schemaDeepestLeaf picks the leaf error with the longest instance location (the most precise
// place); among those, the first in schemaLocLess's order, then by the meta-schema keyword that
// failed. The library builds its error tree in map order, so the tree's own order would let
// identical requests get different answers.
func schemaDeepestLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return e
	}
	var best *jsonschema.ValidationError
	for _, c := range e.Causes {
		l := schemaDeepestLeaf(c)
		switch {
		case best == nil, len(l.InstanceLocation) > len(best.InstanceLocation):
			best = l
		case len(l.InstanceLocation) < len(best.InstanceLocation):
		case schemaLocLess(l.InstanceLocation, best.InstanceLocation),
			!schemaLocLess(best.InstanceLocation, l.InstanceLocation) &&
				slices.Compare(l.ErrorKind.KeywordPath(), best.ErrorKind.KeywordPath()) < 0:
			best = l
		}
	}
	return best
}

// schemaLocLess orders instance locations token by token.
func schemaLocLess(a, b []string) bool { return slices.Compare(a, b) < 0 }

// schemaCheckRunnablePatterns refuses a schema whose pattern or patternProperties, anywhere a
// subschema can be, is ECMA-262 that RE2 cannot run (lookaround, backreferences, repetition
// counts above 1000): the verifier never runs a pattern on a backtracking engine, and a pattern
// it cannot run would check nothing. Each one is named by its location and construct.
func schemaCheckRunnablePatterns(doc any) error {
	var bad apperr.Problems
	schemaSubschemas(doc, func(obj map[string]any, ptr []string) {
		if p, ok := obj["pattern"].(string); ok {
			if t, err := ecmaTranslate(p); err == nil && t.unrunnable != "" {
				bad.Add("expected_schema", fmt.Sprintf("has a pattern RE2 cannot run at %s: it %s",
					schemaLocFromTokens(doc, append(slices.Clip(ptr), "pattern")), t.unrunnable), schemaFixRegex)
			}
		}
		if pp, ok := obj["patternProperties"].(map[string]any); ok {
			for _, p := range slices.Sorted(maps.Keys(pp)) {
				if t, err := ecmaTranslate(p); err == nil && t.unrunnable != "" {
					bad.Add("expected_schema", fmt.Sprintf("has a pattern RE2 cannot run at %s: it %s",
						schemaLocFromTokens(doc, append(slices.Clip(ptr), "patternProperties")), t.unrunnable), schemaFixRegex)
				}
			}
		}
	})
	if bad.Count() > 0 {
		return bad.Err()
	}
	return nil
}

// schemaRE2Problem names the construct that keeps RE2 from compiling pattern, as a phrase that
// follows "it". Only the offending construct's own few characters are ever shown.
func schemaRE2Problem(pattern string) string {
	_, err := syntax.Parse(pattern, syntax.Perl)
	var se *syntax.Error
	if !errors.As(err, &se) {
		return "is not a pattern RE2 can compile"
	}
	expr := se.Expr
	// Go reads "(?<" as the start of a named group, so lookbehinds arrive as either code.
	switch {
	case strings.HasPrefix(expr, "(?="):
		return "uses a lookahead, which RE2 does not support"
	case strings.HasPrefix(expr, "(?!"):
		return "uses a negative lookahead, which RE2 does not support"
	case strings.HasPrefix(expr, "(?<="):
		return "uses a lookbehind, which RE2 does not support"
	case strings.HasPrefix(expr, "(?<!"):
		return "uses a negative lookbehind, which RE2 does not support"
	case strings.HasPrefix(expr, "(?>"):
		return "uses an atomic group, which RE2 does not support"
	case strings.HasPrefix(expr, "(?("):
		return "uses a conditional group, which RE2 does not support"
	}
	switch se.Code {
	case syntax.ErrInvalidPerlOp:
		return "uses a (?...) group syntax RE2 does not support"
	case syntax.ErrInvalidNamedCapture:
		return "uses a named group syntax RE2 does not support"
	case syntax.ErrInvalidEscape:
		if len(expr) == 2 && expr[1] >= '1' && expr[1] <= '9' {
			return "uses a backreference, which RE2 does not support"
		}
		if strings.HasPrefix(expr, `\k`) {
			return "uses a named backreference, which RE2 does not support"
		}
		if len(expr) <= 8 && utf8.ValidString(expr) {
			return "uses the escape " + strconv.Quote(expr) + ", which RE2 does not support"
		}
		return "uses an escape RE2 does not support"
	case syntax.ErrInvalidRepeatOp:
		return "uses a possessive or doubled quantifier, which RE2 does not support"
	case syntax.ErrInvalidRepeatSize:
		return "uses a repetition count above 1000, which RE2 does not support"
	case syntax.ErrLarge, syntax.ErrNestingDepth:
		return "is too large or too deeply nested for RE2"
	case syntax.ErrInvalidCharRange:
		return "uses a character class or range RE2 does not support"
	}
	return "is not a valid regular expression (" + se.Code.String() + ")"
}

// schRegexSize estimates the size of the program Go's regexp compiles pattern (ECMA-262, translated to RE2) to, in
// instructions, from its parse tree, without compiling it: compiling is what costs time and
// memory (.{1000} is seven characters and a thousand instructions). The estimate follows
// regexp/syntax's own size check and saturates at schRegexSizeMax.
func schRegexSize(pattern string) (int, error) {
	t, err := ecmaTranslate(pattern)
	if err != nil {
		return 0, err
	}
	re, err := syntax.Parse(t.re2, syntax.Perl)
	if err != nil {
		return 0, err
	}
	return schRegexTreeSize(re), nil
}

// schRegexSizeMax is where size estimates stop growing, far above every cap and charge.
const schRegexSizeMax = 1 << 30

func schRegexTreeSize(re *syntax.Regexp) int {
	var n int
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpCapture, syntax.OpStar:
		n = 2 + schRegexTreeSize(re.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		n = 1 + schRegexTreeSize(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		n = len(re.Sub)
		for _, sub := range re.Sub {
			n += schRegexTreeSize(sub)
		}
	case syntax.OpRepeat:
		// x{n,m} compiles to n copies of x and m-n optional ones; x{n,} to n copies and a star.
		// Sizes are at most schRegexSizeMax and counts at most 1000: no overflow.
		sub := schRegexTreeSize(re.Sub[0])
		optional := re.Max - re.Min
		if re.Max < 0 {
			optional = 1
		}
		n = re.Min*sub + optional*(sub+1)
	default:
		n = 1
	}
	return min(n, schRegexSizeMax)
}

// schemaFormatFix lists the formats the draft in use defines, for every 422 naming an unknown one.
func schemaFormatFix(draft int) string {
	return "Use one of the formats " + schemaDraftName(draft) + " defines: " + strings.Join(schemaDraftFormats[draft], ", ") +
		"; or remove the keyword, since a format nothing knows checks nothing."
}

// schemaDraftName names a draft as $schema and the docs do.
func schemaDraftName(draft int) string {
	switch draft {
	case 2019:
		return "draft 2019-09"
	case 2020:
		return "draft 2020-12"
	}
	return "draft " + strconv.Itoa(draft)
}

// schemaCheckFormats refuses a schema whose format keyword, anywhere a subschema can be, names a
// format the draft in force there does not define (schemaDraftFormats): the library would ignore
// it, and a misspelt "emial" would pass every value while the caller believes addresses are
// checked. Formats are asserted, so an unknown one is an error in the request, like an unknown
// field. Each one is named by its location; its name is not shown, as it is the caller's text.
func schemaCheckFormats(doc any, defaultDraft int) error {
	var bad apperr.Problems
	schemaSubschemas(doc, func(obj map[string]any, ptr []string) {
		f, ok := obj["format"].(string)
		if !ok {
			return
		}
		if draft := schemaDraftAt(doc, ptr, defaultDraft); !slices.Contains(schemaDraftFormats[draft], f) {
			bad.Add("expected_schema", "has a format the verifier does not know at "+schemaLocFromTokens(doc, append(slices.Clip(ptr), "format")),
				schemaFormatFix(draft))
		}
	})
	if bad.Count() > 0 {
		return bad.Err()
	}
	return nil
}

// schemaDraftAt is the draft in force at ptr: that of the nearest enclosing resource (the root,
// or an object with an $id, or id before draft 6) that names one with $schema, as the library
// decides it, else defaultDraft.
func schemaDraftAt(doc any, ptr []string, defaultDraft int) int {
	draft := defaultDraft
	cur := doc
	for i := 0; ; i++ {
		if obj, ok := cur.(map[string]any); ok {
			_, hasID := obj["$id"].(string)
			_, hasOldID := obj["id"].(string)
			if v, ok := obj["$schema"].(string); ok && (i == 0 || hasID || hasOldID) {
				if d := schemaDialectVersion(v); d != 0 {
					draft = d
				}
			}
		}
		if i == len(ptr) {
			return draft
		}
		cur = schLookup(cur, ptr[i:i+1])
	}
}

// Where subschemas sit, by keyword, in every draft the verifier supports (a keyword of one draft
// only is unknown to the others, but its value is clearly meant as schemas wherever it is written).
var (
	// schemaOneKeywords take one subschema.
	schemaOneKeywords = []string{"additionalItems", "additionalProperties", "contains", "contentSchema", "else",
		"if", "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	// schemaListKeywords take an array of subschemas (items did before 2020-12).
	schemaListKeywords = []string{"allOf", "anyOf", "items", "oneOf", "prefixItems"}
	// schemaMapKeywords take an object whose member values are subschemas (dependencies also takes
	// arrays of names there, which are not).
	schemaMapKeywords = []string{"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties", "properties"}
)

// schemaSubschemas visits every object of a raw schema that is a subschema, once, with its JSON
// pointer tokens: the root, the values of the keywords that take subschemas, and what a local
// reference points at ({"$ref": "#/x/y"} makes x.y a subschema even under a keyword the drafts do
// not know). Values that are data (const, enum, default, examples, unknown keywords), and the
// names under properties, are never visited as schemas, so a property called "format" is not a
// format keyword. Members are visited in sorted order, so the answer is the same every time.
func schemaSubschemas(doc any, visit func(obj map[string]any, ptr []string)) {
	type ref struct{ base, frag string }
	var (
		seen  = map[string]bool{}
		roots = map[string][]string{schemaBaseURL: nil} // resource base URI → pointer of its root
		refs  []ref
		walk  func(v any, ptr []string, base string)
	)
	walk = func(v any, ptr []string, base string) {
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		if key := strings.Join(ptr, "\x00"); seen[key] {
			return
		} else {
			seen[key] = true
		}
		for _, idKey := range []string{"$id", "id"} {
			if id, ok := obj[idKey].(string); ok {
				if r := schemaResolveURL(base, id); r != "" {
					base = r
					if _, known := roots[r]; !known {
						roots[r] = slices.Clone(ptr)
					}
				}
				break
			}
		}
		visit(obj, ptr)
		for _, kw := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
			if r, ok := obj[kw].(string); ok {
				if _, frag, _ := strings.Cut(r, "#"); frag == "" || strings.HasPrefix(frag, "/") {
					refs = append(refs, ref{schemaResolveURL(base, r), frag})
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			sub := append(slices.Clip(ptr), k)
			switch {
			case slices.Contains(schemaMapKeywords, k):
				if m, ok := obj[k].(map[string]any); ok {
					for _, name := range slices.Sorted(maps.Keys(m)) {
						walk(m[name], append(slices.Clip(sub), name), base)
					}
				}
			case slices.Contains(schemaListKeywords, k) && schIsArray(obj[k]):
				for i, e := range obj[k].([]any) {
					walk(e, append(slices.Clip(sub), strconv.Itoa(i)), base)
				}
			case slices.Contains(schemaOneKeywords, k):
				walk(obj[k], sub, base)
			}
		}
	}
	walk(doc, nil, schemaBaseURL)
	// A reference's target may hold references of its own: refs grows while it is read.
	for i := 0; i < len(refs); i++ {
		root, ok := roots[refs[i].base]
		if !ok {
			continue // another document, which the compiler has refused already
		}
		toks := append(slices.Clip(root), schemaPointerTokens(refs[i].frag)...)
		walk(schLookup(doc, toks), toks, refs[i].base)
	}
}

// schIsArray tells whether v is a JSON array.
func schIsArray(v any) bool {
	_, ok := v.([]any)
	return ok
}

// schemaPointerTokens splits a URI fragment holding a JSON pointer into its unescaped tokens.
func schemaPointerTokens(frag string) []string {
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	if frag == "" {
		return nil
	}
	var toks []string
	for _, t := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		toks = append(toks, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
	}
	return toks
}

// schemaIsDialectURL tells whether a URL the compiler tried to load is one of the document's
// $schema values (an embedded resource naming an unknown dialect).
func schemaIsDialectURL(doc any, u string) bool {
	found := false
	schemaRawWalk(doc, func(obj map[string]any, _ []string, _ string) bool {
		if v, ok := obj["$schema"].(string); ok {
			if base, _, _ := strings.Cut(v, "#"); base == u {
				found = true
			}
		}
		return !found
	})
	return found
}

// schemaFindRef locates the first reference keyword whose target document is u, resolving
// references against the $id base URIs in scope, for naming it in an error.
func schemaFindRef(doc any, u string) string {
	var at string
	schemaRawWalk(doc, func(obj map[string]any, ptr []string, base string) bool {
		for _, kw := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
			ref, ok := obj[kw].(string)
			if !ok {
				continue
			}
			if target := schemaResolveURL(base, ref); target == u {
				at = schemaLocFromTokens(doc, append(slices.Clip(ptr), kw))
				return false
			}
		}
		return true
	})
	return at
}

// schemaRawWalk visits every object of a raw schema in a stable order with its JSON pointer tokens
// and the base URI in scope, skipping keyword values that are data, not schemas.
func schemaRawWalk(doc any, visit func(obj map[string]any, ptr []string, base string) bool) {
	var walk func(v any, ptr []string, base string) bool
	walk = func(v any, ptr []string, base string) bool {
		switch v := v.(type) {
		case map[string]any:
			for _, idKey := range []string{"$id", "id"} {
				if id, ok := v[idKey].(string); ok {
					if r := schemaResolveURL(base, id); r != "" {
						base = r
					}
					break
				}
			}
			if !visit(v, ptr, base) {
				return false
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				switch k {
				case "enum", "const", "default", "examples":
					continue
				}
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !walk(v[k], append(ptr, k), base) {
					return false
				}
			}
		case []any:
			for i, e := range v {
				if !walk(e, append(ptr, strconv.Itoa(i)), base) {
					return false
				}
			}
		}
		return true
	}
	walk(doc, nil, schemaBaseURL)
}

// schemaResolveURL resolves ref against base the way the library does (fragment dropped).
func schemaResolveURL(base, ref string) string {
	ref, _, _ = strings.Cut(ref, "#")
	b, err := url.Parse(base)
	if err != nil {
		return ""
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	res := b.ResolveReference(r)
	if !r.IsAbs() && b.Opaque != "" {
		res.Opaque = b.Opaque
	}
	return res.String()
}

// schemaLocFromURL turns a schema location URL of the caller's document into a display path.
func schemaLocFromURL(doc any, u string) string {
	base, frag, _ := strings.Cut(u, "#")
	if base != schemaBaseURL {
		return "expected_schema"
	}
	return schemaLocFromTokens(doc, schemaPointerTokens(frag))
}

// schemaLocFromTokens renders a location inside the schema document as "expected_schema" plus
// the report's path syntax (jsonvalue.AppendPath): a token is an index where it meets an array.
func schemaLocFromTokens(doc any, toks []string) string {
	steps := make([]jsonvalue.Step, 0, len(toks))
	cur := doc
	for _, t := range toks {
		if arr, ok := cur.([]any); ok {
			if i, err := strconv.Atoi(t); err == nil && i >= 0 && i < len(arr) {
				steps = append(steps, jsonvalue.Step{Kind: jsonvalue.StepIndex, Index: i})
				cur = arr[i]
				continue
			}
		}
		if obj, ok := cur.(map[string]any); ok {
			cur = obj[t]
		} else {
			cur = nil
		}
		steps = append(steps, jsonvalue.Step{Kind: jsonvalue.StepKey, Key: t})
	}
	return "expected_schema" + jsonvalue.Render(steps, nil)[1:]
}

// schLookup follows string tokens through a tree (array tokens are indices).
func schLookup(doc any, toks []string) any {
	cur := doc
	for _, t := range toks {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// ---- the graph the walker follows ----

// schNode mirrors one compiled *jsonschema.Schema with what the walker needs precomputed: children
// as nodes, object members in sorted order (failures come out deterministic), numeric bounds in
// int64 when they fit, and for $dynamicRef/$recursiveRef the anchors of the node's resource.
type schNode struct {
	s       *jsonschema.Schema
	boolean int8 // 1 for the schema true, -1 for false, 0 for an object schema
	draft   int

	types    uint8 // schTypeBit bits; 0 when type is absent
	minI     schBound
	maxI     schBound
	exMinI   schBound
	exMaxI   schBound
	multI    schBound
	required []string

	patternSize int                 // the estimated program size of pattern, which its matches are charged by
	enumStrs    map[string]struct{} // the strings of an enum of more than schEnumScan values

	ref, recRef *schNode
	dynRef      *schNode
	dynAnchor   string // the $dynamicRef's anchor when its initial target carries the same $dynamicAnchor

	allOf, anyOf, oneOf []*schNode
	not, ifS            *schNode
	thenS, elseS        *schNode

	props      []schNamed // sorted by name
	propMap    map[string]*schNode
	patterns   []schPattern // sorted by source
	addl       int8         // additionalProperties: 1 true, -1 false, 0 absent or a schema
	addlS      *schNode
	deps       []schDep // draft-7 dependencies, sorted
	depReq     []schDep // dependentRequired, sorted
	depSchemas []schNamed
	propNames  *schNode
	unevProps  *schNode
	unevItems  *schNode

	prefix    []*schNode // prefixItems, or items as an array before 2020
	rest      *schNode   // the schema for items after the prefix
	restFalse string     // keyword of a boolean false that forbids items after the prefix
	restAll   bool       // items after the prefix count as evaluated
	contains  *schNode
	contentS  *schNode
	declares  bool // has properties or patternProperties (content:undeclared_property)
	speaks    bool // sets additionalProperties or unevaluatedProperties

	// dynamic scope: the anchors of this node's resource (2020-12) and whether that resource
	// carries $recursiveAnchor: true (2019-09).
	resAnchors   map[string]*schNode
	resRecursive bool
}

type schNamed struct {
	name string
	n    *schNode
}

type schPattern struct {
	re   jsonschema.Regexp
	size int // estimated program size (schRegexSize)
	n    *schNode
}

type schDep struct {
	name string
	req  []string // nil for a schema dependency
	n    *schNode
}

// schBound is a numeric bound of the schema, also as an exact int64 decimal when it fits (the
// walker's fast path).
type schBound struct {
	r   *big.Rat
	d   jsonvalue.Small
	dok bool
}

// schSmallDigits is how many fractional digits a bound may have to be held as a jsonvalue.Small.
const schSmallDigits = 18

func schBoundOf(r *big.Rat) schBound {
	b := schBound{r: r}
	if r == nil {
		return b
	}
	if n, exact := r.FloatPrec(); exact && n <= schSmallDigits {
		scaled := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
		scaled.Quo(scaled, r.Denom())
		if scaled.IsInt64() && scaled.CmpAbs(big.NewInt(1e18)) < 0 {
			b.d, b.dok = jsonvalue.Small{M: scaled.Int64(), E: -n}, true
			if b.d.M == 0 {
				b.d.E = 0
			}
		}
	}
	return b
}

// schEnumScan is the largest enum a string is looked for in by scanning; a larger one keeps its
// strings in a set, so that a long enum of codes costs one lookup per value.
const schEnumScan = 16

// JSON type bits of the walker.
const (
	schTNull uint8 = 1 << iota
	schTBoolean
	schTNumber
	schTInteger
	schTString
	schTArray
	schTObject
)

// schBuildGraph converts the compiled schema graph (with its $ref cycles) into nodes, iteratively
// so that long reference chains cannot exhaust the stack.
func schBuildGraph(root *jsonschema.Schema, resources *schemaResources) *schNode {
	g := schGraph{memo: map[*jsonschema.Schema]*schNode{}}
	rootNode := g.get(root)
	g.fillQueued()
	if g.dynamic {
		g.dynamicAnchors(resources)
	}
	return rootNode
}

// schGraph builds the node graph: every schema met gets its node once (memo) and waits in queue
// until fillQueued fills it.
type schGraph struct {
	memo    map[*jsonschema.Schema]*schNode
	queue   []*schNode
	filled  int  // queue[:filled] are filled
	dynamic bool // some schema has $dynamicRef or $recursiveRef
}

// get is the node of s, queued to be filled when it is new; nil for nil.
func (g *schGraph) get(s *jsonschema.Schema) *schNode {
	if s == nil {
		return nil
	}
	if n, ok := g.memo[s]; ok {
		return n
	}
	n := &schNode{s: s}
	g.memo[s] = n
	g.queue = append(g.queue, n)
	return n
}

func (g *schGraph) list(ss []*jsonschema.Schema) []*schNode {
	if len(ss) == 0 {
		return nil
	}
	out := make([]*schNode, len(ss))
	for i, s := range ss {
		out[i] = g.get(s)
	}
	return out
}

// named is the nodes of m sorted by name.
func (g *schGraph) named(m map[string]*jsonschema.Schema) []schNamed {
	if len(m) == 0 {
		return nil
	}
	out := make([]schNamed, 0, len(m))
	for k, s := range m {
		out = append(out, schNamed{k, g.get(s)})
	}
	slices.SortFunc(out, func(a, b schNamed) int { return strings.Compare(a.name, b.name) })
	return out
}

func (g *schGraph) fillQueued() {
	for ; g.filled < len(g.queue); g.filled++ {
		g.fill(g.queue[g.filled])
	}
}

// fill sets n's fields from its schema, queueing the schemas it refers to.
func (g *schGraph) fill(n *schNode) {
	s := n.s
	n.draft = s.DraftVersion
	// The library registers one checker per format name; where a draft defines a name
	// differently, the schemas of that draft get their own, which the library's Validate and the
	// walker then share.
	s.Format = schemaFormatForDraft(s.Format, s.DraftVersion)
	if s.Bool != nil {
		n.boolean = -1
		if *s.Bool {
			n.boolean = 1
		}
		return
	}
	fillValues(n)
	g.fillApplicators(n)
	g.fillObject(n)
	g.fillArray(n)
}

// fillValues prepares the keywords that read a value: type, the numeric bounds, required,
// pattern and enum, with the texts their failures show.
func fillValues(n *schNode) {
	s := n.s
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			n.types |= schTypeBit(t)
		}
	}
	n.minI, n.maxI = schBoundOf(s.Minimum), schBoundOf(s.Maximum)
	n.exMinI, n.exMaxI = schBoundOf(s.ExclusiveMinimum), schBoundOf(s.ExclusiveMaximum)
	n.multI = schBoundOf(s.MultipleOf)
	n.required = s.Required
	if s.Pattern != nil {
		n.patternSize, _ = schRegexSize(s.Pattern.String())
	}
	if s.Enum != nil && len(s.Enum.Values) > schEnumScan {
		n.enumStrs = map[string]struct{}{}
		for _, e := range s.Enum.Values {
			if str, ok := e.(string); ok {
				n.enumStrs[str] = struct{}{}
			}
		}
	}
}

// fillApplicators links the references and the in-place applicators.
func (g *schGraph) fillApplicators(n *schNode) {
	s := n.s
	n.ref, n.recRef = g.get(s.Ref), g.get(s.RecursiveRef)
	if s.DynamicRef != nil {
		n.dynRef = g.get(s.DynamicRef.Ref)
		if s.DynamicRef.Anchor != "" && s.DynamicRef.Ref.DynamicAnchor == s.DynamicRef.Anchor {
			n.dynAnchor = s.DynamicRef.Anchor
		}
	}
	if s.RecursiveRef != nil || s.DynamicRef != nil {
		g.dynamic = true
	}
	n.allOf, n.anyOf, n.oneOf = g.list(s.AllOf), g.list(s.AnyOf), g.list(s.OneOf)
	n.not, n.ifS, n.thenS, n.elseS = g.get(s.Not), g.get(s.If), g.get(s.Then), g.get(s.Else)
	n.contentS = g.get(s.ContentSchema)
}

// fillObject links the object keywords, each list in the order the walker visits it.
func (g *schGraph) fillObject(n *schNode) {
	s := n.s
	n.props = g.named(s.Properties)
	if len(n.props) > 0 {
		n.propMap = make(map[string]*schNode, len(n.props))
		for _, p := range n.props {
			n.propMap[p.name] = p.n
		}
	}
	for re, ps := range s.PatternProperties {
		size, _ := schRegexSize(re.String()) // it compiled, so it parses
		n.patterns = append(n.patterns, schPattern{re, size, g.get(ps)})
	}
	slices.SortFunc(n.patterns, func(a, b schPattern) int { return strings.Compare(a.re.String(), b.re.String()) })
	switch a := s.AdditionalProperties.(type) {
	case bool:
		n.addl = -1
		if a {
			n.addl = 1
		}
	case *jsonschema.Schema:
		n.addlS = g.get(a)
	}
	for name, d := range s.Dependencies {
		switch d := d.(type) {
		case []string:
			n.deps = append(n.deps, schDep{name: name, req: append([]string{}, d...)})
		case *jsonschema.Schema:
			n.deps = append(n.deps, schDep{name: name, n: g.get(d)})
		}
	}
	slices.SortFunc(n.deps, func(a, b schDep) int { return strings.Compare(a.name, b.name) })
	for name, req := range s.DependentRequired {
		n.depReq = append(n.depReq, schDep{name: name, req: append([]string{}, req...)})
	}
	slices.SortFunc(n.depReq, func(a, b schDep) int { return strings.Compare(a.name, b.name) })
	n.depSchemas = g.named(s.DependentSchemas)
	n.propNames = g.get(s.PropertyNames)
	n.unevProps = g.get(s.UnevaluatedProperties)
	n.declares = len(n.props) > 0 || len(n.patterns) > 0
	n.speaks = s.AdditionalProperties != nil || s.UnevaluatedProperties != nil
}

// fillArray links the array keywords: items as each draft spells them, and contains.
func (g *schGraph) fillArray(n *schNode) {
	s := n.s
	n.unevItems = g.get(s.UnevaluatedItems)
	if s.DraftVersion < 2020 {
		switch it := s.Items.(type) {
		case *jsonschema.Schema:
			n.rest, n.restAll = g.get(it), true
		case []*jsonschema.Schema:
			n.prefix = g.list(it)
			switch ai := s.AdditionalItems.(type) {
			case bool:
				n.restAll = true
				if !ai {
					n.restFalse = "additionalItems"
				}
			case *jsonschema.Schema:
				n.rest, n.restAll = g.get(ai), true
			}
		}
	} else {
		n.prefix = g.list(s.PrefixItems)
		if s.Items2020 != nil {
			n.rest, n.restAll = g.get(s.Items2020), true
		}
	}
	if n.rest != nil && n.rest.s.Bool != nil && !*n.rest.s.Bool {
		// items: false forbids every item after the prefix: one check per array, like
		// additionalItems: false, instead of one failing false schema per item.
		n.rest, n.restFalse = nil, "items"
	}
	n.contains = g.get(s.Contains)
}

// dynamicAnchors prepares $dynamicRef and $recursiveRef, which resolve through the resources of
// the schemas on the dynamic scope: each schema's resource and that resource's dynamic anchors
// are read from the schema document itself (schemaResources), once, at compile time.
func (g *schGraph) dynamicAnchors(resources *schemaResources) {
	byResource := map[*jsonschema.Schema]map[string]*schNode{}
	for i := 0; i < len(g.queue); i++ {
		n := g.queue[i]
		if n.boolean != 0 {
			continue
		}
		res, anchors, ok := resources.of(n.s)
		if !ok {
			continue
		}
		n.resRecursive = res.RecursiveAnchor
		if len(anchors) == 0 {
			continue
		}
		m, seen := byResource[res]
		if !seen {
			m = make(map[string]*schNode, len(anchors))
			for name, a := range anchors {
				m[name] = g.get(a)
			}
			byResource[res] = m
			g.fillQueued() // anchors no reference names statically join the graph here
		}
		n.resAnchors = m
	}
}

// schemaResources finds, in the schema document a Schema was compiled from, the schema resource
// each compiled subschema belongs to (the nearest enclosing subschema with an id, else the
// document) and the dynamic anchors ($dynamicAnchor) each resource declares outside the resources
// embedded in it: what $dynamicRef and $recursiveRef resolve through. The compiler gives the
// compiled schema at a location; it hands back the one it compiled there already.
type schemaResources struct {
	doc      any
	compiler *jsonschema.Compiler
	anchors  map[string]map[string][]string // resource pointer ("\x00"-joined) → anchor → pointer
}

// of returns the resource of compiled schema s and the resource's dynamic anchors, compiled.
func (r *schemaResources) of(s *jsonschema.Schema) (*jsonschema.Schema, map[string]*jsonschema.Schema, bool) {
	base, frag, _ := strings.Cut(s.Location, "#")
	if base != schemaBaseURL {
		return r.metaschema(base)
	}
	resPtr := r.resourceAt(schemaPointerTokens(frag), s.DraftVersion)
	res := r.compiled(resPtr)
	if res == nil {
		return nil, nil, false
	}
	if res.DraftVersion < 2020 {
		return res, nil, true
	}
	if r.anchors == nil {
		r.collectAnchors()
	}
	named := r.anchors[strings.Join(resPtr, "\x00")]
	if len(named) == 0 {
		return res, nil, true
	}
	anchors := make(map[string]*jsonschema.Schema, len(named))
	for name, ptr := range named {
		if a := r.compiled(ptr); a != nil {
			anchors[name] = a
		}
	}
	return res, anchors, true
}

// metaschema is of for a schema outside the caller's document: one of the drafts' metaschemas,
// which a caller's schema may reference and which the library loads itself. Each metaschema
// document is one resource, and the drafts declare a metaschema's dynamic anchor ("meta") at
// its root, which the compiled root shows.
func (r *schemaResources) metaschema(base string) (*jsonschema.Schema, map[string]*jsonschema.Schema, bool) {
	res, err := r.compiler.Compile(base)
	if err != nil {
		return nil, nil, false
	}
	if res.DraftVersion < 2020 || res.DynamicAnchor == "" {
		return res, nil, true
	}
	return res, map[string]*jsonschema.Schema{res.DynamicAnchor: res}, true
}

// resourceAt is the pointer of the resource that holds the subschema at ptr: the longest prefix
// of ptr (ptr itself included) at which the document has a subschema with an id that is not only
// a fragment (an anchor), or the document's root.
func (r *schemaResources) resourceAt(ptr []string, draft int) []string {
	idKey := "$id"
	if draft < 6 {
		idKey = "id"
	}
	for i := len(ptr); i > 0; i-- {
		obj, ok := schLookup(r.doc, ptr[:i]).(map[string]any)
		if !ok {
			continue
		}
		if id, ok := obj[idKey].(string); ok && !strings.HasPrefix(id, "#") {
			return ptr[:i]
		}
	}
	return nil
}

// collectAnchors reads every $dynamicAnchor of the document's subschemas into its resource's map.
func (r *schemaResources) collectAnchors() {
	r.anchors = map[string]map[string][]string{}
	schemaSubschemas(r.doc, func(obj map[string]any, ptr []string) {
		name, ok := obj["$dynamicAnchor"].(string)
		if !ok {
			return
		}
		key := strings.Join(r.resourceAt(ptr, 2020), "\x00")
		if r.anchors[key] == nil {
			r.anchors[key] = map[string][]string{}
		}
		if _, dup := r.anchors[key][name]; !dup {
			r.anchors[key][name] = slices.Clone(ptr)
		}
	})
}

// compiled is the compiled schema at ptr in the document, nil if there is none.
func (r *schemaResources) compiled(ptr []string) *jsonschema.Schema {
	var b strings.Builder
	b.WriteString(schemaBaseURL + "#")
	for _, t := range ptr {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")))
	}
	s, err := r.compiler.Compile(b.String())
	if err != nil {
		return nil
	}
	return s
}

func schTypeBit(t string) uint8 {
	switch t {
	case "null":
		return schTNull
	case "boolean":
		return schTBoolean
	case "number":
		return schTNumber
	case "integer":
		return schTInteger
	case "string":
		return schTString
	case "array":
		return schTArray
	case "object":
		return schTObject
	}
	return 0
}

// schJSONType names the JSON type of a value ("" for a Go value that is not JSON).
func schJSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	if _, ok := jsonvalue.NumberLiteral(v); ok {
		return "number"
	}
	return ""
}

// CompileFailed is the error for a schema whose compilation failed in a way no check foresaw (the
// cache answers it when a compile panics).
func CompileFailed() error { return schemaProblem("could not be compiled", schemaFixGeneric) }
