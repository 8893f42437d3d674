//! csctl's layout of a cluster-stack release in a registry (`csctl create --publish --remote
//! oci`, oras PackManifest v1.1): one image manifest per release, tagged with the release
//! name, `artifactType application/vnd.scs.cluster-stacks.v1`, the empty config, one layer per
//! file of the release directory (in name order) titled `org.opencontainers.image.title`, and
//! the manifest annotations `kubernetesVersion`, `hash` and `org.opencontainers.image.created`.
//!
//! Pure functions: a manifest read into the release's files (every refusal here), and the
//! manifest a release's files are published with.

use std::collections::BTreeSet;

use super::manifest::{
    Annotations, CREATED, Descriptor, ImageManifest, OCI_EMPTY, OCI_MANIFEST, TITLE, sha256_hex,
};

/// The artifact type of a cluster-stack release.
pub const ARTIFACT_TYPE: &str = "application/vnd.scs.cluster-stacks.v1";
/// The manifest annotation with `versions.kubernetes` of `metadata.yaml`.
pub const KUBERNETES_VERSION: &str = "kubernetesVersion";
/// The manifest annotation with the first 7 characters of the stack's content hash.
pub const HASH: &str = "hash";
/// The digest of the empty config `{}`.
pub const EMPTY_DIGEST: &str = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

/// Why a manifest is not a cluster-stack release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("not an OCI image manifest: {0}")]
    NotAManifest(String),
    #[error("not a cluster-stack release: its artifact type is {found:?}, a release's is {ARTIFACT_TYPE:?}")]
    NotARelease { found: String },
    #[error("layer {digest}: {problem}")]
    Layer { digest: String, problem: String },
}

/// One file of a release as the manifest names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerFile {
    pub name: String,
    pub descriptor: Descriptor,
}

/// A release as read from its manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseLayout {
    pub files: Vec<LayerFile>,
    pub kubernetes_version: Option<String>,
    pub hash: Option<String>,
}

/// The media type csctl gives a release file.
pub fn media_type(name: &str) -> &'static str {
    match name {
        "clusteraddon.yaml" => return "application/vnd.scs.cluster-addon.config.layer.v1+yaml",
        "metadata.yaml" => return "application/vnd.scs.metadata.layer.v1+yaml",
        "node-images.yaml" => return "application/vnd.scs.node-image.config.layer.v1+yaml",
        "hashes.json" => return "application/vnd.scs.hashes.layer.v1+yaml",
        _ => {}
    }
    if name.ends_with(".tgz") {
        for (part, media) in [
            (
                "cluster-addon",
                "application/vnd.scs.cluster-addon.layer.v1.tar+gzip",
            ),
            ("cluster-class", "application/vnd.scs.cluster-class.v1.tar+gzip"),
            ("node-image", "application/vnd.scs.node-image.layer.v1.tar+gzip"),
        ] {
            if name.contains(part) {
                return media;
            }
        }
    }
    "application/vnd.oci.image.layer.v1.tar"
}

/// A layer title that is a plain file name: one path segment, not hidden, no control
/// characters (what a release directory can hold and nothing that could leave it).
pub fn check_title(title: &str) -> Result<(), String> {
    if title.is_empty() {
        return Err("its title is empty".into());
    }
    if title.contains(['/', '\\']) || title == "." || title == ".." {
        return Err(format!("its title {title:?} is a path, not a plain file name"));
    }
    if title.starts_with('.') {
        return Err(format!("its title {title:?} is a hidden file name"));
    }
    if title.chars().any(char::is_control) || title.len() > 255 {
        return Err(format!("its title {title:?} is not a plain file name"));
    }
    Ok(())
}

