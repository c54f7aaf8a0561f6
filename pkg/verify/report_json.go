package verify

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// errNotCanonical means the report holds a value this encoder does not write canonically itself
// (a ratio outside the plain decimal range, invalid UTF-8); the caller canonicalizes the wire form
// instead.
var errNotCanonical = errors.New("report value outside the canonical encoder's range")

// wireJSON is the report's wire form: the members in the order of the struct (SPEC §4.6's), with
// the omissions its json tags ask for. The report is written by hand because the general
// encoder's reflection was a measurable share of a verification; the tests hold this form equal
// to json.Marshal for every report shape.
func (r *Report) wireJSON(dst []byte) ([]byte, error) {
	c := jsonWriter{b: dst}
	c.report(r)
	return c.b, c.err
}

// canonicalJSON is the report's RFC 8785 form, written by the same code with every object's
// members in UTF-16 order (all names are ASCII, so byte order). It saves the signer re-reading
// and re-ordering the wire form; the tests hold it equal to receipt.Canonicalize(JSON()) for every
// report shape, and fuzzing does for arbitrary requests.
func (r *Report) canonicalJSON(dst []byte) ([]byte, error) {
	c := jsonWriter{b: dst, canonical: true}
	c.report(r)
	return c.b, c.err
}

// bothJSON appends the wire form to wire and the canonical form to canon, as wireJSON and
// canonicalJSON do. Both forms hold the same strings, so when writing the first found every one
// of them plain (see wire.PlainASCII), the second writes them without looking at them again, a
// look that would cost as much as a pass over every string. canonErr is canonicalJSON's error.
func (r *Report) bothJSON(wire, canon []byte) (w, c []byte, err, canonErr error) {
	cw := jsonWriter{b: wire}
	cw.report(r)
	cc := jsonWriter{b: canon, canonical: true, knownPlain: !cw.escaped}
	cc.report(r)
	return cw.b, cc.b, cw.err, cc.err
}

// members are the member names of one object type, each written as it starts a member (quoted,
// with its colon), and the two orders to write them in: the struct's and RFC 8785's.
//
// Each type's writer below loops over one of the orders and switches on the index, with the
// member's value written in the case for its index; so both forms come from one piece of code per
// type, without the indirect calls per member that a table of functions costs.
type members struct {
	names           []string
	wire, canonical []uint8
}

func newMembers(names ...string) *members {
	m := &members{names: make([]string, len(names)), wire: make([]uint8, len(names)), canonical: make([]uint8, len(names))}
	for i, n := range names {
		m.names[i] = `"` + n + `":`
		m.wire[i], m.canonical[i] = uint8(i), uint8(i)
	}
	slices.SortFunc(m.canonical, func(a, b uint8) int { return wire.UTF16Less(names[a], names[b]) })
	return m
}

// The report's member names, in the order of each struct with its json tags' names; the
// indexes the writers switch on are positions in these lists. The tests hold the wire form to
// json.Marshal, which reads the tags.
var (
	summaryMembers     = newMembers("result", "blocking_checks")
	actionMembers      = newMembers("action", "using", "for")
	errorDetailMembers = newMembers("check", "path", "expected", "found", "message")
	flagMembers        = newMembers("check", "field", "severity", "detail")
	hintMembers        = newMembers("source", "check", "path", "expected", "found")
	ratioMembers       = newMembers("ratio", "passed", "total")
	verifyInfoMembers  = newMembers("public_key_url", "key_version", "canonicalization", "hash_algorithm", "service", "mcp")
	reportMembers      = newMembers("summary", "next_actions", "result", "verification_id", "task_id", "agent_id",
		"output_hash", "schema_hash", "rules_hash", "request_hash", "verified_at", "verifier_version",
		"enforce_rules", "strict_content_check",
		"errors", "errors_total", "errors_omitted", "errors_detail", "errors_detail_total", "errors_detail_omitted",
		"flags", "flags_total", "flags_omitted", "hints", "hints_total", "hints_omitted", "shortened",
		"schema_compliance", "integrity_checks", "overall", "payment", "verify")
	shortenedMembers = newMembers("reason", "max_signed_bytes")
	paymentMembers   = newMembers("free_allowance", "scheme", "network", "asset", "amount", "pay_to", "payer",
		"requirements_hash", "authorization")
)

