package lambdatest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/service/engine"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/internal/testemf"
	"github.com/agent-output-verifier/verifier/internal/testproc"
	"github.com/agent-output-verifier/verifier/pkg/app"
	"github.com/agent-output-verifier/verifier/pkg/app/embedded"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo"
	"github.com/agent-output-verifier/verifier/pkg/store/dynamo/dynalitetest"
)

// keyVersion labels the key every run of this test generates.
const keyVersion = "lambdatest-v1"

// baseURL is the public URL both the functions and the local handler are configured with: the
// VERIFIER_BASE_URL of lambdatest.EnvFile (sam local start-api's port), which startFunction
// checks.
const baseURL = "http://127.0.0.1:3000"

// sourceIP is the client address every event carries (TEST-NET-2, never a real client).
const sourceIP = "198.51.100.7"

// answer is a response reduced to what a caller sees.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body, failing the test when it is not JSON.
func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, a.body)
	}
	return m
}

// eventCase is one file of events/: the function it is meant for and what the answer must say.
type eventCase struct {
	file   string
	fn     string // functions/<fn>
	status int
	check  func(t *testing.T, body map[string]any, pub string)
}

func resultIs(want string) func(*testing.T, map[string]any, string) {
	return func(t *testing.T, body map[string]any, _ string) {
		if body["result"] != want {
			t.Errorf("result = %v, want %s", body["result"], want)
		}
	}
}

var cases = []eventCase{
	{"verify-pass.json", "verify", 200, resultIs("pass")},
	{"deliverable-pass.json", "verify", 200, resultIs("pass")},
	{"verify-fail.json", "verify", 200, func(t *testing.T, body map[string]any, pub string) {
		resultIs("fail")(t, body, pub)
		summary, _ := body["summary"].(map[string]any)
		if !slices.Contains(strs(summary["blocking_checks"]), "consistency:sum_equals") {
			t.Errorf("summary = %v, want consistency:sum_equals blocking", summary)
		}
	}},
	{"verify-422.json", "verify", 422, func(t *testing.T, body map[string]any, _ string) {
		if body["code"] != "invalid_request" {
			t.Errorf("code = %v, want invalid_request", body["code"])
		}
		var fields []string
		list, _ := body["fields"].([]any)
		for _, f := range list {
			m, _ := f.(map[string]any)
			fields = append(fields, fmt.Sprint(m["field"]))
		}
		if !slices.Contains(fields, "rules[0].type") {
			t.Errorf("fields = %v, want rules[0].type named", fields)
		}
	}},
	{"verify-404.json", "verify", 404, func(t *testing.T, body map[string]any, _ string) {
		if body["code"] != "not_found" {
			t.Errorf("code = %v, want not_found", body["code"])
		}
	}},
	{"reputation-no-data.json", "verify", 200, noData},
	{"score-no-data.json", "score", 200, func(t *testing.T, body map[string]any, pub string) {
		noData(t, body, pub)
		if body["score"] != nil || body["method"] == nil {
			t.Errorf("score = %v, method %v; want null and the formula's name", body["score"], body["method"])
		}
	}},
	{"health.json", "wellknown", 200, func(t *testing.T, body map[string]any, _ string) {
		if body["status"] != "ok" || body["key_version"] != keyVersion {
			t.Errorf("health = %v, want ok with key version %s", body, keyVersion)
		}
	}},
	{"agent-card.json", "wellknown", 200, func(t *testing.T, body map[string]any, pub string) {
		// The card must publish the very key the function was given.
		b, _ := json.Marshal(body["capabilities"])
		if !strings.Contains(string(b), pub) {
			t.Errorf("agent card does not publish the function's public key %s: %s", pub, b)
		}
		ifaces, _ := body["supportedInterfaces"].([]any)
		if len(ifaces) == 0 || ifaces[0].(map[string]any)["url"] != baseURL {
			t.Errorf("supportedInterfaces = %v, want the first at %s", body["supportedInterfaces"], baseURL)
		}
	}},
	{"openapi.json", "wellknown", 200, func(t *testing.T, body map[string]any, _ string) {
		// The discovery documents are served by the wellknown function (pkg/discovery).
		paths, _ := body["paths"].(map[string]any)
		if v, _ := body["openapi"].(string); !strings.HasPrefix(v, "3.1") || paths["/verify/schema"] == nil {
			t.Errorf("openapi %v with paths %v, want 3.1 describing /verify/schema", body["openapi"], len(paths))
		}
	}},
	{"mcp-tools-list.json", "mcp", 200, func(t *testing.T, body map[string]any, _ string) {
		res, _ := body["result"].(map[string]any)
		var names []string
		for _, tool := range asList(res["tools"]) {
			names = append(names, fmt.Sprint(tool.(map[string]any)["name"]))
		}
		if !slices.Equal(names, []string{"get_verification_record", "verify_schema"}) { // listed by name
			t.Errorf("tools = %v, want verify_schema and get_verification_record", names)
		}
	}},
	{"mcp-verify-fail.json", "mcp", 200, func(t *testing.T, body map[string]any, pub string) {
		res, _ := body["result"].(map[string]any)
		doc, _ := res["structuredContent"].(map[string]any)
		if res["isError"] != nil || doc["result"] != "fail" {
			t.Errorf("result = %v, want the seed draft's fail", res)
		}
		// The MCP answer is the signed REST answer.
		signed, _ := json.Marshal(doc)
		key, _ := base64.StdEncoding.DecodeString(pub)
		if err := receipt.VerifyAttestation(signed, receipt.ContextVerify, []receipt.PublicKey{{Version: keyVersion, Key: key}}); err != nil {
			t.Errorf("the MCP answer does not verify: %v", err)
		}
	}},
	{"index-json.json", "wellknown", 200, func(t *testing.T, body map[string]any, _ string) {
		if routes, _ := body["routes"].([]any); len(routes) == 0 {
			t.Errorf("index has no routes: %v", body)
		}
	}},
}

