//! Helm provenance files (`NAME-VERSION.tgz.prov`), as pure functions: an OpenPGP clear-signed
//! message whose text is the chart's Chart.yaml, a line `...`, and `files: {ARCHIVE: sha256:HEX}`.
//! A chart passes, as with `helm pull --verify --keyring FILE`, when a key of the keyring made
//! the signature and the signed digest of the archive's file name is the archive's. capstan also
//! refuses a provenance whose Chart.yaml names another chart or version than the one resolved
//! (Helm does not look at it; a `.prov` of another chart would fail the digest anyway, but the
//! reason given is then the telling one). As Helm's OpenPGP library, the key that made the
//! signature must be usable now: not revoked (a revocation signature in the keyring, of the
//! primary key or of the signing subkey) and not expired (its newest self-signature's key
//! expiration time past), whenever the signature was made.

use std::collections::BTreeMap;

use pgp::composed::{CleartextSignedMessage, PublicOrSecret, SignedPublicKey};
use pgp::packet::{Signature, SignatureType};
use pgp::types::{KeyDetails, Timestamp};

use capstan_encoding::{json, yaml_load};

/// The largest provenance file read (Chart.yaml and a signature: a few KiB).
pub const MAX_PROVENANCE: u64 = 1024 * 1024;

/// The media type of the provenance layer of a chart in an OCI registry.
pub const PROVENANCE_LAYER: &str = "application/vnd.cncf.helm.chart.provenance.v1.prov";

/// A keyring that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    #[error("{origin}: not an OpenPGP keyring (binary, as `gpg --export` writes, or armored): {message}")]
    Format { origin: String, message: String },
    #[error("{origin}: the keyring holds no public key")]
    Empty { origin: String },
}

/// The public keys a provenance may be signed by (`--keyring FILE`).
#[derive(Clone, Debug, Default)]
pub struct Keyring {
    keys: Vec<SignedPublicKey>,
}

