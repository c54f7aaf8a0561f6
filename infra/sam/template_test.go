package sam

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/agent-output-verifier/verifier/internal/lambdatest"
	"github.com/agent-output-verifier/verifier/pkg/config"
	"github.com/agent-output-verifier/verifier/pkg/discovery"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/httpapi"
	"github.com/agent-output-verifier/verifier/pkg/mcpserver"
	"github.com/agent-output-verifier/verifier/pkg/telemetry"
)

// root is the module root, where template.yaml, the Makefile and events/ live.
const root = "../.."

// handlers maps each function of the template to the handler its main mounts. A function added to
// the template fails TestRoutes until it is listed here, so no route can be deployed unchecked.
var handlers = map[string]func(*service.Service) *edge.Router{
	"VerifyFunction":    httpapi.VerifyHandler,
	"WellKnownFunction": discovery.Handler,
	"McpFunction":       mcpserver.Handler,
	"ScoreFunction":     httpapi.ScoreHandler,
}

// routeless are the functions no route reaches, with what invokes them: they mount no handler.
var routeless = map[string]string{
	"LogFunction": "Schedule", // the receipt log's sequencer (functions/log)
}

// defaultRoute is the API Gateway route that catches every path no other route names.
const defaultRoute = "$default"

// catchAllFunction answers unknown paths, so that they get the JSON 404 envelope instead of API
// Gateway's own body.
const catchAllFunction = "WellKnownFunction"

// defaultFitsLambda lists the variables of config.Variables the template may leave unset, each
// with why its default is right on Lambda. Any other variable must be set by the template.
var defaultFitsLambda = map[string]string{
	"VERIFIER_DATA_DIR":           "only the bolt store uses it; Lambda uses DynamoDB",
	"VERIFIER_FREE_MAX_BODY":      "the documented limit applies unchanged",
	"VERIFIER_MAX_BODY":           "the documented limit applies unchanged (API Gateway allows more)",
	"VERIFIER_TRUSTED_PROXY_HOPS": "0 is right: the adapter puts API Gateway's sourceIp in RemoteAddr",
	"VERIFIER_PRICE_VERIFY":       "the price is part of the product, not of a deployment",
	"VERIFIER_PRICE_SCORE":        "the price is part of the product, not of a deployment",
	"X402_FACILITATOR_AUTH_HEADER": "the header comes from the secret X402_FACILITATOR_AUTH_SECRET names, " +
		"so that it is never in a function's environment",
}

// executeAPIURL is the API's own URL, and baseURL the public base URL the template writes into
// receipts and the ApiUrl output: PublicBaseUrl, else the custom domain, else executeAPIURL.
const (
	executeAPIURL = "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
	baseURL       = "${If HasPublicBaseUrl ? ${PublicBaseUrl} : ${If HasCustomDomain ? https://${DomainName} : " + executeAPIURL + "}}"
)

// setBeforeRead lists variables the template sets ahead of the code that reads them (x402 comes
// after the functions deployed now), so a typo in any other name still fails the test.
var setBeforeRead = []string{"X402_FACILITATOR_URL", "X402_PAY_TO_EVM", "X402_PAY_TO_SOLANA"}

// overrides keep intrinsic functions readable instead of resolving them, so the tests can see
// what a value is wired to: Ref X and GetAtt X.Arn become "${X}" and "${X.Arn}", Sub keeps its
// string, conditions become text, and an If with non-string branches stays an {"Fn::If": [...]}
// node. Two exceptions resolve as CloudFormation would: Ref AWS::NoValue is nil, and a Ref to a
// Number parameter is its default, because goformation types those fields (RetentionInDays,
// throttling limits) as numbers.
func overrides() map[string]intrinsics.IntrinsicHandler {
	return map[string]intrinsics.IntrinsicHandler{
		"Ref": func(_ string, in, template any) any {
			name, _ := in.(string)
			if name == "AWS::NoValue" {
				return nil
			}
			if p := parameter(template, name); p != nil && p["Type"] == "Number" {
				return p["Default"]
			}
			return "${" + name + "}"
		},
		"Fn::GetAtt": func(_ string, in, _ any) any {
			switch v := in.(type) {
			case string:
				return "${" + v + "}"
			case []any:
				parts := make([]string, len(v))
				for i, p := range v {
					parts[i] = fmt.Sprint(p)
				}
				return "${" + strings.Join(parts, ".") + "}"
			}
			return nil
		},
		"Fn::Sub": func(_ string, in, _ any) any {
			if v, ok := in.([]any); ok && len(v) > 0 {
				return v[0]
			}
			return in
		},
		"Fn::If": func(_ string, in, _ any) any {
			args, _ := in.([]any)
			if len(args) == 3 {
				cond, c := args[0].(string)
				then, t := args[1].(string)
				els, e := args[2].(string)
				if c && t && e {
					return fmt.Sprintf("${If %s ? %s : %s}", cond, then, els)
				}
			}
			return map[string]any{"Fn::If": args}
		},
		"Fn::Equals": func(_ string, in, _ any) any {
			args, _ := in.([]any)
			if len(args) != 2 {
				return nil
			}
			return fmt.Sprintf("%v == %q", args[0], args[1])
		},
		"Fn::Not": func(_ string, in, _ any) any {
			args, _ := in.([]any)
			if len(args) != 1 {
				return nil
			}
			return fmt.Sprintf("!(%v)", args[0])
		},
		"Fn::Split": func(_ string, in, _ any) any {
			args, _ := in.([]any)
			if len(args) != 2 {
				return nil
			}
			return fmt.Sprintf("${Split %v %v}", args[0], args[1])
		},
		"Fn::Select": func(_ string, in, _ any) any {
			args, _ := in.([]any)
			if len(args) != 2 {
				return nil
			}
			return fmt.Sprintf("${Select %v %v}", args[0], args[1])
		},
		"Fn::Or": func(_ string, in, _ any) any {
			return fmt.Sprintf("or%v", in)
		},
		"Fn::And": func(_ string, in, _ any) any {
			return fmt.Sprintf("and%v", in)
		},
	}
}

// parameter returns the declaration of parameter name in the raw template, or nil.
func parameter(template any, name string) map[string]any {
	t, _ := template.(map[string]any)
	params, _ := t["Parameters"].(map[string]any)
	p, _ := params[name].(map[string]any)
	return p
}

// parsed is template.yaml read both ways: typed by goformation, and as the raw document after the
// same intrinsic overrides (for the properties goformation does not model, or models wrongly).
type parsed struct {
	*cloudformation.Template
	raw map[string]any
}

var (
	loadOnce sync.Once
	loaded   parsed
	loadErr  error
)

func load(t *testing.T) parsed {
	t.Helper()
	loadOnce.Do(func() {
		data, err := os.ReadFile(filepath.Join(root, "template.yaml"))
		if err != nil {
			loadErr = err
			return
		}
		opts := &intrinsics.ProcessorOptions{IntrinsicHandlerOverrides: overrides()}
		js, err := intrinsics.ProcessYAML(data, opts)
		if err != nil {
			loadErr = err
			return
		}
		if loadErr = json.Unmarshal(js, &loaded.raw); loadErr != nil {
			return
		}
		// goformation v7 models AWS::Serverless::HttpApi's AccessLogSettings under the REST
		// API's name, AccessLogSetting, and rejects the real one; hand it the name it knows.
		var fixed map[string]any
		json.Unmarshal(js, &fixed)
		for _, r := range fixed["Resources"].(map[string]any) {
			r, _ := r.(map[string]any)
			props, _ := r["Properties"].(map[string]any)
			if r["Type"] == "AWS::Serverless::HttpApi" {
				if v, ok := props["AccessLogSettings"]; ok {
					props["AccessLogSetting"] = v
					delete(props, "AccessLogSettings")
				}
			}
			// A property set only under a condition (reserved concurrency, alarm actions) is an
			// {"Fn::If"} node that goformation's typed field rejects: the typed copy leaves it out,
			// and the tests read it from the raw document.
			for k, v := range props {
				if m, ok := v.(map[string]any); ok && m["Fn::If"] != nil {
					delete(props, k)
				}
			}
		}
		js, _ = json.Marshal(fixed)
		if loaded.Template, err = goformation.ParseJSONWithOptions(js, &intrinsics.ProcessorOptions{NoProcess: true}); err != nil {
			loadErr = fmt.Errorf("goformation: %w", err)
		}
	})
	if loadErr != nil {
		t.Fatalf("parse template.yaml: %v", loadErr)
	}
	return loaded
}