// noData checks the free signed answer of /score and /reputation for an agent nothing was recorded
// for.
func noData(t *testing.T, body map[string]any, _ string) {
	if body["reason"] != "no_data" || body["attestation"] == nil {
		t.Errorf("answer = %v, want reason no_data and an attestation", body)
	}
}

// contexts are the attestation contexts of the routes that sign what they answer (SPEC §6).
var contexts = map[string]string{
	"/verify/":     receipt.ContextVerify,
	"/score/":      receipt.ContextScore,
	"/reputation/": receipt.ContextReputation,
}

func root(t *testing.T) string {
	t.Helper()
	r, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readEvent(t *testing.T, file string) ([]byte, events.APIGatewayV2HTTPRequest) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(t), "events", file))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return raw, ev
}

// TestEveryEventIsTested keeps the table above complete: a new event file fails until it says
// which function it is for and what it must answer.
func TestEveryEventIsTested(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(root(t), "events", "*.json"))
	var got, want []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	for _, c := range cases {
		want = append(want, c.file)
	}
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("events/ holds %v, the test covers %v", got, want)
	}
}

// routedPath is rawPath with each path parameter's value put back as its {name}, the form the
// route key names it in ("/score/{agent_id}").
func routedPath(rawPath string, params map[string]string) string {
	for name, value := range params {
		if strings.HasSuffix(rawPath, "/"+value) {
			rawPath = strings.TrimSuffix(rawPath, value) + "{" + name + "}"
		}
	}
	return rawPath
}

// TestEventsAreHTTPAPIv2 checks each event has the shape API Gateway gives an HTTP API v2 Lambda
// integration, so `sam local invoke -e` and the emulator see what production sees.
func TestEventsAreHTTPAPIv2(t *testing.T) {
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			raw, ev := readEvent(t, c.file)
			h := ev.RequestContext.HTTP
			switch {
			case ev.Version != "2.0":
				t.Errorf("version %q, want 2.0", ev.Version)
			case ev.RouteKey != ev.RequestContext.RouteKey:
				t.Errorf("routeKey %q but requestContext.routeKey %q", ev.RouteKey, ev.RequestContext.RouteKey)
			case ev.RouteKey != "ANY "+routedPath(ev.RawPath, ev.PathParameters) && ev.RouteKey != "$default":
				t.Errorf("routeKey %q does not route rawPath %q (path parameters %v)", ev.RouteKey, ev.RawPath, ev.PathParameters)
			case h.Path != ev.RawPath || h.Method == "" || h.Protocol == "" || h.UserAgent == "":
				t.Errorf("requestContext.http %+v does not describe the request", h)
			case h.SourceIP != sourceIP:
				t.Errorf("sourceIp %q, want %s", h.SourceIP, sourceIP)
			case ev.IsBase64Encoded:
				t.Errorf("isBase64Encoded is true")
			}
			var generic map[string]any
			json.Unmarshal(raw, &generic)
			if _, ok := generic["body"].(string); !ok {
				t.Errorf("body is not a string")
			}
			if h.Method == http.MethodPost {
				if ev.Headers["content-type"] != "application/json" || !json.Valid([]byte(ev.Body)) {
					t.Errorf("a POST event needs content-type application/json and a JSON body")
				}
				if n, _ := strconv.Atoi(ev.Headers["content-length"]); n != len(ev.Body) {
					t.Errorf("content-length %q, body is %d bytes", ev.Headers["content-length"], len(ev.Body))
				}
			}
		})
	}
	// The failing example is the seed's invoice draft, byte for byte.
	_, ev := readEvent(t, "verify-fail.json")
	seed, err := os.ReadFile(filepath.Join(root(t), "testdata", "seed", "invoice-draft.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Body != string(seed) {
		t.Errorf("verify-fail.json's body is not testdata/seed/invoice-draft.request.json")
	}
}

