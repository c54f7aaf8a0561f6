package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/jsonvalue"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// Detail selects the response shape; it is not hashed.
type Detail string

// The two response shapes of SPEC §4.6.
const (
	DetailFull    Detail = "full"
	DetailCompact Detail = "compact"
)

// Request is a decoded, validated POST /verify/schema body with the canonical forms its receipt
// hashes are computed from. Every caller-supplied subtree is canonicalized exactly once.
type Request struct {
	TaskID             string
	AgentID            *string
	Schema             any // the expected_schema tree; nil when the engine's cache knew the schema
	Output             any // the submitted_output tree
	StrictContentCheck bool
	Bounds             []Bound // in the order sent
	Rules              []Rule
	EnforceRules       bool
	Detail             Detail

	// Hashes of SPEC §5, computed by DecodeRequest.
	Hashes receipt.Hashes
	// Canonical is the RFC 8785 form of the eight hashed fields with every default filled in:
	// the bytes Hashes.Request is the SHA-256 of (SPEC §5). The agent card publishes it for the
	// request-hash test vectors.
	Canonical []byte

	alias           schemaAlias     // expected_schema as sent, for the engine's cache
	aliasRaw        []byte          // expected_schema as sent (part of the body)
	schemaCanonical []byte          // expected_schema's canonical form
	compiled        *Schema         // the compiled schema, when the cache knew it by its alias
	stop            <-chan struct{} // StopWhen

	// The schema's and the rules' counts, once Engine.CheckSchema has run.
	schemaChecked                       bool
	schemaTally, rulesTally, undeclared Tally
}

// requestFields are the members a request may have, in documentation order.
var requestFields = []string{"task_id", "agent_id", "expected_schema", "submitted_output",
	"strict_content_check", "bounds", "rules", "enforce_rules", "detail"}

// Indexes of the members in requestFields: a request's members are held in arrays indexed by
// field rather than in maps by name, which cost three maps per request.
const (
	fieldTaskID = iota
	fieldAgentID
	fieldSchema
	fieldOutput
	fieldStrict
	fieldBounds
	fieldRules
	fieldEnforce
	fieldDetail
	numFields
)

// requestMembers are the members of one request by field index: each as sent, and its tree
// where one was built. An absent member is nil in both.
type requestMembers struct {
	raw   [numFields]jsontext.Value
	trees [numFields]any
	seen  [numFields]bool
}

var ruleFields = []string{"type", "field", "equals_field", "equals", "other_field", "value",
	"in_field", "values", "tolerance", "if_present"}

// Indexes of the members in ruleFields: a rule's members are read into an array by index in one
// pass over the rule object (see ruleMembers), as a request's are.
const (
	ruleFieldType = iota
	ruleFieldField
	ruleFieldEqualsField
	ruleFieldEquals
	ruleFieldOtherField
	ruleFieldValue
	ruleFieldInField
	ruleFieldValues
	ruleFieldTolerance
	ruleFieldIfPresent
	numRuleFields
)

var boundFields = []string{"min", "max", "if_present"}

// problems collects field problems so one 422 can name all of them (apperr.Problems), with
// unknown members named only when that is safe.
type problems struct{ apperr.Problems }

// unknown files the unknown members of one object, names in the order given. A member is named
// (as prefix+name) only when its name is short and printable and the 422 has room for it; the
// others are counted in one problem of the object itself (field at), so that unknown members
// can neither make the 422 echo the caller's input (SPEC §7) nor grow it without bound.
func (p *problems) unknown(at, prefix string, names []string, problem, fix string) {
	hidden := 0
	for _, name := range names {
		// The last free entry is kept for the count of the others.
		if shownName(name) && len(p.List) < apperr.MaxProblems-2 {
			p.Add(prefix+name, problem, fix)
		} else {
			hidden++
		}
	}
	if hidden > 0 {
		what := "unknown member"
		if hidden < len(names) {
			what = "more unknown member"
		}
		p.Add(at, "has "+jsonvalue.Plural(hidden, what, what+"s")+fmt.Sprintf(" (a name is shown only when it is printable and at most %d characters long)", ShownNameMaxChars), fix)
	}
}

