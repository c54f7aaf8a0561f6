"""The Python peer of SPEC §14 on the documents the Go benchmarks use, for `make bench`.

Usage: jsonschema_bench.py [--rounds N] [--seconds S] NAME=PATH...

Each PATH is a verification request body written by infra/bench. For each one the validator is
built once (the dialect its $schema names, 2020-12 when absent, with format checking), then two
things are timed:

- validation alone, what the Go baseline BenchmarkBareValidate does: parse the whole request,
  validate its submitted_output;
- the whole job of one verification with jsonschema + cryptography: parse the request, validate
  submitted_output (every error collected), evaluate its rules (decimal sums), hash the RFC 8785
  forms of the output, the schema, {"bounds","rules"} and the request with its defaults filled in
  (SPEC §5), build the report, canonicalize and sign the attestation envelope with Ed25519 (SPEC §6)
  and serialize the response. Ids and time are handed in, as the Go benchmark hands them to the
  engine. RFC 8785 is the project's independent checker, pkg/receipt/testdata/check_receipt.py,
  imported as it is: Python has no JCS in its standard library.

Prints one JSON object: versions and, per document, the median microseconds per operation over the
rounds of about S seconds each, plus one signed response and the public key of the whole job,
which infra/bench checks (signature, hashes against the Go engine's, result) before it reports a
number.
"""

import base64
import hashlib
import json
import os
import statistics
import sys
import time
from decimal import Decimal
from importlib import metadata

CONTEXT = "json-schema-verifier/verify-schema-attestation/v1"
KEY_VERSION = "bench"
BASE_URL = "http://127.0.0.1:8080"
VERIFICATION_ID = "00000000-0000-4000-8000-000000000000"
VERIFIED_AT = "2026-10-14T19:12:05.645221+00:00"
DEFAULT_TOLERANCE = 1e-9

# What request_hash fills in for members left out or null (SPEC §5).
RULE_DEFAULTS = {
    "equals": None, "equals_field": None, "field": None, "if_present": False, "in_field": None,
    "other_field": None, "tolerance": DEFAULT_TOLERANCE, "type": None, "value": None, "values": None,
}
BOUND_DEFAULTS = {"if_present": False, "max": None, "min": None}

PASS_ACTIONS = [{"action": "attach_receipt", "for": "seller"}, {"action": "proceed_to_payment", "for": "buyer"}]
FAIL_ACTIONS = [{"action": "repair_and_reverify", "using": "hints"}, {"action": "withhold_payment", "for": "buyer"}]

VERIFY_BLOCK = {
    "public_key_url": BASE_URL + "/.well-known/agent-card.json", "key_version": KEY_VERSION,
    "canonicalization": "RFC 8785 (JCS)", "hash_algorithm": "SHA-256",
    "service": "Agent Output Verifier", "mcp": BASE_URL + "/mcp",
}


