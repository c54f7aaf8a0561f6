package discovery

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/wire"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// The llms.txt sections (llmstxt.org: an H1, a summary blockquote, then H2 sections whose lists
// are links with notes). Tests find the sections by these titles.
const (
	SectionEndpoints     = "Endpoints"
	SectionFreeAllowance = "Free allowance"
	SectionPricing       = "Pricing"
	SectionErrors        = "Errors"
	SectionPaymentErrors = "Payment errors"
	SectionReceipts      = "Receipts"
	SectionExamples      = "Worked examples"
	SectionOptional      = "Optional"
)

// operationAnchor links a route's operation in the docs viewer, whose anchors are operation ids.
func operationAnchor(svc *service.Service, method, path string) string {
	return svc.BaseURL() + PathDocs + "#" + operationIDOf(method, path)
}

// llmsText is /llms.txt, or /llms-full.txt when ex is not nil (the same sections plus the worked
// examples).
func llmsText(svc *service.Service, ex *Examples) []byte {
	base := svc.BaseURL()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("# Agent Output Verifier\n\n")
	w("> An independent, deterministic checker for structured output produced by AI agents (invoices, deliverables, tool-call results). " +
		"Send the agent's JSON, a JSON Schema and optional business rules; the answer is pass or fail with per-check ratios, repair hints and a " +
		"receipt: SHA-256 hashes of the exact data, signed with Ed25519 over RFC 8785 canonical JSON, which anyone can verify offline.\n\n")
	w("Base URL: %s (version %s). Sellers check before delivering and attach the receipt; buyers check before paying. Every request and answer "+
		"is JSON. The same service is an MCP server at %s/mcp (tools verify_schema and get_verification_record). The OpenAPI document has the "+
		"full contract of every route", base, wire.Version, base)
	if ex == nil {
		w("; %s%s adds worked examples.\n\n", base, PathLLMsFull)
	} else {
		w("; this file adds worked examples, answers of this build's engine.\n\n")
	}

	w("## %s\n\n", SectionEndpoints)
	for _, r := range Routes() {
		link := operationAnchor(svc, r.Method, r.Path)
		if r.Method == "GET" && !strings.Contains(r.Path, "{") {
			link = base + r.Path
		}
		w("- [%s %s](%s): %s Price: %s.\n", r.Method, r.Path, link, r.Description, r.Price)
	}
	w("\n")

	verifyDocs := operationAnchor(svc, "POST", "/verify/schema")
	w("## %s\n\n", SectionFreeAllowance)
	w("- [Free verifications](%s/.well-known/x402): %d per client (its IP address; an IPv6 address by its /64) per UTC day, shared by POST /verify/schema, "+
		"POST /verify/deliverable and the MCP tool verify_schema; they reset at 00:00 UTC.\n", base, svc.Pricing().FreeCallsPerDay)
	w("- [Body size](%s): bodies up to %d bytes are free; larger ones must be paid (402), and bodies over %d bytes are refused (413 payload_too_large).\n",
		verifyDocs, svc.Pricing().FreeMaxBody, maxBody(svc))
	w("- [Allowance headers](%s): free answers carry Free-Allowance-Remaining, Free-Allowance-Limit and Free-Allowance-Resets (the next UTC midnight, RFC 3339).\n", verifyDocs)
	w("- [What is not counted](%s): invalid requests (422) consume nothing; an empty body is the x402 discovery probe and answers 402 without consuming anything. "+
		"GET /score has no free allowance; GET /reputation is always free.\n", verifyDocs)
	w("\n")

	w("## %s\n\n", SectionPricing)
	w("- [x402 manifest](%s/.well-known/x402): the live prices, networks, assets and payees, built from the same table as the 402 answers.\n", base)
	if svc.FreeOnly() {
		w("- [Free-only deployment](%s): this deployment takes no payments. Past the free allowance, verifications are refused with 429 "+
			"free_trial_exhausted (retryable at the next UTC midnight); trust scores are free.\n", verifyDocs)
	} else {
		w("- [Verification](%s): $%s per call past the free allowance (POST /verify/schema, POST /verify/deliverable, MCP verify_schema). "+
			"A fail verdict is a complete answer and is charged like pass; errors are never charged.\n", verifyDocs, svc.Pricing().PriceVerify)
		w("- [Trust score](%s): $%s per GET /score/{agent_id} (MCP get_verification_record) when the agent has a score; the signed no_data answer is free.\n",
			operationAnchor(svc, "GET", "/score/{agent_id}"), svc.Pricing().PriceScore)
		for _, n := range networks(svc) {
			w("- [Network %s](%s/.well-known/x402): USDC %s, paid to %s.\n", n.id, base, n.asset, n.payTo)
		}
		w("- [How to pay over HTTP](%s): the 402 answer's PAYMENT-REQUIRED header is the base64 of an x402 v2 PaymentRequired; sign one entry of "+
			"its accepts (EVM: an EIP-3009 TransferWithAuthorization) and send the same request again with PAYMENT-SIGNATURE (base64 of the "+
			"PaymentPayload). The answer is 200 with the result and PAYMENT-RESPONSE (the settlement's transaction).\n", verifyDocs)
		w("- [How to pay over MCP](%s): the tool result has isError, the PaymentRequired as structuredContent (resource mcp://tool/<name>) and the "+
			"free allowance in _meta; call again with the PaymentPayload object in params._meta[\"x402/payment\"]; the settlement comes back in "+
			"result._meta[\"x402/payment-response\"].\n", operationAnchor(svc, "POST", "/mcp"))
		w("- [Signed offers and receipts](%s/.well-known/did.json): x402's offer-receipt extension. Every 402 answer's extensions[\"offer-receipt\"].info.offers "+
			"holds one JWS per accepts entry (acceptIndex; payload {version, resourceUrl, scheme, network, asset, payTo, amount, validUntil}, "+
			"validUntil at least 60 s ahead; signed offers are reused while they stay valid, and left out of an answer when the key cannot sign "+
			"or its ration of fresh signatures is spent); a paid "+
			"answer's settlement (PAYMENT-RESPONSE, or _meta[\"x402/payment-response\"]) holds extensions[\"offer-receipt\"].info.receipt {version, "+
			"network, resourceUrl, payer, issuedAt, transaction}. EdDSA with the receipt key; kid did:web:<host>#<key version>, resolved by "+
			"/.well-known/did.json.\n", base)
	}
	w("\n")

	w("## %s\n\n", SectionErrors)
	w("- [Error envelope](%s#error-codes): every error but the 402 payment answers is {code, message, status, retryable, charged: false, "+
		"next_actions, fields?, retry_after?, limit?}. Retryable errors carry retry_after and a Retry-After header; messages never echo the request.\n", base+PathDocs)
	for _, c := range apperr.Codes() {
		if c.Payment() {
			w("- [%s](%s#error-%s): HTTP %d%s. A payment error: see %s.\n", c, base+PathDocs, c, c.Status(), retryableText(c), SectionPaymentErrors)
			continue
		}
		w("- [%s](%s#error-%s): HTTP %d%s. %s\n", c, base+PathDocs, c, c.Status(), retryableText(c), c.Meaning())
	}
	w("\n")

	w("## %s\n\n", SectionPaymentErrors)
	w("- [The 402 answer](%s): header PAYMENT-REQUIRED and a body that repeats the PaymentRequired {x402Version, error, resource, accepts, "+
		"extensions} with code, status 402, charged false and, on the verify routes, the caller's free_trial state. A failed settlement also "+
		"carries PAYMENT-RESPONSE. Nothing is ever charged unless the answer is delivered.\n", verifyDocs)
	for _, c := range apperr.Codes() {
		if c.Payment() {
			w("- [%s](%s#error-%s): HTTP %d%s. %s\n", c, base+PathDocs, c, c.Status(), retryableText(c), c.Meaning())
		}
	}
	w("\n")

	w("## %s\n\n", SectionReceipts)
	w("- [Public keys](%s/.well-known/agent-card.json): the agent card's attestation extension lists every key that ever signed "+
		"(keyVersion, base64 of the raw 32-byte Ed25519 public key), the signing contexts and request-hash test vectors computed by this build.\n", base)
	w("- [Signature](%s): attestation.signature is Ed25519 over the RFC 8785 (JCS) bytes of {\"context\", \"algorithm\": \"Ed25519\", "+
		"\"key_version\", \"attested_at\": attestation.timestamp, \"response\": the whole answer without attestation}. Contexts: %s (verifications), "+
		"%s (GET /score), %s (GET /reputation).\n", verifyDocs, receipt.ContextVerify, receipt.ContextScore, receipt.ContextReputation)
	w("- [Hashes](%s): output_hash, schema_hash and rules_hash are the SHA-256 of the JCS form of submitted_output, expected_schema and "+
		"{\"bounds\", \"rules\"} as sent (null when absent); request_hash (full detail) covers the eight hashed fields with every default filled in. "+
		"Recompute them from what you sent: they bind the answer to the exact data.\n", verifyDocs)
	w("- [Verify offline](%s/.well-known/agent-card.json): `verifier receipt verify --card %s/.well-known/agent-card.json --request request.json receipt.json` "+
		"checks the signature and every hash (the project's CLI; --context score or reputation for the other answers).\n", base, base)
	if svc.LogEnabled() {
		w("- [Transparency log](%s/log/checkpoint): every signed verification answer (free and paid, REST and MCP) is a leaf of a public, "+
			"append-only Merkle tree: the SHA-256 of the answer's RFC 8785 form (receipt_hash). GET /verifications/{verification_id} (MCP: get_receipt) "+
			"returns the stored record and, once sequenced (about a second), its inclusion proof under a checkpoint signed with the log key of the agent "+
			"card's transparencyLog; tiles are under /log/tile/ (C2SP tlog-tiles, height 8). `verifier receipt verify --log %s receipt.json` checks "+
			"the inclusion; `verifier log audit %s` recomputes the tree and checks it against an earlier checkpoint. "+
			"GET /verifications/{verification_id}/attestation returns the record, once in the log, as a DSSE envelope (signed with the receipt key, "+
			"keyid its version) of an in-toto Statement v1 with the SLSA VSA v1 predicate: subject digest sha256 = output_hash, named by the "+
			"task_id for a verification in a public history, verification:<verification_id> otherwise; `verifier receipt export --format in-toto "+
			"--from %s/verifications/<id>` fetches and checks it.\n", base, base, base, base)
	}
	w("\n")

	if ex != nil {
		writeExamples(&b, svc, ex)
	}

	w("## %s\n\n", SectionOptional)
	w("- [OpenAPI 3.1](%s%s): every route, request, answer, error and header.\n", base, PathOpenAPI)
	w("- [Interactive docs](%s%s): the same, rendered, with a form to try each route.\n", base, PathDocs)
	w("- [API catalog](%s%s): RFC 9727 linkset.\n", base, PathAPICatalog)
	if ex == nil {
		w("- [llms-full.txt](%s%s): this file with worked examples.\n", base, PathLLMsFull)
	} else {
		w("- [llms.txt](%s%s): this file without the worked examples.\n", base, PathLLMs)
	}
	return []byte(b.String())
}