// emulatorOrSkip returns the emulator binary that `make tools` installs. Without it the test is
// skipped on a developer's machine and fails in CI, where `make test` installs it first.
func emulatorOrSkip(t *testing.T) string {
	t.Helper()
	p := lambdatest.RIEPath(root(t))
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: run `make tools` (make test does)", p)
		}
		t.Skipf("%s is missing: run `make tools` to run the Lambda emulator test", p)
	}
	return p
}

// TestLambdaMatchesLocal runs each function binary under the Runtime Interface Emulator, sends it
// every event, and checks the answer twice: against what the event must produce, and against the
// local server's handler given the same request. Only what legitimately differs between two runs
// (ids, times, signatures) is left out of the comparison.
func TestLambdaMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Lambda binaries")
	}
	rie := emulatorOrSkip(t)
	r := root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	tmp := t.TempDir()
	keyFile := filepath.Join(tmp, "signing-key.json")
	key, err := lambdatest.WriteKey(keyFile, keyVersion)
	if err != nil {
		t.Fatal(err)
	}
	pub := base64.StdEncoding.EncodeToString(key.Public().Key)

	dynamoDB := dynalitetest.Start(t)
	emulators := map[string]*lambdatest.Emulator{}
	for _, c := range cases {
		if emulators[c.fn] == nil {
			emulators[c.fn] = startFunction(ctx, t, rie, r, c.fn, dynamoDB, keyFile)
		}
	}
	svc := localService(ctx, t, tmp, keyFile)
	local := httpapi.Handler(svc, mcpserver.New(svc).Mount, discovery.New(svc).Mount)

	// The emulator serves one invocation at a time, so the cases run in order.
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			raw, ev := readEvent(t, c.file)
			out, err := emulators[c.fn].Invoke(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			lam := fromLambda(t, out)
			loc := fromHandler(local, ev)

			if lam.status != c.status {
				t.Errorf("Lambda status %d, want %d\n%s", lam.status, c.status, lam.body)
			}
			if ct := lam.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Lambda Content-Type %q, want application/json", ct)
			}
			c.check(t, lam.json(t), pub)
			// The comparison below leaves the signature out, so check it here: the Lambda's
			// receipt verifies under the key it was given and binds the request it was sent.
			if strings.HasPrefix(ev.RawPath, "/verify/") && lam.status == http.StatusOK {
				if err := receipt.VerifyReceipt(lam.body, []receipt.PublicKey{key.Public()}, []byte(ev.Body)); err != nil {
					t.Errorf("the Lambda's receipt does not verify: %v", err)
				}
			}
			for prefix, ctx := range contexts {
				if strings.HasPrefix(ev.RawPath, prefix) && lam.status == http.StatusOK {
					if err := receipt.VerifyAttestation(lam.body, ctx, []receipt.PublicKey{key.Public()}); err != nil {
						t.Errorf("the Lambda's answer does not verify under %s: %v", ctx, err)
					}
				}
			}

			if lam.status != loc.status {
				t.Errorf("status: Lambda %d, local %d", lam.status, loc.status)
			}
			if got, want := comparableHeaders(lam.header), comparableHeaders(loc.header); !reflect.DeepEqual(got, want) {
				t.Errorf("headers differ:\nLambda %v\nlocal  %v", got, want)
			}
			got, want := stable(t, lam), stable(t, loc)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", "  ")
				w, _ := json.MarshalIndent(want, "", "  ")
				t.Errorf("bodies differ:\nLambda %s\nlocal  %s", g, w)
			}
		})
	}

	// Each request wrote one EMF document to the function's log stream, and each is one CloudWatch
	// extracts metrics from (the specification's schema and rules).
	sent := map[string]int{}
	for _, c := range cases {
		sent[c.fn]++
	}
	for fn, e := range emulators {
		docs := testemf.Documents(e.Logs())
		if len(docs) != sent[fn] {
			t.Errorf("functions/%s wrote %d EMF documents for %d requests", fn, len(docs), sent[fn])
		}
		for _, doc := range docs {
			if err := testemf.Check(doc); err != nil {
				t.Errorf("functions/%s wrote an invalid EMF document: %v\n%s", fn, err, doc)
			}
		}
	}
}

