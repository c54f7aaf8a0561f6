package discovery

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// OpenAPIVersion is the version of the OpenAPI specification the document follows.
const OpenAPIVersion = "3.1.1"

// operation describes one route in the OpenAPI document beyond what Routes() says.
type operation struct {
	tags        []string
	description string
	parameters  []any
	requestBody any
	responses   object
}

// operationIDs names the operation of each route ("METHOD path"); the docs viewer's anchors and
// llms.txt's links use them.
var operationIDs = map[string]string{
	"POST /verify/schema":                              "verifySchema",
	"POST /verify/deliverable":                         "verifyDeliverable",
	"GET /score/{agent_id}":                            "getScore",
	"GET /reputation/{agent_id}":                       "getReputation",
	"GET /verifications/{verification_id}":             "getVerificationRecord",
	"GET /verifications/{verification_id}/attestation": "getVerificationAttestation",
	"GET /log/checkpoint":                              "getLogCheckpoint",
	"GET /log/tile/{height}/{level}/{n}":               "getLogTile",
	"GET /log/tile/{height}/{level}/{n}.p/{width}":     "getLogPartialTile",
	"POST /mcp":                        "mcp",
	"GET /health":                      "getHealth",
	"GET /.well-known/agent-card.json": "getAgentCard",
	"GET /.well-known/agent.json":      "getAgentCardLegacy",
	"GET /.well-known/x402":            "getX402Manifest",
	"GET /.well-known/did.json":        "getDIDDocument",
	"GET /.well-known/api-catalog":     "getApiCatalog",
	"GET /openapi.json":                "getOpenAPI",
	"GET /docs":                        "getDocs",
	"GET /llms.txt":                    "getLlmsTxt",
	"GET /llms-full.txt":               "getLlmsFullTxt",
	"GET /":                            "getIndex",
}

// operationIDOf is the operationId of a route, for links into the docs viewer. A route missing
// from operationIDs gets one made from its method and path (and the OpenAPI document refuses to
// build, so a test notices).
func operationIDOf(method, path string) string {
	if id, ok := operationIDs[method+" "+path]; ok {
		return id
	}
	return strings.ToLower(method) + strings.NewReplacer("/", "_", ".", "_", "{", "", "}", "").Replace(path)
}

// tileOp is a tile route's operation (SPEC §15), full or partial.
func tileOp(partial bool) operation {
	params := []any{
		obj("name", "height", "in", "path", "required", true, "description", "The tile height: 8.", "schema", obj("type", "string", "enum", []string{"8"})),
		obj("name", "level", "in", "path", "required", true, "description", "The hash level (0, 1, …), or data for the leaves.",
			"schema", obj("type", "string", "pattern", "^([0-9]|data)$")),
		obj("name", "n", "in", "path", "required", true, "description", "The tile's number, three digits (000-999); larger numbers are written x001/234 "+
			"(golang.org/x/mod/sumdb/tlog's layout) and served at those paths.", "schema", obj("type", "string", "pattern", "^[0-9]{3}$")),
	}
	desc := "A full tile of the receipt log, C2SP tlog-tiles of height 8 in golang.org/x/mod/sumdb/tlog's layout: at a level, 256 hashes of 32 bytes; " +
		"at level data, the 256 leaves (32-byte receipt hashes, concatenated). Immutable: Cache-Control: public, max-age=31536000, immutable. Free."
	if partial {
		params = append(params, obj("name", "width", "in", "path", "required", true, "description", "How many entries (1-255).",
			"schema", obj("type", "string", "pattern", "^[0-9]{1,3}$")))
		desc = "A partial tile of the receipt log: the first width entries of the tile at the tree's edge. Its bytes never change, but the tree outgrows " +
			"it within seconds, so it is served with Cache-Control: no-cache. Free."
	}
	return operation{
		tags: []string{"log"}, description: desc, parameters: params,
		responses: obj(
			"200", obj("description", "The tile's bytes.", "content", obj("application/octet-stream", obj("schema", obj("type", "string", "format", "binary")))),
			"404", responseRef("NotFound"),
			"500", responseRef("InternalError"),
			"503", responseRef("Unavailable"),
		),
	}
}

// schemaRef, headerRef, paramRef and responseRef are $refs to the components of their kind.
func schemaRef(name string) object   { return obj("$ref", "#/components/schemas/"+name) }
func headerRef(name string) object   { return obj("$ref", "#/components/headers/"+name) }
func paramRef(name string) object    { return obj("$ref", "#/components/parameters/"+name) }
func responseRef(name string) object { return obj("$ref", "#/components/responses/"+name) }