func (c *jsonWriter) report(r *Report) {
	m := reportMembers
	c.open('{')
	for _, i := range c.order(m) {
		n := m.names[i]
		switch i {
		case 0:
			c.name(n)
			c.summary(&r.Summary)
		case 1:
			c.name(n)
			c.nextActions(r.NextActions)
		case 2:
			c.strMember(n, r.Result)
		case 3:
			c.strMember(n, r.VerificationID)
		case 4:
			c.strMember(n, r.TaskID)
		case 5:
			c.name(n)
			if r.AgentID == nil {
				c.b = append(c.b, "null"...)
			} else {
				c.str(*r.AgentID)
			}
		case 6:
			c.strMember(n, r.OutputHash)
		case 7:
			c.strMember(n, r.SchemaHash)
		case 8:
			c.strMember(n, r.RulesHash)
		case 9:
			if r.RequestHash != "" {
				c.strMember(n, r.RequestHash)
			}
		case 10:
			c.strMember(n, r.VerifiedAt)
		case 11:
			c.strMember(n, r.VerifierVersion)
		case 12:
			c.boolMember(n, r.EnforceRules)
		case 13:
			c.boolMember(n, r.StrictContentCheck)
		case 14:
			if r.Errors != nil {
				c.strList(n, r.Errors)
			}
		case 15:
			c.countMember(n, r.ErrorsTotal)
		case 16:
			c.countMember(n, r.ErrorsOmitted)
		case 17:
			if r.ErrorsDetail != nil {
				c.name(n)
				c.open('[')
				for j := range r.ErrorsDetail {
					c.elem()
					c.errorDetail(&r.ErrorsDetail[j])
				}
				c.close(']')
			}
		case 18:
			c.countMember(n, r.ErrorsDetailTotal)
		case 19:
			c.countMember(n, r.ErrorsDetailOmitted)
		case 20:
			if r.Flags != nil {
				c.name(n)
				c.open('[')
				for j := range r.Flags {
					c.elem()
					c.flag(&r.Flags[j])
				}
				c.close(']')
			}
		case 21:
			c.countMember(n, r.FlagsTotal)
		case 22:
			c.countMember(n, r.FlagsOmitted)
		case 23:
			if r.Hints != nil {
				c.name(n)
				c.open('[')
				for j := range r.Hints {
					c.elem()
					c.hint(&r.Hints[j])
				}
				c.close(']')
			}
		case 24:
			c.countMember(n, r.HintsTotal)
		case 25:
			c.countMember(n, r.HintsOmitted)
		case 26:
			if r.Shortened != nil {
				c.name(n)
				c.shortened(r.Shortened)
			}
		case 27:
			c.ratioMember(n, r.SchemaCompliance)
		case 28:
			c.ratioMember(n, r.IntegrityChecks)
		case 29:
			c.ratioMember(n, r.Overall)
		case 30:
			if r.Payment != nil {
				c.name(n)
				c.payment(r.Payment)
			}
		case 31:
			c.name(n)
			c.verifyBlock(&r.Verify)
		}
	}
	c.close('}')
}

func (c *jsonWriter) summary(s *Summary) {
	m := summaryMembers
	c.open('{')
	for _, i := range c.order(m) {
		switch i {
		case 0:
			c.strMember(m.names[i], s.Result)
		case 1:
			c.strList(m.names[i], s.BlockingChecks) // nil is []
		}
	}
	c.close('}')
}

// writtenForms are a value's two forms, written once for values that recur from report to report.
type writtenForms struct{ wire, canonical []byte }

func (f *writtenForms) form(canonical bool) []byte {
	if canonical {
		return f.canonical
	}
	return f.wire
}

// writeForms writes a value in both forms with write, which writes it to a jsonWriter.
func writeForms(write func(*jsonWriter)) (writtenForms, error) {
	w, c := jsonWriter{}, jsonWriter{canonical: true}
	write(&w)
	write(&c)
	return writtenForms{w.b, c.b}, errors.Join(w.err, c.err)
}

