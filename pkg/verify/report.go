package verify

import (
	"math"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/receipt"
)

// Ratio is a share of passed checks, rounded to 6 decimals; 1 when nothing was checked.
type Ratio struct {
	Ratio  float64 `json:"ratio"`
	Passed int     `json:"passed"`
	Total  int     `json:"total"`
}

func ratioOf(passed, total int) Ratio {
	r := 1.0
	if total > 0 {
		r = math.Round(float64(passed)/float64(total)*1e6) / 1e6
	}
	return Ratio{Ratio: r, Passed: passed, Total: total}
}

// Summary is the verdict at a glance.
type Summary struct {
	Result         string   `json:"result"`
	BlockingChecks []string `json:"blocking_checks"`
}

// Action is one entry of next_actions: what the seller or buyer should do with this verdict.
type Action struct {
	Action string `json:"action"`
	Using  string `json:"using,omitempty"`
	For    string `json:"for,omitempty"`
}

var (
	failActions = []Action{{Action: "repair_and_reverify", Using: "hints"}, {Action: "withhold_payment", For: "buyer"}}
	passActions = []Action{{Action: "attach_receipt", For: "seller"}, {Action: "proceed_to_payment", For: "buyer"}}
)

// ErrorDetail describes one blocking failure.
type ErrorDetail struct {
	Check    string `json:"check"`
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
	Message  string `json:"message"`
}

// Flag records one failure of any severity: error (blocking), warning (not enforced), info.
type Flag struct {
	Check    string `json:"check"`
	Field    string `json:"field"`
	Severity string `json:"severity"`
	Detail   string `json:"detail"`
}