// jsonContent is a content map with one application/json media type.
func jsonContent(schema any, examples object) object {
	mt := obj("schema", schema)
	if len(examples) > 0 {
		mt.set("examples", examples)
	}
	return obj("application/json", mt)
}

// example is an OpenAPI Example Object holding a JSON document.
func example(summary string, raw []byte) object {
	return obj("summary", summary, "value", json.RawMessage(raw))
}

// operations maps "METHOD path" of every route in Routes() to its description.
func operations(svc *service.Service, ex *Examples) map[string]operation {
	verifyOp := func(extra string) operation {
		return operation{
			tags: []string{"verification"},
			description: "Checks submitted_output against expected_schema (JSON Schema drafts 4 to 2020-12; formats are asserted), the rules and the bounds, " +
				"and answers pass or fail with per-check ratios, repair hints and a receipt: SHA-256 hashes of the exact data, signed with Ed25519 over RFC 8785 canonical JSON. " +
				"A fail verdict is a complete answer (200). " + freeAllowanceText(svc) + " " +
				"An empty body is the x402 discovery probe: 402 with the payment requirements. " + extra,
			parameters: []any{paramRef("PaymentSignature")},
			requestBody: obj("required", true, "content", jsonContent(schemaRef("VerifyRequest"), obj(
				"pass", example("An invoice whose line items add up (passes)", ex.Pass.Request),
				"fail", example("An invoice whose line items do not add up (fails)", ex.Fail.Request),
			))),
			responses: obj(
				"200", obj(
					"description", "The signed verification answer (pass or fail).",
					"headers", obj(
						"Free-Allowance-Remaining", headerRef("FreeAllowanceRemaining"),
						"Free-Allowance-Limit", headerRef("FreeAllowanceLimit"),
						"Free-Allowance-Resets", headerRef("FreeAllowanceResets"),
						"PAYMENT-RESPONSE", headerRef("PaymentResponse"),
					),
					"content", jsonContent(schemaRef("VerifyResponse"), obj(
						"pass", example("Passes (signed with the documentation example key)", ex.Pass.Response),
						"fail", example("Fails: the line items sum to 129.5, not 135.0", ex.Fail.Response),
					)),
				),
				"402", responseRef("PaymentRequired"),
				"413", responseRef("PayloadTooLarge"),
				"422", obj("description", "The request is invalid; fields[] names each offending field. Nothing is charged or counted.",
					"content", jsonContent(schemaRef("Error"), obj("invalid", example("A rule type that does not exist and a switch that is not a boolean", ex.Invalid.Response)))),
				"429", responseRef("FreeOnlyExhausted"),
				"500", responseRef("InternalError"),
				"503", responseRef("Unavailable"),
			),
		}
	}
	ops := map[string]operation{
		"POST /verify/schema": verifyOp(""),
		"POST /verify/deliverable": verifyOp(
			"This route is /verify/schema under another name: byte-identical behaviour, the same allowance."),
		"GET /score/{agent_id}": {
			tags: []string{"reputation"},
			description: "The agent's trust score (SPEC §9): 100 x the lower bound of the 95% Wilson interval of its weighted pass rate, where each verification weighs " +
				"0.5^(age in days / 30) x (1 if paid, 0.5 if free). Signed with the trust-score context. Agents with no record, and test- ids, get a free signed answer " +
				"with score null and reason no_data. " + scorePriceText(svc),
			parameters: []any{paramRef("AgentId"), paramRef("PaymentSignature")},
			responses: obj(
				"200", obj("description", "The signed trust score.",
					"headers", obj("PAYMENT-RESPONSE", headerRef("PaymentResponse")),
					"content", jsonContent(schemaRef("ScoreDocument"), obj("no_data", example("An agent with no record", ex.Score.Response)))),
				"402", responseRef("PaymentRequired"),
				"404", responseRef("NotFound"),
				"422", responseRef("InvalidRequest"),
				"500", responseRef("InternalError"),
				"503", responseRef("Unavailable"),
			),
		},
		"GET /reputation/{agent_id}": {
			tags: []string{"reputation"},
			description: "The agent's totals and its verifications, newest first, one page at a time; free, signed with the reputation context. " +
				"Unknown and test- ids get the same shape, empty, with reason no_data.",
			parameters: []any{paramRef("AgentId"), paramRef("Limit"), paramRef("Cursor")},
			responses: obj(
				"200", obj("description", "The signed history page.", "content", jsonContent(schemaRef("ReputationDocument"), nil)),
				"404", responseRef("NotFound"),
				"422", responseRef("InvalidRequest"),
				"500", responseRef("InternalError"),
				"503", responseRef("Unavailable"),
			),
		},
		"GET /verifications/{verification_id}": {
			tags: []string{"log"},
			description: "The stored record of a verification (SPEC §15): receipt_hash (the SHA-256 of the RFC 8785 form of the whole signed answer, the " +
				"log's leaf), the verdict, the hashes and a paid answer's settlement; never the answer's messages or any caller data. Once its leaf is " +
				"sequenced (within a second or so), log holds its index, the tree size, the signed checkpoint and the inclusion proof (RFC 6962, base64 " +
				"hashes); before that log is {\"status\":\"pending\"} with Retry-After: 1. Records expire after VERIFIER_RECORD_DAYS (default 90); the leaf never does. Free.",
			parameters: []any{obj("name", "verification_id", "in", "path", "required", true, "description", "The verification_id of a receipt.",
				"schema", obj("type", "string", "minLength", 1, "maxLength", 128))},
			responses: obj(
				"200", obj("description", "The record.", "content", jsonContent(schemaRef("VerificationRecord"), nil)),
				"404", responseRef("NotFound"),
				"422", responseRef("InvalidRequest"),
				"500", responseRef("InternalError"),
				"503", responseRef("Unavailable"),
			),
		},
		"GET /verifications/{verification_id}/attestation": {
			tags: []string{"log"},
			description: "The stored record as an attestation supply-chain tools read (SPEC §16): a DSSE envelope (payloadType application/vnd.in-toto+json, " +
				"signed with the receipt key, keyid the key version; served as application/json) holding an in-toto Statement v1 with the SLSA " +
				"Verification Summary Attestation v1 predicate. The subject is the output: digest sha256 = output_hash, named by the task_id when the " +
				"record holds it (an agent_id not starting with test-, whose public history lists it already) and verification:<verification_id> " +
				"otherwise. The predicate: verifier {id: base URL, version}, timeVerified = verified_at, resourceUri and policy.uri = this record's URL, " +
				"policy.digest.sha256 = rules_hash, verificationResult PASSED or FAILED, verifiedLevels AOV_SCHEMA_V1 plus AOV_RULES_V1 when rules were " +
				"enforced. 404 for an unknown or expired record, and a retryable 404 with Retry-After: 1 until its leaf is in the receipt log. Free; a " +
				"signed envelope is kept and handed out again, and fresh signatures by a remote key are rationed (429 with Retry-After when spent).",
			parameters: []any{obj("name", "verification_id", "in", "path", "required", true, "description", "The verification_id of a receipt.",
				"schema", obj("type", "string", "minLength", 1, "maxLength", 128))},
			responses: obj(
				"200", obj("description", "The DSSE envelope.", "content", jsonContent(schemaRef("DSSEEnvelope"), nil)),
				"404", responseRef("NotFound"),
				"422", responseRef("InvalidRequest"),
				"429", responseRef("RateLimited"),
				"500", responseRef("InternalError"),
				"503", responseRef("Unavailable"),
			),
		},
		"GET /log/checkpoint": {
			tags: []string{"log"},
			description: "The receipt log's latest checkpoint: a C2SP tlog-checkpoint (origin, tree size, base64 root hash) as a signed note, signed with the " +
				"log key of the agent card's transparencyLog. 404 while the log has no leaf yet. Free, Cache-Control: no-cache.",
			responses: obj(
				"200", obj("description", "The signed checkpoint.", "content", obj("text/plain; charset=utf-8", obj("schema", obj("type", "string")))),
				"404", responseRef("NotFound"),
				"500", responseRef("InternalError"),
				"503", responseRef("Unavailable"),
			),
		},
		"GET /log/tile/{height}/{level}/{n}":           tileOp(false),
		"GET /log/tile/{height}/{level}/{n}.p/{width}": tileOp(true),
		"POST /mcp": {
			tags: []string{"mcp"},
			description: "The Model Context Protocol endpoint (Streamable HTTP, stateless, JSON answers): point any MCP client here. Tools: verify_schema " +
				"(the POST /verify/schema body as arguments; the signed answer as structuredContent; the same free allowance, then x402 over MCP with " +
				"params._meta[\"x402/payment\"]), get_verification_record (the GET /score document) and get_receipt (the GET /verifications/{verification_id} record). GET and DELETE answer 405: there is no event " +
				"stream and no session. Transport refusals come in the error envelope.",
			requestBody: obj("required", true, "content", jsonContent(schemaRef("JsonRpcRequest"), obj(
				"tools_list", obj("summary", "List the tools", "value", obj("jsonrpc", "2.0", "id", 1, "method", "tools/list")),
				"verify", obj("summary", "Call verify_schema", "value", obj("jsonrpc", "2.0", "id", 2, "method", "tools/call",
					"params", obj("name", "verify_schema", "arguments", json.RawMessage(ex.Pass.Request)))),
			))),
			responses: obj(
				"200", obj("description", "The JSON-RPC answer; an event stream of one message when the client accepts only text/event-stream. A call of an unknown method is JSON-RPC error -32601, a tools/call without params -32602.",
					"content", obj(
						"application/json", obj("schema", schemaRef("JsonRpcResponse")),
						"text/event-stream", obj("schema", obj("type", "string")),
					)),
				"202", obj("description", "A notification or response was accepted; no body."),
				"400", obj("description", "The message could not be read as JSON-RPC.", "content", jsonContent(schemaRef("Error"), nil)),
				"403", obj("description", "The Host header names no host this endpoint serves, or the Origin header is not this deployment's origin (DNS rebinding protection; clients outside a browser send no Origin).", "content", jsonContent(schemaRef("Error"), nil)),
				"404", responseRef("NotFound"),
				"413", responseRef("PayloadTooLarge"),
				"415", obj("description", "The message was not sent as application/json.", "content", jsonContent(schemaRef("Error"), nil)),
				"500", responseRef("InternalError"),
			),
		},
		"GET /health": {
			tags:        []string{"service"},
			description: "Liveness, the build's version and the version of the key that signs now, with a probe of the store. Never shows configuration.",
			responses: obj(
				"200", obj("description", "Healthy.", "content", jsonContent(schemaRef("Health"), nil)),
				"500", responseRef("InternalError"),
				"503", obj("description", "Degraded: the store does not answer.", "content", jsonContent(schemaRef("Health"), nil)),
			),
		},
		"GET /.well-known/agent-card.json": cardOp("The A2A v1.0 agent card: what the service does, its interfaces and skills, " +
			"and, in capabilities.extensions, every public key that ever signed a receipt, the attestation contexts, the request-hash test vectors " +
			"(computed by the running code) and the x402 networks and prices."),
		"GET /.well-known/agent.json": cardOp("The agent card at the legacy path: the same bytes as /.well-known/agent-card.json."),
		"GET /.well-known/x402": {
			tags:        []string{"discovery"},
			description: "The x402 discovery manifest: the paid routes with their live requirements (prices, networks, assets, payees), built from the same table as the 402 answers.",
			responses: obj(
				"200", obj("description", "The manifest.", "content", jsonContent(schemaRef("X402Manifest"), nil)),
				"500", responseRef("InternalError"),
				"503", responseRef("Unavailable"),
			),
		},
		"GET /.well-known/did.json": {
			tags: []string{"discovery"},
			description: "The did:web DID document of the deployment (its configured base URL): every public key that signs x402 offer-receipt offers and receipts, " +
				"current first and earlier ones kept, as JsonWebKey2020 methods (OKP, Ed25519) with ids did:web:<host>#<key version>, the kid of each JWS.",
			parameters: []any{paramRef("IfNoneMatch")},
			responses: obj(
				"200", obj("description", "The DID document.",
					"headers", obj("ETag", headerRef("ETag"), "Cache-Control", headerRef("CacheControl")),
					"content", jsonContent(obj("type", "object", "required", []any{"id", "verificationMethod", "assertionMethod"}), nil)),
				"304", responseRef("NotModified"),
				"500", responseRef("InternalError"),
			),
		},
		"GET /.well-known/api-catalog": {
			tags:        []string{"discovery"},
			description: "The RFC 9727 API catalog: a linkset whose anchor is the base URL, with service-desc (this document), service-doc (the docs) and status (/health).",
			responses: obj(
				"200", obj("description", "The catalog.",
					"headers", obj("Link", headerRef("Link"), "ETag", headerRef("ETag"), "Cache-Control", headerRef("CacheControl")),
					"content", obj("application/linkset+json", obj("schema", schemaRef("ApiCatalog")))),
				"304", responseRef("NotModified"),
				"500", responseRef("InternalError"),
			),
		},
		"GET /openapi.json": documentOp("This document.", "application/json", obj("type", "object")),
		"GET /docs": documentOp("Interactive documentation of this API: every operation with its parameters, schemas and examples, and a form to try it. "+
			"Every asset is in the page; it loads nothing from elsewhere and sends nothing anywhere but this API.", "text/html", obj("type", "string")),
		"GET /llms.txt": documentOp("A summary for language models (llmstxt.org): endpoints, the free allowance, pricing, every error code, payment errors, receipts.",
			"text/plain", obj("type", "string")),
		"GET /llms-full.txt": documentOp("llms.txt with complete worked examples: requests, the service's answers and how to verify their receipts.",
			"text/plain", obj("type", "string")),
		"GET /": {
			tags:        []string{"service"},
			description: "A page for people, or with Accept: application/json the index of every route and document.",
			responses: obj(
				"200", obj("description", "The index.", "content", obj(
					"text/html", obj("schema", obj("type", "string")),
					"application/json", obj("schema", schemaRef("Index")),
				)),
				"500", responseRef("InternalError"),
			),
		},
	}
	return ops
}

