#!/usr/bin/env python3
"""An independent maker of Sigstore bundles (cosign v3's format) for capstan's interop tests,
and a pusher of bundles as OCI referrers: Python's `cryptography` (ECDSA P-256, SHA-256) and
urllib against the registry's HTTP API (anonymous, plain http for loopback). Written from the
documented formats (Sigstore's bundle protobuf in its JSON form, DSSE, in-toto, the OCI
distribution 1.1 referrers API and its tag fallback), not from capstan's code. Reuses the
registry helpers and key loading of cosign_oracle.py. Run with the python of
scripts/verify-env.sh.

Usage:
  bundle_oracle.py keyed HOST/REPO TAG KEY OUT [--password PW] [--dsse] [--digest D] [--tamper]
                   [--payload-type T]
  bundle_oracle.py push HOST/REPO TAG BUNDLE

keyed: a v0.3 bundle of the manifest TAG names, signed with KEY (no log entries, as
`cosign sign --key … --tlog-upload=false` with the new bundle format): a messageSignature over
the manifest's SHA-256 (or D's), or with --dsse a DSSE envelope of an in-toto statement whose
subject is the manifest (or D), of payload type T (in-toto's by default); --tamper changes the
signed content after signing. Written to OUT. With HOST/REPO `-` the registry is not asked: D
is the digest signed (offline, for tests without a registry).
push: BUNDLE as a referrer of TAG's manifest: a manifest of artifactType
application/vnd.dev.sigstore.bundle.v0.3+json, its layer the bundle, its subject the manifest;
when the registry has no referrers API (GET /v2/REPO/referrers/DIGEST is 404) the index at the
tag sha256-<hex> is updated to list it, as OCI's fallback says. Prints `referrers-api` or
`tag-fallback`.
"""
import base64
import hashlib
import json
import os
import sys
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cosign_oracle import OCI_MANIFEST, base, get_manifest, load_private, push_blob, request  # noqa: E402

from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, utils  # noqa: E402

BUNDLE = "application/vnd.dev.sigstore.bundle.v0.3+json"
INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"
IN_TOTO = "application/vnd.in-toto+json"


def b64(data):
    return base64.b64encode(data).decode()


def pae(payload_type, payload):
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type.encode(), len(payload), payload)


def cmd_keyed(hostrepo, tag, keyfile, out, password, dsse, digest_override, tamper, payload_type):
    if hostrepo == "-":
        if digest_override is None:
            sys.exit("offline (HOST/REPO -) needs --digest")
        digest = digest_override
    else:
        _, digest = get_manifest(hostrepo, tag)
    if digest is None:
        sys.exit("no manifest %s:%s" % (hostrepo, tag))
    signed = digest_override or digest
    key = load_private(keyfile, password)
    bundle = {"mediaType": BUNDLE,
              "verificationMaterial": {"publicKey": {"hint": ""}, "tlogEntries": []}}
    if dsse:
        statement = json.dumps({
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": hostrepo, "digest": {"sha256": signed.split(":", 1)[1]}}],
            "predicateType": "https://sigstore.dev/cosign/sign/v1",
            "predicate": {}}, separators=(",", ":")).encode()
        sig = key.sign(pae(payload_type, statement), ec.ECDSA(hashes.SHA256()))
        if tamper:
            statement = statement.replace(b"cosign/sign/v1", b"cosign/sign/v2")
        bundle["dsseEnvelope"] = {"payload": b64(statement), "payloadType": payload_type,
                                  "signatures": [{"sig": b64(sig), "keyid": ""}]}
    else:
        raw = bytes.fromhex(signed.split(":", 1)[1])
        sig = key.sign(raw, ec.ECDSA(utils.Prehashed(hashes.SHA256())))
        if tamper:
            raw = bytes([raw[0] ^ 1]) + raw[1:]
        bundle["messageSignature"] = {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(raw)},
                                      "signature": b64(sig)}
    with open(out, "w") as f:
        json.dump(bundle, f)


def cmd_push(hostrepo, tag, bundle_file):
    subject, digest = get_manifest(hostrepo, tag)
    if digest is None:
        sys.exit("no manifest %s:%s" % (hostrepo, tag))
    bundle = open(bundle_file, "rb").read()
    empty = b"{}"
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": BUNDLE,
        "config": {"mediaType": EMPTY, "size": len(empty), "digest": push_blob(hostrepo, empty)},
        "layers": [{"mediaType": BUNDLE, "size": len(bundle), "digest": push_blob(hostrepo, bundle)}],
        "subject": {"mediaType": OCI_MANIFEST, "size": len(subject), "digest": digest},
    }).encode()
    mdigest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    url, _, _ = base(hostrepo)
    request("PUT", "%s/manifests/%s" % (url, mdigest), data=manifest,
            headers={"Content-Type": OCI_MANIFEST})
    try:
        request("GET", "%s/referrers/%s" % (url, digest), headers={"Accept": INDEX})
        print("referrers-api")
        return
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise
    fallback = digest.replace("sha256:", "sha256-")
    existing, _ = get_manifest(hostrepo, fallback)
    index = json.loads(existing) if existing else {"schemaVersion": 2, "mediaType": INDEX, "manifests": []}
    index["manifests"].append({"mediaType": OCI_MANIFEST, "digest": mdigest, "size": len(manifest),
                               "artifactType": BUNDLE})
    request("PUT", "%s/manifests/%s" % (url, fallback), data=json.dumps(index).encode(),
            headers={"Content-Type": INDEX})
    print("tag-fallback")


def main(argv):
    def opt(name):
        if name in argv:
            i = argv.index(name)
            value = argv[i + 1]
            del argv[i:i + 2]
            return value
        return None

    def flag(name):
        if name in argv:
            argv.remove(name)
            return True
        return False

    password, digest = opt("--password"), opt("--digest")
    payload_type = opt("--payload-type") or IN_TOTO
    dsse, tamper = flag("--dsse"), flag("--tamper")
    cmd, args = argv[0], argv[1:]
    if cmd == "keyed":
        cmd_keyed(args[0], args[1], args[2], args[3], password, dsse, digest, tamper, payload_type)
    elif cmd == "push":
        cmd_push(args[0], args[1], args[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