// Every report's next_actions is one of two lists (buildReport), written here once in each form.
var failActionsJSON, passActionsJSON = actionsForms(failActions), actionsForms(passActions)

func actionsForms(list []Action) writtenForms {
	f, err := writeForms(func(c *jsonWriter) { c.actions(list) })
	if err != nil {
		panic(err) // the lists above are plain ASCII
	}
	return f
}

// nextActions writes the next_actions list, a known list from its forms written once.
func (c *jsonWriter) nextActions(list []Action) {
	switch {
	case slices.Equal(list, failActions):
		c.b = append(c.b, failActionsJSON.form(c.canonical)...)
	case slices.Equal(list, passActions):
		c.b = append(c.b, passActionsJSON.form(c.canonical)...)
	default:
		c.actions(list)
	}
	c.first = false
}

func (c *jsonWriter) actions(list []Action) {
	c.open('[')
	for j := range list {
		c.elem()
		c.action(&list[j])
	}
	c.close(']')
}

func (c *jsonWriter) action(a *Action) {
	m := actionMembers
	c.open('{')
	for _, i := range c.order(m) {
		switch i {
		case 0:
			c.strMember(m.names[i], a.Action)
		case 1:
			if a.Using != "" {
				c.strMember(m.names[i], a.Using)
			}
		case 2:
			if a.For != "" {
				c.strMember(m.names[i], a.For)
			}
		}
	}
	c.close('}')
}

func (c *jsonWriter) errorDetail(d *ErrorDetail) {
	m := errorDetailMembers
	c.open('{')
	for _, i := range c.order(m) {
		var s string
		switch i {
		case 0:
			s = d.Check
		case 1:
			s = d.Path
		case 2:
			s = d.Expected
		case 3:
			s = d.Found
		case 4:
			s = d.Message
		}
		c.strMember(m.names[i], s)
	}
	c.close('}')
}

func (c *jsonWriter) flag(f *Flag) {
	m := flagMembers
	c.open('{')
	for _, i := range c.order(m) {
		var s string
		switch i {
		case 0:
			s = f.Check
		case 1:
			s = f.Field
		case 2:
			s = f.Severity
		case 3:
			s = f.Detail
		}
		c.strMember(m.names[i], s)
	}
	c.close('}')
}

func (c *jsonWriter) hint(h *Hint) {
	m := hintMembers
	c.open('{')
	for _, i := range c.order(m) {
		var s string
		switch i {
		case 0:
			s = h.Source
		case 1:
			s = h.Check
		case 2:
			s = h.Path
		case 3:
			s = h.Expected
		case 4:
			s = h.Found
		}
		c.strMember(m.names[i], s)
	}
	c.close('}')
}

// lastVerify is the verify block last written, in both forms. A deployment puts the same block
// in every report, so a report whose block equals it appends these forms instead of writing its
// members again; a block that differs is written and takes its place.
var lastVerify atomic.Pointer[verifyForms]

type verifyForms struct {
	info receipt.VerifyInfo
	writtenForms
}

func (c *jsonWriter) verifyBlock(v *receipt.VerifyInfo) {
	last := lastVerify.Load()
	if last == nil || last.info != *v {
		f, err := writeForms(func(w *jsonWriter) { w.verifyInfo(v) })
		if err != nil {
			c.verifyInfo(v) // written as any value the encoder refuses, with its error
			return
		}
		last = &verifyForms{*v, f}
		lastVerify.Store(last)
	}
	c.b = append(c.b, last.form(c.canonical)...)
	c.first = false
}

func (c *jsonWriter) verifyInfo(v *receipt.VerifyInfo) {
	m := verifyInfoMembers
	c.open('{')
	for _, i := range c.order(m) {
		var s string
		switch i {
		case 0:
			s = v.PublicKeyURL
		case 1:
			s = v.KeyVersion
		case 2:
			s = v.Canonicalization
		case 3:
			s = v.HashAlgorithm
		case 4:
			s = v.Service
		case 5:
			s = v.MCP
		}
		c.strMember(m.names[i], s)
	}
	c.close('}')
}

