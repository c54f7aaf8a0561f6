package verify

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// errNotCanonical means the report holds a value this encoder does not write canonically itself
// (a ratio outside the plain decimal range, invalid UTF-8); the caller canonicalizes the wire form
// instead.
var errNotCanonical = errors.New("report value outside the canonical encoder's range")

// wireJSON is the report's wire form: the members in the order of the struct (SPEC §4.6's), with
// the omissions its json tags ask for. The report is written by hand, from one table of members
// per object (below), because the general encoder's reflection was a measurable share of a
// verification; the tests hold this form equal to json.Marshal for every report shape.
func (r *Report) wireJSON(dst []byte) ([]byte, error) {
	c := jsonWriter{b: dst}
	writeObject(&c, r, reportFields)
	return c.b, c.err
}

// canonicalJSON is the report's RFC 8785 form, written from the same tables with every object's
// members in UTF-16 order (all names are ASCII, so byte order). It saves the signer re-reading
// and re-ordering the wire form; the tests hold it equal to receipt.Canonicalize(JSON()) for every
// report shape, and fuzzing does for arbitrary requests.
func (r *Report) canonicalJSON(dst []byte) ([]byte, error) {
	c := jsonWriter{b: dst, canonical: true}
	writeObject(&c, r, reportFields)
	return c.b, c.err
}

// field is one member of an object of type T: its name and how its value is written. put writes
// the name too, or nothing when the member is omitted.
type field[T any] struct {
	name string
	put  func(c *jsonWriter, name string, v *T)
}

// fields are an object's members in wire order (the struct's) and in canonical order.
type fields[T any] struct{ wire, canonical []field[T] }

func newFields[T any](wire ...field[T]) fields[T] {
	canonical := make([]field[T], len(wire))
	for i, j := range canonicalOrder(len(wire), func(i int) string { return wire[i].name }) {
		canonical[i] = wire[j]
	}
	return fields[T]{wire: wire, canonical: canonical}
}

// canonicalOrder is the order of n member names in RFC 8785, as indexes. It sorts indexes rather
// than each object's fields so that one sort serves every type: a sort per field type cost the
// binaries about 200 KB.
func canonicalOrder(n int, name func(int) string) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return utf16Less(name(a), name(b)) })
	return order
}

func writeObject[T any](c *jsonWriter, v *T, m fields[T]) {
	list := m.wire
	if c.canonical {
		list = m.canonical
	}
	c.open('{')
	for _, f := range list {
		f.put(c, f.name, v)
	}
	c.close('}')
}

// The member kinds the report uses, each with the omission rule of its json tag.

func str[T any](get func(*T) string) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) { c.name(n); c.str(get(v)) }
}

// omitEmptyStr is a string member left out when empty.
func omitEmptyStr[T any](get func(*T) string) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) {
		if s := get(v); s != "" {
			c.name(n)
			c.str(s)
		}
	}
}

// nullableStr is a string member written as null when nil.
func nullableStr[T any](get func(*T) *string) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) {
		c.name(n)
		if s := get(v); s == nil {
			c.b = append(c.b, "null"...)
		} else {
			c.str(*s)
		}
	}
}

func boolean[T any](get func(*T) bool) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) { c.name(n); c.b = strconv.AppendBool(c.b, get(v)) }
}

func integer[T any](get func(*T) int) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) { c.name(n); c.b = strconv.AppendInt(c.b, int64(get(v)), 10) }
}

// omitNilInt is an integer member left out when nil.
func omitNilInt[T any](get func(*T) *int) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) {
		if i := get(v); i != nil {
			c.name(n)
			c.b = strconv.AppendInt(c.b, int64(*i), 10)
		}
	}
}

// ratioNumber is a ratio in [0, 1] with at most 6 decimals. RFC 8785 (and Go's JSON encoder)
// write numbers as ECMAScript does: the shortest round-trip digits, in plain decimal notation from
// 1e-6 up to 1e21. Ratios always take this form; anything else is refused and the caller goes the
// general way.
func ratioNumber[T any](get func(*T) float64) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) {
		f := get(v)
		if a := math.Abs(f); f != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(f) || math.Signbit(f) {
			c.err = errNotCanonical
		}
		c.name(n)
		c.b = strconv.AppendFloat(c.b, f, 'f', -1, 64)
	}
}

