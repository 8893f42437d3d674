//! Cosign signatures of releases in a registry (the pure parts are [`crate::verify`]): read the
//! signatures of a manifest from its `sha256-<hex>.sig` tag, verify a pulled release against a
//! policy — recorded in the cache next to the release (`state/verified/<release key>.json`:
//! digest and signer), so a release verified at that digest under a trusted key is not verified
//! again — and sign a manifest (a layer appended to the signature manifest, as `cosign sign`).
//! Sigstore bundles (cosign v3) are read from the manifest's referrers: the registry's
//! referrers API, or the index at the tag `sha256-<hex>` where it has none. A signature or
//! bundle that cannot be read is skipped and named: one that verifies suffices.

use bytes::Bytes;

use crate::cache::{Cache, CacheError};
use crate::verify::bundle;
use crate::verify::cosign::{self, MAX_PAYLOAD, Signature};
use crate::verify::verdict::{Found, verify_found};
use crate::verify::{Policy, Refusal, SigningKey, Verified};

use super::client::{Client, OciError};
use super::manifest::{Descriptor, OCI_MANIFEST};
use super::release::OciRepo;

/// A release that could not be verified; each names the release.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    #[error("{repo}:{tag}: not verified: {refusal}")]
    Refused {
        repo: String,
        tag: String,
        #[source]
        refusal: Refusal,
    },
    #[error("{repo}:{tag}: reading its signatures: {source}")]
    Oci {
        repo: String,
        tag: String,
        #[source]
        source: OciError,
    },
    #[error("{repo}:{tag}: recording the verification: {source}")]
    Cache {
        repo: String,
        tag: String,
        #[source]
        source: CacheError,
    },
    #[error("{repo}: {digest} is not a sha256 digest")]
    BadDigest { repo: String, digest: String },
    #[error("signing {repo}@{digest}: {source}")]
    Sign {
        repo: String,
        digest: String,
        #[source]
        source: crate::verify::KeyError,
    },
    #[error("signing {repo}@{digest}: {source}")]
    Push {
        repo: String,
        digest: String,
        #[source]
        source: OciError,
    },
}

impl SignatureError {
    /// The refusal, when the signatures were read and did not pass.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            SignatureError::Refused { refusal, .. } => Some(refusal),
            _ => None,
        }
    }
}

/// `HOST/REPO`, the `docker-reference` of a payload.
fn docker_reference(repo: &OciRepo) -> String {
    format!("{}/{}", repo.host, repo.repository)
}