func cardOp(description string) operation {
	return operation{
		tags: []string{"discovery"}, description: description,
		parameters: []any{paramRef("IfNoneMatch")},
		responses: obj(
			"200", obj("description", "The agent card.",
				"headers", obj("ETag", headerRef("ETag"), "Cache-Control", headerRef("CacheControl")),
				"content", jsonContent(schemaRef("AgentCard"), nil)),
			"304", responseRef("NotModified"),
			"500", responseRef("InternalError"),
		),
	}
}

func documentOp(description, mediaType string, schema object) operation {
	return operation{
		tags: []string{"discovery"}, description: description,
		parameters: []any{paramRef("IfNoneMatch")},
		responses: obj(
			"200", obj("description", "The document.",
				"headers", obj("ETag", headerRef("ETag"), "Cache-Control", headerRef("CacheControl")),
				"content", obj(mediaType, obj("schema", schema))),
			"304", responseRef("NotModified"),
			"500", responseRef("InternalError"),
		),
	}
}

// openAPIDocument is /openapi.json: every route of Routes(), in that order.
func openAPIDocument(svc *service.Service, ex *Examples) ([]byte, error) {
	ops := operations(svc, ex)
	paths := object{}
	seen := map[string]bool{}
	for _, r := range Routes() {
		key := r.Method + " " + r.Path
		op, ok := ops[key]
		id, named := operationIDs[key]
		if !ok || !named {
			return nil, fmt.Errorf("openapi: route %s has no operation description or id", key)
		}
		seen[key] = true
		o := obj("operationId", id, "tags", op.tags, "summary", r.Description, "description", op.description+" Price: "+r.Price+".")
		if len(op.parameters) > 0 {
			o.set("parameters", op.parameters)
		}
		if op.requestBody != nil {
			o.set("requestBody", op.requestBody)
		}
		o.set("responses", op.responses)
		item := object{}
		for _, m := range paths {
			if m.key == r.Path {
				item = m.value.(object)
			}
		}
		item.set(strings.ToLower(r.Method), o)
		if r.Path == PathAPICatalog {
			// RFC 9727 §2: a HEAD on the catalog names it in a Link header.
			item.set("head", obj("operationId", "headApiCatalog", "tags", op.tags, "summary", "The API catalog's Link header, without the body.",
				"responses", obj("200", obj("description", "The Link header that names the catalog.", "headers", obj("Link", headerRef("Link"))))))
		}
		paths.set(r.Path, item)
	}
	for key := range ops {
		if !seen[key] {
			return nil, fmt.Errorf("openapi: operation %s is not a route of Routes()", key)
		}
	}
	components, err := openAPIComponents(svc)
	if err != nil {
		return nil, err
	}
	doc := obj(
		"openapi", OpenAPIVersion,
		"info", obj(
			"title", "Agent Output Verifier",
			"version", wire.Version,
			"summary", "Deterministic verification of AI agents' JSON output, with Ed25519-signed receipts.",
			"description", apiDescription(svc),
		),
		"jsonSchemaDialect", "https://spec.openapis.org/oas/3.1/dialect/base",
		"servers", []any{obj("url", svc.BaseURL(), "description", "This deployment")},
		"tags", []any{
			obj("name", "verification", "description", "Verify an agent's output; signed receipts."),
			obj("name", "reputation", "description", "Agents' verification records and trust scores."),
			obj("name", "log", "description", "The public, append-only receipt transparency log: records, checkpoints and tiles."),
			obj("name", "mcp", "description", "The same service over the Model Context Protocol."),
			obj("name", "discovery", "description", "Documents that describe the service."),
			obj("name", "service", "description", "Index and health."),
		},
		"paths", paths,
		"components", components,
		"x-error-codes", errorCodes(),
	)
	return json.Marshal(doc)
}

