//! Copying into another registry for an air gap (`capstan releases mirror`): a release
//! manifest with its blobs byte for byte (the same digest, so its cosign signatures still
//! apply), its signature manifest and its Sigstore bundles (referrers), as `cosign copy` does; `oci://` charts copied the same
//! way; charts of Helm repositories pushed as OCI charts with Helm's media types (their `.prov`
//! as the provenance layer); and the `--repository-mirror` mapping that sends a render's
//! chart repositories to the copies.

use bytes::Bytes;

use crate::charts::oci::{HELM_CHART_LAYER, HELM_CONFIG};
use crate::verify::provenance::PROVENANCE_LAYER;
use crate::verify::{bundle, cosign};

use super::client::{Client, OciError};
use super::manifest::{Descriptor, ImageManifest, OCI_INDEX, OCI_MANIFEST};
use super::release::OciRepo;

/// What a release copy did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopySummary {
    pub digest: String,
    /// Blobs uploaded (the others were in the destination already).
    pub blobs_copied: usize,
    /// Whether a cosign signature manifest was copied along.
    pub signature: bool,
    /// Sigstore bundles (cosign v3 signatures, OCI referrers of the manifest) copied along.
    pub bundles: usize,
}

/// The repository that holds the charts of a mirror at `dst`: `DST/charts`.
pub fn charts_repo(dst: &OciRepo) -> OciRepo {
    OciRepo {
        host: dst.host.clone(),
        repository: format!("{}/charts", dst.repository),
    }
}

/// The `--repository-mirror` entry that sends `repository` (as a Chart.yaml writes it) to the
/// charts of the mirror at `dst`: `FROM=TO` without a trailing `/`.
pub fn mirror_entry(repository: &str, dst: &OciRepo) -> String {
    format!("{}={}", repository.trim_end_matches('/'), charts_repo(dst))
}

/// The tag of chart version `version` in a registry (`+` is not allowed in a tag; Helm writes
/// `_`).
pub fn chart_tag(version: &str) -> String {
    version.replace('+', "_")
}

