"""An independent check of a DSSE envelope holding an in-toto statement (SPEC §16).

Reads the envelope on stdin and the Ed25519 public key (base64, raw 32 bytes) and its key id as
arguments; rebuilds DSSE's pre-authentication encoding itself, verifies the signature with the
cryptography package, and prints the statement's predicate type and verification result.
Exit status 1 when anything does not hold.
"""
import base64
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def pae(payload_type: bytes, body: bytes) -> bytes:
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type, len(body), body)


def main() -> int:
    if sys.argv[1:] == ["probe"]:
        return 0
    public, keyid = base64.b64decode(sys.argv[1]), sys.argv[2]
    env = json.load(sys.stdin)
    body = base64.b64decode(env["payload"])
    sigs = [s for s in env["signatures"] if s.get("keyid") == keyid]
    if env["payloadType"] != "application/vnd.in-toto+json" or not sigs:
        print("wrong payload type or no signature under the key id", file=sys.stderr)
        return 1
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(base64.b64decode(sigs[0]["sig"]), pae(env["payloadType"].encode(), body))
    except InvalidSignature:
        print("signature does not verify", file=sys.stderr)
        return 1
    st = json.loads(body)
    if st["_type"] != "https://in-toto.io/Statement/v1":
        print("not an in-toto Statement v1", file=sys.stderr)
        return 1
    print(st["predicateType"], st["predicate"]["verificationResult"], st["subject"][0]["digest"]["sha256"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