// openAPIComponents are the schemas, parameters, headers and shared responses.
func openAPIComponents(svc *service.Service) (object, error) {
	schemas, err := componentSchemas()
	if err != nil {
		return nil, err
	}
	errResp := func(desc string, headers object) object {
		r := obj("description", desc)
		if len(headers) > 0 {
			r.set("headers", headers)
		}
		r.set("content", jsonContent(schemaRef("Error"), nil))
		return r
	}
	retry := obj("Retry-After", headerRef("RetryAfter"))
	return obj(
		"schemas", schemas,
		"parameters", obj(
			"AgentId", obj("name", "agent_id", "in", "path", "required", true,
				"description", "The agent_id the verifications named, percent-encoded (one path segment).",
				"schema", obj("type", "string", "minLength", 1, "maxLength", wire.MaxIDLen), "example", "seller-invoice-agent"),
			"Limit", obj("name", "limit", "in", "query", "required", false, "description", "Entries per page.",
				"schema", obj("type", "integer", "minimum", 1, "maximum", service.MaxReputationPage, "default", service.DefaultReputationPage)),
			"Cursor", obj("name", "cursor", "in", "query", "required", false,
				"description", "The next_cursor of the previous page, unchanged; leave it out for the newest page.", "schema", obj("type", "string")),
			"PaymentSignature", obj("name", x402.HeaderPaymentSignature, "in", "header", "required", false,
				"description", "x402 v2: standard base64 of the PaymentPayload that pays one of the 402 answer's accepts.", "schema", obj("type", "string")),
			"IfNoneMatch", obj("name", "If-None-Match", "in", "header", "required", false,
				"description", "The ETag of a copy you hold: 304 when it is still current.", "schema", obj("type", "string")),
		),
		"headers", obj(
			"PaymentRequired", obj("description", "x402 v2: standard base64 of the PaymentRequired JSON (the body repeats it).", "required", true, "schema", obj("type", "string")),
			"PaymentResponse", obj("description", "x402 v2: standard base64 of the facilitator's SettlementResponse (the transaction), on a paid answer or a failed settlement. A paid answer's carries extensions[\"offer-receipt\"].info.receipt, the signed receipt (JWS, EdDSA, kid did:web:<host>#<key version>).", "schema", obj("type", "string")),
			"FreeAllowanceRemaining", obj("description", "Free verifications this client has left today.", "schema", obj("type", "integer", "minimum", 0)),
			"FreeAllowanceLimit", obj("description", "Free verifications per client per UTC day.", "schema", obj("type", "integer", "minimum", 0)),
			"FreeAllowanceResets", obj("description", "When the allowance resets: the next UTC midnight, RFC 3339.", "schema", obj("type", "string", "format", "date-time")),
			"RetryAfter", obj("description", "Seconds to wait before retrying.", "schema", obj("type", "integer", "minimum", 1)),
			"ETag", obj("description", "Strong validator of the document's bytes.", "schema", obj("type", "string")),
			"CacheControl", obj("description", "How long the document may be kept.", "schema", obj("type", "string")),
			"Link", obj("description", `<base>/.well-known/api-catalog; rel="api-catalog" (RFC 9727).`, "schema", obj("type", "string")),
		),
		"responses", obj(
			"PaymentRequired", obj(
				"description", "Payment required (x402 v2): past the free allowance, for a body over the free size limit, for the empty-body probe, "+
					"or after a refused payment (code names why). Sign one of accepts and send the same request again with PAYMENT-SIGNATURE.",
				"headers", obj("PAYMENT-REQUIRED", headerRef("PaymentRequired"), "PAYMENT-RESPONSE", headerRef("PaymentResponse")),
				"content", jsonContent(schemaRef("PaymentRequired"), nil),
			),
			"InvalidRequest", errResp("The request is invalid; fields[] names each offending field.", nil),
			"PayloadTooLarge", errResp("The body is over the size limit (limit gives it in bytes).", nil),
			"NotFound", errResp("No route matches the path.", nil),
			"FreeOnlyExhausted", errResp("free_trial_exhausted on a deployment that takes no payments: retry after the next UTC midnight.", retry),
			"RateLimited", errResp("rate_limited: too many requests of this kind just now; retry after Retry-After seconds.", retry),
			"InternalError", errResp("An internal error; nothing was charged. Retryable.", retry),
			"Unavailable", errResp("A store, the deadline or the payment facilitator failed; nothing was charged. Retryable.", retry),
			"NotModified", obj("description", "The copy named by If-None-Match is current.", "headers", obj("ETag", headerRef("ETag"))),
		),
	), nil
}