// network is a configured payment network, for the documents.
type network struct{ id, asset, payTo string }

// networks lists the configured networks without asking the facilitator.
func networks(svc *service.Service) []network {
	pc, ok := svc.Payer().(interface{ Config() x402.Config })
	if !ok {
		return nil
	}
	cfg := pc.Config()
	var out []network
	for _, id := range cfg.Networks {
		asset, _ := x402.USDC(id)
		payTo := cfg.PayToEVM
		if strings.HasPrefix(id, "solana:") {
			payTo = cfg.PayToSolana
		}
		out = append(out, network{id, asset, payTo})
	}
	return out
}

// ExampleFence is the info string of a worked example's JSON block in llms-full.txt: "json
// file=<name>", so that a reader (or a test) can save each block under its name.
const ExampleFence = "json file="

// writeExamples writes the worked examples section of llms-full.txt.
func writeExamples(b *strings.Builder, svc *service.Service, ex *Examples) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	base := svc.BaseURL()
	pub := base64.StdEncoding.EncodeToString(ex.Key.Key)
	w("## %s\n\n", SectionExamples)
	w("These are answers of this build's engine (generated ahead with the service's own code and checked against it by a test), signed with the documentation example key "+
		"(version %s, public key %s) at a fixed time with fixed ids, so this file is the same on every run. The example key's private half is "+
		"derived from a published string: it proves nothing about who signed, and no deployment signs with it. Live answers to the same "+
		"requests differ only in verification_id, verified_at, verify.key_version and attestation, and are signed with the keys of %s/.well-known/agent-card.json. "+
		"Save each JSON block under the file name of its fence to run the commands.\n\n", ExampleKeyVersion, pub, base)

	for i, e := range []Example{ex.Pass, ex.Fail, ex.Invalid, ex.Score} {
		w("### %d. %s\n\n", i+1, e.Title)
		if e.Request != nil {
			w("Request, `%s.request.json`:\n\n", e.ID)
			w("```%s%s.request.json\n%s\n```\n\n", ExampleFence, e.ID, indent(e.Request))
			w("```sh\ncurl -s %s%s -H 'Content-Type: application/json' --data-binary @%s.request.json\n```\n\n", base, e.Path, e.ID)
		} else {
			w("```sh\ncurl -s %s%s\n```\n\n", base, e.Path)
		}
		w("Answer, HTTP %d, `%s.response.json`:\n\n", e.Status, e.ID)
		w("```%s%s.response.json\n%s\n```\n\n", ExampleFence, e.ID, indent(e.Response))
		switch e.ID {
		case ex.Pass.ID:
			w("The answer passes: every schema check and the sum_equals rule hold. Attach it to the delivery as the receipt.\n\n")
		case ex.Fail.ID:
			w("The line items sum to 129.5, not 135.0: consistency:sum_equals blocks, the hints say what to repair, and next_actions tells " +
				"the buyer to withhold payment. Schema checks passed; the enforced rule failed. Each list shows at most 50 entries " +
				"(<list>_total and <list>_omitted count them); a deployment whose signing key limits what it signs (a KMS-held key: 4096 bytes) " +
				"may show fewer, and then says so inside the signature: shortened {reason: signing_key_limit, max_signed_bytes}.\n\n")
		case ex.Invalid.ID:
			w("Nothing was checked, charged or counted: fields[] names the offending fields and how to fix each.\n\n")
		case ex.Score.ID:
			w("No verification names this agent, so the answer is free, signed with the trust-score context, with score null and reason no_data.\n\n")
		}
	}

	w("### %d. Verifying the receipts\n\n", 5)
	w("Check the signature and recompute every hash from the request you sent (the project's CLI, `make verifier`; it canonicalizes with an " +
		"implementation independent of the signer's):\n\n")
	w("```sh\nverifier receipt verify --key %s --request %s.request.json %s.response.json\n```\n\n", pub, ex.Pass.ID, ex.Pass.ID)
	w("```text\nOK: signature valid, every hash matches the request (key %s)\n```\n\n", ExampleKeyVersion)
	w("```sh\nverifier receipt verify --context score --key %s %s.response.json\n```\n\n", pub, ex.Score.ID)
	w("```text\nOK: signature valid (key %s)\n```\n\n", ExampleKeyVersion)
	w("For a live answer, take the keys from the agent card instead: `verifier receipt verify --card %s/.well-known/agent-card.json "+
		"--request request.json receipt.json`.\n\n", base)
	w("By hand, in any language: remove attestation from the answer; build {\"context\": \"%s\", \"algorithm\": \"Ed25519\", "+
		"\"key_version\": attestation.key_version, \"attested_at\": attestation.timestamp, \"response\": <the answer without attestation>}; "+
		"canonicalize it with RFC 8785; verify attestation.signature (base64) over those bytes with the public key of key_version. Then "+
		"recompute output_hash (SHA-256 of the JCS form of submitted_output), schema_hash, rules_hash and request_hash from your request "+
		"and compare.\n\n", receipt.ContextVerify)
}

// indent pretty-prints a JSON document without changing its member order or its literals.
func indent(doc []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return string(doc)
	}
	return out.String()
}