// member is one member of the request, as readObject found it.
type member struct {
	name    string
	field   int // index in requestFields
	raw     jsontext.Value
	tree    any   // the value's tree, for the members readObject builds one for
	treeErr error // the tree broke a limit (depth, number range or size)
}

// DecodeRequest parses and validates a request body (SPEC §4.1). Every rejection is an
// *apperr.Error (422, or 413 past lim.MaxBody) naming the offending field(s) without echoing input.
// Schema compilation is not part of decoding: the engine compiles (or finds in its cache) the
// schema once the request is otherwise sound.
func DecodeRequest(body []byte, lim wire.Limits) (*Request, error) {
	return decodeRequest(body, lim, nil)
}

// decodeRequest is DecodeRequest with the engine's cache: when known returns the compiled schema
// for the expected_schema's exact bytes, that member is neither decoded nor canonicalized again.
func decodeRequest(body []byte, lim wire.Limits, known func(schemaAlias, []byte) *Schema) (*Request, error) {
	if int64(len(body)) > lim.MaxBody {
		return nil, apperr.TooLarge(lim.MaxBody)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, apperr.Field("body", "is empty", "Send a JSON object with task_id, expected_schema and submitted_output.")
	}
	if !utf8.Valid(body) {
		return nil, apperr.Field("body", "contains invalid UTF-8", "Encode the body as UTF-8.")
	}
	var room [numFields]member // the members, without allocating
	members, unknown, err := readObject(body, lim.MaxDepth, room[:0])
	if err != nil {
		return nil, err
	}

	var (
		req = &Request{Detail: DetailFull}
		bad problems
		ms  requestMembers
	)
	treeProblem := func(name string, err error) {
		switch {
		case errors.Is(err, errDepth):
			problem, fix := depthProblem(lim.MaxDepth)
			bad.Add(name, problem, fix)
		case errors.Is(err, errNumberRange):
			bad.Add(name, errNumberRange.Error(), "Send numbers within ±1.7976931348623157e308.")
		case errors.Is(err, errNumberSize):
			bad.Add(name, errNumberSize.Error(), "Send numbers as ordinary decimals.")
		case errors.Is(err, errSchemaSize):
			bad.Add(name, fmt.Sprintf("has more than %d subschemas: every object, boolean, $id and $dynamicAnchor in it counts, once more for each %d bytes of its JSON pointer (of an $id or anchor: of its length)", MaxSchemaNodes, SchemaPointerBytes),
				"Send a smaller schema: share repeated parts through $defs and $ref.")
		case errors.Is(err, jsontext.ErrDuplicateName):
			// The body's syntax was checked as it was split into members; a repeated member
			// name inside expected_schema is what only the tree builder sees.
			bad.Add(name, "has a duplicate object member name", "Send each member name once in every object.")
		default:
			bad.Add(name, "could not be read", "Send valid JSON.")
		}
	}
	for _, m := range members {
		ms.seen[m.field] = true
		ms.raw[m.field] = m.raw
		switch {
		case m.treeErr != nil:
			treeProblem(m.name, m.treeErr)
		case m.field != fieldSchema:
			ms.trees[m.field] = m.tree
		}
	}
	for _, f := range []int{fieldTaskID, fieldSchema, fieldOutput} {
		if !ms.seen[f] {
			bad.Add(requestFields[f], "is required", "Add "+requestFields[f]+".")
		}
	}
	// Unknown members are filed after the problems above, which a flood of them must not crowd out.
	if len(unknown) > 0 {
		bad.unknown("body", "", unknown, "is not a known field", "Send only the fields "+strings.Join(requestFields, ", ")+".")
	}
	// The schema's tree is built only when the engine's cache does not know its bytes.
	if v := ms.raw[fieldSchema]; ms.seen[fieldSchema] {
		if known != nil {
			req.alias, req.aliasRaw = aliasOf(v, string(ms.raw[fieldStrict]) == "true"), v
			req.compiled = known(req.alias, v)
		}
		if req.compiled == nil {
			if t, err := decodeSchema(v, lim.MaxDepth); err != nil {
				treeProblem("expected_schema", err)
			} else {
				ms.trees[fieldSchema] = t
			}
		}
	}
	if bad.Count() > 0 {
		return nil, bad.Err()
	}

	// From here on every required member is present with its tree (the schema's unless the
	// cache knew it), and an absent optional member's tree is nil.
	// The ids are copied out of the body (see readObject): a store may keep them.
	req.TaskID, _ = idField(&bad, "task_id", ms.trees[fieldTaskID], false)
	req.TaskID = strings.Clone(req.TaskID)
	if v := ms.trees[fieldAgentID]; ms.seen[fieldAgentID] {
		if id, ok := idField(&bad, "agent_id", v, true); ok && v != nil {
			if norm, problem, fix := wire.AgentID(id); problem != "" {
				bad.Add("agent_id", problem, fix)
			} else {
				if norm == id {
					norm = strings.Clone(id)
				}
				req.AgentID = &norm
			}
		}
	}
	if v := ms.trees[fieldSchema]; req.compiled == nil {
		switch v.(type) {
		case map[string]any, bool:
			req.Schema = v
		default:
			bad.Add("expected_schema", "must be a JSON Schema (an object or a boolean)", "Send a JSON Schema object.")
		}
	}
	req.Output = ms.trees[fieldOutput]
	req.StrictContentCheck = boolField(&bad, "strict_content_check", ms.trees[fieldStrict])
	req.EnforceRules = boolField(&bad, "enforce_rules", ms.trees[fieldEnforce])
	if v := ms.trees[fieldDetail]; v != nil {
		switch v {
		case "full":
		case "compact":
			req.Detail = DetailCompact
		default:
			bad.Add("detail", "is not one of the allowed values", "Use 'full' or 'compact'.")
		}
	}
	req.Rules = decodeRules(&bad, ms.trees[fieldRules], req.Output, lim)
	req.Bounds = decodeBounds(&bad, ms.raw[fieldBounds], ms.trees[fieldBounds], lim)
	if bad.Count() > 0 {
		return nil, bad.Err()
	}
	if err := req.hash(&ms); err != nil {
		return nil, err
	}
	return req, nil
}

