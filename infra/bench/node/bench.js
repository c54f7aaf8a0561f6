// The Node peer of SPEC §14 for `make bench`: one whole verification done the plain Node way with
// ajv 8 (+ ajv-formats), canonicalize (the RFC 8785 reference package) and node:crypto's Ed25519.
//
// Usage: node bench.js [--rounds N] [--seconds S] NAME=PATH...
//
// Each PATH is a verification request body written by infra/bench (the documents the Go benchmarks
// use). The validator is compiled once per document, outside the timed loop, as the Go engine's
// schema cache does. Each timed operation then does the whole job: parse the request, validate
// submitted_output (formats asserted), evaluate its rules, hash the RFC 8785 forms of the output,
// the schema, {"bounds","rules"} and the request with its defaults filled in (SPEC §5), build the
// report, canonicalize and sign the attestation envelope (SPEC §6) and serialize the response.
// Ids and time are handed in, as the Go benchmark hands them to the engine.
//
// Prints one JSON object: versions and, per document, the median microseconds per operation over
// the rounds, plus one signed response and the public key, which infra/bench checks (signature,
// hashes against the Go engine's, result) before it reports a number.

import { createHash, generateKeyPairSync, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import canonicalize from "canonicalize";

const CONTEXT = "json-schema-verifier/verify-schema-attestation/v1";
const KEY_VERSION = "bench";
const BASE_URL = "http://127.0.0.1:8080";
const VERIFICATION_ID = "00000000-0000-4000-8000-000000000000";
const VERIFIED_AT = "2026-10-14T19:12:05.645221+00:00";
const DEFAULT_TOLERANCE = 1e-9;

// Defaults that request_hash fills in for members left out or null (SPEC §5).
const RULE_DEFAULTS = {
  equals: null, equals_field: null, field: null, if_present: false, in_field: null,
  other_field: null, tolerance: DEFAULT_TOLERANCE, type: null, value: null, values: null,
};
const BOUND_DEFAULTS = { if_present: false, max: null, min: null };

const PASS_ACTIONS = [{ action: "attach_receipt", for: "seller" }, { action: "proceed_to_payment", for: "buyer" }];
const FAIL_ACTIONS = [{ action: "repair_and_reverify", using: "hints" }, { action: "withhold_payment", for: "buyer" }];

function compile(schema) {
  const dialect = (schema && typeof schema === "object" && schema.$schema) || "";
  let Cls = Ajv2020;
  if (dialect.includes("2019-09")) Cls = Ajv2019;
  else if (dialect.includes("draft-07") || dialect.includes("draft-06")) Cls = Ajv;
  else if (dialect && !dialect.includes("2020-12")) throw new Error(`unsupported $schema ${dialect}`);
  const ajv = new Cls({ allErrors: true, strict: false });
  addFormats(ajv); // ajv asserts formats by default (validateFormats: true)
  return { validate: ajv.compile(schema), dialect: Cls.name };
}

// resolve returns the values a rule path (a.b, a[].b, a[2].b) reaches in doc, or undefined when a
// key or index on the way is missing.
function resolve(doc, path) {
  let values = [doc];
  for (const part of path.split(".")) {
    const m = /^([^[\]]+)((?:\[\d*\])*)$/.exec(part);
    if (!m) throw new Error(`unsupported path ${path}`);
    const next = [];
    for (const v of values) {
      if (v === null || typeof v !== "object" || Array.isArray(v) || !(m[1] in v)) return undefined;
      next.push(v[m[1]]);
    }
    values = next;
    for (const [, index] of m[2].matchAll(/\[(\d*)\]/g)) {
      const expanded = [];
      for (const v of values) {
        if (!Array.isArray(v)) return undefined;
        if (index === "") expanded.push(...v);
        else if (Number(index) < v.length) expanded.push(v[Number(index)]);
        else return undefined;
      }
      values = expanded;
    }
  }
  return values;
}

// evaluate runs the rules. Only sum_equals is needed by the documents measured; anything else is
// refused rather than skipped, so the peer never reports a job it did not do. JavaScript has no
// decimal type, so the sum is in doubles.
function evaluate(output, rules) {
  const failures = [];
  let passed = 0;
  let total = 0;
  for (const rule of rules || []) {
    if (rule.type !== "sum_equals") throw new Error(`rule type ${rule.type} is not implemented in the Node peer`);
    const tolerance = rule.tolerance ?? DEFAULT_TOLERANCE;
    const values = resolve(output, rule.field);
    let target = rule.equals;
    let targetName = String(rule.equals);
    if (rule.equals_field != null) {
      const t = resolve(output, rule.equals_field);
      target = t && t.length === 1 ? t[0] : undefined;
      targetName = `${rule.equals_field} (${target})`;
    }
    if (values === undefined && rule.if_present) continue;
    total++;
    let detail;
    if (values === undefined || typeof target !== "number") {
      detail = "field not found";
    } else if (values.some((v) => typeof v !== "number")) {
      detail = "a value is not a number";
    } else {
      const sum = values.reduce((a, b) => a + b, 0);
      if (Math.abs(sum - target) <= tolerance) {
        passed++;
        continue;
      }
      detail = `values sum to ${sum}, expected ${targetName}`;
    }
    failures.push({ check: "consistency:sum_equals", field: rule.field, detail });
  }
  return { passed, total, failures };
}

function filled(obj, defaults) {
  const out = { ...defaults };
  for (const [k, v] of Object.entries(obj)) if (v !== null) out[k] = v;
  return out;
}

function hash(value) {
  return createHash("sha256").update(canonicalize(value), "utf8").digest("hex");
}

function ratio(passed, total) {
  return { ratio: total === 0 ? 1 : Math.round((passed / total) * 1e6) / 1e6, passed, total };
}

// job is one whole verification of body with the compiled validator and the signing key.
function job(body, validate, privateKey) {
  const req = JSON.parse(body);
  const output = req.submitted_output;
  const schemaOK = validate(output);
  const schemaErrors = schemaOK ? [] : validate.errors;
  const rules = evaluate(output, req.rules);
  if (req.bounds != null && Object.keys(req.bounds).length > 0) throw new Error("bounds are not implemented in the Node peer");

  const rulesList = Array.isArray(req.rules) && req.rules.length > 0 ? req.rules : null;
  const boundsMap = req.bounds != null && Object.keys(req.bounds).length > 0 ? req.bounds : null;
  const outputHash = hash(output);
  const schemaHash = hash(req.expected_schema);
  const rulesHash = hash({ bounds: req.bounds ?? null, rules: req.rules ?? null });
  const requestHash = hash({
    task_id: req.task_id,
    agent_id: req.agent_id ?? null,
    expected_schema: req.expected_schema,
    submitted_output: output,
    strict_content_check: req.strict_content_check ?? false,
    bounds: boundsMap && Object.fromEntries(Object.entries(boundsMap).map(([p, b]) => [p, filled(b, BOUND_DEFAULTS)])),
    rules: rulesList && rulesList.map((r) => filled(r, RULE_DEFAULTS)),
    enforce_rules: req.enforce_rules ?? false,
  });

  const enforce = req.enforce_rules === true;
  const flags = [];
  const errors = [];
  const blocking = [];
  for (const e of schemaErrors) {
    const f = { check: `schema:${e.keyword}`, field: e.instancePath, severity: "error", detail: e.message };
    flags.push(f);
    errors.push(`schema: ${f.check} at '${f.field}': ${f.detail}`);
    if (!blocking.includes(f.check)) blocking.push(f.check);
  }
  for (const x of rules.failures) {
    flags.push({ check: x.check, field: x.field, severity: enforce ? "error" : "warning", detail: x.detail });
    if (enforce) {
      errors.push(`enforce_rules: ${x.check} at '${x.field}': ${x.detail}`);
      if (!blocking.includes(x.check)) blocking.push(x.check);
    }
  }
  const result = blocking.length === 0 ? "pass" : "fail";
  // The peer counts the schema as one check: ajv does not count assertions as the engine does.
  const schemaPassed = schemaOK ? 1 : 0;
  const response = {
    summary: { result, blocking_checks: blocking },
    next_actions: result === "pass" ? PASS_ACTIONS : FAIL_ACTIONS,
    result,
    verification_id: VERIFICATION_ID,
    task_id: req.task_id,
    agent_id: req.agent_id ?? null,
    output_hash: outputHash,
    schema_hash: schemaHash,
    rules_hash: rulesHash,
    request_hash: requestHash,
    verified_at: VERIFIED_AT,
    verifier_version: "node-peer",
    enforce_rules: enforce,
    strict_content_check: req.strict_content_check === true,
    errors,
    flags,
    schema_compliance: ratio(schemaPassed, 1),
    integrity_checks: ratio(rules.passed, rules.total),
    overall: ratio(schemaPassed + rules.passed, 1 + rules.total),
    verify: {
      public_key_url: `${BASE_URL}/.well-known/agent-card.json`, key_version: KEY_VERSION,
      canonicalization: "RFC 8785 (JCS)", hash_algorithm: "SHA-256",
      service: "Agent Output Verifier", mcp: `${BASE_URL}/mcp`,
    },
  };
  const message = canonicalize({
    context: CONTEXT, algorithm: "Ed25519", key_version: KEY_VERSION, attested_at: VERIFIED_AT, response,
  });
  const signature = sign(null, Buffer.from(message, "utf8"), privateKey).toString("base64");
  response.attestation = { algorithm: "Ed25519", key_version: KEY_VERSION, timestamp: VERIFIED_AT, signature };
  return JSON.stringify(response);
}

function measure(body, rounds, seconds) {
  const { validate, dialect } = compile(JSON.parse(body).expected_schema);
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const response = job(body, validate, privateKey);
  // Calibrate: how many operations fill about `seconds`.
  let n = 1;
  let elapsed = 0;
  const minCalibration = Math.min(0.2, seconds);
  for (;;) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) job(body, validate, privateKey);
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
    if (elapsed >= minCalibration) break;
    n *= 2;
  }
  n = Math.max(1, Math.floor((n * seconds) / elapsed));
  const perOp = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) job(body, validate, privateKey);
    perOp.push(Number(process.hrtime.bigint() - start) / 1e3 / n);
  }
  const sorted = [...perOp].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return {
    us_per_op: sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2,
    min_us: sorted[0],
    max_us: sorted[sorted.length - 1],
    ops_per_round: n,
    validator: dialect,
    response,
    key_version: KEY_VERSION,
    public_key: publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("base64"),
  };
}

// packageVersion reads an installed package's version from its package.json, which some packages'
// "exports" keep require() from reaching.
function packageVersion(name) {
  return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), "utf8")).version;
}

function main(argv) {
  let rounds = 5;
  let seconds = 1.0;
  const docs = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--rounds") rounds = Number(argv[++i]);
    else if (argv[i] === "--seconds") seconds = Number(argv[++i]);
    else docs.push(argv[i]);
  }
  if (!(rounds >= 1) || !(seconds > 0)) throw new Error("--rounds must be at least 1 and --seconds positive");
  const out = {
    versions: {
      node: process.version,
      ajv: packageVersion("ajv"),
      "ajv-formats": packageVersion("ajv-formats"),
      canonicalize: packageVersion("canonicalize"),
    },
    rounds,
    results: {},
  };
  for (const arg of docs) {
    const eq = arg.indexOf("=");
    if (eq < 1) throw new Error(`argument ${arg}: want NAME=PATH`);
    out.results[arg.slice(0, eq)] = measure(readFileSync(arg.slice(eq + 1), "utf8"), rounds, seconds);
  }
  process.stdout.write(JSON.stringify(out));
}

main(process.argv.slice(2));
