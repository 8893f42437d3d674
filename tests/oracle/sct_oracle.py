#!/usr/bin/env python3
"""An independent check of a certificate's embedded Signed Certificate Timestamps (RFC 6962)
against a Sigstore trusted root's CT logs, for capstan's tests: Python's `cryptography` parses
the certificate, its SCT list and the precertificate TBS (`tbs_precertificate_bytes`), finds the
issuing certificate among the trusted root's authorities and verifies each SCT's signature over
the precertificate entry (version, signature type, timestamp, entry type, issuer key hash, TBS,
extensions) with the log's key. Written from RFC 6962 and Sigstore's trusted root format, not
from capstan's code. Run with the python of scripts/verify-env.sh.

Usage: sct_oracle.py CERT TRUSTED_ROOT
CERT is a PEM or DER certificate. Prints JSON:
  {"precert_tbs_sha256": HEX, "issuer": SUBJECT,
   "scts": [{"log_id": HEX, "timestamp_ms": N, "log": URL or null, "in_validity": BOOL,
             "verified": BOOL}]}
"""
import base64
import calendar
import datetime
import hashlib
import json
import struct
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa


def load_cert(data):
    if data.lstrip().startswith(b"-----BEGIN"):
        return x509.load_pem_x509_certificate(data)
    return x509.load_der_x509_certificate(data)


def load_log_key(raw):
    try:
        return serialization.load_der_public_key(raw)
    except ValueError:
        # An RSAPublicKey (PKCS#1) rather than a SubjectPublicKeyInfo.
        return serialization.load_der_public_key(
            b"\x30\x82" + struct.pack(">H", len(raw) + 19)
            + bytes.fromhex("300d06092a864886f70d0101010500") + b"\x03\x82"
            + struct.pack(">H", len(raw) + 1) + b"\x00" + raw)


def seconds(text):
    if not text:
        return None
    text = text.replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(text).timestamp()


def issuer_of(cert, root):
    for ca in root.get("certificateAuthorities", []):
        chain = ca.get("certChain", {}).get("certificates", [])
        if not chain:
            continue
        candidate = x509.load_der_x509_certificate(base64.b64decode(chain[0]["rawBytes"]))
        try:
            cert.verify_directly_issued_by(candidate)
            return candidate
        except Exception:  # another name, key or signature: not this authority
            continue
    return None


def main(cert_file, root_file):
    cert = load_cert(open(cert_file, "rb").read())
    root = json.load(open(root_file))
    try:
        tbs = cert.tbs_precertificate_bytes
    except ValueError:
        # No SCT list: the certificate was not logged (the TBS is as it is).
        tbs = cert.tbs_certificate_bytes
    issuer = issuer_of(cert, root)
    out = {"precert_tbs_sha256": hashlib.sha256(tbs).hexdigest(),
           "issuer": issuer.subject.rfc4514_string() if issuer else None, "scts": []}
    try:
        scts = cert.extensions.get_extension_for_class(
            x509.PrecertificateSignedCertificateTimestamps).value
    except x509.ExtensionNotFound:
        scts = []
    logs = {}
    for log in root.get("ctlogs", []):
        logs[base64.b64decode(log["logId"]["keyId"]).hex()] = log
    for sct in scts:
        ts = sct.timestamp
        millis = calendar.timegm(ts.timetuple()) * 1000 + ts.microsecond // 1000
        log = logs.get(sct.log_id.hex())
        entry = {"log_id": sct.log_id.hex(), "timestamp_ms": millis,
                 "log": log["baseUrl"] if log else None, "in_validity": False, "verified": False}
        if log and issuer is not None:
            valid = log["publicKey"].get("validFor", {})
            start, end = seconds(valid.get("start")), seconds(valid.get("end"))
            at = millis / 1000
            entry["in_validity"] = (start is None or at >= start) and (end is None or at <= end)
            issuer_spki = issuer.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
            ext = sct.extension_bytes
            signed = (struct.pack(">BBQH", 0, 0, millis, 1) + hashlib.sha256(issuer_spki).digest()
                      + len(tbs).to_bytes(3, "big") + tbs + struct.pack(">H", len(ext)) + ext)
            key = load_log_key(base64.b64decode(log["publicKey"]["rawBytes"]))
            algorithm = hashes.SHA256() if isinstance(sct.signature_hash_algorithm, hashes.SHA256) \
                else hashes.SHA384()
            try:
                if isinstance(key, ec.EllipticCurvePublicKey):
                    key.verify(sct.signature, signed, ec.ECDSA(algorithm))
                elif isinstance(key, rsa.RSAPublicKey):
                    key.verify(sct.signature, signed, padding.PKCS1v15(), algorithm)
                else:
                    raise ValueError("unsupported log key")
                entry["verified"] = True
            except Exception:
                entry["verified"] = False
        out["scts"].append(entry)
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