// stringList is an array of strings; omitNil leaves it out when nil, and otherwise nil is [].
func stringList[T any](get func(*T) []string, omitNil bool) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) {
		list := get(v)
		if list == nil && omitNil {
			return
		}
		c.name(n)
		c.open('[')
		for _, s := range list {
			c.elem()
			c.str(s)
		}
		c.close(']')
	}
}

// object is a nested object, left out when get returns nil.
func object[T, U any](get func(*T) *U, m fields[U]) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) {
		if u := get(v); u != nil {
			c.name(n)
			writeObject(c, u, m)
		}
	}
}

// objectList is an array of objects; omitNil leaves it out when nil, and otherwise nil is [].
func objectList[T, U any](get func(*T) []U, m fields[U], omitNil bool) func(*jsonWriter, string, *T) {
	return func(c *jsonWriter, n string, v *T) {
		list := get(v)
		if list == nil && omitNil {
			return
		}
		c.name(n)
		c.open('[')
		for i := range list {
			c.elem()
			writeObject(c, &list[i], m)
		}
		c.close(']')
	}
}

// The report's tables: each object's members in the order of its struct, with its json tags'
// names and omissions; the tests hold the wire form to json.Marshal, which reads the tags.
var (
	summaryFields = newFields(
		field[Summary]{"result", str(func(s *Summary) string { return s.Result })},
		field[Summary]{"blocking_checks", stringList(func(s *Summary) []string { return s.BlockingChecks }, false)},
	)
	actionFields = newFields(
		field[Action]{"action", str(func(a *Action) string { return a.Action })},
		field[Action]{"using", omitEmptyStr(func(a *Action) string { return a.Using })},
		field[Action]{"for", omitEmptyStr(func(a *Action) string { return a.For })},
	)
	errorDetailFields = newFields(
		field[ErrorDetail]{"check", str(func(d *ErrorDetail) string { return d.Check })},
		field[ErrorDetail]{"path", str(func(d *ErrorDetail) string { return d.Path })},
		field[ErrorDetail]{"expected", str(func(d *ErrorDetail) string { return d.Expected })},
		field[ErrorDetail]{"found", str(func(d *ErrorDetail) string { return d.Found })},
		field[ErrorDetail]{"message", str(func(d *ErrorDetail) string { return d.Message })},
	)
	flagFields = newFields(
		field[Flag]{"check", str(func(f *Flag) string { return f.Check })},
		field[Flag]{"field", str(func(f *Flag) string { return f.Field })},
		field[Flag]{"severity", str(func(f *Flag) string { return f.Severity })},
		field[Flag]{"detail", str(func(f *Flag) string { return f.Detail })},
	)
	hintFields = newFields(
		field[Hint]{"source", str(func(h *Hint) string { return h.Source })},
		field[Hint]{"check", str(func(h *Hint) string { return h.Check })},
		field[Hint]{"path", str(func(h *Hint) string { return h.Path })},
		field[Hint]{"expected", str(func(h *Hint) string { return h.Expected })},
		field[Hint]{"found", str(func(h *Hint) string { return h.Found })},
	)
	ratioFields = newFields(
		field[Ratio]{"ratio", ratioNumber(func(r *Ratio) float64 { return r.Ratio })},
		field[Ratio]{"passed", integer(func(r *Ratio) int { return r.Passed })},
		field[Ratio]{"total", integer(func(r *Ratio) int { return r.Total })},
	)
	verifyInfoFields = newFields(
		field[VerifyInfo]{"public_key_url", str(func(v *VerifyInfo) string { return v.PublicKeyURL })},
		field[VerifyInfo]{"key_version", str(func(v *VerifyInfo) string { return v.KeyVersion })},
		field[VerifyInfo]{"canonicalization", str(func(v *VerifyInfo) string { return v.Canonicalization })},
		field[VerifyInfo]{"hash_algorithm", str(func(v *VerifyInfo) string { return v.HashAlgorithm })},
		field[VerifyInfo]{"service", str(func(v *VerifyInfo) string { return v.Service })},
		field[VerifyInfo]{"mcp", str(func(v *VerifyInfo) string { return v.MCP })},
	)
	reportFields = newFields(
		field[Report]{"summary", object(func(r *Report) *Summary { return &r.Summary }, summaryFields)},
		field[Report]{"next_actions", objectList(func(r *Report) []Action { return r.NextActions }, actionFields, false)},
		field[Report]{"result", str(func(r *Report) string { return r.Result })},
		field[Report]{"verification_id", str(func(r *Report) string { return r.VerificationID })},
		field[Report]{"task_id", str(func(r *Report) string { return r.TaskID })},
		field[Report]{"agent_id", nullableStr(func(r *Report) *string { return r.AgentID })},
		field[Report]{"output_hash", str(func(r *Report) string { return r.OutputHash })},
		field[Report]{"schema_hash", str(func(r *Report) string { return r.SchemaHash })},
		field[Report]{"rules_hash", str(func(r *Report) string { return r.RulesHash })},
		field[Report]{"request_hash", omitEmptyStr(func(r *Report) string { return r.RequestHash })},
		field[Report]{"verified_at", str(func(r *Report) string { return r.VerifiedAt })},
		field[Report]{"verifier_version", str(func(r *Report) string { return r.VerifierVersion })},
		field[Report]{"enforce_rules", boolean(func(r *Report) bool { return r.EnforceRules })},
		field[Report]{"strict_content_check", boolean(func(r *Report) bool { return r.StrictContentCheck })},
		field[Report]{"errors", stringList(func(r *Report) []string { return r.Errors }, true)},
		field[Report]{"errors_total", omitNilInt(func(r *Report) *int { return r.ErrorsTotal })},
		field[Report]{"errors_omitted", omitNilInt(func(r *Report) *int { return r.ErrorsOmitted })},
		field[Report]{"errors_detail", objectList(func(r *Report) []ErrorDetail { return r.ErrorsDetail }, errorDetailFields, true)},
		field[Report]{"errors_detail_total", omitNilInt(func(r *Report) *int { return r.ErrorsDetailTotal })},
		field[Report]{"errors_detail_omitted", omitNilInt(func(r *Report) *int { return r.ErrorsDetailOmitted })},
		field[Report]{"flags", objectList(func(r *Report) []Flag { return r.Flags }, flagFields, true)},
		field[Report]{"flags_total", omitNilInt(func(r *Report) *int { return r.FlagsTotal })},
		field[Report]{"flags_omitted", omitNilInt(func(r *Report) *int { return r.FlagsOmitted })},
		field[Report]{"hints", objectList(func(r *Report) []Hint { return r.Hints }, hintFields, true)},
		field[Report]{"hints_total", omitNilInt(func(r *Report) *int { return r.HintsTotal })},
		field[Report]{"hints_omitted", omitNilInt(func(r *Report) *int { return r.HintsOmitted })},
		field[Report]{"schema_compliance", object(func(r *Report) *Ratio { return r.SchemaCompliance }, ratioFields)},
		field[Report]{"integrity_checks", object(func(r *Report) *Ratio { return r.IntegrityChecks }, ratioFields)},
		field[Report]{"overall", object(func(r *Report) *Ratio { return r.Overall }, ratioFields)},
		field[Report]{"verify", object(func(r *Report) *VerifyInfo { return &r.Verify }, verifyInfoFields)},
	)
)

