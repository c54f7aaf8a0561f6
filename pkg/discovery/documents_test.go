package discovery

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testproc"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

func TestAPICatalog(t *testing.T) {
	e := newEnv(t)
	resp, body := e.get(t, PathAPICatalog)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != linksetMediaType {
		t.Fatalf("GET: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	wantLink := "<" + e.base + PathAPICatalog + `>; rel="api-catalog"`
	if got := resp.Header.Get("Link"); got != wantLink {
		t.Errorf("GET Link = %q, want %q", got, wantLink)
	}
	var doc struct {
		Linkset []map[string]json.RawMessage `json:"linkset"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || len(doc.Linkset) != 1 {
		t.Fatalf("linkset: %v %s", err, body)
	}
	ctx := doc.Linkset[0]
	var anchor string
	json.Unmarshal(ctx["anchor"], &anchor)
	if anchor != e.base {
		t.Errorf("anchor %q, want the base URL %q", anchor, e.base)
	}
	for rel, path := range map[string]string{"service-desc": PathOpenAPI, "service-doc": PathDocs, "status": "/health"} {
		var links []link
		json.Unmarshal(ctx[rel], &links)
		if len(links) == 0 || links[0].Href != e.base+path {
			t.Errorf("%s = %s, want %s first", rel, ctx[rel], e.base+path)
			continue
		}
		// Every target answers.
		for _, l := range links {
			if r, _ := e.get(t, strings.TrimPrefix(l.Href, e.base)); r.StatusCode != 200 {
				t.Errorf("%s target %s answers %d", rel, l.Href, r.StatusCode)
			}
		}
	}

	resp, body = e.do(t, http.MethodHead, PathAPICatalog, nil)
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("Link") != wantLink {
		t.Errorf("HEAD: %d, %d bytes, Link %q", resp.StatusCode, len(body), resp.Header.Get("Link"))
	}
}

// openAPI fetches and decodes the served document.
func openAPI(t *testing.T, e *env) map[string]any {
	t.Helper()
	resp, body := e.get(t, PathOpenAPI)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("openapi.json: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return decodeJSON(t, body)
}

// The document describes exactly the routes of Routes() (and the catalog's HEAD), in
// their order, from the code's own sources.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	e := newEnv(t)
	doc := openAPI(t, e)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi = %v, want 3.1.x", doc["openapi"])
	}
	if servers, _ := doc["servers"].([]any); len(servers) != 1 || servers[0].(map[string]any)["url"] != e.base {
		t.Errorf("servers = %v", doc["servers"])
	}
	paths, _ := doc["paths"].(map[string]any)
	var got, want []string
	ids := map[string]bool{}
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			got = append(got, strings.ToUpper(method)+" "+path)
			id, _ := op.(map[string]any)["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s %s: operationId %q missing or repeated", method, path, id)
			}
			ids[id] = true
		}
	}
	for _, r := range Routes() {
		want = append(want, r.Method+" "+r.Path)
	}
	want = append(want, "HEAD "+PathAPICatalog)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("operations\n got %v\nwant %v", got, want)
	}

	comps := doc["components"].(map[string]any)
	schemas := comps["schemas"].(map[string]any)
	// The request schema is the one the decoder enforces (apart from the description added here).
	reqSchema := schemas["VerifyRequest"].(map[string]any)
	delete(reqSchema, "description")
	src := wire.RequestSchema()
	delete(src, "description")
	if a, b := mustJSON(t, reqSchema), mustJSON(t, src); a != b {
		t.Errorf("VerifyRequest differs from wire.RequestSchema():\n%s\n%s", a, b)
	}
	respSchema := schemas["VerifyResponse"].(map[string]any)
	delete(respSchema, "description")
	src = wire.ResponseSchema()
	delete(src, "description")
	if a, b := mustJSON(t, respSchema), mustJSON(t, src); a != b {
		t.Errorf("VerifyResponse differs from wire.ResponseSchema()")
	}
	// Every error code, from apperr.
	var codes []string
	for _, c := range apperr.Codes() {
		codes = append(codes, string(c))
	}
	enum := schemas["Error"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)["enum"]
	if got := fmt.Sprint(enum); got != fmt.Sprint(codes) {
		t.Errorf("Error.code enum %v, want %v", got, codes)
	}
	xcodes, _ := doc["x-error-codes"].([]any)
	if len(xcodes) != len(codes) {
		t.Errorf("x-error-codes lists %d codes, want %d", len(xcodes), len(codes))
	}
	desc := doc["info"].(map[string]any)["description"].(string)
	for _, c := range codes {
		if !strings.Contains(desc, "`"+c+"`") {
			t.Errorf("info.description does not list %s", c)
		}
	}
	// The 402 answer and its headers.
	pr := comps["responses"].(map[string]any)["PaymentRequired"].(map[string]any)
	hdrs := pr["headers"].(map[string]any)
	for _, h := range []string{"PAYMENT-REQUIRED", "PAYMENT-RESPONSE"} {
		if hdrs[h] == nil {
			t.Errorf("402 answer lacks header %s", h)
		}
	}
	verifyOp := paths["/verify/schema"].(map[string]any)["post"].(map[string]any)
	okHeaders := verifyOp["responses"].(map[string]any)["200"].(map[string]any)["headers"].(map[string]any)
	for _, h := range []string{"Free-Allowance-Remaining", "Free-Allowance-Limit", "Free-Allowance-Resets", "PAYMENT-RESPONSE"} {
		if okHeaders[h] == nil {
			t.Errorf("verify 200 lacks header %s", h)
		}
	}
	for _, status := range []string{"200", "402", "413", "422", "429", "500", "503"} {
		if verifyOp["responses"].(map[string]any)[status] == nil {
			t.Errorf("POST /verify/schema does not describe %s", status)
		}
	}
	// The examples are the worked examples: the same bytes llms-full.txt shows.
	b, err := New(e.svc).get()
	if err != nil {
		t.Fatal(err)
	}
	examples := verifyOp["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["examples"].(map[string]any)
	if got := mustJSON(t, examples["pass"].(map[string]any)["value"]); got != canonical(t, b.examples.Pass.Request) {
		t.Errorf("request example is not the worked example")
	}
	// Free-allowance numbers are the live configuration's.
	if !strings.Contains(desc, "7 free verifications") || !strings.Contains(desc, "12345 bytes") {
		t.Errorf("info.description does not state the configured allowance: %s", desc)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return canonical(t, b)
}

// sections splits an llms.txt into its H2 sections, in order.
func sections(t *testing.T, doc string) ([]string, map[string]string) {
	t.Helper()
	var order []string
	body := map[string]string{}
	cur := ""
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			cur = h
			order = append(order, h)
			continue
		}
		if cur != "" {
			body[cur] += line + "\n"
		}
	}
	return order, body
}

var linkItem = regexp.MustCompile(`^- \[[^\]]+\]\((https?://[^)\s]+)\)(: .+)?$`)

func TestLLMsText(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{PathLLMs, PathLLMsFull} {
		resp, body := e.get(t, path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || resp.Header.Get("ETag") == "" {
			t.Fatalf("%s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		doc := string(body)
		lines := strings.Split(doc, "\n")
		if lines[0] != "# Agent Output Verifier" || lines[1] != "" || !strings.HasPrefix(lines[2], "> ") {
			t.Errorf("%s does not open with an H1 and a summary blockquote: %q", path, lines[:3])
		}
		order, body2 := sections(t, doc)
		want := []string{SectionEndpoints, SectionFreeAllowance, SectionPricing, SectionErrors, SectionPaymentErrors, SectionReceipts}
		if path == PathLLMsFull {
			want = append(want, SectionExamples)
		}
		want = append(want, SectionOptional)
		if !slices.Equal(order, want) {
			t.Errorf("%s sections %v, want %v", path, order, want)
		}
		// Every section but the worked examples is a list of links with notes (llmstxt.org).
		for _, s := range order {
			if s == SectionExamples {
				continue
			}
			for _, l := range strings.Split(strings.TrimSpace(body2[s]), "\n") {
				m := linkItem.FindStringSubmatch(l)
				if m == nil {
					t.Errorf("%s, %s: %q is not a link item", path, s, l)
					continue
				}
				if !strings.HasPrefix(m[1], e.base) {
					t.Errorf("%s: link %s is not on this deployment", path, m[1])
				}
			}
		}
		for _, r := range Routes() {
			if !strings.Contains(body2[SectionEndpoints], "["+r.Method+" "+r.Path+"]") {
				t.Errorf("%s Endpoints lacks %s %s", path, r.Method, r.Path)
			}
		}
		for _, s := range []string{"7 per client", "up to 12345 bytes", fmt.Sprintf("over %d bytes", wire.DefaultLimits.MaxBody)} {
			if !strings.Contains(body2[SectionFreeAllowance], s) {
				t.Errorf("%s Free allowance lacks the live %q:\n%s", path, s, body2[SectionFreeAllowance])
			}
		}
		for _, s := range []string{"$0.02", "$0.01", "eip155:8453", payee} {
			if !strings.Contains(body2[SectionPricing], s) {
				t.Errorf("%s Pricing lacks %q", path, s)
			}
		}
		for _, c := range apperr.Codes() {
			if !strings.Contains(body2[SectionErrors], "["+string(c)+"]") {
				t.Errorf("%s Errors lacks %s", path, c)
			}
			if c.Payment() != strings.Contains(body2[SectionPaymentErrors], "["+string(c)+"]") {
				t.Errorf("%s Payment errors: %s listed = %v, want %v", path, c, !c.Payment(), c.Payment())
			}
		}
		for _, s := range []string{"/.well-known/agent-card.json", "RFC 8785", "Ed25519", "request_hash"} {
			if !strings.Contains(body2[SectionReceipts], s) {
				t.Errorf("%s Receipts lacks %q", path, s)
			}
		}
	}
	free := newEnv(t, freeOnly)
	_, body := free.get(t, PathLLMs)
	_, s := sections(t, string(body))
	if !strings.Contains(s[SectionPricing], "takes no payments") || strings.Contains(s[SectionPricing], "$0.02") {
		t.Errorf("free-only Pricing:\n%s", s[SectionPricing])
	}
}

// block is one fenced block of llms-full.txt.
type block struct{ info, text string }

var fence = regexp.MustCompile("(?s)```([^\n]*)\n(.*?)\n```")

func blocks(doc string) []block {
	var out []block
	for _, m := range fence.FindAllStringSubmatch(doc, -1) {
		out = append(out, block{m[1], m[2]})
	}
	return out
}

// volatileFields differ between two answers to the same request: ids, times, the key that signed.
var volatileFields = []string{"verification_id", "verified_at", "computed_at", "attestation", "verify.key_version"}

func stableJSON(t *testing.T, b []byte) string {
	t.Helper()
	m := decodeJSON(t, b)
	for _, f := range volatileFields {
		if parent, field, nested := strings.Cut(f, "."); nested {
			if p, ok := m[parent].(map[string]any); ok {
				delete(p, field)
			}
			continue
		}
		delete(m, f)
	}
	return mustJSON(t, m)
}

// Every worked example of llms-full.txt is regenerated from the running code: each request is
// sent to the running server, whose answer must equal the document's apart from ids, times, key
// version and signature; each documented answer verifies with the example key; and the document
// is byte-identical when built again.
func TestLLMsFullExamplesMatchTheRunningCode(t *testing.T) {
	e := newEnv(t)
	_, body := e.get(t, PathLLMsFull)
	doc := string(body)
	files := map[string][]byte{}
	for _, b := range blocks(doc) {
		name, isFile := strings.CutPrefix(b.info, ExampleFence)
		switch {
		case isFile:
			if !json.Valid([]byte(b.text)) {
				t.Errorf("%s is not JSON", name)
			}
			files[name] = []byte(b.text)
		case b.info == "json":
			t.Errorf("a JSON block without a file name cannot be checked:\n%s", b.text)
		}
	}
	built, err := New(e.svc).get()
	if err != nil {
		t.Fatal(err)
	}
	ex := built.examples
	pub := base64.StdEncoding.EncodeToString(ex.Key.Key)
	if !strings.Contains(doc, pub) || ex.Key.Version != ExampleKeyVersion {
		t.Errorf("the example key %s is not published", pub)
	}
	checked := map[string]bool{}
	for _, x := range ex.All() {
		reqName, respName := x.ID+".request.json", x.ID+".response.json"
		docResp, ok := files[respName]
		if !ok {
			t.Errorf("example %s has no %s block", x.ID, respName)
			continue
		}
		checked[respName] = true
		var live *http.Response
		var liveBody []byte
		if x.Request != nil {
			docReq, ok := files[reqName]
			if !ok {
				t.Errorf("example %s has no %s block", x.ID, reqName)
				continue
			}
			checked[reqName] = true
			live, liveBody = e.do(t, x.Method, x.Path, docReq)
		} else {
			live, liveBody = e.do(t, x.Method, x.Path, nil)
		}
		if live.StatusCode != x.Status {
			t.Errorf("%s: the running server answers %d, the document says %d", x.ID, live.StatusCode, x.Status)
		}
		if !strings.Contains(doc, fmt.Sprintf("Answer, HTTP %d, `%s`", live.StatusCode, respName)) {
			t.Errorf("%s: the document does not state status %d", x.ID, live.StatusCode)
		}
		if got, want := stableJSON(t, docResp), stableJSON(t, liveBody); got != want {
			t.Errorf("%s: the document's answer differs from the running server's:\n doc  %s\n live %s", x.ID, got, want)
		}
		// The documented answers verify with the example key, the live ones with the card's.
		switch {
		case x.Path == "/verify/schema" && x.Status == 200:
			if err := verifyReceipt(docResp, ex.Key, files[reqName]); err != nil {
				t.Errorf("%s: the documented receipt does not verify: %v", x.ID, err)
			}
		case strings.HasPrefix(x.Path, "/score/"):
			if err := verifyScore(docResp, ex.Key); err != nil {
				t.Errorf("%s: the documented score does not verify: %v", x.ID, err)
			}
		}
	}
	for name := range files {
		if !checked[name] {
			t.Errorf("block %s is not checked against the running code", name)
		}
	}
	// The failing example fails for the documented reason; the invalid one names its fields.
	if !strings.Contains(string(files["fail.response.json"]), `"consistency:sum_equals"`) {
		t.Errorf("the failing example does not block on consistency:sum_equals")
	}
	for _, f := range []string{"rules[0].type", "enforce_rules"} {
		if !strings.Contains(string(files["invalid.response.json"]), `"`+f+`"`) {
			t.Errorf("the invalid example does not name %s", f)
		}
	}

	// Deterministic: another process (a new Documents on a new service) writes the same bytes.
	again := newEnv(t)
	again.change(func(d *service.Deps) { d.BaseURL = e.base }) // the base URL is part of the text
	b2, err := New(again.svc).get()
	if err != nil {
		t.Fatal(err)
	}
	if string(b2.llmsFull) != doc {
		t.Errorf("llms-full.txt is not reproducible")
	}
}

func TestDocsPageIsSelfContained(t *testing.T) {
	e := newEnv(t)
	resp, body := e.get(t, PathDocs)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("docs: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	page := string(body)
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "connect-src 'self'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	// The CSP admits exactly the inline script and style the page carries.
	for _, tag := range []string{"script", "style"} {
		m := regexp.MustCompile("(?s)<"+tag+">(.*?)</"+tag+">").FindAllStringSubmatch(page, -1)
		if len(m) != 1 {
			t.Fatalf("%d <%s> elements, want 1", len(m), tag)
		}
		sum := sha256.Sum256([]byte(m[0][1]))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, tag+"-src "+h) {
			t.Errorf("CSP does not admit the page's %s by hash %s", tag, h)
		}
	}
	// Nothing is loaded from elsewhere: no external src/href, no absolute URL the page could fetch.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).FindString(page); m != "" {
		t.Errorf("the page references another host: %s", m)
	}
	if m := regexp.MustCompile(`https?://[a-z0-9.-]+`).FindAllString(page, -1); len(m) > 0 {
		t.Errorf("the page names hosts %v", m)
	}
	if len(body) > 64<<10 {
		t.Errorf("the docs page is %d bytes; keep the viewer small", len(body))
	}
}

// GET / lists every route, as JSON and as HTML.
func TestIndexListsEveryRoute(t *testing.T) {
	e := newEnv(t)
	_, body := e.get(t, "/", "Accept", "application/json")
	var idx Index
	if err := json.Unmarshal(body, &idx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(idx.Routes, Routes()) {
		t.Errorf("index routes %v", idx.Routes)
	}
	for name, u := range idx.Documents {
		if r, _ := e.get(t, strings.TrimPrefix(u, e.base)); r.StatusCode != 200 {
			t.Errorf("documents.%s (%s) answers %d", name, u, r.StatusCode)
		}
	}
	resp, html := e.get(t, "/")
	if resp.Header.Get("Vary") != "Accept" {
		t.Errorf("Vary %q", resp.Header.Get("Vary"))
	}
	for _, r := range Routes() {
		if !strings.Contains(string(html), "<code>"+r.Path+"</code>") {
			t.Errorf("the HTML index lacks %s", r.Path)
		}
	}
	// Every route the index lists is served by the local server's handler.
	for _, r := range Routes() {
		if r.Path == "/mcp" {
			continue // mounted by pkg/mcpserver, which this package does not import
		}
		rec := httptest.NewRecorder()
		e.srv.Config.Handler.ServeHTTP(rec, httptest.NewRequest("TRACE", strings.ReplaceAll(r.Path, "{agent_id}", "x"), nil))
		if rec.Code == http.StatusNotFound {
			t.Errorf("%s %s is not served", r.Method, r.Path)
		}
	}
}

// The wellknown function serves every discovery route with a bare service (as the template test
// probes it) and builds nothing until a document is asked for.
func TestHandlerServesTheDocuments(t *testing.T) {
	svc := testsvc.New(t, service.Deps{})
	h := Handler(svc)
	for _, p := range []string{PathOpenAPI, PathDocs, PathLLMs, PathLLMsFull, PathAPICatalog, "/", "/health", "/.well-known/agent-card.json", "/.well-known/x402"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("TRACE", p, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("TRACE %s: %d, want 405", p, rec.Code)
		}
	}
}

// Only the wellknown function links this package (and its embedded viewer): every byte is
// cold-start time for the others.
func TestOnlyTheWellKnownFunctionLinksDiscovery(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the functions' dependencies with the go tool")
	}
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "github.com/agent-output-verifier/verifier/pkg/discovery"
	deps, err := lambdatest.FunctionDeps(root)
	if err != nil {
		t.Fatal(err)
	}
	for group, pkgs := range deps {
		links := slices.Contains(pkgs, pkg)
		if links != (group == "wellknown") {
			t.Errorf("functions/%s links pkg/discovery: %v, want %v", group, links, group == "wellknown")
		}
	}
}
