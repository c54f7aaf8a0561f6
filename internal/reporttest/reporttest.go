// Package reporttest makes requests whose failing reports are long (an invoice with many line
// items, some of them wrong) and reads a signed report's four lists, so that the tests of every
// key source can check whether a report was signed in full or shortened to fit its key.
package reporttest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Lists are the report lists a key's limit may shorten (SPEC §4.6).
var Lists = []string{"errors", "errors_detail", "flags", "hints"}

// FailingInvoice is a POST /verify/schema body: the seed's invoice schema and sum rule (full
// detail) over an invoice of items line items, of which the first bad have a quantity of 0 and a
// negative line total (two schema failures each), and whose total is 1 off the sum (one rule
// failure). Its report lists 2*bad+1 errors, each with its hint: at 50 items with 10 bad, about
// 17 KB of signed report, far past KMS's 4096 bytes.
func FailingInvoice(items, bad int) string {
	lines := make([]string, items)
	sum := 0
	for i := range lines {
		qty, total := 1+i%3, 10*(1+i%3)
		if i < bad {
			qty, total = 0, -5
		}
		sum += total
		lines[i] = fmt.Sprintf(`{"sku":"SKU-%03d","qty":%d,"line_total":%d}`, i, qty, total)
	}
	return `{"task_id":"invoice-` + fmt.Sprint(items) + `-` + fmt.Sprint(bad) + `","agent_id":"seller-invoices",` +
		`"expected_schema":{"type":"object","required":["invoice_id","currency","line_items","total"],"properties":{` +
		`"invoice_id":{"type":"string","pattern":"^INV-[0-9]{4}$"},"currency":{"enum":["USD","EUR"]},` +
		`"line_items":{"type":"array","minItems":1,"items":{"type":"object","required":["sku","qty","line_total"],"properties":{` +
		`"sku":{"type":"string"},"qty":{"type":"integer","minimum":1},"line_total":{"type":"number","minimum":0}}}},` +
		`"total":{"type":"number"}}},` +
		`"submitted_output":{"invoice_id":"INV-0042","currency":"USD","line_items":[` + strings.Join(lines, ",") + `],"total":` + fmt.Sprint(sum+1) + `},` +
		`"rules":[{"type":"sum_equals","field":"line_items[].line_total","equals_field":"total"}],"enforce_rules":true,"detail":"full"}`
}

// FailuresOf is how many errors FailingInvoice(items, bad) reports: two per bad item and the sum.
func FailuresOf(bad int) int { return 2*bad + 1 }

// Shape is what a signed report shows of each list: its entries, its total and what it omits,
// and its shortened member (nil when it has none).
type Shape struct {
	Shown, Total, Omitted map[string]int
	Shortened             map[string]any
}

// ShapeOf reads a signed report's lists.
func ShapeOf(t testing.TB, report []byte) Shape {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(report, &doc); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	s := Shape{Shown: map[string]int{}, Total: map[string]int{}, Omitted: map[string]int{}}
	for _, name := range Lists {
		list, ok := doc[name].([]any)
		total, tok := doc[name+"_total"].(float64)
		omitted, ook := doc[name+"_omitted"].(float64)
		if !ok || !tok || !ook {
			t.Fatalf("%s: not a list with its total and omitted counts", name)
		}
		s.Shown[name], s.Total[name], s.Omitted[name] = len(list), int(total), int(omitted)
	}
	s.Shortened, _ = doc["shortened"].(map[string]any)
	return s
}

// InFull fails the test unless the report shows every one of want entries in each list and says
// nothing was shortened.
func InFull(t testing.TB, report []byte, want int) {
	t.Helper()
	s := ShapeOf(t, report)
	for _, name := range Lists {
		if s.Shown[name] != want || s.Total[name] != want || s.Omitted[name] != 0 {
			t.Errorf("%s shows %d of %d (%d omitted), want all %d", name, s.Shown[name], s.Total[name], s.Omitted[name], want)
		}
	}
	if s.Shortened != nil {
		t.Errorf("a report signed in full says it was shortened: %v", s.Shortened)
	}
}

// Shortened fails the test unless the report says it was shortened for a key of limit bytes,
// its hints lost entries, and every list's counts still add up to want.
func Shortened(t testing.TB, report []byte, want, limit int) {
	t.Helper()
	s := ShapeOf(t, report)
	if s.Shortened["reason"] != "signing_key_limit" || s.Shortened["max_signed_bytes"] != float64(limit) {
		t.Errorf("shortened = %v, want {reason: signing_key_limit, max_signed_bytes: %d}", s.Shortened, limit)
	}
	if s.Omitted["hints"] == 0 {
		t.Error("no hint was left out, yet the report says it was shortened")
	}
	for _, name := range Lists {
		if s.Total[name] != want || s.Shown[name]+s.Omitted[name] != want {
			t.Errorf("%s: %d shown and %d omitted of %d, want them to add up to %d", name, s.Shown[name], s.Omitted[name], s.Total[name], want)
		}
	}
}
