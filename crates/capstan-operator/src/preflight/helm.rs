//! The Helm releases stored on a workload cluster: Secrets of type `helm.sh/release.v1`
//! labelled `owner=helm`, one per revision (labels `name`, `version`). A Secret's `release`
//! key holds the release record as base64 text of gzip-compressed JSON (plain JSON before
//! Helm 3's compression); its `manifest` is the YAML stream Helm applied. Only each release's
//! newest revision counts: it is what runs, and what the next `helm upgrade` diffs against.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ListParams};

use crate::rollout::preflight::ApiInUse;

/// The Secret type Helm stores releases as.
pub const RELEASE_SECRET_TYPE: &str = "helm.sh/release.v1";

/// The longest the list of release Secrets may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a stored release could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HelmReleaseError {
    #[error("Secret {secret}: no `release` key")]
    NoRelease { secret: String },
    #[error("Secret {secret}: `release` is not base64: {source}")]
    Base64 {
        secret: String,
        #[source]
        source: base64::DecodeError,
    },
    #[error("Secret {secret}: `release` does not decompress: {source}")]
    Gzip {
        secret: String,
        #[source]
        source: std::io::Error,
    },
    #[error("Secret {secret}: `release` is not a Helm release record: {source}")]
    Json {
        secret: String,
        #[source]
        source: serde_json::Error,
    },
}

/// The part of Helm's release record read here.
#[derive(Debug, serde::Deserialize)]
struct Record {
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    version: u64,
    #[serde(default)]
    manifest: String,
}

/// A stored release: its name, namespace, revision and manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRelease {
    pub name: String,
    pub namespace: String,
    pub revision: u64,
    pub manifest: String,
}

/// Decodes the `release` value of a Helm release Secret (the Secret's data, already decoded
/// once by the API: base64 text of gzip, or of plain JSON).
pub fn decode(secret: &str, release: &[u8]) -> Result<StoredRelease, HelmReleaseError> {
    let text: Vec<u8> = release
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|source| HelmReleaseError::Base64 {
            secret: secret.to_string(),
            source,
        })?;
    let json = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut out)
            .map_err(|source| HelmReleaseError::Gzip {
                secret: secret.to_string(),
                source,
            })?;
        out
    } else {
        bytes
    };
    let record: Record = serde_json::from_slice(&json).map_err(|source| HelmReleaseError::Json {
        secret: secret.to_string(),
        source,
    })?;
    Ok(StoredRelease {
        name: record.name,
        namespace: record.namespace,
        revision: record.version,
        manifest: record.manifest,
    })
}

/// The apiVersion and kind of each document of a manifest (documents without both are
/// skipped: Helm applies none of those).
pub fn apis_in_manifest(manifest: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for document in capstan_encoding::yaml_load::split_documents(manifest)
        .into_iter()
        .flatten()
    {
        let (mut api_version, mut kind) = (None, None);
        for line in document.lines() {
            // Top-level keys only: nested ones are indented.
            if let Some(value) = line.strip_prefix("apiVersion:") {
                api_version = Some(unquote(value));
            } else if let Some(value) = line.strip_prefix("kind:") {
                kind = Some(unquote(value));
            }
        }
        if let (Some(a), Some(k)) = (api_version, kind)
            && !a.is_empty()
            && !k.is_empty()
        {
            found.push((a, k));
        }
    }
    found.sort();
    found.dedup();
    found
}

fn unquote(value: &str) -> String {
    let value = value.split(" #").next().unwrap_or_default().trim();
    value.trim_matches(|c| c == '"' || c == '\'').to_string()
}

/// The newest revision of each release among `secrets` (Helm's release Secrets), and the
/// Secrets that could not be read.
pub fn newest_revisions(secrets: &[Secret]) -> (Vec<StoredRelease>, Vec<HelmReleaseError>) {
    let mut newest: BTreeMap<(String, String), StoredRelease> = BTreeMap::new();
    let mut errors = Vec::new();
    for secret in secrets {
        let name = format!(
            "{}/{}",
            secret.metadata.namespace.as_deref().unwrap_or_default(),
            secret.metadata.name.as_deref().unwrap_or_default()
        );
        let Some(release) = secret.data.as_ref().and_then(|d| d.get("release")) else {
            errors.push(HelmReleaseError::NoRelease { secret: name });
            continue;
        };
        match decode(&name, &release.0) {
            Ok(mut stored) => {
                if stored.namespace.is_empty() {
                    stored.namespace = secret.metadata.namespace.clone().unwrap_or_default();
                }
                let key = (stored.namespace.clone(), stored.name.clone());
                if newest
                    .get(&key)
                    .is_none_or(|kept| kept.revision < stored.revision)
                {
                    newest.insert(key, stored);
                }
            }
            Err(error) => errors.push(error),
        }
    }
    (newest.into_values().collect(), errors)
}