/// Reads a manifest as a release: an image manifest of the cluster-stacks artifact type
/// (`artifactType`, or the config's media type as oras writes v1.0 artifacts), each layer a
/// sha256 blob titled with a plain, unique file name and no larger than `max_size`.
pub fn read_manifest(bytes: &[u8], max_size: u64) -> Result<ReleaseLayout, LayoutError> {
    let m: ImageManifest =
        serde_json::from_slice(bytes).map_err(|e| LayoutError::NotAManifest(e.to_string()))?;
    if m.schema_version != 2 {
        return Err(LayoutError::NotAManifest(format!(
            "schemaVersion {} (expected 2)",
            m.schema_version
        )));
    }
    if let Some(mt) = &m.media_type
        && mt != OCI_MANIFEST
        && mt != super::manifest::DOCKER_MANIFEST
    {
        return Err(LayoutError::NotAManifest(format!("media type {mt:?}")));
    }
    let artifact = m
        .artifact_type
        .clone()
        .unwrap_or_else(|| m.config.media_type.clone());
    if artifact != ARTIFACT_TYPE {
        return Err(LayoutError::NotARelease { found: artifact });
    }
    let mut names = BTreeSet::new();
    let mut files = Vec::new();
    for layer in m.layers {
        let problem = |p: String| LayoutError::Layer {
            digest: layer.digest.clone(),
            problem: p,
        };
        let Some(title) = layer.title().map(str::to_string) else {
            return Err(problem(format!("it has no {TITLE} annotation")));
        };
        check_title(&title).map_err(problem)?;
        if sha256_hex(&layer.digest).is_none() {
            return Err(problem(format!("{title}: only sha256 digests are supported")));
        }
        if layer.size > max_size {
            return Err(problem(format!(
                "{title}: {} bytes is over the limit of {max_size} bytes; not read",
                layer.size
            )));
        }
        if !names.insert(title.clone()) {
            return Err(problem(format!("a second layer titled {title:?}")));
        }
        files.push(LayerFile {
            name: title,
            descriptor: layer,
        });
    }
    let annotation = |k: &str| m.annotations.as_ref().and_then(|a| a.get(k)).map(str::to_string);
    Ok(ReleaseLayout {
        files,
        kubernetes_version: annotation(KUBERNETES_VERSION),
        hash: annotation(HASH),
    })
}