// readObject splits the body (valid UTF-8) into its top-level members, appended to out, and the
// names of its unknown members, in order, validating the whole body's syntax and member-name
// uniqueness at every depth. In the same pass it builds the tree of every member but
// expected_schema (which the engine may know by its bytes); a member whose tree breaks a limit
// carries the error in treeErr, and reading goes on with the next. A body that is not well-formed
// is described by the decoder (readObjectDecoder).
//
// Duplicate names are found without a set of names per object on top of the maps built anyway:
// the tree builder refuses a name its map already holds, the top level is checked by field, and
// the two members read without a tree are an unknown member (refused in any case) and
// expected_schema, which is either decoded into a tree by decodeSchema (which refuses a repeated
// name too) or known to the cache by these exact bytes.
func readObject(body []byte, maxDepth int, out []member) (members []member, unknown []string, err error) {
	if members, unknown, ok := readMembers(body, maxDepth, out); ok {
		return members, unknown, nil
	}
	return readObjectDecoder(body, maxDepth, out)
}

// readObjectDecoder is readObject for a body the tree builder found not well-formed: the decoder
// reads it to say where and how. It gives the same members as readMembers for a body it accepts.
func readObjectDecoder(body []byte, maxDepth int, out []member) (members []member, unknown []string, err error) {
	// A bytes.Buffer is parsed in place, without the copy a reader would need.
	d := getDecoder(body, jsontext.AllowDuplicateNames(true))
	defer d.put()
	dec := &d.dec
	fail := func(err error) error {
		problem, fix := syntaxProblem(err, dec.InputOffset(), maxDepth, "Send one well-formed JSON object, UTF-8, without duplicate member names.")
		return apperr.Field("body", problem, fix)
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, nil, fail(err)
	}
	if tok.Kind() != '{' {
		return nil, nil, apperr.Field("body", "is not a JSON object", "Send a JSON object with task_id, expected_schema and submitted_output.")
	}
	// The trees' strings and numbers are cut from one copy of the body instead of each being
	// copied on its own. They live as long as the request, except the ids a store may keep
	// for good, which decodeRequest copies so that they do not pin the whole body.
	src := string(body)
	// Each name is checked against the earlier ones in constant time: a field by its index, an
	// unknown name in a set made only for a request that has one (it is refused anyway). Comparing
	// each name with every earlier one made a body of many short names quadratic.
	var (
		seen        [numFields]bool
		seenUnknown map[string]struct{}
	)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, nil, fail(err)
		}
		// The token is void once the decoder moves on. key does not outlive this iteration, so
		// its bytes stay on the stack; the member keeps the field's own name, and copies only
		// an unknown one.
		key := name.String()
		m := member{field: slices.Index(requestFields, key)}
		if m.field < 0 {
			if _, dup := seenUnknown[key]; dup {
				return nil, nil, fail(errDuplicateName)
			}
			if seenUnknown == nil {
				seenUnknown = make(map[string]struct{})
			}
			kept := strings.Clone(key)
			seenUnknown[kept] = struct{}{}
			unknown = append(unknown, kept)
			// Its value is only checked: the request is refused.
			if err := dec.SkipValue(); err != nil {
				field := kept
				if !shownName(field) {
					field = "body"
				}
				problem, fix := syntaxProblem(err, dec.InputOffset(), maxDepth, "Send well-formed JSON without duplicate member names.")
				return nil, nil, apperr.Field(field, problem, fix)
			}
			continue
		}
		m.name = requestFields[m.field]
		if seen[m.field] {
			return nil, nil, apperr.Field(m.name, "appears more than once", "Send each field once.")
		}
		seen[m.field] = true
		syntax := func(err error) error {
			problem, fix := syntaxProblem(err, dec.InputOffset(), maxDepth, "Send well-formed JSON without duplicate member names.")
			return apperr.Field(m.name, problem, fix)
		}
		if m.field == fieldSchema {
			if m.raw, err = readRaw(dec, body); err != nil {
				return nil, nil, syntax(err)
			}
			out = append(out, m)
			continue
		}
		if m.raw, err = readRaw(dec, body); err != nil {
			return nil, nil, syntax(err)
		}
		// The value's syntax is checked; its tree is built from its bytes.
		b := treeBuilder{in: m.raw, maxDepth: maxDepth, depth: 1, src: src, off: int(dec.InputOffset()) - len(m.raw)}
		if m.tree, m.treeErr = b.root(); m.treeErr != nil && !isTreeLimit(m.treeErr) {
			return nil, nil, syntax(m.treeErr)
		}
		out = append(out, m)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, nil, fail(err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, nil, apperr.Field("body", "has data after the JSON object", "Send exactly one JSON object.")
	}
	return out, unknown, nil
}

