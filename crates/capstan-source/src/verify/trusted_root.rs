//! A Sigstore trusted root (`trusted_root.json`, the `TrustedRoot` message of Sigstore's
//! protobuf specs in its JSON form): the Fulcio certificate authorities (each a chain of DER
//! certificates, intermediate first, and the time it was valid for) and the transparency logs
//! (Rekor: the log's public key, its id — SHA-256 of the key — and validity), and the
//! certificate transparency logs whose SCTs a Fulcio certificate must carry (the same shape),
//! and the timestamp authorities whose RFC 3161 timestamps prove when a signature existed (the
//! shape of a certificate authority). A Rekor v2 log's key is Ed25519 (Rekor v1's ECDSA); its
//! checkpoints are signed notes under the key name of its URL's host. Every validity must have
//! a start (an open start is a malformed root, not an unbounded trust). Only what keyless
//! verification reads is kept.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Sigstore's public-good trusted root, shipped (see [`TrustedRoot::public_good`]).
const PUBLIC_GOOD: &[u8] = include_bytes!("public-good-trusted-root.json");

/// A trusted root that cannot be used; each names its origin (file or Secret).
#[derive(Debug, thiserror::Error)]
pub enum TrustedRootError {
    #[error("{origin}: not a trusted root JSON: {message}")]
    Format { origin: String, message: String },
    #[error("{origin}: {field}: {message}")]
    Field {
        origin: String,
        field: String,
        message: String,
    },
    #[error("{origin}: no certificate authority: keyless signatures cannot be verified")]
    NoAuthority { origin: String },
    #[error("{origin}: no transparency log: keyless signatures cannot be verified")]
    NoLog { origin: String },
}

/// The time a key or authority was valid for, in Unix seconds (`end` open when absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub end: Option<i64>,
}

impl Window {
    pub fn contains(&self, at: i64) -> bool {
        at >= self.start && self.end.is_none_or(|end| at <= end)
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = |at: i64| {
            OffsetDateTime::from_unix_timestamp(at)
                .ok()
                .and_then(|t| t.format(&Rfc3339).ok())
                .unwrap_or_else(|| at.to_string())
        };
        match self.end {
            Some(end) => write!(f, "from {} to {}", text(self.start), text(end)),
            None => write!(f, "from {}", text(self.start)),
        }
    }
}

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410), before the 32 key bytes.
const ED25519_SPKI: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// A Fulcio authority: its chain (DER, the issuer of leaf certificates first, the root last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authority {
    pub name: String,
    pub chain: Vec<Vec<u8>>,
    pub valid: Window,
}

/// A transparency log's key: SubjectPublicKeyInfo DER and its id (hex: `sha256` of the key
/// for Rekor v1 and CT logs, the signed-note key id's hash for Rekor v2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogKey {
    pub base_url: String,
    pub log_id: String,
    pub spki: Vec<u8>,
    pub valid: Window,
}

impl LogKey {
    /// The 32 bytes of an Ed25519 key (a Rekor v2 log's), `None` for another key.
    pub fn ed25519(&self) -> Option<&[u8]> {
        self.spki
            .strip_prefix(&ED25519_SPKI[..])
            .filter(|key| key.len() == 32)
    }

    /// The name the log signs its checkpoints under: its URL without scheme and trailing `/`
    /// (`rekor.sigstore.dev`, `log2025-1.rekor.sigstore.dev`).
    pub fn key_name(&self) -> &str {
        let url = self.base_url.trim_end_matches('/');
        url.split_once("://").map_or(url, |(_, rest)| rest)
    }

    /// The signed-note key id of this log's checkpoint signatures (C2SP signed-note): for
    /// Ed25519 the first four bytes of SHA-256(name, newline, 0x01, key); for ECDSA those of
    /// SHA-256 of the SubjectPublicKeyInfo.
    pub fn note_key_id(&self) -> [u8; 4] {
        let hash = match self.ed25519() {
            Some(key) => Sha256::new()
                .chain_update(self.key_name().as_bytes())
                .chain_update([b'\n', 0x01])
                .chain_update(key)
                .finalize(),
            None => Sha256::digest(&self.spki),
        };
        [hash[0], hash[1], hash[2], hash[3]]
    }
}

