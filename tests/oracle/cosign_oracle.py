#!/usr/bin/env python3
"""An independent cosign keyed signer and verifier for capstan's interop tests: Python's
`cryptography` (ECDSA P-256, SHA-256) and PyNaCl (secretbox), speaking the registry's HTTP API
with urllib (anonymous, plain http for loopback). Written from cosign's documented formats, not
from capstan's code. Run with the python of scripts/verify-env.sh.

Usage:
  cosign_oracle.py keygen DIR [--password PW]      cosign.pub + cosign.key (cosign's encrypted
                                                   file when a password is given, else PKCS#8)
  cosign_oracle.py sign HOST/REPO TAG KEY [--password PW] [--digest D] [--tamper]
  cosign_oracle.py verify HOST/REPO TAG PUB

sign: signs the manifest TAG names, as `cosign sign --key` (payload with
critical.image.docker-manifest-digest = its digest, or D; --tamper changes the payload after
signing), appending a layer to the signature manifest at tag sha256-<hex>.sig.
verify: exit 0 and prints `verified <digest>` when one signature verifies under PUB and names
the manifest's digest; else exit 1 with the reason.
"""
import base64
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

SIG_ANNOTATION = "dev.cosignproject.cosign/signature"
SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ACCEPT = ", ".join([OCI_MANIFEST, "application/vnd.oci.image.index.v1+json",
                    "application/vnd.docker.distribution.manifest.v2+json"])


def request(method, url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, dict(resp.headers), resp.read()


def base(hostrepo):
    host, repo = hostrepo.split("/", 1)
    return "http://%s/v2/%s" % (host, repo), host, repo


def get_manifest(hostrepo, ref):
    url, _, _ = base(hostrepo)
    try:
        _, _, body = request("GET", "%s/manifests/%s" % (url, ref), headers={"Accept": ACCEPT})
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None, None
        raise
    return body, "sha256:" + hashlib.sha256(body).hexdigest()


def push_blob(hostrepo, data):
    url, host, _ = base(hostrepo)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _, headers, _ = request("POST", url + "/blobs/uploads/", data=b"")
    loc = headers.get("Location")
    if loc.startswith("/"):
        loc = "http://%s%s" % (host, loc)
    sep = "&" if "?" in loc else "?"
    request("PUT", "%s%sdigest=%s" % (loc, sep, digest), data=data,
            headers={"Content-Type": "application/octet-stream"})
    return digest


def sig_tag(digest):
    return digest.replace("sha256:", "sha256-") + ".sig"


def cmd_keygen(out, password):
    key = ec.generate_private_key(ec.SECP256R1())
    pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    der = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    if password is None:
        text = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    else:
        import nacl.secret
        salt, nonce = os.urandom(32), os.urandom(24)
        n, r, p = 32768, 8, 1
        k = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=64 << 20)
        box = nacl.secret.SecretBox(k).encrypt(der, nonce)
        sealed = json.dumps({
            "kdf": {"name": "scrypt", "params": {"N": n, "r": r, "p": p},
                    "salt": base64.b64encode(salt).decode()},
            "cipher": {"name": "nacl/secretbox", "nonce": base64.b64encode(nonce).decode()},
            "ciphertext": base64.b64encode(box.ciphertext).decode(),
        }).encode()
        b64 = base64.b64encode(sealed).decode()
        lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
        text = ("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n" + "\n".join(lines)
                + "\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n").encode()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "cosign.pub"), "wb") as f:
        f.write(pub)
    with open(os.path.join(out, "cosign.key"), "wb") as f:
        f.write(text)


def load_private(path, password):
    text = open(path, "rb").read()
    if b"ENCRYPTED SIGSTORE PRIVATE KEY" in text:
        import nacl.secret
        body = b"".join(l for l in text.splitlines() if not l.startswith(b"-----"))
        sealed = json.loads(base64.b64decode(body))
        prm = sealed["kdf"]["params"]
        k = hashlib.scrypt(password.encode(), salt=base64.b64decode(sealed["kdf"]["salt"]),
                           n=prm["N"], r=prm["r"], p=prm["p"], dklen=32, maxmem=64 << 20)
        der = nacl.secret.SecretBox(k).decrypt(base64.b64decode(sealed["ciphertext"]),
                                               base64.b64decode(sealed["cipher"]["nonce"]))
        return serialization.load_der_private_key(der, None)
    return serialization.load_pem_private_key(text, None)