// readMembers is readObject for a well-formed body, in one pass of the tree builder, which checks
// the syntax as it builds. It reports false for a body that is not well-formed JSON, has a
// duplicate member name or nests past skipDepth, or repeats a field: readObject then reads it
// with the decoder, which describes the problem.
func readMembers(body []byte, maxDepth int, out []member) (members []member, unknown []string, ok bool) {
	// The trees' strings and numbers are cut from one copy of the body (see readObject).
	src := string(body)
	b := treeBuilder{in: body, maxDepth: maxDepth, src: src}
	if b.next() != '{' {
		return nil, nil, false
	}
	b.i, b.depth = b.i+1, 1
	var (
		seen        [numFields]bool
		seenUnknown map[string]struct{}
	)
	more := true
	if b.next() == '}' { // an empty object
		b.i, more = b.i+1, false
	}
	for more {
		if b.next() != '"' {
			return nil, nil, false
		}
		key, err := b.text()
		if err != nil || b.next() != ':' {
			return nil, nil, false
		}
		b.i++
		m := member{field: slices.Index(requestFields, key)}
		switch {
		case m.field < 0:
			if _, dup := seenUnknown[key]; dup || !b.skipValue() {
				return nil, nil, false
			}
			if seenUnknown == nil {
				seenUnknown = make(map[string]struct{})
			}
			kept := strings.Clone(key)
			seenUnknown[kept] = struct{}{}
			unknown = append(unknown, kept)
		case seen[m.field]:
			return nil, nil, false
		default:
			seen[m.field], m.name = true, requestFields[m.field]
			b.space()
			start := b.i
			if m.field == fieldSchema {
				if !b.skipValue() {
					return nil, nil, false
				}
			} else if m.tree, m.treeErr = b.value(); m.treeErr != nil {
				if !isTreeLimit(m.treeErr) {
					return nil, nil, false
				}
				// Read the rest of the value, still checking its syntax.
				b.i, b.depth = start, 1
				if !b.skipValue() {
					return nil, nil, false
				}
			}
			m.raw = body[start:b.i]
			out = append(out, m)
		}
		if more, err = b.after('}'); err != nil {
			return nil, nil, false
		}
	}
	if b.space(); b.i != len(body) {
		return nil, nil, false
	}
	return out, unknown, true
}