// startFunction builds functions/<fn> and runs it under the emulator until the test ends, with
// the variables lambdatest.EnvFile gives it for `sam local`, over a DynamoDB table of its own on
// the dynalite at dynamoDB (as each function had a store of its own before, and as the local
// service has) and with the key in keyFile; what it printed is logged if the test failed.
func startFunction(ctx context.Context, t *testing.T, rie, root, fn, dynamoDB, keyFile string) *lambdatest.Emulator {
	t.Helper()
	bin, err := lambdatest.Build(ctx, root, fn, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	table := dynalitetest.TableName(t)
	if err := dynamo.CreateTable(ctx, dynalitetest.Client(dynamoDB), table); err != nil {
		t.Fatal(err)
	}
	vars, err := lambdatest.LocalVars(root, fn, lambdatest.Here{DynamoDB: dynamoDB, Table: table, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	if vars["VERIFIER_BASE_URL"] != baseURL {
		t.Fatalf("%s names %s as the base URL, and this test expects %s", lambdatest.EnvFile, vars["VERIFIER_BASE_URL"], baseURL)
	}
	return runEmulated(ctx, t, rie, bin, fn, vars)
}

// runEmulated runs the function binary bin of functions/<fn> under the emulator with vars until
// the test ends; what it printed is logged if the test failed.
func runEmulated(ctx context.Context, t *testing.T, rie, bin, fn string, vars map[string]string) *lambdatest.Emulator {
	t.Helper()
	e, err := lambdatest.Start(ctx, rie, bin, lambdatest.Env(vars))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("functions/%s under the emulator printed:\n%s", fn, e.Logs())
		}
	})
	return e
}

// localService builds the local server's service with the same key, over the embedded store in a
// data directory of its own, until the test ends.
func localService(ctx context.Context, t *testing.T, tmp, keyFile string) *service.Service {
	t.Helper()
	vars := map[string]string{"VERIFIER_STORE": "bolt", "VERIFIER_DATA_DIR": filepath.Join(tmp, "local-data"),
		"VERIFIER_SIGNING_KEY": "file:" + keyFile, "VERIFIER_BASE_URL": baseURL}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	svc, closeStore, err := app.Build(ctx, cfg, app.Options{Engine: engine.New, OpenStore: embedded.Opener{}.Open, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeStore() })
	return svc
}

// fromLambda reads the function's API Gateway v2 response. A payload without a status code is a
// function error (the emulator's {"errorMessage",...}).
func fromLambda(t *testing.T, payload []byte) answer {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(payload, &resp); err != nil || resp.StatusCode == 0 {
		t.Fatalf("the function did not answer with an HTTP response: %s", payload)
	}
	h := http.Header{}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			t.Fatalf("body: %v", err)
		}
	}
	return answer{status: resp.StatusCode, header: h, body: body}
}

// fromHandler sends the event's request to the local server's handler as net/http would deliver
// it: same method, path, headers, body and client address.
func fromHandler(h http.Handler, ev events.APIGatewayV2HTTPRequest) answer {
	target := ev.RawPath
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	}
	req := httptest.NewRequest(ev.RequestContext.HTTP.Method, target, strings.NewReader(ev.Body))
	for k, v := range ev.Headers {
		req.Header.Set(k, v)
	}
	req.Host = ev.RequestContext.DomainName
	req.RemoteAddr = net.JoinHostPort(ev.RequestContext.HTTP.SourceIP, "49152")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{status: rec.Code, header: rec.Result().Header, body: rec.Body.Bytes()}
}

// comparableHeaders drops the headers a transport adds on its own.
func comparableHeaders(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range []string{"Content-Length", "Date"} {
		out.Del(k)
	}
	// Every answer carries a request id, whose value is the event's on Lambda and a generated one
	// locally: compared by presence.
	if out.Get("X-Request-Id") != "" {
		out.Set("X-Request-Id", "(present)")
	}
	return out
}

// volatile are the fields that differ between any two runs of the same request: the
// verification id, the times (computed_at of a score), and the signature over them.
var volatile = []string{"verification_id", "verified_at", "computed_at", "attestation.signature", "attestation.timestamp"}