/// The manifest a release is published with: `files` as (name, sha256 hex, size), in name
/// order; annotations in csctl's order. Serialized compactly, as csctl's counterpart does.
pub fn release_manifest(
    files: &[(String, String, u64)],
    kubernetes_version: &str,
    hash: &str,
    created: &str,
) -> Vec<u8> {
    let mut sorted: Vec<&(String, String, u64)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let layers = sorted
        .into_iter()
        .map(|(name, sha, size)| Descriptor {
            media_type: media_type(name).to_string(),
            digest: format!("sha256:{sha}"),
            size: *size,
            data: None,
            annotations: Some(Annotations(vec![(TITLE.to_string(), name.clone())])),
        })
        .collect();
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.into()),
        artifact_type: Some(ARTIFACT_TYPE.into()),
        config: Descriptor {
            media_type: OCI_EMPTY.into(),
            digest: EMPTY_DIGEST.into(),
            size: 2,
            data: Some("e30=".into()),
            annotations: None,
        },
        layers,
        annotations: Some(Annotations(vec![
            (KUBERNETES_VERSION.into(), kubernetes_version.into()),
            (HASH.into(), hash.chars().take(7).collect()),
            (CREATED.into(), created.into()),
        ])),
    };
    // Serializing plain strings and numbers cannot fail.
    serde_json::to_vec(&manifest).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_with(artifact: &str, layers: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "artifactType": artifact,
            "config": {"mediaType": OCI_EMPTY, "digest": EMPTY_DIGEST, "size": 2},
            "layers": layers,
            "annotations": {"kubernetesVersion": "v1.27.3", "hash": ""},
        }))
        .unwrap()
    }

    fn layer(title: &str, size: u64) -> serde_json::Value {
        serde_json::json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": format!("sha256:{}", "a".repeat(64)),
            "size": size,
            "annotations": {TITLE: title},
        })
    }

    proptest::proptest! {
        /// A registry's manifest is untrusted input: any bytes are read or refused, never a
        /// panic; what is read has only plain, unique titles within the limit.
        #[test]
        fn any_manifest_is_read_or_refused(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            if let Ok(layout) = read_manifest(&bytes, 1000) {
                for f in &layout.files {
                    proptest::prop_assert!(check_title(&f.name).is_ok());
                    proptest::prop_assert!(f.descriptor.size <= 1000);
                }
            }
        }

        #[test]
        fn any_title_shaped_manifest_is_checked(title in "\\PC{0,12}", size in 0u64..2000) {
            let bytes = manifest_with(ARTIFACT_TYPE, serde_json::json!([layer(&title, size)]));
            match read_manifest(&bytes, 1000) {
                Ok(l) => {
                    proptest::prop_assert_eq!(&l.files[0].name, &title);
                    proptest::prop_assert!(!title.contains('/') && !title.starts_with('.') && size <= 1000);
                }
                Err(_) => proptest::prop_assert!(title.contains(['/', '\\']) || title.starts_with('.') || title.is_empty() || title.chars().any(char::is_control) || size > 1000),
            }
        }
    }

    #[test]
    fn the_empty_config_digest_is_that_of_braces() {
        use sha2::Digest;
        assert_eq!(
            EMPTY_DIGEST,
            format!("sha256:{}", crate::cache::hex(&sha2::Sha256::digest(b"{}")))
        );
    }

    #[test]
    fn manifests_read_as_releases_or_refused() {
        let ok = read_manifest(
            &manifest_with(ARTIFACT_TYPE, serde_json::json!([layer("metadata.yaml", 10)])),
            100,
        )
        .unwrap();
        assert_eq!(ok.files[0].name, "metadata.yaml");
        assert_eq!(ok.kubernetes_version.as_deref(), Some("v1.27.3"));
        let refused: &[(Vec<u8>, &str)] = &[
            (
                manifest_with("application/vnd.cncf.helm.config.v1+json", serde_json::json!([])),
                "not a cluster-stack release",
            ),
            (
                manifest_with(ARTIFACT_TYPE, serde_json::json!([layer("../x", 1)])),
                "is a path",
            ),
            (
                manifest_with(ARTIFACT_TYPE, serde_json::json!([layer("a/b", 1)])),
                "is a path",
            ),
            (
                manifest_with(ARTIFACT_TYPE, serde_json::json!([layer("..", 1)])),
                "is a path",
            ),
            (
                manifest_with(ARTIFACT_TYPE, serde_json::json!([layer(".hidden", 1)])),
                "hidden",
            ),
            (
                manifest_with(ARTIFACT_TYPE, serde_json::json!([layer("", 1)])),
                "empty",
            ),
            (
                manifest_with(ARTIFACT_TYPE, serde_json::json!([layer("big.tgz", 101)])),
                "over the limit of 100 bytes",
            ),
            (
                manifest_with(ARTIFACT_TYPE, serde_json::json!([layer("a", 1), layer("a", 1)])),
                "a second layer",
            ),
            (b"{\"schemaVersion\":1}".to_vec(), "not an OCI image manifest"),
            (b"[]".to_vec(), "not an OCI image manifest"),
        ];
        for (bytes, want) in refused {
            let err = read_manifest(bytes, 100).unwrap_err().to_string();
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    #[test]
    fn media_types_are_csctls() {
        for (name, want) in [
            ("metadata.yaml", "application/vnd.scs.metadata.layer.v1+yaml"),
            (
                "docker-ferrol-1-27-cluster-addon-v1.tgz",
                "application/vnd.scs.cluster-addon.layer.v1.tar+gzip",
            ),
            (
                "docker-ferrol-1-27-cluster-class-v1.tgz",
                "application/vnd.scs.cluster-class.v1.tar+gzip",
            ),
            ("topology-docker.yaml", "application/vnd.oci.image.layer.v1.tar"),
            ("hashes.json", "application/vnd.scs.hashes.layer.v1+yaml"),
        ] {
            assert_eq!(media_type(name), want, "{name}");
        }
    }

    #[test]
    fn published_manifests_read_back() {
        let files = vec![
            ("metadata.yaml".to_string(), "b".repeat(64), 5),
            ("a.tgz".to_string(), "c".repeat(64), 7),
        ];
        let bytes = release_manifest(&files, "v1.27.3", "abcdefghij", "2026-01-01T00:00:00Z");
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.ends_with(
            r#""annotations":{"kubernetesVersion":"v1.27.3","hash":"abcdefg","org.opencontainers.image.created":"2026-01-01T00:00:00Z"}}"#
        ));
        let back = read_manifest(&bytes, 10).unwrap();
        let names: Vec<_> = back.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a.tgz", "metadata.yaml"]);
    }
}