/// The signature manifest of `digest`, `None` when there is none.
async fn signature_manifest(
    client: &Client,
    repo: &OciRepo,
    digest: &str,
) -> Result<Option<Bytes>, OciError> {
    let Some(tag) = cosign::signature_tag(digest) else {
        return Err(OciError::BadReference(digest.to_string()));
    };
    match client.manifest(&repo.repository, &tag).await {
        Ok(m) => Ok(Some(m.bytes)),
        Err(OciError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether the registry holds a cosign signature of `digest` (one `HEAD`), or else a
/// referrers index at the fallback tag `sha256-<hex>` (a second; a registry with the
/// referrers API alone is not asked).
pub async fn is_signed(client: &Client, repo: &OciRepo, digest: &str) -> Result<bool, OciError> {
    let (Some(tag), Some(fallback)) = (cosign::signature_tag(digest), bundle::referrers_tag(digest)) else {
        return Ok(false);
    };
    if client.head_manifest(&repo.repository, &tag).await?.is_some() {
        return Ok(true);
    }
    Ok(client.head_manifest(&repo.repository, &fallback).await?.is_some())
}

/// Whether `e` says the thing read is missing or malformed (skipped as unreadable), rather
/// than that the registry could not be asked (an error of the whole verification).
fn is_unreadable(e: &OciError) -> bool {
    matches!(
        e,
        OciError::NotFound { .. }
            | OciError::Invalid { .. }
            | OciError::TooLarge { .. }
            | OciError::Digest { .. }
            | OciError::BadReference(_)
    )
}

/// `result`, or `None` with its error recorded in `found` as unreadable `what` when it is
/// about the thing read; a transport error is returned.
fn or_unreadable<T>(
    result: Result<T, OciError>,
    what: &str,
    found: &mut Found,
) -> Result<Option<T>, OciError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if is_unreadable(&e) => {
            found.unreadable.push((what.to_string(), e.to_string()));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The bytes of the Sigstore bundle in the bundle manifest `at`.
async fn read_bundle(client: &Client, repo: &OciRepo, at: &str) -> Result<Vec<u8>, OciError> {
    let manifest = client.manifest(&repo.repository, at).await?;
    let layer = bundle::bundle_layer(&manifest.bytes).map_err(|message| OciError::Invalid {
        url: format!("{repo}@{at}"),
        message,
    })?;
    if layer.size > bundle::MAX_BUNDLE {
        return Err(OciError::TooLarge {
            what: format!("Sigstore bundle {}", layer.digest),
            size: layer.size,
            limit: bundle::MAX_BUNDLE,
        });
    }
    let mut bytes = Vec::with_capacity(layer.size as usize);
    client
        .blob(&repo.repository, &layer, "Sigstore bundle", |chunk| {
            bytes.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
    Ok(bytes)
}

/// The Sigstore bundles among the referrers of `digest`: listed by the referrers API, or by
/// the index at the tag `sha256-<hex>` when the registry has no such API (none when neither
/// has one). A bundle that cannot be read (its manifest or blob missing or malformed, its JSON
/// not a bundle) is recorded in `found` as unreadable, named by its manifest's digest.
pub async fn bundles(
    client: &Client,
    repo: &OciRepo,
    digest: &str,
    found: &mut Found,
) -> Result<(), OciError> {
    let Some(index) = referrers_index(client, repo, digest).await? else {
        return Ok(());
    };
    let manifests = match bundle::bundle_manifests(&index) {
        Ok(m) => m,
        Err(m) => {
            found.unreadable.push((format!("the referrers of {digest}"), m));
            return Ok(());
        }
    };
    for at in manifests {
        let what = format!("Sigstore bundle {at}");
        let Some(bytes) = or_unreadable(read_bundle(client, repo, &at).await, &what, found)? else {
            continue;
        };
        match bundle::parse(&bytes) {
            Ok(b) => found.bundles.push((what, b)),
            Err(m) => found.unreadable.push((what, m)),
        }
    }
    Ok(())
}

/// The index of the referrers of `digest`: the referrers API's answer, or the index at the
/// tag `sha256-<hex>` when the registry has no such API; `None` when neither has one.
pub async fn referrers_index(
    client: &Client,
    repo: &OciRepo,
    digest: &str,
) -> Result<Option<Bytes>, OciError> {
    if let Some(index) = client.referrers(&repo.repository, digest).await? {
        return Ok(Some(index));
    }
    let tag = bundle::referrers_tag(digest).ok_or_else(|| OciError::BadReference(digest.to_string()))?;
    match client.manifest(&repo.repository, &tag).await {
        Ok(m) => Ok(Some(m.bytes)),
        Err(OciError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

async fn read_payload(client: &Client, repo: &OciRepo, layer: &Descriptor) -> Result<Vec<u8>, OciError> {
    if layer.size > MAX_PAYLOAD {
        return Err(OciError::TooLarge {
            what: format!("signature payload {}", layer.digest),
            size: layer.size,
            limit: MAX_PAYLOAD,
        });
    }
    let mut payload = Vec::with_capacity(layer.size as usize);
    client
        .blob(&repo.repository, layer, "signature payload", |chunk| {
            payload.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
    Ok(payload)
}

/// The signatures of `digest` into `found` (none when it has no signature manifest): a
/// signature manifest that is not one, or a payload that cannot be read, is recorded as
/// unreadable.
async fn read_signatures(
    client: &Client,
    repo: &OciRepo,
    digest: &str,
    found: &mut Found,
) -> Result<(), OciError> {
    let Some(manifest) = signature_manifest(client, repo, digest).await? else {
        return Ok(());
    };
    let tag = cosign::signature_tag(digest).unwrap_or_default();
    let layers = match cosign::signature_layers(&manifest) {
        Ok(layers) => layers,
        Err(message) => {
            found
                .unreadable
                .push((format!("the signature manifest {tag}"), message));
            return Ok(());
        }
    };
    for (i, (layer, signature)) in layers.into_iter().enumerate() {
        let what = format!("{tag} signature {}", i + 1);
        let Some(payload) = or_unreadable(read_payload(client, repo, &layer).await, &what, found)? else {
            continue;
        };
        let annotation = |name: &str| {
            layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(name))
                .map(str::to_string)
        };
        found.signatures.push((
            what,
            Signature {
                certificate: annotation(cosign::CERTIFICATE_ANNOTATION),
                bundle: annotation(cosign::BUNDLE_ANNOTATION),
                payload,
                signature,
            },
        ));
    }
    Ok(())
}

fn state_key(repo: &OciRepo, tag: &str) -> String {
    format!("verified/{}", repo.key(tag))
}

/// The recorded verification of `repo:tag`, when it was of `digest` by a key `policy` trusts.
pub fn cached_verification(
    cache: &Cache,
    repo: &OciRepo,
    tag: &str,
    digest: &str,
    policy: &Policy,
) -> Option<Verified> {
    let bytes = cache.read_state(&state_key(repo, tag)).ok()??;
    let recorded: Verified = serde_json::from_slice(&bytes).ok()?;
    (recorded.digest == digest && policy.trusts(&recorded)).then_some(recorded)
}

/// Verifies release `tag` of `repo`, pulled at manifest `digest`, against `policy`: the
/// recorded verification when it still holds, else the signatures read from the registry,
/// and a pass recorded in the cache.
pub async fn verify(
    client: &Client,
    cache: &Cache,
    repo: &OciRepo,
    tag: &str,
    digest: &str,
    policy: &Policy,
) -> Result<Verified, SignatureError> {
    if let Some(v) = cached_verification(cache, repo, tag, digest, policy) {
        return Ok(v);
    }
    let oci_err = |source| SignatureError::Oci {
        repo: repo.to_string(),
        tag: tag.to_string(),
        source,
    };
    let mut found = Found::default();
    read_signatures(client, repo, digest, &mut found)
        .await
        .map_err(oci_err)?;
    // The referrers are read only when no `.sig` signature passes: a release signed the older
    // way costs no more requests than before.
    let verified = match verify_found(policy, digest, &found) {
        Ok(v) => Ok(v),
        Err(_) => {
            bundles(client, repo, digest, &mut found).await.map_err(oci_err)?;
            verify_found(policy, digest, &found)
        }
    }
    .map_err(|refusal| SignatureError::Refused {
        repo: repo.to_string(),
        tag: tag.to_string(),
        refusal,
    })?;
    let record = serde_json::to_vec(&verified).unwrap_or_default();
    cache
        .write_state(&state_key(repo, tag), &record)
        .map_err(|source| SignatureError::Cache {
            repo: repo.to_string(),
            tag: tag.to_string(),
            source,
        })?;
    Ok(verified)
}

/// Signs the manifest `digest` of `repo` with `key` in cosign's format; returns the signature
/// tag. A signature manifest already there keeps its signatures.
pub async fn sign(
    client: &Client,
    repo: &OciRepo,
    digest: &str,
    key: &SigningKey,
) -> Result<String, SignatureError> {
    let push_err = |source| SignatureError::Push {
        repo: repo.to_string(),
        digest: digest.to_string(),
        source,
    };
    let tag = cosign::signature_tag(digest).ok_or_else(|| SignatureError::BadDigest {
        repo: repo.to_string(),
        digest: digest.to_string(),
    })?;
    let payload = cosign::payload(&docker_reference(repo), digest);
    let der = key.sign(&payload).map_err(|source| SignatureError::Sign {
        repo: repo.to_string(),
        digest: digest.to_string(),
        source,
    })?;
    let layer = cosign::payload_layer(&payload, &cosign::encode_signature(&der));
    let existing = signature_manifest(client, repo, digest).await.map_err(push_err)?;
    let (config, manifest) = cosign::signature_manifest(existing.as_deref(), layer);
    client
        .push_blob(&repo.repository, Bytes::from(payload))
        .await
        .map_err(push_err)?;
    client
        .push_blob(&repo.repository, Bytes::from(config))
        .await
        .map_err(push_err)?;
    client
        .put_manifest(&repo.repository, &tag, OCI_MANIFEST, Bytes::from(manifest))
        .await
        .map_err(push_err)?;
    Ok(tag)
}