impl Keyring {
    /// The public keys of `bytes` (binary or armored; secret keys give their public part), read
    /// from `origin` (named in errors). Keys whose self-signatures do not verify are left out.
    pub fn parse(bytes: &[u8], origin: &str) -> Result<Keyring, KeyringError> {
        let format = |e: pgp::errors::Error| KeyringError::Format {
            origin: origin.to_string(),
            message: e.to_string(),
        };
        let (items, _) = PublicOrSecret::from_reader_many(bytes).map_err(format)?;
        let mut keys = Vec::new();
        for item in items {
            let key = match item.map_err(format)? {
                PublicOrSecret::Public(k) => k,
                PublicOrSecret::Secret(k) => k.to_public_key(),
            };
            if key.verify_bindings().is_ok() {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err(KeyringError::Empty {
                origin: origin.to_string(),
            });
        }
        Ok(Keyring { keys })
    }

    /// The keyrings of several files together.
    pub fn merge(keyrings: impl IntoIterator<Item = Keyring>) -> Keyring {
        Keyring {
            keys: keyrings.into_iter().flat_map(|k| k.keys).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The primary keys' fingerprints (upper-case hex, as `gpg --fingerprint` without spaces).
    pub fn fingerprints(&self) -> Vec<String> {
        self.keys.iter().map(|k| fingerprint(k.fingerprint())).collect()
    }

    /// Whether the key `signer` (a primary fingerprint) is in the keyring and may vouch at
    /// `now`: neither it nor any of its subkeys revoked or expired (whichever of them signed).
    /// What a recorded pass is reused under; otherwise the provenance is checked again.
    pub fn vouches(&self, signer: &str, now: std::time::SystemTime) -> bool {
        let now = timestamp(now);
        self.keys
            .iter()
            .filter(|k| fingerprint(k.fingerprint()) == signer)
            .any(|k| {
                usable(k, None, signer, now).is_ok()
                    && k.public_subkeys
                        .iter()
                        .all(|sub| usable(k, Some(sub), signer, now).is_ok())
            })
    }
}

/// `now` as OpenPGP's 32-bit time: before 1970 or after 2106, the nearest end.
fn timestamp(now: std::time::SystemTime) -> Timestamp {
    Timestamp::try_from(now).unwrap_or(if now < std::time::UNIX_EPOCH {
        Timestamp::from_secs(0)
    } else {
        Timestamp::from_secs(u32::MAX)
    })
}

fn fingerprint(f: pgp::types::Fingerprint) -> String {
    format!("{f:X}")
}

fn key_id(id: &pgp::types::KeyId) -> String {
    id.as_ref().iter().map(|b| format!("{b:02X}")).collect()
}

/// A chart whose provenance passed: who signed it and what.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProvenanceVerified {
    /// The primary key's fingerprint (upper-case hex).
    pub signer: String,
    /// The key's first user ID (`Name <email>`), empty when it has none.
    pub identity: String,
    /// The archive's file name and `sha256:<hex>`, as signed.
    pub file: String,
    pub digest: String,
}

/// Why a chart's provenance is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProvenanceRefusal {
    #[error("no provenance file: {0}")]
    Missing(String),
    #[error("the provenance file is not a PGP clear-signed message: {0}")]
    NotSigned(String),
    #[error("signed by a key not in the keyring (issuer {issuers})")]
    UnknownSigner { issuers: String },
    #[error("the signature does not verify under key {signer}: the provenance was changed after signing")]
    BadSignature { signer: String },
    #[error("signature made by revoked key {signer}: the keyring holds its revocation")]
    RevokedKey { signer: String },
    #[error("key expired: the signing key {signer} expired on {expired}")]
    ExpiredKey { signer: String, expired: String },
    #[error("the signed text is not Helm's provenance (Chart.yaml, `...`, files): {0}")]
    Malformed(String),
    #[error("the provenance signs {signed}, not {chart}")]
    ChartMismatch { signed: String, chart: String },
    #[error("the provenance does not contain a SHA for a file named {0:?}")]
    NoDigestFor(String),
    #[error("sha256 sum does not match for {file}: signed {signed}, the archive is {actual}")]
    DigestMismatch {
        file: String,
        signed: String,
        actual: String,
    },
}

impl ProvenanceRefusal {
    /// A short stable name for conditions and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            ProvenanceRefusal::Missing(_) => "NoProvenance",
            ProvenanceRefusal::NotSigned(_) => "NoSignature",
            ProvenanceRefusal::UnknownSigner { .. } => "WrongKey",
            ProvenanceRefusal::BadSignature { .. } => "TamperedSignature",
            ProvenanceRefusal::RevokedKey { .. } => "RevokedKey",
            ProvenanceRefusal::ExpiredKey { .. } => "ExpiredKey",
            ProvenanceRefusal::Malformed(_) => "MalformedProvenance",
            ProvenanceRefusal::ChartMismatch { .. } => "ChartMismatch",
            ProvenanceRefusal::NoDigestFor(_) => "DigestMismatch",
            ProvenanceRefusal::DigestMismatch { .. } => "DigestMismatch",
        }
    }
}

/// The chart a provenance must be of: the archive's file name and sha256 (hex), and the chart's
/// name and version.
#[derive(Clone, Copy, Debug)]
pub struct Archive<'a> {
    pub file_name: &'a str,
    pub sha256: &'a str,
    pub name: &'a str,
    pub version: &'a str,
}

/// Whether the provenance `prov` vouches for `archive` under `keyring`, now.
pub fn verify(
    prov: &[u8],
    archive: Archive<'_>,
    keyring: &Keyring,
) -> Result<ProvenanceVerified, ProvenanceRefusal> {
    verify_at(prov, archive, keyring, std::time::SystemTime::now())
}