/// What the newest revisions of `releases` use.
pub fn apis_of(releases: &[StoredRelease]) -> Vec<ApiInUse> {
    releases
        .iter()
        .flat_map(|r| {
            apis_in_manifest(&r.manifest)
                .into_iter()
                .map(move |(api_version, kind)| ApiInUse {
                    api_version,
                    kind,
                    seen_in: format!("Helm release {}/{} revision {}", r.namespace, r.name, r.revision),
                })
        })
        .collect()
}

/// The APIs the Helm releases stored on the workload cluster behind `client` use (within
/// [`LIST_TIMEOUT`]). A Secret that does not decode is an error: a release nobody can read
/// might use anything.
pub async fn stored_release_apis(client: &Client) -> Result<Vec<ApiInUse>, String> {
    let secrets: Api<Secret> = Api::all(client.clone());
    let params = ListParams::default()
        .fields(&format!("type={RELEASE_SECRET_TYPE}"))
        .labels("owner=helm");
    let listed = tokio::time::timeout(LIST_TIMEOUT, secrets.list(&params))
        .await
        .map_err(|_| format!("listing Helm release Secrets: no answer within {LIST_TIMEOUT:?}"))?
        .map_err(|e| format!("listing Helm release Secrets: {e}"))?;
    let (releases, errors) = newest_revisions(&listed.items);
    if let Some(error) = errors.first() {
        return Err(format!("reading a stored Helm release: {error}"));
    }
    Ok(apis_of(&releases))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// What Helm stores: base64 of gzip of the JSON record.
    fn stored(name: &str, revision: u64, manifest: &str) -> Vec<u8> {
        let json = serde_json::json!({"name": name, "namespace": "kube-system", "version": revision,
                                      "manifest": manifest, "info": {"status": "deployed"}});
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(json.to_string().as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let bytes = gz.finish().unwrap_or_else(|e| panic!("{e}"));
        base64::engine::general_purpose::STANDARD
            .encode(bytes)
            .into_bytes()
    }

    const MANIFEST: &str = "---\n# Source: legacy/templates/ingress.yaml\napiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: web\n  labels:\n    kind: not-this\n---\n# Source: legacy/templates/cm.yaml\napiVersion: \"v1\"\nkind: ConfigMap # a comment\nmetadata:\n  name: c\n";

    #[test]
    fn a_stored_release_decodes_gzipped_or_plain() {
        let release = decode(
            "kube-system/sh.helm.release.v1.legacy.v2",
            &stored("legacy", 2, MANIFEST),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((release.name.as_str(), release.revision), ("legacy", 2));
        assert_eq!(
            apis_in_manifest(&release.manifest),
            [
                ("extensions/v1beta1".to_string(), "Ingress".to_string()),
                ("v1".to_string(), "ConfigMap".to_string())
            ]
        );
        let plain =
            base64::engine::general_purpose::STANDARD.encode(r#"{"name":"p","version":1,"manifest":""}"#);
        assert_eq!(
            decode("x", plain.as_bytes()).map(|r| r.name).ok().as_deref(),
            Some("p")
        );
        let bad = decode("ns/s", b"!!!").map(|_| ()).map_err(|e| e.to_string());
        assert!(
            bad.as_ref()
                .is_err_and(|e| e.starts_with("Secret ns/s: `release` is not base64")),
            "{bad:?}"
        );
        let not_json = base64::engine::general_purpose::STANDARD.encode("[]");
        let bad = decode("ns/s", not_json.as_bytes())
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert!(
            bad.as_ref()
                .is_err_and(|e| e.starts_with("Secret ns/s: `release` is not a Helm release record")),
            "{bad:?}"
        );
    }

    #[test]
    fn only_the_newest_revision_of_each_release_counts() {
        let secret = |name: &str, release: Vec<u8>| -> Secret {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "kube-system"},
                "type": RELEASE_SECRET_TYPE,
                "data": {"release": base64::engine::general_purpose::STANDARD.encode(release)},
            }))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let fixed = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n";
        let secrets = [
            secret("sh.helm.release.v1.legacy.v1", stored("legacy", 1, MANIFEST)),
            secret("sh.helm.release.v1.legacy.v2", stored("legacy", 2, fixed)),
            secret("sh.helm.release.v1.old.v1", stored("old", 1, MANIFEST)),
        ];
        let (releases, errors) = newest_revisions(&secrets);
        assert!(errors.is_empty(), "{errors:?}");
        let seen: Vec<(String, String, String)> = apis_of(&releases)
            .into_iter()
            .map(|a| (a.api_version, a.kind, a.seen_in))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "networking.k8s.io/v1".to_string(),
                    "Ingress".to_string(),
                    "Helm release kube-system/legacy revision 2".to_string()
                ),
                (
                    "extensions/v1beta1".to_string(),
                    "Ingress".to_string(),
                    "Helm release kube-system/old revision 1".to_string()
                ),
                (
                    "v1".to_string(),
                    "ConfigMap".to_string(),
                    "Helm release kube-system/old revision 1".to_string()
                ),
            ]
        );
    }
}
