#!/usr/bin/env python3
"""An independent verifier of Sigstore bundles for capstan's tests: sigstore-python's
`Verifier` with a given trusted root, offline (the certificate's chain and SCT, the log entry's
signed entry timestamp and inclusion proof, the entry against the bundle, the signature). The
identity is not constrained here (`UnsafeNoOp`): capstan's tests compare the identity it reports.
Run with the python of scripts/verify-env.sh (which installs `sigstore`).

Usage: sigstore_oracle.py BUNDLE TRUSTED_ROOT [--digest sha256:HEX]
       sigstore_oracle.py --batch LIST   (LIST: a line `BUNDLE TRUSTED_ROOT DIGEST` per bundle;
                                          one JSON line each, in order: one start for many)
A message-signature bundle is verified against the artifact digest (--digest, else the digest
the bundle names); a DSSE bundle's envelope is verified. Prints JSON:
  {"ok": true, "san": ..., "issuer": ..., "payload_type": ..., "subjects": ["sha256:…"]}
  {"ok": false, "error": "..."}
"""
import base64
import json
import sys

from cryptography import x509
from sigstore.hashes import Hashed
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy
from sigstore_models.common.v1 import HashAlgorithm

ISSUER_OID = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.8")


def identity(cert):
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = san.get_values_for_type(x509.RFC822Name) + san.get_values_for_type(
        x509.UniformResourceIdentifier)
    issuer = cert.extensions.get_extension_for_oid(ISSUER_OID).value.value
    # The extension is a DER UTF8String: tag, length, text.
    return names[0], issuer[2:].decode()


def verdict(bundle_file, root_file, digest):
    raw = open(bundle_file, "rb").read()
    try:
        bundle = Bundle.from_json(raw)
        verifier = Verifier(trusted_root=TrustedRoot.from_file(root_file))
        out = {"ok": True, "payload_type": None, "subjects": []}
        if json.loads(raw).get("dsseEnvelope") is not None:
            payload_type, payload = verifier.verify_dsse(bundle, policy.UnsafeNoOp())
            out["payload_type"] = payload_type
            statement = json.loads(payload)
            out["subjects"] = ["sha256:" + s["digest"]["sha256"].lower()
                               for s in statement.get("subject", []) if "sha256" in s.get("digest", {})]
        else:
            if digest is None:
                named = json.loads(raw)["messageSignature"]["messageDigest"]["digest"]
                digest = "sha256:" + base64.b64decode(named).hex()
            hashed = Hashed(algorithm=HashAlgorithm.SHA2_256,
                            digest=bytes.fromhex(digest.split(":", 1)[1]))
            verifier.verify_artifact(hashed, bundle, policy.UnsafeNoOp())
            out["subjects"] = [digest]
        out["san"], out["issuer"] = identity(bundle.signing_certificate)
    except Exception as e:  # every refusal, whatever its class, is a refusal
        out = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
    return out


def main(bundle_file, root_file, digest):
    print(json.dumps(verdict(bundle_file, root_file, digest)))


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--batch":
        for line in open(args[1]):
            if line.strip():
                bundle_file, root_file, digest = line.split()
                print(json.dumps(verdict(bundle_file, root_file, digest)), flush=True)
        sys.exit(0)
    digest = None
    if "--digest" in args:
        i = args.index("--digest")
        digest = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    main(args[0], args[1], digest)