// payment writes the payment member, each field only when set (the json tags' omitzero).
func (c *jsonWriter) payment(p *receipt.Payment) {
	m := paymentMembers
	c.open('{')
	for _, i := range c.order(m) {
		if i == 0 {
			if p.FreeAllowance {
				c.boolMember(m.names[i], true)
			}
			continue
		}
		var s string
		switch i {
		case 1:
			s = p.Scheme
		case 2:
			s = p.Network
		case 3:
			s = p.Asset
		case 4:
			s = p.Amount
		case 5:
			s = p.PayTo
		case 6:
			s = p.Payer
		case 7:
			s = p.RequirementsHash
		case 8:
			s = p.Authorization
		}
		if s != "" {
			c.strMember(m.names[i], s)
		}
	}
	c.close('}')
}

func (c *jsonWriter) shortened(sh *Shortened) {
	m := shortenedMembers
	c.open('{')
	for _, i := range c.order(m) {
		switch i {
		case 0:
			c.strMember(m.names[i], sh.Reason)
		case 1:
			c.name(m.names[i])
			c.b = strconv.AppendInt(c.b, int64(sh.MaxSignedBytes), 10)
		}
	}
	c.close('}')
}

// ratioMember writes a ratio object, or nothing when r is nil.
func (c *jsonWriter) ratioMember(n string, r *Ratio) {
	if r == nil {
		return
	}
	m := ratioMembers
	c.name(n)
	c.open('{')
	for _, i := range c.order(m) {
		c.name(m.names[i])
		switch i {
		case 0:
			c.ratio(r.Ratio)
		case 1:
			c.b = strconv.AppendInt(c.b, int64(r.Passed), 10)
		case 2:
			c.b = strconv.AppendInt(c.b, int64(r.Total), 10)
		}
	}
	c.close('}')
}

// ratio writes a ratio in [0, 1] with at most 6 decimals. RFC 8785 (and Go's JSON encoder) write
// numbers as ECMAScript does: the shortest round-trip digits, in plain decimal notation from
// 1e-6 up to 1e21. Ratios always take this form; anything else is refused and the caller goes the
// general way.
//
// A ratio is k/10^6 for a whole k (ratioOf rounds it so), and then its shortest digits are those
// of k/10^6 itself: the float is the double nearest that decimal (division rounds correctly), and
// any other decimal of at most 7 significant digits lies at least 10^-6 away, far beyond the
// float's precision. So such a ratio is written from k with integer arithmetic, which costs a
// fraction of the general shortest-digits search; anything else takes that search.
func (c *jsonWriter) ratio(f float64) {
	if k := math.Round(f * 1e6); k >= 0 && k <= 1e6 && k/1e6 == f {
		n := int(k)
		c.b = append(c.b, byte('0'+n/1_000_000))
		if frac := n % 1_000_000; frac != 0 {
			digits := [7]byte{'.'}
			for j := 6; j > 0; j-- {
				digits[j] = byte('0' + frac%10)
				frac /= 10
			}
			end := 7
			for digits[end-1] == '0' {
				end--
			}
			c.b = append(c.b, digits[:end]...)
		}
		return
	}
	if a := math.Abs(f); f != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(f) || math.Signbit(f) {
		c.err = errNotCanonical
	}
	c.b = strconv.AppendFloat(c.b, f, 'f', -1, 64)
}

// jsonWriter appends JSON with minimal string escaping and no whitespace (RFC 8785's writing, when
// members come in sorted order), remembering the first error. first is true right after an
// opening bracket, where the next member or element takes no comma.
type jsonWriter struct {
	b          []byte
	canonical  bool // objects' members in canonical order
	first      bool
	knownPlain bool // every string is known to be plain ASCII (see bothJSON)
	escaped    bool // a string was not plain ASCII
	err        error
}