// stable is the body with the volatile fields removed.
func stable(t *testing.T, a answer) map[string]any {
	t.Helper()
	m := a.json(t)
	dropVolatile(m)
	// An MCP answer carries the document in result.structuredContent and, as JSON text, in
	// result.content.
	if res, ok := m["result"].(map[string]any); ok && m["jsonrpc"] != nil {
		if doc, ok := res["structuredContent"].(map[string]any); ok {
			dropVolatile(doc)
		}
		// Each function here has a store of its own while the local server has one for all
		// events, so the free calls left differ by design.
		if meta, ok := res["_meta"].(map[string]any); ok {
			if fa, ok := meta["free_allowance"].(map[string]any); ok {
				delete(fa, "remaining")
			}
		}
		for _, c := range asList(res["content"]) {
			block, _ := c.(map[string]any)
			var doc map[string]any
			if text, ok := block["text"].(string); ok && json.Unmarshal([]byte(text), &doc) == nil {
				dropVolatile(doc)
				block["text"] = doc
			}
		}
	}
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// dropVolatile deletes the volatile fields of one document.
func dropVolatile(m map[string]any) {
	for _, path := range volatile {
		parent, field := m, path
		if before, after, nested := strings.Cut(path, "."); nested {
			parent, _ = m[before].(map[string]any)
			field = after
		}
		delete(parent, field)
	}
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// An event the function cannot make an HTTP request of, or that is not an HTTP API event at all
// (not a JSON object, a repeated member, a member of the wrong type, a body that is not strict
// padded base64), is answered by the real verify and mcp binaries with the 400 envelope, never a
// function error (API Gateway's bare 500), and the function's log does not quote its path,
// method or body.
func TestUndecodableEventsUnderEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a Lambda binary")
	}
	rie := emulatorOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	keyFile := filepath.Join(tmp, "signing-key.json")
	if _, err := lambdatest.WriteKey(keyFile, keyVersion); err != nil {
		t.Fatal(err)
	}
	ddb := dynalitetest.Start(t)
	const canary = "CANARY5521"
	event := func(method, path, body string, b64 bool) []byte {
		ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "$default", RawPath: path, Body: body, IsBase64Encoded: b64,
			Headers: map[string]string{"content-type": "application/json"},
			RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "a1b2c3.execute-api.us-east-1.amazonaws.com", Stage: "$default",
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: sourceIP}}}
		b, _ := json.Marshal(ev)
		return b
	}
	for fn, path := range map[string]string{"verify": "/verify/schema", "mcp": "/mcp"} {
		e := startFunction(ctx, t, rie, root(t), fn, ddb, keyFile)
		good := string(event("POST", path, `{"`+canary+`":1}`, false))
		swap := func(old, new string) []byte { return []byte(strings.Replace(good, old, new, 1)) }
		for name, raw := range map[string][]byte{
			"invalid base64 body":     event("POST", path, "%%"+canary+"%%", true),
			"URL-safe base64 body":    event("POST", path, "eyJ-Pz4_IjoxfQ==", true),
			"unpadded base64 body":    event("POST", path, "eyJhIjoxfQ", true),
			"path with %ZZ":           event("POST", "/verify/%ZZ"+canary, "{}", false),
			"method with a space":     event("PO ST"+canary, path, "{}", false),
			"not an object":           []byte(`["` + canary + `"]`),
			"a string":                []byte(`"` + canary + `"`),
			"null":                    []byte(`null`),
			"numeric body":            swap(`"body":"{\"`+canary+`\":1}"`, `"body":42`),
			"string isBase64Encoded":  swap(`"isBase64Encoded":false`, `"isBase64Encoded":"false"`),
			"headers not strings":     swap(`"content-type":"application/json"`, `"content-type":["application/json"]`),
			"requestContext a string": swap(`"requestContext":{`, `"requestContext":"`+canary+`","x":{`),
			"method a number":         swap(`"method":"POST"`, `"method":5`),
			"repeated method":         swap(`"method":"POST"`, `"method":"GET","method":"POST"`),
		} {
			t.Run(fn+"/"+name, func(t *testing.T) {
				if bytes.Equal(raw, []byte(good)) {
					t.Fatalf("the case changed nothing: %s", raw)
				}
				out, err := e.Invoke(ctx, raw)
				if err != nil {
					t.Fatal(err)
				}
				a := fromLambda(t, out)
				body := a.json(t)
				if a.status != 400 || body["code"] != "invalid_request" || body["status"] != float64(400) {
					t.Errorf("%d %s, want the 400 envelope", a.status, a.body)
				}
				if strings.Contains(string(a.body), canary) {
					t.Errorf("the answer quotes the event: %s", a.body)
				}
			})
		}
		if logs := e.Logs(); strings.Contains(logs, canary) {
			t.Errorf("the %s function's log quotes an event:\n%s", fn, logs)
		}
	}
}