// rawProperties returns resource name's Properties from the raw document.
func (p parsed) rawProperties(name string) map[string]any {
	res, _ := p.raw["Resources"].(map[string]any)
	r, _ := res[name].(map[string]any)
	props, _ := r["Properties"].(map[string]any)
	return props
}

func TestTemplateIsSAM(t *testing.T) {
	tmpl := load(t)
	if tmpl.Transform == nil || tmpl.Transform.String == nil || *tmpl.Transform.String != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform = %v, want AWS::Serverless-2016-10-31", tmpl.Transform)
	}
	if n := len(tmpl.GetAllServerlessHttpApiResources()); n != 1 {
		t.Errorf("%d AWS::Serverless::HttpApi resources, want 1", n)
	}
	all := maps.Clone(handlers)
	for name := range routeless {
		all[name] = nil
	}
	if got, want := sortedKeys(tmpl.GetAllServerlessFunctionResources()), sortedKeys(all); !slices.Equal(got, want) {
		t.Errorf("functions = %v, want %v", got, want)
	}
}

func TestFunctionsAreBuiltForLambda(t *testing.T) {
	tmpl := load(t)
	global, err := tmpl.GetServerlessGlobalFunction()
	if err != nil {
		t.Fatalf("Globals.Function: %v", err)
	}
	makefile := readFile(t, filepath.Join(root, "Makefile"))
	for name, fn := range tmpl.GetAllServerlessFunctionResources() {
		t.Run(name, func(t *testing.T) {
			if got := deref(fn.Runtime); got != "provided.al2023" {
				t.Errorf("Runtime = %q, want provided.al2023", got)
			}
			if !slices.Equal(fn.Architectures, []string{"arm64"}) {
				t.Errorf("Architectures = %v, want [arm64]", fn.Architectures)
			}
			if got := deref(fn.Handler); got != "bootstrap" {
				t.Errorf("Handler = %q, want bootstrap", got)
			}
			if fn.CodeUri == nil || deref(fn.CodeUri.String) != "." {
				t.Errorf("CodeUri is not the module root: %+v", fn.CodeUri)
			}
			if got := fn.AWSCloudFormationMetadata["BuildMethod"]; got != "makefile" {
				t.Errorf("Metadata.BuildMethod = %v, want makefile", got)
			}
			// SAM's makefile build runs `make build-<LogicalId>`, which must build the main of
			// the function group the FunctionName names.
			group := functionGroup(t, fn)
			recipe := makeRecipe(makefile, "build-"+name)
			if recipe == "" {
				t.Fatalf("Makefile has no build-%s target", name)
			}
			for _, want := range []string{"$(ARTIFACTS_DIR)/bootstrap", group, "arm64"} {
				if !strings.Contains(recipe, want) {
					t.Errorf("build-%s recipe %q lacks %q", name, recipe, want)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "functions", group, "main.go")); err != nil {
				t.Errorf("FunctionName names group %q but functions/%s/main.go: %v", group, group, err)
			}
			timeout, memory := fn.Timeout, fn.MemorySize
			if timeout == nil {
				timeout = global.Timeout
			}
			if memory == nil {
				memory = global.MemorySize
			}
			// API Gateway gives up on an integration after 29 s; a function no route reaches (the
			// log's sequencer) runs within a schedule's minute.
			if _, scheduled := routeless[name]; scheduled {
				if timeout == nil || *timeout <= 0 || *timeout > 60 {
					t.Errorf("Timeout = %v, want 1..60 s", timeout)
				}
			} else if timeout == nil || *timeout <= 0 || *timeout >= 29 {
				t.Errorf("Timeout = %v, want 1..28 s", timeout)
			}
			if memory == nil || *memory < 128 {
				t.Errorf("MemorySize = %v, want set", memory)
			}
			if fn.Policies != nil {
				t.Errorf("Policies set: the function has its own Role, so SAM would ignore them")
			}
			role := strings.TrimSuffix(strings.TrimPrefix(deref(fn.Role), "${"), ".Arn}")
			if _, err := tmpl.GetIAMRoleWithName(role); err != nil {
				t.Errorf("Role %q is not a role of this template: %v", deref(fn.Role), err)
			}
		})
	}
}