// apiDescription is info.description: what the service is, how it is paid, and every error code.
func apiDescription(svc *service.Service) string {
	var b strings.Builder
	b.WriteString("An independent, deterministic checker for structured output produced by AI agents. Send the agent's JSON, a JSON Schema and " +
		"optional business rules; the answer is pass or fail with per-check ratios, repair hints and a receipt signed with Ed25519 over RFC 8785 " +
		"canonical JSON, verifiable offline with the public keys of the agent card (/.well-known/agent-card.json).\n\n")
	b.WriteString("**Free allowance and payments.** " + freeAllowanceText(svc) + " " + paymentsText(svc) + "\n\n")
	b.WriteString("**Errors.** Every error but the 402 payment answers is the envelope of the Error schema; its code is one of:\n\n")
	for _, c := range apperr.Codes() {
		fmt.Fprintf(&b, "- `%s` (%d%s): %s\n", c, c.Status(), retryableText(c), c.Meaning())
	}
	return b.String()
}

// errorCodes is the document's x-error-codes: every code with its status and meaning, which the
// docs viewer shows as a table that llms.txt links into.
func errorCodes() []object {
	var out []object
	for _, c := range apperr.Codes() {
		out = append(out, obj("code", string(c), "status", c.Status(), "retryable", c.Retryable(), "payment", c.Payment(), "meaning", c.Meaning()))
	}
	return out
}