/// What keyless verification trusts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedRoot {
    pub authorities: Vec<Authority>,
    pub logs: Vec<LogKey>,
    /// The CT logs (`ctlogs`): an SCT of one of them proves the certificate was logged.
    pub ct_logs: Vec<LogKey>,
    /// The timestamp authorities (`timestampAuthorities`): chains and validity, as for CAs.
    pub timestamp_authorities: Vec<Authority>,
    /// `sha256:<hex>` of the file: a verification recorded under another root is not reused.
    pub fingerprint: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RootJson {
    #[serde(default)]
    tlogs: Vec<LogJson>,
    #[serde(default)]
    ctlogs: Vec<LogJson>,
    #[serde(default)]
    certificate_authorities: Vec<AuthorityJson>,
    #[serde(default)]
    timestamp_authorities: Vec<AuthorityJson>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogJson {
    #[serde(default)]
    base_url: String,
    public_key: KeyJson,
    log_id: LogIdJson,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyJson {
    raw_bytes: String,
    #[serde(default)]
    valid_for: Option<WindowJson>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogIdJson {
    key_id: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthorityJson {
    #[serde(default)]
    subject: Option<SubjectJson>,
    cert_chain: ChainJson,
    #[serde(default)]
    valid_for: Option<WindowJson>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubjectJson {
    #[serde(default)]
    organization: String,
    #[serde(default)]
    common_name: String,
}

#[derive(serde::Deserialize)]
struct ChainJson {
    certificates: Vec<RawJson>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawJson {
    raw_bytes: String,
}

#[derive(serde::Deserialize)]
struct WindowJson {
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
}

impl TrustedRoot {
    /// Parses `trusted_root.json`; `origin` (the file or Secret) names it in errors.
    pub fn from_json(bytes: &[u8], origin: &str) -> Result<TrustedRoot, TrustedRootError> {
        let root: RootJson = serde_json::from_slice(bytes).map_err(|e| TrustedRootError::Format {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let field = |field: String, message: String| TrustedRootError::Field {
            origin: origin.to_string(),
            field,
            message,
        };
        let authorities = read_authorities(&root.certificate_authorities, "certificateAuthorities", &field)?;
        let timestamp_authorities =
            read_authorities(&root.timestamp_authorities, "timestampAuthorities", &field)?;
        let logs = log_keys(&root.tlogs, "tlogs", &field)?;
        let ct_logs = log_keys(&root.ctlogs, "ctlogs", &field)?;
        if authorities.iter().all(|a| a.chain.is_empty()) {
            return Err(TrustedRootError::NoAuthority {
                origin: origin.to_string(),
            });
        }
        if logs.is_empty() {
            return Err(TrustedRootError::NoLog {
                origin: origin.to_string(),
            });
        }
        Ok(TrustedRoot {
            authorities,
            logs,
            ct_logs,
            timestamp_authorities,
            fingerprint: format!("sha256:{}", crate::cache::hex(&Sha256::digest(bytes))),
        })
    }

    /// Sigstore's public-good instance (Fulcio at fulcio.sigstore.dev, Rekor at
    /// rekor.sigstore.dev) as shipped with capstan: a snapshot of the trusted root Sigstore
    /// publishes (testdata/verify/keyless/README.md says which). A newer one is given as a file.
    pub fn public_good() -> Result<TrustedRoot, TrustedRootError> {
        TrustedRoot::from_json(PUBLIC_GOOD, "capstan's public-good trusted root")
    }

    /// The log whose id is `log_id` (hex).
    pub fn log(&self, log_id: &str) -> Option<&LogKey> {
        self.logs.iter().find(|l| l.log_id.eq_ignore_ascii_case(log_id))
    }

    /// The CT log whose id is `log_id` (hex).
    pub fn ct_log(&self, log_id: &str) -> Option<&LogKey> {
        self.ct_logs
            .iter()
            .find(|l| l.log_id.eq_ignore_ascii_case(log_id))
    }
}

/// The authorities of `list` (`certificateAuthorities` or `timestampAuthorities`).
fn read_authorities(
    json: &[AuthorityJson],
    list: &str,
    field: &impl Fn(String, String) -> TrustedRootError,
) -> Result<Vec<Authority>, TrustedRootError> {
    let mut authorities = Vec::with_capacity(json.len());
    for (i, ca) in json.iter().enumerate() {
        let mut chain = Vec::with_capacity(ca.cert_chain.certificates.len());
        for (j, cert) in ca.cert_chain.certificates.iter().enumerate() {
            let at = format!("{list}[{i}].certChain.certificates[{j}].rawBytes");
            chain.push(decode(&cert.raw_bytes).map_err(|m| field(at, m))?);
        }
        let at = format!("{list}[{i}].validFor");
        let valid = window(ca.valid_for.as_ref()).map_err(|m| field(at, m))?;
        let name = ca
            .subject
            .as_ref()
            .map(|s| format!("O={}, CN={}", s.organization, s.common_name))
            .unwrap_or_else(|| format!("{list}[{i}]"));
        authorities.push(Authority { name, chain, valid });
    }
    Ok(authorities)
}

/// The keys of `logs` (the root's `tlogs` or `ctlogs`, named `list` in errors).
fn log_keys(
    logs: &[LogJson],
    list: &str,
    field: &impl Fn(String, String) -> TrustedRootError,
) -> Result<Vec<LogKey>, TrustedRootError> {
    let mut keys = Vec::with_capacity(logs.len());
    for (i, log) in logs.iter().enumerate() {
        let spki = decode(&log.public_key.raw_bytes)
            .map_err(|m| field(format!("{list}[{i}].publicKey.rawBytes"), m))?;
        let key_id = decode(&log.log_id.key_id).map_err(|m| field(format!("{list}[{i}].logId.keyId"), m))?;
        let valid = window(log.public_key.valid_for.as_ref())
            .map_err(|m| field(format!("{list}[{i}].publicKey.validFor"), m))?;
        keys.push(LogKey {
            base_url: log.base_url.clone(),
            log_id: crate::cache::hex(&key_id),
            spki,
            valid,
        });
    }
    Ok(keys)
}

fn decode(text: &str) -> Result<Vec<u8>, String> {
    STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))
}

fn seconds(text: &str) -> Result<i64, String> {
    OffsetDateTime::parse(text, &Rfc3339)
        .map(|t| t.unix_timestamp())
        .map_err(|e| format!("{text:?} is not an RFC 3339 time: {e}"))
}

fn window(json: Option<&WindowJson>) -> Result<Window, String> {
    let Some(json) = json else {
        return Ok(Window { start: 0, end: None });
    };
    let start = json
        .start
        .as_deref()
        .ok_or("no start: a validity period must say when it begins")?;
    Ok(Window {
        start: seconds(start)?,
        end: json.end.as_deref().map(seconds).transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_public_good_root_names_rekor_and_fulcio() {
        let root = TrustedRoot::public_good().unwrap();
        let rekor = root
            .log("c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d")
            .unwrap();
        assert_eq!(rekor.base_url, "https://rekor.sigstore.dev");
        let ct = root
            .ct_log("dd3d306ac6c7113263191e1c99673702a24a5eb8de3cadff878a72802f29ee8e")
            .unwrap();
        assert_eq!(ct.base_url, "https://ctfe.sigstore.dev/2022");
        assert!(
            root.authorities
                .iter()
                .any(|a| a.valid.end.is_none() && a.chain.len() == 2)
        );
        // Rekor v2: the log signs its checkpoints with Ed25519 under its host name, and its
        // log id is that key's signed-note key id hash.
        let v2 = root
            .log("cf1199155bddd051268d1f16ac5c0c75c009f6fb5a63f4177f8e18d7051e3fa0")
            .unwrap();
        assert!(v2.ed25519().is_some());
        assert_eq!(v2.key_name(), "log2025-1.rekor.sigstore.dev");
        assert_eq!(crate::cache::hex(&v2.note_key_id()), v2.log_id[..8]);
        assert!(
            root.timestamp_authorities
                .iter()
                .any(|t| t.name == "O=sigstore.dev, CN=sigstore-tsa-selfsigned")
        );
    }

    #[test]
    fn a_root_reads_its_authorities_and_logs_and_bad_ones_name_the_field() {
        let json = serde_json::json!({
            "tlogs": [{"baseUrl": "https://rekor", "publicKey": {"rawBytes": "AAEC", "validFor": {"start": "2021-01-12T11:53:27.000Z"}}, "logId": {"keyId": "AQI="}}],
            "ctlogs": [{"baseUrl": "https://ctfe", "publicKey": {"rawBytes": "BQY=", "validFor": {"start": "2022-10-20T00:00:00Z"}}, "logId": {"keyId": "CQo="}}],
            "certificateAuthorities": [{"subject": {"organization": "o", "commonName": "c"}, "certChain": {"certificates": [{"rawBytes": "AwQ="}]}, "validFor": {"start": "2022-04-13T20:06:15Z", "end": "2022-12-31T23:59:59.999Z"}}],
        });
        let root = TrustedRoot::from_json(json.to_string().as_bytes(), "root.json").unwrap();
        assert_eq!(root.logs[0].log_id, "0102");
        assert_eq!(root.logs[0].spki, [0, 1, 2]);
        assert!(root.log("0102").is_some() && root.log("0103").is_none());
        let ct = root.ct_log("090a").unwrap();
        assert_eq!(
            (ct.base_url.as_str(), ct.spki.clone()),
            ("https://ctfe", vec![5u8, 6])
        );
        assert!(root.ct_log("0102").is_none() && !ct.valid.contains(1_650_000_000));
        let ca = &root.authorities[0];
        assert_eq!(
            (ca.name.as_str(), ca.chain.clone()),
            ("O=o, CN=c", vec![vec![3u8, 4]])
        );
        assert!(ca.valid.contains(1_650_000_000) && !ca.valid.contains(1_700_000_000));
        assert!(!ca.valid.contains(1_649_000_000));

        let table = [
            (
                json.to_string().replace("AwQ=", "%%"),
                "certChain.certificates[0].rawBytes",
            ),
            (
                json.to_string().replace("2022-04-13T20:06:15Z", "yesterday"),
                "validFor",
            ),
            (
                json.to_string().replace("\"tlogs\"", "\"x\""),
                "no transparency log",
            ),
            (json.to_string().replace("CQo=", "%"), "ctlogs[0].logId.keyId"),
            ("7".to_string(), "not a trusted root JSON"),
            ("{}".to_string(), "no certificate authority"),
        ];
        for (text, want) in table {
            let err = TrustedRoot::from_json(text.as_bytes(), "root.json")
                .unwrap_err()
                .to_string();
            assert!(err.contains(want) && err.starts_with("root.json"), "{err}");
        }
    }
}