/// Whether the provenance `prov` vouches for `archive` under `keyring` at `now` (when the
/// signing key must be neither revoked nor expired).
pub fn verify_at(
    prov: &[u8],
    archive: Archive<'_>,
    keyring: &Keyring,
    now: std::time::SystemTime,
) -> Result<ProvenanceVerified, ProvenanceRefusal> {
    let now = timestamp(now);
    let text =
        std::str::from_utf8(prov).map_err(|_| ProvenanceRefusal::NotSigned("not UTF-8 text".into()))?;
    let (message, _) =
        CleartextSignedMessage::from_string(text).map_err(|e| ProvenanceRefusal::NotSigned(e.to_string()))?;
    let signer = signer(&message, keyring, now)?;
    // The text as it was signed (dash-unescaped), with the message's own line ends.
    let signed = message.signed_text().replace("\r\n", "\n");
    let (chart, files) = parse_body(&signed)?;
    let chart_is = format!("{} {}", archive.name, archive.version);
    let signed_chart = format!("{} {}", chart.0, chart.1);
    if signed_chart != chart_is {
        return Err(ProvenanceRefusal::ChartMismatch {
            signed: signed_chart,
            chart: chart_is,
        });
    }
    let want = format!("sha256:{}", archive.sha256.to_ascii_lowercase());
    let sum = files
        .get(archive.file_name)
        .ok_or_else(|| ProvenanceRefusal::NoDigestFor(archive.file_name.to_string()))?;
    if *sum != want {
        return Err(ProvenanceRefusal::DigestMismatch {
            file: archive.file_name.to_string(),
            signed: sum.clone(),
            actual: want,
        });
    }
    Ok(ProvenanceVerified {
        signer: signer.0,
        identity: signer.1,
        file: archive.file_name.to_string(),
        digest: want,
    })
}

/// `t` as `YYYY-MM-DD HH:MM UTC`.
fn utc(t: Timestamp) -> String {
    match time::OffsetDateTime::from_unix_timestamp(i64::from(t.as_secs())) {
        Ok(d) => format!("{} {:02}:{:02} UTC", d.date(), d.hour(), d.minute()),
        Err(_) => format!("{} s after the epoch", t.as_secs()),
    }
}

/// The newest of `signatures` of the types `types` (by their creation time).
fn newest<'a>(signatures: &'a [Signature], types: &[SignatureType]) -> Option<&'a Signature> {
    signatures
        .iter()
        .filter(|s| s.typ().is_some_and(|t| types.contains(&t)))
        .max_by_key(|s| s.created().map_or(0, Timestamp::as_secs))
}

/// When a key created at `created` expires by its self-signature `binding` (never: `None`).
fn expiry(created: Timestamp, binding: Option<&Signature>) -> Option<Timestamp> {
    let after = binding?.key_expiration_time()?;
    let secs = after.as_secs();
    (secs > 0).then(|| Timestamp::from_secs(created.as_secs().saturating_add(secs)))
}

/// Whether the keyring's key `key` (and its subkey `sub`, when that made the signature) may
/// vouch at `now`: refused when a revocation of either is in the keyring, or when either has
/// expired by its newest self-signature.
fn usable(
    key: &SignedPublicKey,
    sub: Option<&pgp::composed::SignedPublicSubKey>,
    signer: &str,
    now: Timestamp,
) -> Result<(), ProvenanceRefusal> {
    let revoked_sub = sub.is_some_and(|s| {
        s.signatures
            .iter()
            .any(|sig| sig.typ() == Some(SignatureType::SubkeyRevocation))
    });
    if !key.details.revocation_signatures.is_empty() || revoked_sub {
        return Err(ProvenanceRefusal::RevokedKey {
            signer: signer.to_string(),
        });
    }
    let certifications = [
        SignatureType::CertGeneric,
        SignatureType::CertPersona,
        SignatureType::CertCasual,
        SignatureType::CertPositive,
        SignatureType::Key,
    ];
    let self_signatures: Vec<Signature> = key
        .details
        .users
        .iter()
        .flat_map(|u| u.signatures.iter().cloned())
        .chain(key.details.direct_signatures.iter().cloned())
        .collect();
    let primary = expiry(
        key.primary_key.created_at(),
        newest(&self_signatures, &certifications),
    );
    let subkey = sub.and_then(|s| {
        expiry(
            s.key.created_at(),
            newest(&s.signatures, &[SignatureType::SubkeyBinding]),
        )
    });
    match [primary, subkey].into_iter().flatten().min() {
        Some(at) if at.as_secs() < now.as_secs() => Err(ProvenanceRefusal::ExpiredKey {
            signer: signer.to_string(),
            expired: utc(at),
        }),
        _ => Ok(()),
    }
}