func retryableText(c apperr.Code) string {
	if c.Retryable() {
		return ", retryable"
	}
	return ""
}

// freeAllowanceText states the live free allowance.
func freeAllowanceText(svc *service.Service) string {
	return fmt.Sprintf("Each client (IP address; an IPv6 address by its /64) gets %d free verifications per UTC day, shared by POST /verify/schema, POST /verify/deliverable "+
		"and the MCP tool verify_schema; bodies over %d bytes are not free, and bodies over %d bytes are refused (413). "+
		"Free answers carry Free-Allowance-Remaining, -Limit and -Resets; invalid requests (422) consume nothing.",
		svc.Pricing().FreeCallsPerDay, svc.Pricing().FreeMaxBody, maxBody(svc))
}

// paymentsText states how the deployment is paid.
func paymentsText(svc *service.Service) string {
	if svc.FreeOnly() {
		return "This deployment takes no payments: past the free allowance, verifications are refused with 429 free_trial_exhausted until the next UTC midnight, and trust scores are free."
	}
	return fmt.Sprintf("Past the allowance a verification costs $%s and a trust score $%s, paid with x402 v2 (USDC): the 402 answer's PAYMENT-REQUIRED "+
		"header lists what to pay; send the request again with PAYMENT-SIGNATURE, and the settlement comes back in PAYMENT-RESPONSE. "+
		"Networks, assets and payees: /.well-known/x402.", svc.Pricing().PriceVerify, svc.Pricing().PriceScore)
}

func scorePriceText(svc *service.Service) string {
	if svc.FreeOnly() {
		return "This deployment takes no payments, so every score is free."
	}
	return fmt.Sprintf("A score that exists costs $%s through x402 (no free allowance).", svc.Pricing().PriceScore)
}

// maxBody is the absolute body limit in force.
func maxBody(svc *service.Service) int64 {
	return svc.MaxBody()
}