// Hint tells what to repair, blocking failures first.
type Hint struct {
	Source   string `json:"source"`
	Check    string `json:"check"`
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

// Report is the response of POST /verify/schema without its attestation. Field order is the
// wire order of SPEC §4.6; the compact shape leaves the full-only fields nil.
type Report struct {
	Summary            Summary  `json:"summary"`
	NextActions        []Action `json:"next_actions"`
	Result             string   `json:"result"`
	VerificationID     string   `json:"verification_id"`
	TaskID             string   `json:"task_id"`
	AgentID            *string  `json:"agent_id"`
	OutputHash         string   `json:"output_hash"`
	SchemaHash         string   `json:"schema_hash"`
	RulesHash          string   `json:"rules_hash"`
	RequestHash        string   `json:"request_hash,omitzero"`
	VerifiedAt         string   `json:"verified_at"`
	VerifierVersion    string   `json:"verifier_version"`
	EnforceRules       bool     `json:"enforce_rules"`
	StrictContentCheck bool     `json:"strict_content_check"`

	Errors              []string      `json:"errors,omitzero"`
	ErrorsTotal         *int          `json:"errors_total,omitzero"`
	ErrorsOmitted       *int          `json:"errors_omitted,omitzero"`
	ErrorsDetail        []ErrorDetail `json:"errors_detail,omitzero"`
	ErrorsDetailTotal   *int          `json:"errors_detail_total,omitzero"`
	ErrorsDetailOmitted *int          `json:"errors_detail_omitted,omitzero"`
	Flags               []Flag        `json:"flags,omitzero"`
	FlagsTotal          *int          `json:"flags_total,omitzero"`
	FlagsOmitted        *int          `json:"flags_omitted,omitzero"`
	Hints               []Hint        `json:"hints,omitzero"`
	HintsTotal          *int          `json:"hints_total,omitzero"`
	HintsOmitted        *int          `json:"hints_omitted,omitzero"`
	Shortened           *Shortened    `json:"shortened,omitzero"`
	SchemaCompliance    *Ratio        `json:"schema_compliance,omitzero"`
	IntegrityChecks     *Ratio        `json:"integrity_checks,omitzero"`
	Overall             *Ratio        `json:"overall,omitzero"`

	// Payment is what bought the answer (SPEC §16); nil for an answer signed outside the
	// service (the CLI's local check), which neither the allowance nor a payment bought.
	Payment *receipt.Payment   `json:"payment,omitzero"`
	Verify  receipt.VerifyInfo `json:"verify"`

	overall Ratio // kept for the history even when the compact shape omits it

	// What the pointer fields above point to lives here, in the report itself, so that shaping
	// a report costs one allocation instead of one per count and ratio.
	counts [4][2]int // total and omitted of errors, errors_detail, flags and hints
	ratios [3]Ratio  // schema_compliance, integrity_checks and overall
}

// Shortened says a report's lists were shortened to fit its signing key (a kms-sign: key signs
// at most 4096 bytes; see fitOrder), inside the signature like the rest, so that a reader knows
// entries are missing beyond the ListCap cap and why: each list's <list>_omitted then counts the
// entries left out for the limit as well as those past ListCap. Report.Shortened is nil when
// nothing was cut for the key.
type Shortened struct {
	Reason         string `json:"reason"`           // always ShortenedForSigningKey
	MaxSignedBytes int    `json:"max_signed_bytes"` // the key's limit on the signed message
}

// ShortenedForSigningKey is Shortened's one reason: the signing key's message limit.
const ShortenedForSigningKey = "signing_key_limit"

// OverallRatio is the share of all checks that passed, whatever the response shape.
func (r *Report) OverallRatio() float64 { return r.overall.Ratio }

// JSON is the report's wire form (without attestation).
// The buffer holds a typical full report, the seed's included, without growing.
func (r *Report) JSON() ([]byte, error) { return r.wireJSON(make([]byte, 0, 3072)) }

// Passed reports whether nothing blocked.
func (r *Report) Passed() bool { return r.Result == "pass" }

// failure sources and how each is named in errors and hints.
const (
	sourceSchema    = "schema"
	sourceIntegrity = "integrity"
	sourceContent   = "content"
)

// failureGroup is one list of failures with where they came from and whether they block; the
// report lists the groups in a fixed order.
type failureGroup struct {
	t        Tally
	source   string
	blocking bool
	severity string // "error" when blocking
}

// Findings are everything the checks found, before they are shaped into a report.
type Findings struct {
	Schema  Tally // schema_compliance
	Rules   Tally // consistency:*
	Bounds  Tally // bounds:range
	Content Tally // content:* (counted in integrity_checks)
	Info    Tally // info-only findings (inexact numbers outside strict mode), not counted
	Enforce bool
	Strict  bool
	Compact bool
}

// Envelope is what the engine does not decide itself: ids, time, version and the verify block.
type Envelope struct {
	VerificationID  string
	VerifiedAt      time.Time
	VerifierVersion string
	Verify          receipt.VerifyInfo
	Payment         *receipt.Payment // nil: no payment member
}

// buildReport shapes findings into the response of SPEC §4.6. Its lists hold at most ListCap
// entries each and count the rest, so an output with tens of thousands of failures costs the
// report no more than one with ListCap of them.
func buildReport(req *Request, f Findings, env Envelope) *Report {
	warning := func(blocking bool) string {
		if blocking {
			return "error"
		}
		return "warning"
	}
	groups := [...]failureGroup{
		{f.Schema, sourceSchema, true, "error"},
		{f.Rules, sourceIntegrity, f.Enforce, warning(f.Enforce)},
		{f.Bounds, sourceIntegrity, f.Enforce, warning(f.Enforce)},
		{f.Content, sourceContent, f.Strict, warning(f.Strict)},
		{f.Info, sourceContent, false, "info"},
	}

	rep := &Report{
		VerificationID: env.VerificationID, TaskID: req.TaskID, AgentID: req.AgentID,
		OutputHash: req.Hashes.Output, SchemaHash: req.Hashes.Schema, RulesHash: req.Hashes.Rules,
		VerifiedAt: receipt.FormatTime(env.VerifiedAt), VerifierVersion: env.VerifierVersion,
		EnforceRules: req.EnforceRules, StrictContentCheck: req.StrictContentCheck, Verify: env.Verify,
		Payment: env.Payment,
	}
	blocking := []string{}
	// Failures in all, blocking ones, and the non-blocking ones that get a hint (all but info).
	nAll, nBlocking, nLater := 0, 0, 0
	for i := range groups {
		g := &groups[i]
		n := g.t.Failed()
		nAll += n
		switch {
		case g.blocking:
			nBlocking += n
			blocking = g.t.appendChecks(blocking)
		case g.severity != "info":
			nLater += n
		}
	}
	rep.Result = "pass"
	rep.NextActions = passActions
	if len(blocking) > 0 {
		rep.Result = "fail"
		rep.NextActions = failActions
	}
	rep.Summary = Summary{Result: rep.Result, BlockingChecks: blocking}
	var integrity Tally
	for _, t := range []*Tally{&f.Rules, &f.Bounds, &f.Content} {
		integrity.Total += t.Total
		integrity.Passed += t.Passed
	}
	schema := ratioOf(f.Schema.Passed, f.Schema.Total)
	integ := ratioOf(integrity.Passed, integrity.Total)
	rep.overall = ratioOf(f.Schema.Passed+integrity.Passed, f.Schema.Total+integrity.Total)
	if f.Compact {
		return rep
	}

	rep.RequestHash = req.Hashes.Request
	errs, details, flags, hints := listFailures(groups[:], nAll, nBlocking, nLater)

	rep.Errors, rep.ErrorsTotal, rep.ErrorsOmitted = listed(errs, nBlocking, &rep.counts[0])
	rep.ErrorsDetail, rep.ErrorsDetailTotal, rep.ErrorsDetailOmitted = listed(details, nBlocking, &rep.counts[1])
	rep.Flags, rep.FlagsTotal, rep.FlagsOmitted = listed(flags, nAll, &rep.counts[2])
	rep.Hints, rep.HintsTotal, rep.HintsOmitted = listed(hints, nBlocking+nLater, &rep.counts[3])

	rep.ratios = [3]Ratio{schema, integ, rep.overall}
	rep.SchemaCompliance, rep.IntegrityChecks, rep.Overall = &rep.ratios[0], &rep.ratios[1], &rep.ratios[2]
	return rep
}

// listFailures writes the report's lists from the groups' failures in report order: errors,
// errors_detail and hints of the blocking ones, flags of all, then the hints of the others but
// info. Each list is allocated once, with room for the entries it shows, and a failure is
// written (Failure.Show) once, only when a list shows it.
func listFailures(groups []failureGroup, nAll, nBlocking, nLater int) (errs []string, details []ErrorDetail, flags []Flag, hints []Hint) {
	errs = make([]string, 0, min(nBlocking, ListCap))
	details = make([]ErrorDetail, 0, min(nBlocking, ListCap))
	flags = make([]Flag, 0, min(nAll, ListCap))
	hints = make([]Hint, 0, min(nBlocking+nLater, ListCap))
	// The hints of the non-blocking failures come after all the blocking ones': those written
	// for their flags wait here, in the order they are listed in.
	var later [ListCap]Hint
	nLater = 0
	for i := range groups {
		g := &groups[i]
		for j := range g.t.Failures {
			if len(flags) == ListCap && (!g.blocking || len(errs) == ListCap) {
				break // nothing more of this group is shown
			}
			x := &g.t.Failures[j]
			s := x.Show()
			if len(flags) < ListCap {
				flags = append(flags, Flag{Check: x.Check, Field: s.Field, Severity: g.severity, Detail: s.Detail})
			}
			hint := Hint{Source: g.source, Check: x.Check, Path: s.Path, Expected: s.Expected, Found: s.Found}
			switch {
			case !g.blocking:
				if g.severity != "info" && nLater < ListCap {
					later[nLater] = hint
					nLater++
				}
			case len(errs) < ListCap:
				msg := messagePrefix(g.source) + ": " + x.Check + " at '" + fieldOrRoot(s.Field) + "': " + s.Detail
				errs = append(errs, msg)
				details = append(details, ErrorDetail{Check: x.Check, Path: s.Path, Expected: s.Expected, Found: s.Found, Message: msg})
				hints = append(hints, hint)
			}
		}
	}
	k := 0
	for i := range groups {
		g := &groups[i]
		if g.blocking || g.severity == "info" {
			continue
		}
		for j := range g.t.Failures {
			if len(hints) == ListCap {
				break
			}
			if k < nLater {
				hints = append(hints, later[k])
			} else {
				x := &g.t.Failures[j]
				s := x.Show()
				hints = append(hints, Hint{Source: g.source, Check: x.Check, Path: s.Path, Expected: s.Expected, Found: s.Found})
			}
			k++
		}
	}
	return errs, details, flags, hints
}

func messagePrefix(source string) string {
	switch source {
	case sourceIntegrity:
		return "enforce_rules"
	case sourceContent:
		return "strict_content_check"
	}
	return "schema"
}

func fieldOrRoot(field string) string {
	if field == "" {
		return "$"
	}
	return field
}

// listed is a list of the first of total entries (at most ListCap of them), with, in n, how many
// there were and how many were left out. The list is never null: an empty list is written as [].
func listed[T any](list []T, total int, n *[2]int) ([]T, *int, *int) {
	n[0], n[1] = total, total-len(list)
	if list == nil {
		list = []T{}
	}
	return list, &n[0], &n[1]
}

// The lists a report shortens to fit a signing key's message limit, in the order they give up
// entries: a report whose signed message is over the limit (receipt.MessageTooLargeError, a
// kms-sign: key's 4096 bytes) loses the last entry of hints, then of flags, then of
// errors_detail, then of errors, then of hints again, round and round (a list already empty is
// passed over), until it fits; each list's <list>_omitted counts what it left out. The repair
// hints go first because errors and errors_detail say the same failures, and errors, the
// shortest statement of what blocked, go last.
const (
	fitErrors = iota
	fitErrorsDetail
	fitFlags
	fitHints
)

// fitOrder is the order above, as indexes of Report.counts.
var fitOrder = [4]int{fitHints, fitFlags, fitErrorsDetail, fitErrors}

// fitLists are a report's lists as built, which shortened copies are cut from.
type fitLists struct {
	errs    []string
	details []ErrorDetail
	flags   []Flag
	hints   []Hint
}

func (r *Report) fitLists() fitLists {
	return fitLists{r.Errors, r.ErrorsDetail, r.Flags, r.Hints}
}

// entries is how many entries the lists hold.
func (l fitLists) entries() int { return len(l.errs) + len(l.details) + len(l.flags) + len(l.hints) }

// keepAllBut shows all but n of l's entries, taken in fitOrder, and counts the rest as omitted.
func (r *Report) keepAllBut(l fitLists, n int) {
	lens := [4]int{len(l.errs), len(l.details), len(l.flags), len(l.hints)}
	for n > 0 {
		removed := false
		for _, i := range fitOrder {
			if n > 0 && lens[i] > 0 {
				lens[i]--
				n--
				removed = true
			}
		}
		if !removed {
			break
		}
	}
	r.Errors, r.ErrorsDetail = l.errs[:lens[fitErrors]], l.details[:lens[fitErrorsDetail]]
	r.Flags, r.Hints = l.flags[:lens[fitFlags]], l.hints[:lens[fitHints]]
	for i, n := range lens {
		r.counts[i][1] = r.counts[i][0] - n
	}
}