// order is the order to write m's members in.
func (c *jsonWriter) order(m *members) []uint8 {
	if c.canonical {
		return m.canonical
	}
	return m.wire
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

// name starts an object member; n is its name already quoted, with the colon (see members).
func (c *jsonWriter) name(n string) {
	c.elem()
	c.b = append(c.b, n...)
}

func (c *jsonWriter) strMember(n, s string) {
	c.name(n)
	c.str(s)
}

func (c *jsonWriter) boolMember(n string, v bool) {
	c.name(n)
	c.b = strconv.AppendBool(c.b, v)
}

// countMember is an integer member left out when nil.
func (c *jsonWriter) countMember(n string, v *int) {
	if v != nil {
		c.name(n)
		c.b = strconv.AppendInt(c.b, int64(*v), 10)
	}
}

// strList is an array of strings; nil is written as [].
func (c *jsonWriter) strList(n string, list []string) {
	c.name(n)
	c.open('[')
	for _, s := range list {
		c.elem()
		c.str(s)
	}
	c.close(']')
}

func (c *jsonWriter) str(s string) {
	if c.knownPlain || wire.PlainASCII(s) {
		c.b = append(c.b, '"')
		c.b = append(c.b, s...)
		c.b = append(c.b, '"')
		return
	}
	c.escaped = true
	var err error
	if c.b, err = jsontext.AppendQuote(c.b, s); err != nil && c.err == nil {
		c.err = errNotCanonical
	}
}

// attest signs the report, whose two forms are in *wirep and *canonp (canon nil when the signer
// is to canonicalize wire itself). When the signed message is over the signing key's limit, the
// report's lists are shortened (Report.keepAllBut) by the fewest entries that make it fit,
// found by bisection over the forms' sizes alone, and only that report is signed: one signing
// call, whatever the search took. A report that does not fit even with empty lists is the
// error receiptTooLarge, refused as the request's.
func (r *Report) attest(a Attester, wirep, canonp *[]byte, canon []byte) ([]byte, error) {
	out, err := a.AttestCanonical(receipt.ContextVerify, *wirep, canon, r.VerifiedAt)
	tooLarge, ok := errors.AsType[*receipt.MessageTooLargeError](err)
	if !ok {
		return out, err
	}
	// The message is the canonical form plus an overhead that does not change with the lists.
	size := func() (int, error) {
		w, c, err, canonErr := r.bothJSON((*wirep)[:0], (*canonp)[:0])
		*wirep, *canonp = w, c
		if err != nil {
			return 0, err
		}
		if canonErr != nil {
			if c, err = receipt.Canonicalize(w); err != nil {
				return 0, err
			}
			*canonp = c
		}
		return len(c), nil
	}
	full, err := size()
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	// The shortened report says so (its member counts in the sizes measured below).
	overhead := tooLarge.Size - full
	r.Shortened = &Shortened{Reason: ShortenedForSigningKey, MaxSignedBytes: tooLarge.Max}
	lists := r.fitLists()
	fits := func(n int) (bool, error) {
		r.keepAllBut(lists, n)
		l, err := size()
		return overhead+l <= tooLarge.Max, err
	}
	total := lists.entries()
	if ok, err := fits(total); err != nil || !ok {
		if err == nil {
			err = receiptTooLarge(tooLarge.Max)
		}
		return nil, err
	}
	// The fewest entries to leave out: fits(lo) is false, fits(hi) true.
	lo, hi := 0, total
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fits(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	if _, err := fits(hi); err != nil {
		return nil, err
	}
	return a.AttestCanonical(receipt.ContextVerify, *wirep, *canonp, r.VerifiedAt)
}

// receiptTooLarge is the answer to a request whose report cannot be signed by this deployment's
// key even with every list empty: what is left is the request's identifying fields (and the
// deployment's fixed texts), so the fix is shorter ids. Nothing is charged or counted.
func receiptTooLarge(max int) *apperr.Error {
	fix := fmt.Sprintf("Send a shorter task_id and agent_id: this deployment's signing key signs at most %d bytes per receipt, and its fixed parts take the rest.", max)
	const problem = "leaves the receipt no room under the signing key's size limit"
	return apperr.Invalid(apperr.FieldProblem{Field: "task_id", Problem: problem, Fix: fix},
		apperr.FieldProblem{Field: "agent_id", Problem: problem, Fix: fix})
}