async fn copy_blob(
    src_client: &Client,
    src: &OciRepo,
    dst_client: &Client,
    dst: &OciRepo,
    desc: &Descriptor,
) -> Result<bool, OciError> {
    if dst_client.blob_exists(&dst.repository, &desc.digest).await? {
        return Ok(false);
    }
    let mut data = Vec::with_capacity(desc.size.min(64 << 20) as usize);
    src_client
        .blob(&src.repository, desc, "mirrored blob", |chunk| {
            data.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
    let pushed = dst_client.push_blob(&dst.repository, Bytes::from(data)).await?;
    if pushed != desc.digest {
        return Err(OciError::Digest {
            what: format!("blob {} copied to {dst}", desc.digest),
            message: format!("the copy has digest {pushed}"),
        });
    }
    Ok(true)
}

/// Copies the manifest `reference` names (its config and layers first) and returns its digest
/// and the number of blobs uploaded; `None` when the source has no such manifest.
async fn copy_manifest(
    src_client: &Client,
    src: &OciRepo,
    dst_client: &Client,
    dst: &OciRepo,
    reference: &str,
    tag: &str,
) -> Result<Option<(String, usize)>, OciError> {
    let manifest = match src_client.manifest(&src.repository, reference).await {
        Ok(m) => m,
        Err(OciError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let image: ImageManifest = serde_json::from_slice(&manifest.bytes).map_err(|e| OciError::Invalid {
        url: format!("{src}:{reference}"),
        message: format!("not an image manifest: {e}"),
    })?;
    let mut copied = 0;
    for desc in std::iter::once(&image.config).chain(&image.layers) {
        if copy_blob(src_client, src, dst_client, dst, desc).await? {
            copied += 1;
        }
    }
    let media_type = manifest.media_type.as_deref().unwrap_or(OCI_MANIFEST);
    let digest = dst_client
        .put_manifest(&dst.repository, tag, media_type, manifest.bytes.clone())
        .await?;
    Ok(Some((digest, copied)))
}

/// Copies release `tag` of `src` to `dst` under the same tag, byte for byte, and its cosign
/// signature manifest (`sha256-<hex>.sig`) when there is one.
pub async fn copy_release(
    src_client: &Client,
    src: &OciRepo,
    dst_client: &Client,
    dst: &OciRepo,
    tag: &str,
) -> Result<CopySummary, OciError> {
    copy_signed(src_client, src, dst_client, dst, tag, "release").await
}

/// Copies the OCI chart `src:tag` to `DST/charts/NAME:tag` as [`copy_release`] copies a
/// release (byte for byte, with its provenance layer and cosign signature manifest), so a
/// render in the air gap verifies it as it would upstream.
pub async fn copy_chart(
    src_client: &Client,
    src: &OciRepo,
    dst_client: &Client,
    dst: &OciRepo,
    name: &str,
    tag: &str,
) -> Result<CopySummary, OciError> {
    let charts = charts_repo(dst);
    let to = OciRepo {
        host: charts.host,
        repository: format!("{}/{name}", charts.repository),
    };
    copy_signed(src_client, src, dst_client, &to, tag, "chart").await
}

async fn copy_signed(
    src_client: &Client,
    src: &OciRepo,
    dst_client: &Client,
    dst: &OciRepo,
    tag: &str,
    what: &str,
) -> Result<CopySummary, OciError> {
    let (digest, mut blobs_copied) = copy_manifest(src_client, src, dst_client, dst, tag, tag)
        .await?
        .ok_or_else(|| OciError::NotFound {
            registry: src.host.clone(),
            what: format!("{what} {src}:{tag}"),
            message: "no such tag".into(),
        })?;
    let mut signature = false;
    if let Some(sig_tag) = cosign::signature_tag(&digest)
        && let Some((_, n)) = copy_manifest(src_client, src, dst_client, dst, &sig_tag, &sig_tag).await?
    {
        blobs_copied += n;
        signature = true;
    }
    let (bundles, n) = copy_bundles(src_client, src, dst_client, dst, &digest).await?;
    blobs_copied += n;
    Ok(CopySummary {
        digest,
        blobs_copied,
        signature,
        bundles,
    })
}

/// Copies the Sigstore bundles that refer to manifest `digest` in `src` (listed by the
/// referrers API, else by the index at the `sha256-<hex>` tag): each bundle manifest by its
/// digest, then an index of them at that tag, so that a reader finds them in `dst` with or
/// without a referrers API there. Returns the bundles and the blobs copied.
async fn copy_bundles(
    src_client: &Client,
    src: &OciRepo,
    dst_client: &Client,
    dst: &OciRepo,
    digest: &str,
) -> Result<(usize, usize), OciError> {
    let Some(index) = super::signature::referrers_index(src_client, src, digest).await? else {
        return Ok((0, 0));
    };
    let tag = bundle::referrers_tag(digest).ok_or_else(|| OciError::BadReference(digest.to_string()))?;
    let invalid = |message: String| OciError::Invalid {
        url: format!("{src}@{digest}"),
        message: format!("referrers: {message}"),
    };
    let manifests = bundle::bundle_manifests(&index).map_err(invalid)?;
    if manifests.is_empty() {
        return Ok((0, 0));
    }
    let mut blobs = 0;
    for at in &manifests {
        if let Some((_, n)) = copy_manifest(src_client, src, dst_client, dst, at, at).await? {
            blobs += n;
        }
    }
    let only = bundle::only_bundles(&index).map_err(invalid)?;
    dst_client
        .put_manifest(&dst.repository, &tag, OCI_INDEX, Bytes::from(only))
        .await?;
    Ok((manifests.len(), blobs))
}

/// A chart archive to push as an OCI chart, with its Helm provenance when it has one.
#[derive(Clone, Debug)]
pub struct ChartToPush {
    pub name: String,
    pub version: String,
    pub archive: Vec<u8>,
    /// The chart's metadata as JSON (the config blob, as `helm push` writes it).
    pub metadata: serde_json::Value,
    /// The `.prov` text, pushed as the provenance layer (as `helm push` does with one).
    pub provenance: Option<String>,
}

/// Pushes a chart archive as an OCI chart `DST/charts/NAME:VERSION` (Helm's config, chart and
/// provenance layer media types). Returns the manifest digest.
pub async fn push_chart(client: &Client, dst: &OciRepo, chart: ChartToPush) -> Result<String, OciError> {
    let repo = format!("{}/{}", charts_repo(dst).repository, chart.name);
    let config = Bytes::from(chart.metadata.to_string());
    let config_desc = descriptor(HELM_CONFIG, &config);
    client.push_blob(&repo, config).await?;
    let mut layers = Vec::new();
    for (media_type, data) in [
        (HELM_CHART_LAYER, Some(chart.archive)),
        (PROVENANCE_LAYER, chart.provenance.map(String::into_bytes)),
    ] {
        let Some(data) = data else { continue };
        let data = Bytes::from(data);
        layers.push(descriptor(media_type, &data));
        client.push_blob(&repo, data).await?;
    }
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.into()),
        artifact_type: None,
        config: config_desc,
        layers,
        annotations: None,
    };
    let body = serde_json::to_vec(&manifest).map_err(|e| OciError::Invalid {
        url: repo.clone(),
        message: e.to_string(),
    })?;
    client
        .put_manifest(&repo, &chart_tag(&chart.version), OCI_MANIFEST, Bytes::from(body))
        .await
}

fn descriptor(media_type: &str, data: &[u8]) -> Descriptor {
    use sha2::{Digest, Sha256};
    Descriptor {
        media_type: media_type.into(),
        digest: format!("sha256:{}", crate::cache::hex(&Sha256::digest(data))),
        size: data.len() as u64,
        data: None,
        annotations: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_entries_name_the_charts_repository() {
        let dst = OciRepo::parse("oci://registry.local:5000/airgap/stacks").unwrap();
        assert_eq!(
            charts_repo(&dst).to_string(),
            "oci://registry.local:5000/airgap/stacks/charts"
        );
        assert_eq!(
            mirror_entry("https://helm.cilium.io/", &dst),
            "https://helm.cilium.io=oci://registry.local:5000/airgap/stacks/charts"
        );
        assert_eq!(
            mirror_entry("oci://ghcr.io/org/charts", &dst),
            "oci://ghcr.io/org/charts=oci://registry.local:5000/airgap/stacks/charts"
        );
        assert_eq!(chart_tag("1.2.3+build.4"), "1.2.3_build.4");
    }
}
