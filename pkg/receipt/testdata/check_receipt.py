#!/usr/bin/env python3
"""An independent receipt checker, used by the Go tests as a third implementation.

It shares no code with the service (Go, jsontext) or its verifier (Go, gowebpki/jcs): parsing is
Python's json module, RFC 8785 canonicalization is written out below from the RFC, and Ed25519 is
the `cryptography` package.

Usage:
  check_receipt.py verify --context C --public-key B64 [--key-version V] FILE...
      prints "OK FILE" or "FAIL FILE: reason" per file; exit status 0 only if every file is OK.
  check_receipt.py canonicalize < doc.json
      prints the RFC 8785 form of the JSON document on stdin (no trailing newline).
  check_receipt.py canonicalize-each < inputs.json
      reads a JSON array of base64-encoded documents, writes a JSON array of their RFC 8785 forms
      (null for a document it refuses), so one process can check a whole table.
  check_receipt.py probe
      exits 0 when the `cryptography` package is importable (the Go test skips otherwise).
"""

import argparse
import base64
import json
import math
import sys


class Refused(Exception):
    """The document is not something RFC 8785 can canonicalize (or a receipt can carry)."""


def _no_duplicates(pairs):
    obj = {}
    for name, value in pairs:
        if name in obj:
            raise Refused("duplicate member name %r" % name)
        obj[name] = value
    return obj


def _no_constant(name):
    raise Refused("%s is not JSON" % name)


def _number(text):
    # RFC 8785 3.2.2.3: every number is an IEEE-754 double, integers included.
    value = float(text)
    if math.isinf(value):
        raise Refused("number %s is outside the double range" % text[:40])
    return value


def parse(data):
    """Strict parse: duplicate names, NaN/Infinity and out-of-range numbers are refused."""
    try:
        text = data.decode("utf-8")  # strict: invalid UTF-8 raises
    except UnicodeDecodeError as e:
        raise Refused("invalid UTF-8: %s" % e)
    return json.loads(
        text,
        object_pairs_hook=_no_duplicates,
        parse_float=_number,
        parse_int=_number,
        parse_constant=_no_constant,
    )


def format_number(x):
    """ECMAScript Number::toString (ECMA-262 7.1.12.1), which RFC 8785 prescribes."""
    if x == 0:
        return "0"  # covers -0
    if x < 0:
        return "-" + format_number(-x)
    # repr gives the shortest digit string that round-trips, as ECMAScript requires; only its
    # layout differs. Split it into digits d1..dk and the exponent n (value = 0.d1..dk * 10^n).
    r = repr(x)
    mantissa, _, exp = r.partition("e")
    exponent = int(exp) if exp else 0
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    lead_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    n = len(whole) + exponent - lead_zeros
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    if k == 1:
        return digits + "e" + sign + str(abs(e))
    return digits[0] + "." + digits[1:] + "e" + sign + str(abs(e))


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def format_string(s):
    """RFC 8785 3.2.2.2: escape only the quote, the backslash and C0 controls; the rest is literal."""
    out = ['"']
    for ch in s:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append("\\u%04x" % ord(ch))
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            raise Refused("lone surrogate U+%04X" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def utf16_units(s):
    """The UTF-16 code units of s: RFC 8785 3.2.3 sorts member names by them, not by code points."""
    units = []
    for ch in s:
        c = ord(ch)
        if c >= 0x10000:
            c -= 0x10000
            units.append(0xD800 + (c >> 10))
            units.append(0xDC00 + (c & 0x3FF))
        else:
            units.append(c)
    return units


def canonical(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if isinstance(value, dict):
        names = sorted(value, key=utf16_units)
        return "{" + ",".join(format_string(n) + ":" + canonical(value[n]) for n in names) + "}"
    raise Refused("unexpected value of type %s" % type(value).__name__)


def strict_b64(s):
    raw = base64.b64decode(s, validate=True)
    if base64.b64encode(raw).decode("ascii") != s:
        raise Refused("signature is not canonical base64")
    return raw


def check(data, context, public_key_b64, key_version=None):
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    doc = parse(data)
    if not isinstance(doc, dict):
        raise Refused("receipt is not an object")
    att = doc.get("attestation")
    if not isinstance(att, dict) or sorted(att) != ["algorithm", "key_version", "signature", "timestamp"]:
        raise Refused("attestation is missing or malformed")
    if not all(isinstance(att[k], str) for k in att):
        raise Refused("attestation members must be strings")
    if att["algorithm"] != "Ed25519":
        raise Refused("algorithm %r is not Ed25519" % att["algorithm"])
    if key_version is not None and att["key_version"] != key_version:
        raise Refused("unknown key version %r" % att["key_version"])
    response = {name: value for name, value in doc.items() if name != "attestation"}
    envelope = {
        "context": context,
        "algorithm": att["algorithm"],
        "key_version": att["key_version"],
        "attested_at": att["timestamp"],
        "response": response,
    }
    message = canonical(envelope).encode("utf-8")
    key = Ed25519PublicKey.from_public_bytes(strict_b64(public_key_b64))
    try:
        key.verify(strict_b64(att["signature"]), message)
    except InvalidSignature:
        raise Refused("bad signature")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--context", required=True)
    v.add_argument("--public-key", required=True)
    v.add_argument("--key-version")
    v.add_argument("files", nargs="+")
    sub.add_parser("canonicalize")
    sub.add_parser("canonicalize-each")
    sub.add_parser("probe")
    args = ap.parse_args()

    if args.cmd == "probe":
        import cryptography.hazmat.primitives.asymmetric.ed25519  # noqa: F401

        print("OK")
        return 0
    if args.cmd == "canonicalize":
        try:
            sys.stdout.write(canonical(parse(sys.stdin.buffer.read())))
        except (Refused, ValueError) as e:
            print("REFUSED: %s" % e, file=sys.stderr)
            return 2
        return 0

    if args.cmd == "canonicalize-each":
        results = []
        for doc in json.load(sys.stdin):
            try:
                results.append(canonical(parse(base64.b64decode(doc))))
            except (Refused, ValueError, RecursionError):
                results.append(None)
        sys.stdout.write(json.dumps(results))
        return 0

    ok = True
    for path in args.files:
        with open(path, "rb") as f:
            data = f.read()
        try:
            check(data, args.context, args.public_key, args.key_version)
            print("OK %s" % path)
        except (Refused, ValueError) as e:
            ok = False
            print("FAIL %s: %s" % (path, e))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