def load_jcs():
    """The RFC 8785 canonicalizer of pkg/receipt/testdata/check_receipt.py (one JCS in Python)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "pkg", "receipt", "testdata"))
    import check_receipt

    return check_receipt.canonical


def validator_for(body):
    from jsonschema import Draft202012Validator, validators

    schema = json.loads(body)["expected_schema"]
    cls = validators.validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def resolve(doc, path):
    """The values a rule path (a.b, a[].b, a[2].b) reaches in doc, or None when a key or index on
    the way is missing."""
    values = [doc]
    for part in path.split("."):
        name, bracket, rest = part.partition("[")
        nxt = []
        for v in values:
            if not isinstance(v, dict) or name not in v:
                return None
            nxt.append(v[name])
        values = nxt
        for index in (bracket + rest).split("[")[1:] if bracket else []:
            index = index.rstrip("]")
            expanded = []
            for v in values:
                if not isinstance(v, list):
                    return None
                if index == "":
                    expanded.extend(v)
                elif int(index) < len(v):
                    expanded.append(v[int(index)])
                else:
                    return None
            values = expanded
    return values


def decimal(x):
    # Numbers arrive as doubles (parse_int=float, as RFC 8785 reads them); repr gives the shortest
    # literal that reads back the same, which is the literal sent for any ordinary amount.
    return Decimal(repr(x))


def evaluate(output, rules):
    """Runs the rules. Only sum_equals is needed by the documents measured; anything else is
    refused rather than skipped, so the peer never reports a job it did not do."""
    passed, total, failures = 0, 0, []
    for rule in rules or []:
        if rule.get("type") != "sum_equals":
            raise ValueError("rule type %r is not implemented in the Python peer" % rule.get("type"))
        tolerance = rule.get("tolerance")
        tolerance = decimal(DEFAULT_TOLERANCE if tolerance is None else tolerance)
        values = resolve(output, rule["field"])
        target, target_name = rule.get("equals"), str(rule.get("equals"))
        if rule.get("equals_field") is not None:
            t = resolve(output, rule["equals_field"])
            target = t[0] if t is not None and len(t) == 1 else None
            target_name = "%s (%s)" % (rule["equals_field"], target)
        if values is None and rule.get("if_present"):
            continue
        total += 1
        if values is None or not isinstance(target, float):
            detail = "field not found"
        elif not all(isinstance(v, float) for v in values):
            detail = "a value is not a number"
        else:
            s = sum((decimal(v) for v in values), Decimal(0))
            if abs(s - decimal(target)) <= tolerance:
                passed += 1
                continue
            detail = "values sum to %s, expected %s" % (s, target_name)
        failures.append({"check": "consistency:sum_equals", "field": rule["field"], "detail": detail})
    return passed, total, failures


def filled(obj, defaults):
    out = dict(defaults)
    out.update((k, v) for k, v in obj.items() if v is not None)
    return out


def ratio(passed, total):
    # Counts are floats: check_receipt.py reads every JSON number as a double, as RFC 8785 does, and
    # canonicalizes nothing else (2.0 has the canonical form 2).
    return {"ratio": 1.0 if total == 0 else round(passed / total, 6), "passed": float(passed), "total": float(total)}


def whole_job(body, validator, key, canonical):
    """One whole verification of body; returns the serialized signed response."""

    def digest(value):
        return hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()

    req = json.loads(body, parse_int=float)
    output = req["submitted_output"]
    schema_errors = list(validator.iter_errors(output))
    passed, total, failures = evaluate(output, req.get("rules"))
    bounds, rules = req.get("bounds"), req.get("rules")
    if bounds:
        raise ValueError("bounds are not implemented in the Python peer")

    output_hash = digest(output)
    schema_hash = digest(req["expected_schema"])
    rules_hash = digest({"bounds": bounds, "rules": rules})
    request_hash = digest({
        "task_id": req["task_id"],
        "agent_id": req.get("agent_id"),
        "expected_schema": req["expected_schema"],
        "submitted_output": output,
        "strict_content_check": req.get("strict_content_check") or False,
        "bounds": {p: filled(b, BOUND_DEFAULTS) for p, b in bounds.items()} if bounds else None,
        "rules": [filled(r, RULE_DEFAULTS) for r in rules] if rules else None,
        "enforce_rules": req.get("enforce_rules") or False,
    })

    enforce = req.get("enforce_rules") is True
    flags, errors, blocking = [], [], []
    for e in schema_errors:
        check = "schema:%s" % e.validator
        field = e.json_path
        flags.append({"check": check, "field": field, "severity": "error", "detail": e.message})
        errors.append("schema: %s at '%s': %s" % (check, field, e.message))
        if check not in blocking:
            blocking.append(check)
    for x in failures:
        flags.append({"check": x["check"], "field": x["field"], "severity": "error" if enforce else "warning", "detail": x["detail"]})
        if enforce:
            errors.append("enforce_rules: %s at '%s': %s" % (x["check"], x["field"], x["detail"]))
            if x["check"] not in blocking:
                blocking.append(x["check"])
    result = "fail" if blocking else "pass"
    # The peer counts the schema as one check: jsonschema does not count assertions as the engine does.
    schema_passed = 0 if schema_errors else 1
    response = {
        "summary": {"result": result, "blocking_checks": blocking},
        "next_actions": FAIL_ACTIONS if blocking else PASS_ACTIONS,
        "result": result,
        "verification_id": VERIFICATION_ID,
        "task_id": req["task_id"],
        "agent_id": req.get("agent_id"),
        "output_hash": output_hash,
        "schema_hash": schema_hash,
        "rules_hash": rules_hash,
        "request_hash": request_hash,
        "verified_at": VERIFIED_AT,
        "verifier_version": "python-peer",
        "enforce_rules": enforce,
        "strict_content_check": req.get("strict_content_check") is True,
        "errors": errors,
        "flags": flags,
        "schema_compliance": ratio(schema_passed, 1),
        "integrity_checks": ratio(passed, total),
        "overall": ratio(schema_passed + passed, 1 + total),
        "verify": VERIFY_BLOCK,
    }
    message = canonical({
        "context": CONTEXT, "algorithm": "Ed25519", "key_version": KEY_VERSION,
        "attested_at": VERIFIED_AT, "response": response,
    }).encode("utf-8")
    signature = base64.b64encode(key.sign(message)).decode("ascii")
    response["attestation"] = {"algorithm": "Ed25519", "key_version": KEY_VERSION, "timestamp": VERIFIED_AT, "signature": signature}
    return json.dumps(response, ensure_ascii=False)


def timed(once, rounds, seconds):
    """Median, fastest and slowest microseconds per call of once over rounds of about seconds."""
    once()
    n, elapsed, calibration = 1, 0.0, min(0.2, seconds)
    while True:
        start = time.perf_counter()
        for _ in range(n):
            once()
        elapsed = time.perf_counter() - start
        if elapsed >= calibration:
            break
        n *= 2
    n = max(1, int(n * seconds / elapsed))
    per_op = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            once()
        per_op.append((time.perf_counter() - start) / n * 1e6)
    return {"us_per_op": statistics.median(per_op), "min_us": min(per_op), "max_us": max(per_op), "ops_per_round": n}


def measure_validation(body, rounds, seconds):
    validator = validator_for(body)

    def once():
        # The document must be valid, as the Go baseline requires; this raises otherwise.
        validator.validate(json.loads(body)["submitted_output"])

    res = timed(once, rounds, seconds)
    res["validator"] = type(validator).__name__
    return res


def measure_whole(body, rounds, seconds, canonical):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    validator = validator_for(body)
    key = Ed25519PrivateKey.generate()
    res = timed(lambda: whole_job(body, validator, key, canonical), rounds, seconds)
    res["validator"] = type(validator).__name__
    res["response"] = whole_job(body, validator, key, canonical)
    res["key_version"] = KEY_VERSION
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    res["public_key"] = base64.b64encode(raw).decode("ascii")
    return res


def main(args):
    rounds, seconds, docs = 5, 1.0, []
    while args:
        arg = args.pop(0)
        if arg == "--rounds":
            rounds = int(args.pop(0))
        elif arg == "--seconds":
            seconds = float(args.pop(0))
        else:
            docs.append(arg)
    out = {"python": sys.version.split()[0], "rounds": rounds}
    try:
        out["jsonschema"] = metadata.version("jsonschema")
        import jsonschema  # noqa: F401
    except Exception as exc:  # Reported, not raised: the Go side prints the reason and skips.
        out["error"] = "jsonschema is not importable: %s" % exc
        print(json.dumps(out))
        return 0
    canonical = None
    try:
        out["cryptography"] = metadata.version("cryptography")
        import cryptography.hazmat.primitives.asymmetric.ed25519  # noqa: F401

        canonical = load_jcs()
    except Exception as exc:  # The whole job needs both; validation alone is still measured.
        out["whole_error"] = "cryptography or check_receipt.py is not importable: %s" % exc
    out["results"] = {}
    for arg in docs:
        name, _, path = arg.partition("=")
        with open(path, "rb") as f:
            body = f.read()
        res = measure_validation(body, rounds, seconds)
        if canonical is not None:
            res["whole"] = measure_whole(body, rounds, seconds, canonical)
        out["results"][name] = res
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