// TestLambdaBuildTags checks that the Makefile builds every Lambda binary with the tags
// internal/lambdatest builds the emulator tests' and the bench's binaries with, so that what is
// deployed is what is tested and measured.
func TestLambdaBuildTags(t *testing.T) {
	makefile := readFile(t, filepath.Join(root, "Makefile"))
	m := regexp.MustCompile(`(?m)^LAMBDA_TAGS\s*:?=\s*(\S+)\s*$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile defines no LAMBDA_TAGS")
	}
	if got, want := m[1], lambdatest.BuildTags; got != want {
		t.Errorf("Makefile LAMBDA_TAGS = %q, internal/lambdatest.BuildTags = %q", got, want)
	}
	build := regexp.MustCompile(`(?m)^lambda_build\s*=.*$`).FindString(makefile)
	if !strings.Contains(build, "-tags $(LAMBDA_TAGS) ") || strings.Count(build, "-tags") != 1 {
		t.Errorf("lambda_build %q does not build with -tags $(LAMBDA_TAGS)", build)
	}
	// Every Lambda target goes through lambda_build: SAM's build-<LogicalId> and `make build`.
	for _, target := range []string{"build", "build-VerifyFunction", "build-WellKnownFunction", "build-McpFunction", "build-ScoreFunction"} {
		if recipe := makeRecipe(makefile, target); !strings.Contains(recipe, "$(call lambda_build,") {
			t.Errorf("%s does not build with lambda_build: %q", target, recipe)
		}
	}
}

// route is an API Gateway route: "ANY /path" or "$default".
type route struct{ method, path string }

func (r route) String() string {
	if r.path == defaultRoute {
		return defaultRoute
	}
	return r.method + " " + r.path
}

// routes maps every route of the template's function events to its function.
func routes(t *testing.T, tmpl parsed) map[route]string {
	t.Helper()
	out := map[route]string{}
	for name, fn := range tmpl.GetAllServerlessFunctionResources() {
		for id, ev := range fn.Events {
			if routeless[name] != "" && ev.Type == routeless[name] {
				continue
			}
			if ev.Type != "HttpApi" || ev.Properties == nil || ev.Properties.HttpApiEvent == nil {
				t.Errorf("%s event %s: type %s, want HttpApi", name, id, ev.Type)
				continue
			}
			e := ev.Properties.HttpApiEvent
			if got := deref(e.ApiId); got != "${HttpApi}" {
				t.Errorf("%s event %s: ApiId %q, want the template's HttpApi", name, id, got)
			}
			r := route{strings.ToUpper(deref(e.Method)), deref(e.Path)}
			if r.path == "" && r.method == "" {
				r = route{"ANY", defaultRoute}
			}
			if prev, dup := out[r]; dup {
				t.Errorf("route %s is on both %s and %s", r, prev, name)
			}
			out[r] = name
		}
	}
	return out
}

// serves reports whether h knows path: the router answers a method no route uses with 405 on a
// known path and 404 on an unknown one, without running any handler.
func serves(h http.Handler, path string) bool {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("TRACE", path, nil))
	return rec.Code != http.StatusNotFound
}

// probePath turns a route template ("/reputation/{agent_id}") into a path a router matches.
func probePath(p string) string {
	return regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(p, "probe")
}

func quietService(t *testing.T) *service.Service {
	return testsvc.New(t, service.Deps{})
}

// TestRoutes checks the template against the code: every route the service lists reaches a
// function whose handler serves it, every event's path is served by its function, and unknown
// paths reach the function that answers them with the JSON 404.
func TestRoutes(t *testing.T) {
	tmpl := load(t)
	table := routes(t, tmpl)
	svc := quietService(t)
	for r, fn := range table {
		mount, ok := handlers[fn]
		if !ok {
			t.Errorf("route %s goes to %s, which no handler mapping in this test knows", r, fn)
			continue
		}
		if r.method != "ANY" {
			t.Errorf("route %s: want ANY, so that the function's router answers other methods with 405 and Allow", r)
		}
		if r.path == defaultRoute {
			if fn != catchAllFunction {
				t.Errorf("$default goes to %s, want %s", fn, catchAllFunction)
			}
			continue
		}
		if !serves(mount(svc), probePath(r.path)) {
			t.Errorf("route %s goes to %s, whose handler does not serve it", r, fn)
		}
	}
	if _, ok := table[route{"ANY", defaultRoute}]; !ok {
		t.Errorf("no $default route: unknown paths would get API Gateway's body instead of the JSON 404")
	}
	for _, want := range discovery.Routes() {
		fn, ok := table[route{"ANY", want.Path}]
		if !ok {
			fn, ok = table[route{strings.ToUpper(want.Method), want.Path}]
		}
		if !ok {
			// A greedy route (/log/tile/{proxy+}) takes every path below its prefix.
			for r, f := range table {
				if prefix, greedy := strings.CutSuffix(r.path, "{proxy+}"); greedy && strings.HasPrefix(want.Path, prefix) {
					fn, ok = f, true
				}
			}
		}
		if !ok {
			t.Errorf("%s %s (discovery.Routes) has no route in template.yaml", want.Method, want.Path)
			continue
		}
		if mount := handlers[fn]; mount == nil || !serves(mount(svc), probePath(want.Path)) {
			t.Errorf("%s %s goes to %s, whose handler does not serve it", want.Method, want.Path, fn)
		}
	}
	// The catch-all must answer an unknown path itself, in the JSON envelope.
	rec := httptest.NewRecorder()
	handlers[catchAllFunction](svc).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/no/such/route", nil))
	if rec.Code != http.StatusNotFound || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Errorf("%s on an unknown path: %d %q, want 404 application/json", catchAllFunction, rec.Code, rec.Header().Get("Content-Type"))
	}
}

// TestDefinitionBodyMatchesEvents checks that the HttpApi's DefinitionBody (which exists to keep
// the API from depending on the functions, see template.yaml) integrates exactly the routes of
// the events, each with the function the event belongs to.
func TestDefinitionBodyMatchesEvents(t *testing.T) {
	tmpl := load(t)
	names := map[string]string{} // FunctionName -> logical id
	for name, fn := range tmpl.GetAllServerlessFunctionResources() {
		names[deref(fn.FunctionName)] = name
	}
	fnName := regexp.MustCompile(`:function:([^/]+)/invocations$`)
	body, _ := tmpl.rawProperties("HttpApi")["DefinitionBody"].(map[string]any)
	paths, _ := body["paths"].(map[string]any)
	got := map[route]string{}
	for path, item := range paths {
		methods, _ := item.(map[string]any)
		for method, op := range methods {
			r := route{strings.ToUpper(method), path}
			if method == "x-amazon-apigateway-any-method" {
				r.method = "ANY"
			}
			integ, _ := op.(map[string]any)["x-amazon-apigateway-integration"].(map[string]any)
			if integ["type"] != "aws_proxy" || integ["payloadFormatVersion"] != "2.0" {
				t.Errorf("%s: integration %v, want aws_proxy with payload format 2.0", r, integ)
			}
			uri, _ := integ["uri"].(string)
			m := fnName.FindStringSubmatch(uri)
			if m == nil || names[m[1]] == "" {
				t.Errorf("%s: integration uri %q names no function of the template", r, uri)
				continue
			}
			got[r] = names[m[1]]
		}
	}
	want := routes(t, tmpl)
	for r, fn := range want {
		if got[r] != fn {
			t.Errorf("route %s: event on %s, DefinitionBody integrates %q", r, fn, got[r])
		}
	}
	for r, fn := range got {
		if _, ok := want[r]; !ok {
			t.Errorf("DefinitionBody integrates %s with %s, but no event grants the invoke permission", r, fn)
		}
	}
}

func TestHttpAPI(t *testing.T) {
	tmpl := load(t)
	for name, api := range tmpl.GetAllServerlessHttpApiResources() {
		s := api.DefaultRouteSettings
		if s == nil || s.ThrottlingBurstLimit == nil || *s.ThrottlingBurstLimit <= 0 || s.ThrottlingRateLimit == nil || *s.ThrottlingRateLimit <= 0 {
			t.Errorf("%s: DefaultRouteSettings throttling not set: %+v", name, s)
		}
		if _, ok := tmpl.rawProperties(name)["AccessLogSettings"]; !ok {
			t.Errorf("%s: no AccessLogSettings", name)
		}
		var dest, format string
		if l := api.AccessLogSetting; l != nil {
			dest, format = deref(l.DestinationArn), deref(l.Format)
		}
		group := strings.TrimSuffix(strings.TrimPrefix(dest, "${"), ".Arn}")
		lg, err := tmpl.GetLogsLogGroupWithName(group)
		if err != nil {
			t.Errorf("%s: AccessLogSettings.DestinationArn %q is not a log group of the template", name, dest)
		} else if lg.RetentionInDays == nil || *lg.RetentionInDays <= 0 {
			t.Errorf("%s: access log group %s keeps logs forever", name, group)
		}
		if !json.Valid([]byte(format)) || strings.Contains(format, "sourceIp") {
			t.Errorf("%s: access log format must be JSON without the caller's IP: %q", name, format)
		}
	}
}

// TestOutputs checks what a deploy prints: the public base URL, the agent card under it, the
// table, and the custom domain's DNS target only when there is one.
func TestOutputs(t *testing.T) {
	tmpl := load(t)
	for name, want := range map[string]string{
		"ApiUrl":             baseURL,
		"AgentCardUrl":       baseURL + "/.well-known/agent-card.json",
		"TableName":          "${Table}",
		"CustomDomainTarget": "${CustomDomain.RegionalDomainName}",
		"LogOrigin":          "${Select 1 ${Split :// " + baseURL + "}}/log",
	} {
		if got := fmt.Sprint(tmpl.Outputs[name].Value); got != want {
			t.Errorf("Output %s = %q, want %q", name, got, want)
		}
	}
	if got := tmpl.Outputs["CustomDomainTarget"].Condition; got == nil || *got != "HasCustomDomain" {
		t.Errorf("Output CustomDomainTarget exists under condition %v, want HasCustomDomain", got)
	}
}

// TestCustomDomain checks the optional custom domain: a regional domain with the ACM certificate
// given, mapped to the API's $default stage, both only when DomainName is set, and a rule that
// refuses a domain without a certificate.
func TestCustomDomain(t *testing.T) {
	tmpl := load(t)
	if got := tmpl.Conditions["HasCustomDomain"]; got != `!(${DomainName} == "")` {
		t.Errorf("HasCustomDomain = %v", got)
	}
	domains := tmpl.GetAllApiGatewayV2DomainNameResources()
	d, ok := domains["CustomDomain"]
	if !ok || len(domains) != 1 {
		t.Fatalf("domains %v, want CustomDomain", sortedKeys(domains))
	}
	if d.AWSCloudFormationCondition != "HasCustomDomain" || d.DomainName != "${DomainName}" || len(d.DomainNameConfigurations) != 1 {
		t.Errorf("CustomDomain: condition %q, name %q, %d configurations", d.AWSCloudFormationCondition, d.DomainName, len(d.DomainNameConfigurations))
	} else if c := d.DomainNameConfigurations[0]; deref(c.CertificateArn) != "${CertificateArn}" || deref(c.EndpointType) != "REGIONAL" || deref(c.SecurityPolicy) != "TLS_1_2" {
		t.Errorf("CustomDomain configuration %+v, want the CertificateArn, REGIONAL, TLS_1_2", c)
	}
	maps := tmpl.GetAllApiGatewayV2ApiMappingResources()
	m, ok := maps["CustomDomainMapping"]
	if !ok || len(maps) != 1 {
		t.Fatalf("API mappings %v, want CustomDomainMapping", sortedKeys(maps))
	}
	if m.AWSCloudFormationCondition != "HasCustomDomain" || m.ApiId != "${HttpApi}" || m.DomainName != "${CustomDomain}" || m.Stage != "$default" {
		t.Errorf("CustomDomainMapping %+v, want HttpApi's $default stage on CustomDomain under HasCustomDomain", m)
	}
	if !slices.Contains(m.AWSCloudFormationDependsOn, "HttpApiApiGatewayDefaultStage") {
		t.Errorf("CustomDomainMapping depends on %v; it must wait for SAM's $default stage", m.AWSCloudFormationDependsOn)
	}
	rules, _ := tmpl.raw["Rules"].(map[string]any)
	rule, _ := rules["CustomDomainHasCertificate"].(map[string]any)
	if fmt.Sprint(rule["RuleCondition"]) != `!(${DomainName} == "")` || !strings.Contains(fmt.Sprint(rule["Assertions"]), `!(${CertificateArn} == "")`) {
		t.Errorf("rule CustomDomainHasCertificate = %v, want: a DomainName needs a CertificateArn", rule)
	}
}

// TestReservedConcurrency checks each function's reserved concurrency comes from its own
// parameter, and is left unset (the account's shared pool) when the parameter is empty, which
// is its default: a new account's quota is too small to reserve any.
func TestReservedConcurrency(t *testing.T) {
	tmpl := load(t)
	for name := range tmpl.GetAllServerlessFunctionResources() {
		if name == "LogFunction" {
			// One sequencer at a time (SPEC §15), whatever the deployment: not a parameter.
			if got, _ := json.Marshal(tmpl.rawProperties(name)["ReservedConcurrentExecutions"]); string(got) != "1" {
				t.Errorf("%s: ReservedConcurrentExecutions = %s, want 1", name, got)
			}
			continue
		}
		param := strings.TrimSuffix(name, "Function") + "ReservedConcurrency"
		cond := "Has" + param
		got, _ := json.Marshal(tmpl.rawProperties(name)["ReservedConcurrentExecutions"])
		if want := `{"Fn::If":["` + cond + `","${` + param + `}",null]}`; string(got) != want {
			t.Errorf("%s: ReservedConcurrentExecutions = %s, want %s", name, got, want)
		}
		if got := tmpl.Conditions[cond]; got != `!(${`+param+`} == "")` {
			t.Errorf("condition %s = %v", cond, got)
		}
		p := parameter(tmpl.raw, param)
		pattern := regexp.MustCompile(fmt.Sprint(p["AllowedPattern"]))
		if p["Default"] != "" || !pattern.MatchString("") || !pattern.MatchString("50") || pattern.MatchString("0") || pattern.MatchString("-1") {
			t.Errorf("parameter %s: default %v, pattern %v; want empty by default, positive counts only (0 would stop the function)", param, p["Default"], p["AllowedPattern"])
		}
	}
}

// TestKeyVersionMatchesKeygen keeps a guided deploy that takes the defaults from starting
// functions that refuse their key: KeyVersion has no default (the deploy asks for it), and the
// version keygen writes by default passes its pattern.
func TestKeyVersionMatchesKeygen(t *testing.T) {
	tmpl := load(t)
	p := parameter(tmpl.raw, "KeyVersion")
	if d, ok := p["Default"]; ok {
		t.Errorf("KeyVersion has the default %v; the version must be the one keygen wrote", d)
	}
	src := readFile(t, filepath.Join(root, "cmd", "verifier", "keygen.go"))
	m := regexp.MustCompile(`"(v1-)" \+ time\.Now\(\)\.UTC\(\)\.Format\("([0-9-]+)"\)`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("keygen's default version is no longer v1-<date>: update this test and KeyVersion's description")
	}
	keygenDefault := m[1] + time.Date(2030, 12, 31, 0, 0, 0, 0, time.UTC).Format(m[2])
	if !regexp.MustCompile(fmt.Sprint(p["AllowedPattern"])).MatchString(keygenDefault) {
		t.Errorf("KeyVersion's pattern %v refuses keygen's default %q", p["AllowedPattern"], keygenDefault)
	}
	if !strings.Contains(fmt.Sprint(p["Description"]), "v1-<yyyy-mm-dd>") {
		t.Errorf("KeyVersion's description does not say which version to give: %v", p["Description"])
	}
}

// TestAlarms checks each alarm watches the metric it is named for: the EMF totals pkg/telemetry
// writes (its namespace and names, no dimensions), the API's 5xx share and the functions'
// throttles; and that each notifies the optional SNS topic, and only when one is given.
func TestAlarms(t *testing.T) {
	tmpl := load(t)
	alarms := tmpl.GetAllCloudWatchAlarmResources()
	if got, want := sortedKeys(alarms), []string{"Api5xxRateAlarm", "LatencyP99Alarm", "SettlementFailuresAlarm", "StoreErrorsAlarm", "ThrottlesAlarm"}; !slices.Equal(got, want) {
		t.Errorf("alarms %v, want %v", got, want)
	}
	if got := tmpl.Conditions["HasAlarmTopic"]; got != `!(${AlarmTopicArn} == "")` {
		t.Errorf("HasAlarmTopic = %v", got)
	}
	for name, a := range alarms {
		for _, actions := range []string{"AlarmActions", "OKActions"} {
			got, _ := json.Marshal(tmpl.rawProperties(name)[actions])
			if want := `{"Fn::If":["HasAlarmTopic",["${AlarmTopicArn}"],null]}`; string(got) != want {
				t.Errorf("%s: %s = %s, want %s", name, actions, got, want)
			}
		}
		if deref(a.TreatMissingData) != "notBreaching" || a.ComparisonOperator != "GreaterThanThreshold" {
			t.Errorf("%s: missing data %q, comparison %q", name, deref(a.TreatMissingData), a.ComparisonOperator)
		}
	}
	for name, want := range map[string]struct{ metric, stat string }{
		"SettlementFailuresAlarm": {telemetry.MetricSettlementFailures, "Sum"},
		"StoreErrorsAlarm":        {telemetry.MetricStoreErrors, "Sum"},
		"LatencyP99Alarm":         {telemetry.MetricDuration, "p99"},
	} {
		a := alarms[name]
		if a == nil {
			continue
		}
		stat := deref(a.Statistic) + deref(a.ExtendedStatistic)
		if deref(a.Namespace) != telemetry.DefaultNamespace || deref(a.MetricName) != want.metric || stat != want.stat || len(a.Dimensions) != 0 {
			t.Errorf("%s watches %s/%s %s %v, want %s/%s %s without dimensions", name, deref(a.Namespace), deref(a.MetricName), stat, a.Dimensions,
				telemetry.DefaultNamespace, want.metric, want.stat)
		}
	}
	if a := alarms["LatencyP99Alarm"]; a != nil && fmt.Sprint(tmpl.rawProperties("LatencyP99Alarm")["Threshold"]) != fmt.Sprint(parameter(tmpl.raw, "AlarmP99Seconds")["Default"]) {
		t.Errorf("LatencyP99Alarm threshold is not AlarmP99Seconds")
	}
	// The metric-math alarms: the ids their expression adds up, each one AWS metric.
	type stat struct{ namespace, metric, dimension string }
	for name, want := range map[string]struct {
		expr  string
		stats map[string]stat
	}{
		"Api5xxRateAlarm": {"100 * errors / requests", map[string]stat{
			"errors":   {"AWS/ApiGateway", "5xx", "ApiId=${HttpApi}"},
			"requests": {"AWS/ApiGateway", "Count", "ApiId=${HttpApi}"},
		}},
		"ThrottlesAlarm": {"FILL(verify, 0) + FILL(mcp, 0) + FILL(wellknown, 0) + FILL(score, 0)", map[string]stat{
			"verify":    {"AWS/Lambda", "Throttles", "FunctionName=${VerifyFunction}"},
			"mcp":       {"AWS/Lambda", "Throttles", "FunctionName=${McpFunction}"},
			"wellknown": {"AWS/Lambda", "Throttles", "FunctionName=${WellKnownFunction}"},
			"score":     {"AWS/Lambda", "Throttles", "FunctionName=${ScoreFunction}"},
		}},
	} {
		a := alarms[name]
		if a == nil {
			continue
		}
		got := map[string]stat{}
		returned := 0
		for _, m := range a.Metrics {
			if deref(m.ReturnData) {
				returned++
				if deref(m.Expression) != want.expr {
					t.Errorf("%s: expression %q, want %q", name, deref(m.Expression), want.expr)
				}
				continue
			}
			if ms := m.MetricStat; ms != nil && ms.Metric != nil && len(ms.Metric.Dimensions) == 1 && ms.Stat == "Sum" && ms.Period == 300 {
				d := ms.Metric.Dimensions[0]
				got[m.Id] = stat{deref(ms.Metric.Namespace), deref(ms.Metric.MetricName), d.Name + "=" + d.Value}
			}
		}
		if returned != 1 || !maps.Equal(got, want.stats) {
			t.Errorf("%s: %d results, metrics %v, want one expression over %v", name, returned, got, want.stats)
		}
	}
	for _, f := range []string{"Namespace", "MetricName"} {
		if v := tmpl.rawProperties("Api5xxRateAlarm")[f]; v != nil {
			t.Errorf("Api5xxRateAlarm sets %s besides its metrics", f)
		}
	}
}

func TestTable(t *testing.T) {
	tmpl := load(t)
	tables := tmpl.GetAllDynamoDBTableResources()
	if len(tables) != 1 || len(tmpl.GetAllServerlessSimpleTableResources()) != 0 {
		t.Fatalf("want exactly one AWS::DynamoDB::Table, got %v", sortedKeys(tables))
	}
	for name, tb := range tables {
		if got := deref(tb.BillingMode); got != "PAY_PER_REQUEST" {
			t.Errorf("%s: BillingMode %q, want PAY_PER_REQUEST", name, got)
		}
		var keys, attrs []string
		for _, k := range tb.KeySchema {
			keys = append(keys, k.AttributeName+":"+k.KeyType)
		}
		for _, a := range tb.AttributeDefinitions {
			attrs = append(attrs, a.AttributeName+":"+a.AttributeType)
		}
		if want := []string{"pk:HASH", "sk:RANGE"}; !slices.Equal(keys, want) {
			t.Errorf("%s: KeySchema %v, want %v", name, keys, want)
		}
		if sort.Strings(attrs); !slices.Equal(attrs, []string{"pk:S", "sk:S"}) {
			t.Errorf("%s: AttributeDefinitions %v, want pk and sk strings", name, attrs)
		}
		if ttl := tb.TimeToLiveSpecification; ttl == nil || !ttl.Enabled || deref(ttl.AttributeName) != "expires_at" {
			t.Errorf("%s: TTL is not enabled on expires_at", name)
		}
		if p := tb.PointInTimeRecoverySpecification; p == nil || p.PointInTimeRecoveryEnabled == nil || !*p.PointInTimeRecoveryEnabled {
			t.Errorf("%s: point-in-time recovery is off", name)
		}
	}
}

func TestLogGroups(t *testing.T) {
	tmpl := load(t)
	byName := map[string]string{}
	for id, lg := range tmpl.GetAllLogsLogGroupResources() {
		byName[deref(lg.LogGroupName)] = id
		if lg.RetentionInDays == nil || *lg.RetentionInDays <= 0 {
			t.Errorf("%s: no RetentionInDays", id)
		}
	}
	for name, fn := range tmpl.GetAllServerlessFunctionResources() {
		want := "/aws/lambda/" + deref(fn.FunctionName)
		if byName[want] == "" {
			t.Errorf("%s: no log group named %s", name, want)
		}
	}
}

// statement is one IAM policy statement, with the condition it depends on ("" when it always
// exists) and where it came from.
type statement struct {
	where, condition string
	body             map[string]any
}

// statements flattens a policy document's Statement list, expanding Fn::If nodes into their
// branches (nil branches, AWS::NoValue, drop out).
func statements(t *testing.T, where string, doc any) []statement {
	t.Helper()
	d, _ := doc.(map[string]any)
	list, ok := d["Statement"].([]any)
	if !ok {
		if one, isMap := d["Statement"].(map[string]any); isMap {
			list = []any{one}
		} else {
			t.Errorf("%s: no Statement list", where)
		}
	}
	var out []statement
	var add func(v any, cond string)
	add = func(v any, cond string) {
		m, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				t.Errorf("%s: statement %v is not an object", where, v)
			}
			return
		}
		if args, isIf := m["Fn::If"].([]any); isIf && len(args) == 3 {
			name, _ := args[0].(string)
			add(args[1], name)
			add(args[2], "!"+name)
			return
		}
		out = append(out, statement{where: fmt.Sprintf("%s statement %v", where, m["Sid"]), condition: cond, body: m})
	}
	for _, v := range list {
		add(v, "")
	}
	return out
}

// strs reads a string-or-list IAM field.
func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// TestIAMIsLeastPrivilege checks every permission statement in every role and policy of the
// template: exactly one resource, never a wildcard, and only the actions the functions use, each
// on the one resource it belongs to. Statements on optional resources exist only when the
// parameter naming the resource is given.
func TestIAMIsLeastPrivilege(t *testing.T) {
	tmpl := load(t)
	if n := len(tmpl.GetAllIAMPolicyResources()) + len(tmpl.GetAllIAMManagedPolicyResources()); n != 0 {
		t.Errorf("%d stand-alone IAM policies: keep permissions inline in the function roles, where this test reads them", n)
	}
	// allowed maps each action to the resources it may name: Secrets Manager holds the signing
	// key and the facilitator's auth header; a KMS key given by ARN decrypts the seed or signs.
	// The stack's own signing key grants the roles in its key policy (TestSigningKmsKey).
	allowed := map[string][]string{
		"dynamodb:GetItem":              {"${Table.Arn}"},
		"dynamodb:PutItem":              {"${Table.Arn}"},
		"dynamodb:UpdateItem":           {"${Table.Arn}"},
		"dynamodb:Query":                {"${Table.Arn}"},
		"dynamodb:BatchGetItem":         {"${Table.Arn}"},
		"dynamodb:BatchWriteItem":       {"${Table.Arn}"},
		"dynamodb:DeleteItem":           {"${Table.Arn}"},
		"secretsmanager:GetSecretValue": {stackSecretPattern, "${SigningKeySecretArn}", "${FacilitatorAuthSecretArn}", "${LogKeySecretArn}"},
		"kms:Decrypt":                   {"${SigningKeyKmsKeyArn}"},
		"kms:Sign":                      {"${SigningKeyKmsKeyArn}"},
		"kms:GetPublicKey":              {"${SigningKeyKmsKeyArn}"},
	}
	// Optional resources come from parameters; the statement of each action on one must be
	// guarded by the condition named here, whose definition says the parameter is given and, for
	// the signing key, that KeySource uses it that way.
	guards := map[string]string{
		"secretsmanager:GetSecretValue " + stackSecretPattern:       "CreatesSigningKeySecret",
		"secretsmanager:GetSecretValue ${SigningKeySecretArn}":      "ReadsSigningKeySecret",
		"kms:Decrypt ${SigningKeyKmsKeyArn}":                        "DecryptsWithGivenKey",
		"kms:Sign ${SigningKeyKmsKeyArn}":                           "SignsWithGivenKey",
		"kms:GetPublicKey ${SigningKeyKmsKeyArn}":                   "SignsWithGivenKey",
		"secretsmanager:GetSecretValue ${FacilitatorAuthSecretArn}": "HasFacilitatorAuthSecret",
		"secretsmanager:GetSecretValue ${LogKeySecretArn}":          "ReadsLogKeySecret",
	}
	for name, want := range map[string]string{
		"KeySourceIsSecretsManager": `${KeySource} == "secretsmanager"`,
		"HasSigningKeySecret":       `!(${SigningKeySecretArn} == "")`,
		"CreatesSigningKeySecret":   "and[KeySourceIsSecretsManager !(HasSigningKeySecret)]",
		"ReadsSigningKeySecret":     "and[KeySourceIsSecretsManager HasSigningKeySecret]",
		"DecryptsWithGivenKey":      "and[!(KeySourceIsKmsSign) HasSigningKeyKmsKey]",
		"SignsWithGivenKey":         "and[KeySourceIsKmsSign HasSigningKeyKmsKey]",
		"CreatesSigningKey":         "and[KeySourceIsKmsSign !(HasSigningKeyKmsKey)]",
		"KeySourceIsKmsSign":        `${KeySource} == "kms-sign"`,
		"HasSigningKeyKmsKey":       `!(${SigningKeyKmsKeyArn} == "")`,
		"HasFacilitatorAuthSecret":  `!(${FacilitatorAuthSecretArn} == "")`,
		"ReadsLogKeySecret":         `${LogKeySource} == "secretsmanager"`,
		"CreatesLogKey":             `${LogKeySource} == "kms-sign"`,
	} {
		if got, _ := tmpl.Conditions[name].(string); got != want {
			t.Errorf("condition %s = %q, want %q", name, got, want)
		}
	}
	// Only the functions that take payments may read the facilitator's secret.
	paying := map[string]bool{"VerifyFunction": true, "McpFunction": true, "ScoreFunction": true}
	roleOf := map[string]string{}
	for name, fn := range tmpl.GetAllServerlessFunctionResources() {
		roleOf[strings.TrimSuffix(strings.TrimPrefix(deref(fn.Role), "${"), ".Arn}")] = name
	}
	roles := tmpl.GetAllIAMRoleResources()
	if len(roles) != len(roleOf) {
		t.Errorf("roles %v, want one per function %v", sortedKeys(roles), roleOf)
	}
	for roleName, role := range roles {
		// The trust policy names a principal, not a resource.
		for _, s := range statements(t, roleName+" trust policy", role.AssumeRolePolicyDocument) {
			p, _ := s.body["Principal"].(map[string]any)
			if s.body["Resource"] != nil || fmt.Sprint(p["Service"]) != "lambda.amazonaws.com" || fmt.Sprint(s.body["Action"]) != "sts:AssumeRole" {
				t.Errorf("%s: trust statement %v, want lambda.amazonaws.com sts:AssumeRole", s.where, s.body)
			}
		}
		if len(role.ManagedPolicyArns) != 0 {
			t.Errorf("%s: managed policies %v: their statements name every resource (*)", roleName, role.ManagedPolicyArns)
		}
		fn := roleOf[roleName]
		logGroup := ""
		if f, err := tmpl.GetServerlessFunctionWithName(fn); err == nil {
			for id, lg := range tmpl.GetAllLogsLogGroupResources() {
				if deref(lg.LogGroupName) == "/aws/lambda/"+deref(f.FunctionName) {
					logGroup = "${" + id + ".Arn}"
				}
			}
		}
		var all []statement
		for _, pol := range role.Policies {
			all = append(all, statements(t, roleName+" "+pol.PolicyName, pol.PolicyDocument)...)
		}
		if len(all) == 0 {
			t.Errorf("%s: no permissions at all", roleName)
		}
		readsFacilitatorSecret := false
		for _, s := range all {
			readsFacilitatorSecret = readsFacilitatorSecret || slices.Contains(strs(s.body["Resource"]), "${FacilitatorAuthSecretArn}")
		}
		if readsFacilitatorSecret != paying[fn] {
			t.Errorf("%s: may read the facilitator's secret: %v, want %v", roleName, readsFacilitatorSecret, paying[fn])
		}
		for _, s := range all {
			for _, forbidden := range []string{"NotResource", "NotAction", "NotPrincipal"} {
				if s.body[forbidden] != nil {
					t.Errorf("%s: uses %s", s.where, forbidden)
				}
			}
			if s.body["Effect"] != "Allow" {
				t.Errorf("%s: Effect %v, want Allow", s.where, s.body["Effect"])
			}
			res := strs(s.body["Resource"])
			if len(res) != 1 || strings.Contains(res[0], "*") || res[0] == "" {
				t.Errorf("%s: Resource %v, want exactly one resource and no wildcard", s.where, s.body["Resource"])
				continue
			}
			// The one ? wildcard allowed: the six characters Secrets Manager appends to a
			// secret's name in its ARN, which name exactly one secret.
			if strings.Contains(res[0], "?") && (!strings.HasSuffix(res[0], "-??????") || strings.Count(res[0], "?") != 6) {
				t.Errorf("%s: Resource %v: ? stands only for a secret ARN's last six characters", s.where, res[0])
			}
			actions := strs(s.body["Action"])
			for _, a := range actions {
				if want := guards[a+" "+res[0]]; s.condition != want {
					t.Errorf("%s: %s on %s exists under condition %q, want %q", s.where, a, res[0], s.condition, want)
				}
			}
			if len(actions) == 0 {
				t.Errorf("%s: no Action", s.where)
			}
			for _, a := range actions {
				r, ok := allowed[a]
				if a == "logs:CreateLogStream" || a == "logs:PutLogEvents" {
					r, ok = []string{logGroup}, logGroup != ""
				}
				switch {
				case !ok:
					t.Errorf("%s: %s is not an action the functions use", s.where, a)
				case !slices.Contains(r, res[0]):
					t.Errorf("%s: %s on %s; it is allowed only on %v", s.where, a, res[0], r)
				}
			}
		}
	}
}

// env returns a function's effective environment: the globals overlaid with its own variables.
func env(t *testing.T, tmpl parsed, fn *serverless.Function) map[string]string {
	t.Helper()
	out := map[string]string{}
	if g, err := tmpl.GetServerlessGlobalFunction(); err == nil && g.Environment != nil {
		for k, v := range g.Environment.Variables {
			out[k] = v
		}
	}
	if fn.Environment != nil {
		for k, v := range fn.Environment.Variables {
			out[k] = v
		}
	}
	return out
}

// TestEnvironment checks every function gets every variable it needs, wired to the right thing,
// and that the parameters' defaults make a configuration the service accepts.
func TestEnvironment(t *testing.T) {
	tmpl := load(t)
	known := map[string]bool{}
	for _, v := range config.Variables {
		known[v.Name] = true
	}
	for _, name := range setBeforeRead {
		known[name] = true
	}
	// The DynamoDB client reads its endpoint override (pkg/internal/awsjson); empty on AWS, it is
	// declared for `sam local`, which passes a function only declared variables (envfile_test.go).
	known["AWS_ENDPOINT_URL_DYNAMODB"] = true
	for name, fn := range tmpl.GetAllServerlessFunctionResources() {
		t.Run(name, func(t *testing.T) {
			vars := env(t, tmpl, fn)
			for _, v := range config.Variables {
				if _, set := vars[v.Name]; !set && defaultFitsLambda[v.Name] == "" {
					t.Errorf("%s is not set, and its default %q is not for Lambda", v.Name, v.Default)
				}
			}
			for k := range vars {
				if !known[k] {
					t.Errorf("%s is set but the service reads no such variable", k)
				}
			}
			wantSecret := "${FacilitatorAuthSecretArn}"
			if name == "WellKnownFunction" || name == "LogFunction" {
				wantSecret = "" // it takes no payment, so it reads no facilitator secret
			}
			for k, want := range map[string]string{
				"X402_FACILITATOR_AUTH_SECRET": wantSecret,
				"VERIFIER_BASE_URL":            baseURL,
				"VERIFIER_STORE":               "dynamodb",
				"VERIFIER_TABLE":               "${Table}",
				"VERIFIER_SIGNING_KEY": "${If CreatesSigningKeySecret ? secretsmanager:${SigningKeySecret} : " +
					"${If CreatesSigningKey ? kms-sign:${SigningKmsKey.Arn} : ${If SignsWithGivenKey ? kms-sign:${SigningKeyKmsKeyArn} : " +
					"${If KeySourceIsKms ? ${SigningKey} : secretsmanager:${SigningKeySecretArn}}}}}",
				"VERIFIER_KEY_VERSION":        "${KeyVersion}",
				"VERIFIER_LOG_KEY":            "${If CreatesLogKey ? kms-sign:${LogKmsKey.Arn} : secretsmanager:${LogKeySecretArn}}",
				"VERIFIER_LOG_KEY_VERSION":    "${LogKeyVersion}",
				"VERIFIER_RECORD_DAYS":        "${RecordDays}",
				"VERIFIER_PREVIOUS_KEYS":      "${PreviousKeys}",
				"VERIFIER_FREE_CALLS_PER_DAY": "${FreeCallsPerDay}",
				"X402_FACILITATOR_URL":        "${FacilitatorUrl}",
				"X402_PAY_TO_EVM":             "${PayToEvm}",
				"X402_PAY_TO_SOLANA":          "${PayToSolana}",
				"AWS_ENDPOINT_URL_DYNAMODB":   "",
			} {
				if vars[k] != want {
					t.Errorf("%s = %q, want %q", k, vars[k], want)
				}
			}
			// With each parameter at its default (and the values CloudFormation fills in), the
			// service must accept the configuration: a bad default would fail every cold start.
			resolved := map[string]string{
				"${HttpApi}": "a1b2c3d4e5", "${AWS::Region}": "us-east-1", "${AWS::URLSuffix}": "amazonaws.com",
				"${Table}": "agent-output-verifier-Table-1ABC",
			}
			ref := regexp.MustCompile(`\$\{[A-Za-z0-9:]+\}`)
			getenv := func(k string) string {
				v := vars[k]
				switch k {
				case "VERIFIER_SIGNING_KEY":
					v = "secretsmanager:${SigningKeySecret}" // KeySource's default: the secret the stack creates
				case "VERIFIER_LOG_KEY":
					v = "kms-sign:${LogKmsKey.Arn}" // LogKeySource's default: the key the stack creates
				case "VERIFIER_BASE_URL":
					v = executeAPIURL // what baseURL is with PublicBaseUrl and DomainName empty
				case "VERIFIER_KEY_VERSION", "VERIFIER_LOG_KEY_VERSION":
					v = "v1-2030-12-31" // no default: what keygen wrote (TestKeyVersionMatchesKeygen)
				}
				return ref.ReplaceAllStringFunc(v, func(r string) string {
					if s, ok := resolved[r]; ok {
						return s
					}
					name := strings.TrimSuffix(strings.TrimPrefix(r, "${"), "}")
					if name == "SigningKeySecret" { // Ref of a secret is its ARN
						return stackSecretARN
					}
					if name == "SigningKmsKey.Arn" {
						return "arn:aws:kms:us-east-1:123456789012:key/0f5e4d3c-2b1a-4f9e-8d7c-6b5a49382716"
					}
					if name == "LogKmsKey.Arn" {
						return "arn:aws:kms:us-east-1:123456789012:key/4c3b2a19-0e8d-4f7c-9b6a-5d4e3f2a1b0c"
					}
					p := parameter(tmpl.raw, name)
					if p == nil {
						t.Errorf("%s refers to %s, which is neither a parameter nor a known resource", k, r)
						return ""
					}
					return fmt.Sprint(p["Default"])
				})
			}
			if _, err := config.Load(getenv); err != nil {
				t.Errorf("the template's defaults do not make a valid configuration: %v", err)
			}
		})
	}
}

// TestParametersAreUsedAndDescribed keeps the deploy prompts honest: every parameter says what it
// is and is used somewhere.
func TestParametersAreUsedAndDescribed(t *testing.T) {
	tmpl := load(t)
	data := readFile(t, filepath.Join(root, "template.yaml"))
	for name, p := range tmpl.Parameters {
		if p.Description == nil || *p.Description == "" {
			t.Errorf("parameter %s has no Description", name)
		}
		if !strings.Contains(data, "!Ref "+name) && !strings.Contains(data, "${"+name+"}") {
			t.Errorf("parameter %s is never used", name)
		}
	}
}

// TestEventsMatchTemplateRoutes keeps events/*.json usable with `sam local invoke`: each event's
// routeKey is a route of the template.
func TestEventsMatchTemplateRoutes(t *testing.T) {
	tmpl := load(t)
	table := routes(t, tmpl)
	keys := map[string]bool{}
	for r := range table {
		keys[r.String()] = true
	}
	files, _ := filepath.Glob(filepath.Join(root, "events", "*.json"))
	if len(files) == 0 {
		t.Fatal("no events/*.json")
	}
	for _, f := range files {
		var ev struct {
			RouteKey string `json:"routeKey"`
		}
		if err := json.Unmarshal([]byte(readFile(t, f)), &ev); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !keys[ev.RouteKey] {
			t.Errorf("%s: routeKey %q is not a route of template.yaml (%v)", filepath.Base(f), ev.RouteKey, sortedKeys(keys))
		}
	}
}

// makeRecipe returns the recipe lines of target in a Makefile, joined.
func makeRecipe(makefile, target string) string {
	var lines []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(makefile))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			lines = append(lines, strings.TrimSpace(line))
		case in:
			return strings.Join(lines, "\n")
		}
	}
	return strings.Join(lines, "\n")
}

// functionGroup returns the group a FunctionName "${AWS::StackName}-<group>" names.
func functionGroup(t *testing.T, fn *serverless.Function) string {
	t.Helper()
	name := deref(fn.FunctionName)
	group, ok := strings.CutPrefix(name, "${AWS::StackName}-")
	if !ok || group == "" {
		t.Fatalf("FunctionName %q, want ${AWS::StackName}-<group> (the DefinitionBody and log group names rely on it)", name)
	}
	return group
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestTemplateLints runs cfn-lint, which expands the SAM transform locally and checks the
// resulting CloudFormation (property names and types, and circular dependencies, which the
// API's own URL in the functions' environment once caused). cfn-lint is a Python tool the
// development machines carry; where it is missing the test is skipped.
func TestTemplateLints(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint is not installed")
	}
	cmd := exec.Command(lint, "--format", "parseable", filepath.Join(root, "template.yaml"))
	// cfn-lint expands the transform with a region; it contacts nothing.
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION=us-east-1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode()&2 == 0:
		// Only warnings (4) or informational findings (8): worth reading, not failing on.
		t.Logf("cfn-lint findings:\n%s", out)
	default:
		t.Errorf("cfn-lint: %v\n%s", err, out)
	}
}

// TestSigningKmsKey checks the signing key the stack creates for KeySource kms-sign (the opt-in
// whose 4096-byte limit shortens long reports; the default is TestSigningKeySecret's): an
// Ed25519 signing key, kept when the stack stops using it, whose key policy lets only the
// functions' roles sign (kms:Sign and kms:GetPublicKey, nothing else) and lets the account
// administer the key without signing, decrypting or granting with it.
func TestSigningKmsKey(t *testing.T) {
	tmpl := load(t)
	keys := tmpl.GetAllKMSKeyResources()
	key, ok := keys["SigningKmsKey"]
	if got := sortedKeys(keys); !slices.Equal(got, []string{"LogKmsKey", "SigningKeySecretKmsKey", "SigningKmsKey"}) || !ok {
		t.Fatalf("KMS keys %v, want SigningKmsKey, SigningKeySecretKmsKey (TestSigningKeySecret) and LogKmsKey (TestLogKmsKey)", got)
	}
	res, _ := tmpl.raw["Resources"].(map[string]any)
	raw, _ := res["SigningKmsKey"].(map[string]any)
	if raw["Condition"] != "CreatesSigningKey" || raw["DeletionPolicy"] != "Retain" || raw["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("SigningKmsKey: condition %v, deletion %v, replacement %v; want CreatesSigningKey, Retain, Retain",
			raw["Condition"], raw["DeletionPolicy"], raw["UpdateReplacePolicy"])
	}
	if deref(key.KeySpec) != "ECC_NIST_EDWARDS25519" || deref(key.KeyUsage) != "SIGN_VERIFY" {
		t.Errorf("SigningKmsKey: spec %v usage %v, want ECC_NIST_EDWARDS25519 SIGN_VERIFY", deref(key.KeySpec), deref(key.KeyUsage))
	}
	var functionRoles []string
	for _, fn := range tmpl.GetAllServerlessFunctionResources() {
		functionRoles = append(functionRoles, deref(fn.Role))
	}
	slices.Sort(functionRoles)
	if len(functionRoles) != 5 {
		t.Fatalf("function roles %v, want five", functionRoles)
	}
	// What the account's administrators must not be able to do with the key: use it, or let
	// someone else use it.
	use := []string{"kms:Sign", "kms:Verify", "kms:Decrypt", "kms:Encrypt", "kms:CreateGrant", "kms:ReEncryptFrom", "kms:ReEncryptTo"}
	signers := 0
	for _, s := range statements(t, "SigningKmsKey key policy", key.KeyPolicy) {
		principal, _ := s.body["Principal"].(map[string]any)
		who := strs(principal["AWS"])
		actions := strs(s.body["Action"])
		if s.body["Effect"] != "Allow" || s.condition != "" || fmt.Sprint(s.body["Resource"]) != "*" {
			t.Errorf("%s: %v", s.where, s.body)
		}
		switch {
		case slices.Equal(who, []string{"arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}):
			for _, a := range actions {
				for _, u := range use {
					if a == "kms:*" || a == u || strings.HasSuffix(a, "*") && strings.HasPrefix(u, strings.TrimSuffix(a, "*")) {
						t.Errorf("%s: the account may %s (%s)", s.where, u, a)
					}
				}
			}
		default:
			slices.Sort(who)
			signers++
			if !slices.Equal(who, functionRoles) {
				t.Errorf("%s: principals %v, want the functions' roles %v", s.where, who, functionRoles)
			}
			if slices.Sort(actions); !slices.Equal(actions, []string{"kms:GetPublicKey", "kms:Sign"}) {
				t.Errorf("%s: actions %v, want kms:Sign and kms:GetPublicKey", s.where, actions)
			}
		}
	}
	if signers != 1 {
		t.Errorf("%d statements for signers, want one", signers)
	}
}

// storeMethods lists, for each function of the template, the methods of the DynamoDB store
// (pkg/store/dynamo) its code can call, with the path that reaches them. The DynamoDB operations
// behind each method are not listed: TestRolesAllowTheStoreCalls derives them from the store's
// source, so a method that starts calling a new operation fails the test until the roles allow it.
var storeMethods = map[string][]string{
	// POST /verify/*: the free allowance, payments and paid answers kept under their identifier,
	// the history (recorded, then folded into the aggregate after the answer), the receipt
	// log's record and pending leaf; GET /reputation/{agent_id}: the folded aggregate and the
	// history; GET /verifications/{id}, /log/checkpoint, /log/tile/…: the log's reads.
	"VerifyFunction": {
		"ConsumeAllowance", "AllowanceUsed", "ReservePayment", "ReleasePayment", "PaymentReserved",
		"ClaimPayment", "UpdatePaymentClaim", "ReleasePaymentClaim", "RecordVerification", "Fold", "AgentAggregate", "History",
		"RecordReceipt", "Receipt", "LogHead", "ReadLogHashes", "LogLeaves", "LogIndexes",
	},
	// The tools do what the REST routes do: verify_schema as POST /verify/schema,
	// get_verification_record as GET /score (the aggregate, paid), get_receipt as
	// GET /verifications/{id}.
	"McpFunction": {
		"ConsumeAllowance", "AllowanceUsed", "ReservePayment", "ReleasePayment", "PaymentReserved",
		"ClaimPayment", "UpdatePaymentClaim", "ReleasePaymentClaim", "RecordVerification", "Fold", "AgentAggregate",
		"RecordReceipt", "Receipt", "LogHead", "ReadLogHashes", "LogLeaves", "LogIndexes",
	},
	// GET /score/{agent_id}: the aggregate, which folds the agent's inbox first, and the payment.
	"ScoreFunction": {"AgentAggregate", "ReservePayment", "ReleasePayment", "PaymentReserved"},
	// /health probes the store.
	"WellKnownFunction": {"Ping"},
	// The sequencer (translog.Sequencer over translog.Storage) and the tree size it reports.
	"LogFunction": {
		"LogHead", "SwapLogHead", "PutLogHashes", "ReadLogHashes", "PutLogLeaves", "LogLeaves",
		"LogIndexes", "PendingLeaves", "DeletePendingLeaves",
	},
}

// storeOperations reads pkg/store/dynamo's source and returns, for every function and method of
// the package, the DynamoDB operations it calls on the SDK client (s.client.X), directly or
// through the package's other functions and methods.
func storeOperations(t *testing.T) map[string][]string {
	t.Helper()
	dir := filepath.Join(root, "pkg", "store", "dynamo")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	direct := map[string]map[string]bool{} // function → operations it calls itself
	calls := map[string]map[string]bool{}  // function → the package's functions it calls
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			direct[name], calls[name] = map[string]bool{}, map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch f := call.Fun.(type) {
				case *ast.Ident: // a function of the package
					calls[name][f.Name] = true
				case *ast.SelectorExpr:
					if inner, ok := f.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "client" {
						direct[name][f.Sel.Name] = true // s.client.GetItem(…)
					} else if id, ok := f.X.(*ast.Ident); ok && fn.Recv != nil && len(fn.Recv.List[0].Names) == 1 && id.Name == fn.Recv.List[0].Names[0].Name {
						calls[name][f.Sel.Name] = true // s.getItem(…)
					}
				}
				return true
			})
		}
	}
	out := map[string][]string{}
	for name := range direct {
		seen, ops := map[string]bool{}, map[string]bool{}
		var walk func(string)
		walk = func(n string) {
			if seen[n] {
				return
			}
			seen[n] = true
			for op := range direct[n] {
				ops[op] = true
			}
			for c := range calls[n] {
				walk(c)
			}
		}
		walk(name)
		out[name] = sortedKeys(ops)
	}
	return out
}

// TestRolesAllowTheStoreCalls checks each function's role against the DynamoDB operations its
// code can call: every operation behind the store methods the function reaches (storeMethods),
// derived from the store's source, must be allowed on the table, and no other. A role that lacks
// one fails on AWS with AccessDenied on that path only, which no local test would show.
func TestRolesAllowTheStoreCalls(t *testing.T) {
	tmpl := load(t)
	ops := storeOperations(t)
	// The derivation itself: the store's SDK calls are where Fold's and getItem's code makes them.
	if got := ops["getItem"]; !slices.Equal(got, []string{"GetItem"}) {
		t.Fatalf("derived operations of getItem = %v, want [GetItem]: the derivation is broken", got)
	}
	if got := ops["Fold"]; !slices.Contains(got, "DeleteItem") || !slices.Contains(got, "Query") {
		t.Fatalf("derived operations of Fold = %v, want DeleteItem and Query among them", got)
	}
	fns := tmpl.GetAllServerlessFunctionResources()
	if got, want := sortedKeys(fns), sortedKeys(storeMethods); !slices.Equal(got, want) {
		t.Fatalf("functions %v, storeMethods lists %v: list what each new function calls", got, want)
	}
	roles := tmpl.GetAllIAMRoleResources()
	for name, fn := range fns {
		want := map[string]bool{}
		for _, m := range storeMethods[name] {
			got, ok := ops[m]
			if !ok {
				t.Errorf("%s: the store has no method %s", name, m)
			}
			for _, op := range got {
				want["dynamodb:"+op] = true
			}
		}
		roleName := strings.TrimSuffix(strings.TrimPrefix(deref(fn.Role), "${"), ".Arn}")
		role, ok := roles[roleName]
		if !ok {
			t.Errorf("%s: no role %s", name, roleName)
			continue
		}
		granted := map[string]bool{}
		for _, pol := range role.Policies {
			for _, s := range statements(t, roleName+" "+pol.PolicyName, pol.PolicyDocument) {
				if !slices.Equal(strs(s.body["Resource"]), []string{"${Table.Arn}"}) {
					continue
				}
				for _, a := range strs(s.body["Action"]) {
					granted[a] = true
				}
			}
		}
		for _, a := range sortedKeys(want) {
			if !granted[a] {
				t.Errorf("%s: its code calls %s, which %s does not allow on the table", name, a, roleName)
			}
		}
		for _, a := range sortedKeys(granted) {
			if !want[a] {
				t.Errorf("%s: %s allows %s, which its code never calls", name, roleName, a)
			}
		}
	}
}

// TestLogKmsKey checks the receipt log's key the stack creates by default (LogKeySource
// kms-sign, SPEC §15): an Ed25519 signing key, kept when the stack stops using it, whose key
// policy lets only the log function's role sign, the other functions' roles read its public half
// (they load the key at start-up; the agent card publishes it) and nothing else, and the account
// administer it without using it; the functions get it as VERIFIER_LOG_KEY (TestEnvironment).
func TestLogKmsKey(t *testing.T) {
	tmpl := load(t)
	p := parameter(tmpl.raw, "LogKeySource")
	if p["Default"] != "kms-sign" || fmt.Sprint(p["AllowedValues"]) != "[kms-sign secretsmanager]" {
		t.Errorf("LogKeySource: default %v, values %v; want kms-sign of kms-sign, secretsmanager", p["Default"], p["AllowedValues"])
	}
	key, ok := tmpl.GetAllKMSKeyResources()["LogKmsKey"]
	if !ok {
		t.Fatal("no LogKmsKey")
	}
	res, _ := tmpl.raw["Resources"].(map[string]any)
	raw, _ := res["LogKmsKey"].(map[string]any)
	if raw["Condition"] != "CreatesLogKey" || raw["DeletionPolicy"] != "Retain" || raw["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("LogKmsKey: condition %v, deletion %v, replacement %v; want CreatesLogKey, Retain, Retain",
			raw["Condition"], raw["DeletionPolicy"], raw["UpdateReplacePolicy"])
	}
	if deref(key.KeySpec) != "ECC_NIST_EDWARDS25519" || deref(key.KeyUsage) != "SIGN_VERIFY" {
		t.Errorf("LogKmsKey: spec %v usage %v, want ECC_NIST_EDWARDS25519 SIGN_VERIFY", deref(key.KeySpec), deref(key.KeyUsage))
	}
	logRole := ""
	var readers []string
	for name, fn := range tmpl.GetAllServerlessFunctionResources() {
		if name == "LogFunction" {
			logRole = deref(fn.Role)
		} else {
			readers = append(readers, deref(fn.Role))
		}
	}
	slices.Sort(readers)
	// Who may do what with the key, by principal: the account administers it only.
	got := map[string][]string{}
	for _, s := range statements(t, "LogKmsKey key policy", key.KeyPolicy) {
		if s.body["Effect"] != "Allow" || s.condition != "" || fmt.Sprint(s.body["Resource"]) != "*" {
			t.Errorf("%s: %v", s.where, s.body)
		}
		principal, _ := s.body["Principal"].(map[string]any)
		for _, who := range strs(principal["AWS"]) {
			got[who] = append(got[who], strs(s.body["Action"])...)
		}
	}
	const account = "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"
	for who, actions := range got {
		slices.Sort(actions)
		switch {
		case who == account:
			for _, a := range actions {
				if a == "kms:*" || a == "kms:Sign" || a == "kms:CreateGrant" || a == "kms:Decrypt" {
					t.Errorf("LogKmsKey: the account may %s", a)
				}
			}
		case who == logRole:
			if !slices.Equal(actions, []string{"kms:GetPublicKey", "kms:Sign"}) {
				t.Errorf("LogKmsKey: the log function may %v, want kms:GetPublicKey and kms:Sign", actions)
			}
		case slices.Contains(readers, who):
			if !slices.Equal(actions, []string{"kms:GetPublicKey"}) {
				t.Errorf("LogKmsKey: %s may %v, want kms:GetPublicKey alone", who, actions)
			}
		default:
			t.Errorf("LogKmsKey: %s may %v; only the functions' roles and the account are named", who, actions)
		}
	}
	if len(got) != 2+len(readers) || logRole == "" {
		t.Errorf("LogKmsKey names %v, want the account, the log role %s and the other roles %v", sortedKeys(got), logRole, readers)
	}
}