/// The fingerprint and first user ID of the keyring's key that made a signature of `message`,
/// when that key is usable at `now`.
fn signer(
    message: &CleartextSignedMessage,
    keyring: &Keyring,
    now: Timestamp,
) -> Result<(String, String), ProvenanceRefusal> {
    let text = message.signed_text();
    let mut issuers: Vec<String> = Vec::new();
    let mut known: Option<String> = None;
    for signature in message.signatures() {
        let ids: Vec<String> = signature.issuer_key_id().into_iter().map(key_id).collect();
        let fps: Vec<String> = signature
            .issuer_fingerprint()
            .into_iter()
            .map(|f| fingerprint(f.clone()))
            .collect();
        issuers.extend(fps.iter().chain(&ids).cloned());
        for key in &keyring.keys {
            let names = |id: pgp::types::KeyId, fp: pgp::types::Fingerprint| {
                ids.contains(&key_id(&id)) || fps.contains(&fingerprint(fp))
            };
            let primary = fingerprint(key.fingerprint());
            let identity = key
                .details
                .users
                .first()
                .map(|u| String::from_utf8_lossy(u.id.id()).into_owned())
                .unwrap_or_default();
            if names(key.primary_key.legacy_key_id(), key.primary_key.fingerprint()) {
                known = Some(primary.clone());
                if signature.verify(key, text.as_bytes()).is_ok() {
                    usable(key, None, &primary, now)?;
                    return Ok((primary, identity));
                }
            }
            for sub in &key.public_subkeys {
                if names(sub.key.legacy_key_id(), sub.key.fingerprint()) {
                    known = Some(primary.clone());
                    if signature.verify(sub, text.as_bytes()).is_ok() {
                        usable(key, Some(sub), &primary, now)?;
                        return Ok((primary, identity));
                    }
                }
            }
        }
    }
    match known {
        Some(signer) => Err(ProvenanceRefusal::BadSignature { signer }),
        None => {
            issuers.dedup();
            Err(ProvenanceRefusal::UnknownSigner {
                issuers: if issuers.is_empty() {
                    "none named".into()
                } else {
                    issuers.join(", ")
                },
            })
        }
    }
}

/// `((name, version), files)` of the signed text: Chart.yaml, then after a line `...` the
/// `files` map (Helm's message block).
#[allow(clippy::type_complexity)]
fn parse_body(text: &str) -> Result<((String, String), BTreeMap<String, String>), ProvenanceRefusal> {
    let bad = |m: String| ProvenanceRefusal::Malformed(m);
    let text = format!("{}\n", text.trim_end_matches('\n'));
    let (chart, files) = text
        .split_once("\n...\n")
        .ok_or_else(|| bad("no `...` line between Chart.yaml and the files".into()))?;
    let to_json = |yaml: &str, what: &str| -> Result<serde_json::Value, ProvenanceRefusal> {
        let value = yaml_load::load_document(yaml).map_err(|e| bad(format!("{what}: {e}")))?;
        let text = json::marshal(&value).map_err(|e| bad(format!("{what}: {e}")))?;
        serde_json::from_str(&text).map_err(|e| bad(format!("{what}: {e}")))
    };
    let chart = to_json(chart, "Chart.yaml")?;
    let field = |name: &str| {
        chart
            .get(name)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let files = to_json(files, "files")?;
    let files = files
        .get("files")
        .and_then(|f| f.as_object())
        .ok_or_else(|| bad("no `files` map".into()))?
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    Ok(((field("name"), field("version")), files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_chart_yaml_then_files() {
        let text = "apiVersion: v2\nname: demo\nversion: 0.1.0\n\n...\nfiles:\n  demo-0.1.0.tgz: sha256:ab\n";
        let ((name, version), files) = parse_body(text).unwrap();
        assert_eq!((name.as_str(), version.as_str()), ("demo", "0.1.0"));
        assert_eq!(files["demo-0.1.0.tgz"], "sha256:ab");
        for (bad, want) in [
            ("name: demo\nfiles: {}\n", "no `...` line"),
            ("name: demo\n...\nother: 1\n", "no `files` map"),
            ("name: [\n...\nfiles: {}\n", "Chart.yaml"),
        ] {
            let err = parse_body(bad).unwrap_err().to_string();
            assert!(err.contains(want), "{bad:?}: {err}");
        }
    }

    #[test]
    fn a_keyring_of_garbage_is_refused_naming_the_file() {
        let err = Keyring::parse(b"not a key", "ring.gpg").unwrap_err().to_string();
        assert!(err.starts_with("ring.gpg: "), "{err}");
    }
}