def cmd_sign(hostrepo, tag, keyfile, password, digest_override, tamper):
    _, digest = get_manifest(hostrepo, tag)
    if digest is None:
        sys.exit("no manifest %s:%s" % (hostrepo, tag))
    key = load_private(keyfile, password)
    payload = json.dumps({
        "critical": {"identity": {"docker-reference": hostrepo},
                     "image": {"docker-manifest-digest": digest_override or digest},
                     "type": "cosign container image signature"},
        "optional": None}, separators=(",", ":")).encode()
    signature = base64.b64encode(key.sign(payload, ec.ECDSA(hashes.SHA256()))).decode()
    if tamper:
        payload = payload.replace(b"cosign container image signature",
                                  b"cosign container image signaturE")
    layer = {"mediaType": SIMPLE_SIGNING, "size": len(payload),
             "digest": push_blob(hostrepo, payload),
             "annotations": {SIG_ANNOTATION: signature}}
    existing, _ = get_manifest(hostrepo, sig_tag(digest))
    layers = json.loads(existing)["layers"] if existing else []
    layers.append(layer)
    config = json.dumps({"architecture": "", "config": {}, "created": "0001-01-01T00:00:00Z",
                         "history": [{"created": "0001-01-01T00:00:00Z"}], "os": "",
                         "rootfs": {"type": "layers",
                                    "diff_ids": [l["digest"] for l in layers]}}).encode()
    manifest = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                      "size": len(config), "digest": push_blob(hostrepo, config)},
                           "layers": layers}).encode()
    url, _, _ = base(hostrepo)
    request("PUT", "%s/manifests/%s" % (url, sig_tag(digest)), data=manifest,
            headers={"Content-Type": OCI_MANIFEST})
    print("signed %s" % digest)


def cmd_verify(hostrepo, tag, pubfile):
    pub = serialization.load_pem_public_key(open(pubfile, "rb").read())
    _, digest = get_manifest(hostrepo, tag)
    if digest is None:
        sys.exit("no manifest %s:%s" % (hostrepo, tag))
    sigs, _ = get_manifest(hostrepo, sig_tag(digest))
    if sigs is None:
        sys.exit("no signature of %s" % digest)
    url, _, _ = base(hostrepo)
    reasons = []
    for layer in json.loads(sigs)["layers"]:
        sig = (layer.get("annotations") or {}).get(SIG_ANNOTATION)
        if sig is None:
            continue
        _, _, payload = request("GET", "%s/blobs/%s" % (url, layer["digest"]))
        if "sha256:" + hashlib.sha256(payload).hexdigest() != layer["digest"]:
            reasons.append("payload digest")
            continue
        try:
            pub.verify(base64.b64decode(sig), payload, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            reasons.append("signature does not verify")
            continue
        crit = json.loads(payload)["critical"]
        if crit.get("type") != "cosign container image signature":
            reasons.append("payload type")
        elif crit["image"]["docker-manifest-digest"] != digest:
            reasons.append("digest mismatch")
        else:
            print("verified %s" % digest)
            return
    sys.exit("not verified: %s" % (", ".join(reasons) or "no signature layers"))


def main(argv):
    def opt(name, default=None):
        if name in argv:
            i = argv.index(name)
            value = argv[i + 1]
            del argv[i:i + 2]
            return value
        return default

    def flag(name):
        if name in argv:
            argv.remove(name)
            return True
        return False

    password = opt("--password")
    digest = opt("--digest")
    tamper = flag("--tamper")
    cmd, args = argv[0], argv[1:]
    if cmd == "keygen":
        cmd_keygen(args[0], password)
    elif cmd == "sign":
        cmd_sign(args[0], args[1], args[2], password, digest, tamper)
    elif cmd == "verify":
        cmd_verify(args[0], args[1], args[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
