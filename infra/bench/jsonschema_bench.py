"""Python's jsonschema on the documents BenchmarkBareValidate uses, for `make bench`.

Each argument is NAME=PATH, a verification request body written by infra/bench. For each one the
validator is built once (the dialect its $schema names, 2020-12 when absent, with format checking),
then the timed loop does what the Go baseline does: parse the whole request, validate its
submitted_output. Prints one JSON object: versions and, per document, the median microseconds per
operation over ROUNDS rounds of about ROUND_SECONDS each.
"""

import json
import statistics
import sys
import time
from importlib import metadata

ROUNDS = 5
ROUND_SECONDS = 1.0


def measure(body):
    from jsonschema import Draft202012Validator, validators

    schema = json.loads(body)["expected_schema"]
    cls = validators.validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)

    def once():
        validator.validate(json.loads(body)["submitted_output"])

    once()  # The document must be valid, as the Go baseline requires; this raises otherwise.
    # Calibrate: how many operations fill about ROUND_SECONDS.
    n, elapsed = 1, 0.0
    while elapsed < 0.2:
        start = time.perf_counter()
        for _ in range(n):
            once()
        elapsed = time.perf_counter() - start
        if elapsed < 0.2:
            n *= 2
    n = max(1, int(n * ROUND_SECONDS / elapsed))
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(n):
            once()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return {
        "us_per_op": statistics.median(rounds),
        "min_us": min(rounds),
        "max_us": max(rounds),
        "ops_per_round": n,
        "validator": cls.__name__,
    }


def main(args):
    out = {"python": sys.version.split()[0]}
    try:
        out["jsonschema"] = metadata.version("jsonschema")
        import jsonschema  # noqa: F401
    except Exception as exc:  # Reported, not raised: the Go side prints the reason and skips.
        out["error"] = "jsonschema is not importable: %s" % exc
        print(json.dumps(out))
        return 0
    out["rounds"] = ROUNDS
    out["results"] = {}
    for arg in args:
        name, _, path = arg.partition("=")
        with open(path, "rb") as f:
            body = f.read()
        out["results"][name] = measure(body)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
