//! Cosign signatures of releases in a registry (the pure parts are [`crate::verify`]): read the
//! signatures of a manifest from its `sha256-<hex>.sig` tag, verify a pulled release against a
//! policy — recorded in the cache next to the release (`state/verified/<release key>.json`:
//! digest and signer), so a release verified at that digest under a trusted key is not verified
//! again — and sign a manifest (a layer appended to the signature manifest, as `cosign sign`).
//! Sigstore bundles (cosign v3) are read from the manifest's referrers: the registry's
//! referrers API, or the index at the tag `sha256-<hex>` where it has none.

use bytes::Bytes;

use crate::cache::{Cache, CacheError};
use crate::verify::bundle::{self, Bundle};
use crate::verify::cosign::{self, MAX_PAYLOAD, Signature};
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

/// The Sigstore bundles among the referrers of `digest`: listed by the referrers API, or by
/// the index at the tag `sha256-<hex>` when the registry has no such API (none when neither
/// has one).
pub async fn bundles(client: &Client, repo: &OciRepo, digest: &str) -> Result<Vec<Bundle>, OciError> {
    let invalid = |what: &str, message: String| OciError::Invalid {
        url: format!("{repo}@{what}"),
        message,
    };
    let Some(index) = referrers_index(client, repo, digest).await? else {
        return Ok(Vec::new());
    };
    let manifests =
        bundle::bundle_manifests(&index).map_err(|m| invalid(digest, format!("referrers: {m}")))?;
    let mut out = Vec::with_capacity(manifests.len());
    for at in manifests {
        let manifest = client.manifest(&repo.repository, &at).await?;
        let layer = bundle::bundle_layer(&manifest.bytes).map_err(|m| invalid(&at, m))?;
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
        out.push(bundle::parse(&bytes).map_err(|m| invalid(&at, format!("the Sigstore bundle: {m}")))?);
    }
    Ok(out)
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

/// Every signature of `digest` (none when it has no signature manifest).
pub async fn signatures(client: &Client, repo: &OciRepo, digest: &str) -> Result<Vec<Signature>, OciError> {
    let Some(manifest) = signature_manifest(client, repo, digest).await? else {
        return Ok(Vec::new());
    };
    let layers = cosign::signature_layers(&manifest).map_err(|message| OciError::Invalid {
        url: format!("{repo}:{}", cosign::signature_tag(digest).unwrap_or_default()),
        message,
    })?;
    let mut out = Vec::with_capacity(layers.len());
    for (layer, signature) in layers {
        let payload = read_payload(client, repo, &layer).await?;
        let annotation = |name: &str| {
            layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(name))
                .map(str::to_string)
        };
        out.push(Signature {
            certificate: annotation(cosign::CERTIFICATE_ANNOTATION),
            bundle: annotation(cosign::BUNDLE_ANNOTATION),
            payload,
            signature,
        });
    }
    Ok(out)
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
    let sigs = signatures(client, repo, digest).await.map_err(oci_err)?;
    // The referrers are read only when no `.sig` signature passes: a release signed the older
    // way costs no more requests than before.
    let verified = match crate::verify::policy::verify(policy, digest, &sigs) {
        Ok(v) => Ok(v),
        Err(_) => {
            let bundles = bundles(client, repo, digest).await.map_err(oci_err)?;
            crate::verify::policy::verify_all(policy, digest, &sigs, &bundles)
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