// safeName shortens a bound's path so that naming it never becomes a way to echo input.
func safeName(name string) string {
	if utf8.RuneCountInString(name) > ShownNameMaxChars {
		r := []rune(name)
		return string(r[:ShownNameMaxChars]) + "…"
	}
	return name
}

// shownName tells whether a 422 may name an unknown member by its name: one that is not empty,
// at most ShownNameMaxChars long and printable throughout (no control, format or invisible
// characters), such as a misspelt field.
func shownName(name string) bool {
	if name == "" || utf8.RuneCountInString(name) > ShownNameMaxChars {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func idField(bad *problems, name string, v any, nullable bool) (string, bool) {
	if v == nil && nullable {
		return "", true
	}
	s, ok := v.(string)
	if !ok {
		bad.Add(name, "must be a string", fmt.Sprintf("Send %s as a string of 1 to %d characters.", name, wire.MaxIDLen))
		return "", false
	}
	if n := utf8.RuneCountInString(s); n == 0 || n > wire.MaxIDLen {
		bad.Add(name, fmt.Sprintf("must be 1 to %d characters long", wire.MaxIDLen), fmt.Sprintf("Shorten %s to at most %d characters.", name, wire.MaxIDLen))
		return "", false
	}
	return s, true
}

func boolField(bad *problems, name string, v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	}
	bad.Add(name, "must be a boolean", "Send true or false.")
	return false
}

// decodeRules reads the rules; output is submitted_output, against which the paths of unique and
// exists_in are checked (see refuseWholeValues).
func decodeRules(bad *problems, v any, output any, lim wire.Limits) []Rule {
	if v == nil {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		bad.Add("rules", "must be an array of rule objects", "Send rules as a JSON array, or omit it.")
		return nil
	}
	if len(arr) > lim.MaxRules {
		bad.Add("rules", fmt.Sprintf("has more than %d rules", lim.MaxRules), fmt.Sprintf("Send at most %d rules.", lim.MaxRules))
		return nil
	}
	rules := make([]Rule, 0, len(arr))
	for i, e := range arr {
		at := "rules[" + strconv.Itoa(i) + "]"
		obj, ok := e.(map[string]any)
		if !ok {
			bad.Add(at, "must be an object", "Send each rule as an object with type and field.")
			continue
		}
		if r, ok := decodeRule(bad, at, obj, lim); ok && refuseWholeValues(bad, at, &r, output) {
			rules = append(rules, r)
		}
	}
	return rules
}

// wholeValueFix tells how to select the elements of an array: the caller's path is not echoed.
const wholeValueFix = "Add [] after the array's name (e.g. 'items[].sku' or 'tags[]') so that each element is checked."

// refuseWholeValues files the paths of a unique or exists_in rule that would compare an array as
// one value where its elements were meant (see Path), and reports whether there were none. unique
// without `[]` selects one value, which is always unique: a check that cannot fail, whatever the
// output. exists_in's field or in_field without `[]` that names an array in output would look the
// whole array up, or look values up in a set whose one member is the array.
func refuseWholeValues(bad *problems, at string, r *Rule, output any) bool {
	before := bad.Count()
	switch r.Type {
	case Unique:
		if jsonvalue.CountAll(r.Field.Steps) == 0 {
			bad.Add(at+".field", "has no []: unique compares the values a path selects through [], and one value is always unique", wholeValueFix)
		}
	case ExistsIn:
		if jsonvalue.ArrayWithoutAll(r.Field, output) {
			bad.Add(at+".field", "names an array in submitted_output but has no []: exists_in would look the whole array up as one value", wholeValueFix)
		}
		if r.InField != nil && jsonvalue.ArrayWithoutAll(*r.InField, output) {
			bad.Add(at+".in_field", "names an array in submitted_output but has no []: exists_in would use the whole array as the one allowed value", wholeValueFix)
		}
	}
	return bad.Count() == before
}

var typeFix = "Use one of: 'sum_equals', 'gte', 'lte', 'exists_in' or 'unique'."

// operands says which operand members each rule type takes; exactly one of them must be set.
var operands = map[RuleType][]string{
	SumEquals: {"equals_field", "equals"},
	Gte:       {"other_field", "value"},
	Lte:       {"other_field", "value"},
	ExistsIn:  {"in_field", "values"},
	Unique:    {},
}

// ruleMembers are the members of one rule object by index in ruleFields, read in one pass over
// it instead of a map lookup for each of the ten a rule may have (it usually has three). An absent
// member and a null one are both nil: the checks treat them alike.
type ruleMembers struct {
	v       [numRuleFields]any
	unknown bool // a member that is not one of ruleFields
}

func readRuleMembers(obj map[string]any) ruleMembers {
	var m ruleMembers
	for k, v := range obj {
		if i := slices.Index(ruleFields, k); i >= 0 {
			m.v[i] = v
		} else {
			m.unknown = true
		}
	}
	return m
}

func decodeRule(bad *problems, at string, obj map[string]any, lim wire.Limits) (Rule, bool) {
	before := bad.Count()
	m := readRuleMembers(obj)
	if m.unknown {
		// Named in sorted order, so that the answer does not depend on map order.
		bad.unknown(at, at+".", unknownKeys(obj, ruleFields), "is not a known rule field", "Send only the rule fields "+strings.Join(ruleFields, ", ")+".")
	}
	r := Rule{Tolerance: defaultTolerance(), ToleranceLiteral: wire.DefaultTolerance}
	typ, ok := m.v[ruleFieldType].(string)
	var allowed []string
	if ok {
		allowed = operands[RuleType(typ)]
	}
	switch {
	case m.v[ruleFieldType] == nil:
		bad.Add(at+".type", "is required", typeFix)
	case allowed == nil:
		bad.Add(at+".type", "is not one of the allowed values", typeFix)
	default:
		r.Type = RuleType(typ)
	}
	if m.v[ruleFieldField] == nil {
		bad.Add(at+".field", "is required", "Give the path of the value(s) to check, e.g. 'line_items[].line_total'.")
	} else if p, ok := pathField(bad, at, ".field", m.v[ruleFieldField], lim); ok {
		r.Field = p
	}
	decodeOperands(bad, at, &m, &r, allowed, lim)
	if t := m.v[ruleFieldTolerance]; t != nil {
		n, ok := t.(json.Number)
		var d jsonvalue.Decimal
		switch {
		case !ok:
			bad.Add(at+".tolerance", "must be a number", "Send a non-negative number such as 0.01.")
		case jsonvalue.ParseDecimal(string(n), &d) != nil || d.Sign() < 0:
			// jsonvalue.ParseDecimal bounds the exponent, so d.Rat() below stays small.
			bad.Add(at+".tolerance", "must be a finite non-negative number (exponent within ±400)", "Send a non-negative number such as 0.01.")
		default:
			r.Tolerance, r.ToleranceLiteral = d.Rat(), n
		}
	}
	switch v := m.v[ruleFieldIfPresent].(type) {
	case nil:
	case bool:
		r.IfPresent = v
	default:
		bad.Add(at+".if_present", "must be a boolean", "Send true or false.")
	}
	return r, bad.Count() == before
}

// decodeOperands reads the operand members of rule at into r: every one that is set must belong
// to r's type (allowed, nil when the type is unknown), and exactly one must be.
func decodeOperands(bad *problems, at string, m *ruleMembers, r *Rule, allowed []string, lim wire.Limits) {
	// The operand members sit together in ruleFields, from equals_field to values.
	set := make([]string, 0, 6)
	for i := ruleFieldEqualsField; i <= ruleFieldValues; i++ {
		if m.v[i] != nil {
			set = append(set, ruleFields[i])
		}
	}
	if r.Type != "" {
		given := 0
		for _, k := range set {
			if slices.Contains(allowed, k) {
				given++
			} else {
				bad.Add(at+"."+k, "does not apply to rule type "+string(r.Type), operandFix(r.Type))
			}
		}
		switch {
		case len(allowed) > 0 && given == 0:
			bad.Add(at, "is missing its operand", operandFix(r.Type))
		case given > 1:
			bad.Add(at, "has two operands", operandFix(r.Type))
		}
	}
	for _, op := range [...]struct {
		i      int
		member string // ruleFields[i] as pathField files it under at
		p      **jsonvalue.Path
	}{{ruleFieldEqualsField, ".equals_field", &r.EqualsField}, {ruleFieldOtherField, ".other_field", &r.OtherField}, {ruleFieldInField, ".in_field", &r.InField}} {
		if m.v[op.i] == nil {
			continue
		}
		if p, ok := pathField(bad, at, op.member, m.v[op.i], lim); ok {
			*op.p = &p
		}
	}
	for _, op := range [...]struct {
		i int
		n **json.Number
	}{{ruleFieldEquals, &r.Equals}, {ruleFieldValue, &r.Value}} {
		if m.v[op.i] == nil {
			continue
		}
		n, ok := m.v[op.i].(json.Number)
		if !ok {
			bad.Add(at+"."+ruleFields[op.i], "must be a number", "Send a JSON number.")
			continue
		}
		*op.n = &n
	}
	if m.v[ruleFieldValues] != nil {
		vs, ok := m.v[ruleFieldValues].([]any)
		if !ok {
			bad.Add(at+".values", "must be an array", "Send the allowed values as a JSON array.")
		} else {
			r.Values = vs
		}
	}
}

func operandFix(t RuleType) string {
	switch t {
	case SumEquals:
		return "Give exactly one of equals_field (a path) or equals (a number)."
	case Gte, Lte:
		return "Give exactly one of other_field (a path) or value (a number)."
	case ExistsIn:
		return "Give exactly one of in_field (a path) or values (an array)."
	}
	return "A unique rule takes no operand; remove it."
}

// defaultTolerance is the tolerance of a rule that sets none. Every such rule shares the one
// value: nothing modifies a rule's tolerance after decoding (the evaluator only reads it), and a
// copy per rule cost three allocations.
func defaultTolerance() *big.Rat { return defaultToleranceRat }

// pathField reads a path member; a problem is filed under at+member, a name that is built only
// when there is a problem to file.
func pathField(bad *problems, at, member string, v any, lim wire.Limits) (jsonvalue.Path, bool) {
	s, ok := v.(string)
	if !ok {
		bad.Add(at+member, "must be a string path", "Write a path such as 'items[].price'.")
		return jsonvalue.Path{}, false
	}
	if len(s) > lim.MaxPathLen {
		bad.Add(at+member, fmt.Sprintf("is longer than %d bytes", lim.MaxPathLen), "Shorten the path.")
		return jsonvalue.Path{}, false
	}
	p, err := jsonvalue.ParsePath(s)
	if err != nil {
		bad.Add(at+member, "is not a valid path: it "+err.Error(), "Write a path such as 'a.b', 'items[].price', 'items[0].id' or '[\"key.with.dots\"]'.")
		return jsonvalue.Path{}, false
	}
	return p, true
}

// decodeBounds reads bounds in the order sent (the tree's map loses it, so the raw object is
// walked again for its member order).
func decodeBounds(bad *problems, raw jsontext.Value, v any, lim wire.Limits) []Bound {
	if v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		bad.Add("bounds", "must be an object mapping paths to {min, max}", "Send bounds as a JSON object, or omit it.")
		return nil
	}
	if len(obj) > lim.MaxBounds {
		bad.Add("bounds", fmt.Sprintf("has more than %d bounds", lim.MaxBounds), fmt.Sprintf("Send at most %d bounds.", lim.MaxBounds))
		return nil
	}
	bounds := make([]Bound, 0, len(obj))
	for _, path := range memberOrder(raw) {
		at := "bounds[" + strconvQuote(safeName(path)) + "]"
		p, ok := pathField(bad, at, "", path, lim)
		spec, isObj := obj[path].(map[string]any)
		if !isObj {
			bad.Add(at, "must be an object with min and/or max", "Send {\"min\": 0, \"max\": 100}.")
			continue
		}
		b := Bound{Path: p}
		bad.unknown(at, at+".", unknownKeys(spec, boundFields), "is not a known bound field", "Use min, max and if_present.")
		var limits [2]jsonvalue.Decimal
		for i, k := range []string{"min", "max"} {
			if spec[k] == nil {
				continue
			}
			n, isNum := spec[k].(json.Number)
			if !isNum || jsonvalue.ParseDecimal(string(n), &limits[i]) != nil {
				bad.Add(at+"."+k, "must be a number (exponent within ±400)", "Send a JSON number.")
				continue
			}
			if k == "min" {
				b.Min = &n
			} else {
				b.Max = &n
			}
		}
		switch v := spec["if_present"].(type) {
		case nil:
		case bool:
			b.IfPresent = v
		default:
			bad.Add(at+".if_present", "must be a boolean", "Send true or false.")
		}
		if spec["min"] == nil && spec["max"] == nil {
			bad.Add(at, "has neither min nor max", "Give min, max or both.")
		}
		if b.Min != nil && b.Max != nil {
			var c calc
			if c.Cmp(&limits[0], &limits[1]) > 0 {
				bad.Add(at, "has min greater than max", "Swap min and max.")
			}
		}
		if ok {
			bounds = append(bounds, b)
		}
	}
	return bounds
}