// jsonWriter appends JSON with minimal string escaping and no whitespace (RFC 8785's writing, when
// members come in sorted order), remembering the first error. first is true right after an
// opening bracket, where the next member or element takes no comma.
type jsonWriter struct {
	b         []byte
	canonical bool // objects' members in canonical order
	first     bool
	err       error
}

func (c *jsonWriter) open(bracket byte)  { c.b = append(c.b, bracket); c.first = true }
func (c *jsonWriter) close(bracket byte) { c.b = append(c.b, bracket); c.first = false }

// elem starts an array element.
func (c *jsonWriter) elem() {
	if !c.first {
		c.b = append(c.b, ',')
	}
	c.first = false
}

// name starts an object member; n needs no escaping.
func (c *jsonWriter) name(n string) {
	c.elem()
	c.b = append(c.b, '"')
	c.b = append(c.b, n...)
	c.b = append(c.b, '"', ':')
}

func (c *jsonWriter) str(s string) {
	var err error
	if c.b, err = appendQuoted(c.b, s); err != nil && c.err == nil {
		c.err = errNotCanonical
	}
}

// plainASCII tells whether s is written as is between quotes: printable ASCII without '"' or '\\',
// which no JSON writer escapes. It looks at eight bytes at a time: a word has none of the
// characters to escape when no byte has its high bit set, none is below 0x20, and none equals '"'
// or '\\' (the classic tests for a zero or a small byte in a word, exact as a yes/no answer).
func plainASCII(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		quote, backslash := w^(ones*'"'), w^(ones*'\\')
		if (w|(w-ones*0x20)|((quote-ones)&^quote)|((backslash-ones)&^backslash))&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