// memberOrder lists an object's member names in the order they appear in raw.
func memberOrder(raw jsontext.Value) []string {
	d := getDecoder(raw)
	defer d.put()
	dec := &d.dec
	if _, err := dec.ReadToken(); err != nil {
		return nil
	}
	var names []string
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return names
		}
		names = append(names, name.String())
		if err := dec.SkipValue(); err != nil {
			return names
		}
	}
	return names
}

// unknownKeys lists the members of m that are not in known, sorted, so that the answer does not
// depend on map order.
func unknownKeys(m map[string]any, known []string) []string {
	var keys []string
	for k := range m {
		if !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func strconvQuote(s string) string {
	b, _ := jsontext.AppendQuote(nil, s)
	return string(b)
}

// readRaw reads the next value and returns it as a subslice of src (the decoder's input), which
// stays valid after the decoder moves on, unlike the slice ReadValue returns.
func readRaw(dec *jsontext.Decoder, src []byte) (jsontext.Value, error) {
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	end := dec.InputOffset()
	return jsontext.Value(src[end-int64(len(v)) : end]), nil
}

// StopWhen makes the engine's checks of r stop early once done is closed (the caller stopped
// waiting: a deadline passed). The answer is then a failure that nobody reads; what matters is
// that the work ends, rather than running on after the caller answered.
func (r *Request) StopWhen(done <-chan struct{}) { r.stop = done }
