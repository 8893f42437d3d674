//! `metadata.yaml`: the versions a release is made of.
//!
//! ```yaml
//! apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1
//! versions:
//!   clusterStack: v2          # the release's own version (dot form)
//!   kubernetes: v1.27.3       # the Kubernetes release the addon charts are rendered for
//!   components:
//!     clusterAddon: v2        # names the addon asset; may lag behind clusterStack
//!     nodeImage: v1           # optional
//! capstan:                    # optional, capstan's own (the reference operator ignores it)
//!   valuesTemplateAPIVersion: cluster.x-k8s.io/v1beta2
//! ```
//!
//! Every field is checked on load: versions must parse ([`Version::parse`], dot form) and the
//! Kubernetes version must be `v<major>.<minor>.<patch>`. Unknown fields are ignored, as the
//! reference operator does.
//!
//! `capstan.valuesTemplateAPIVersion` says in which Cluster API version the values templates
//! see `.Cluster`: `cluster.x-k8s.io/v1beta1` (the default: the cluster-stack operator's
//! view, also on a v1beta2 management cluster) or `cluster.x-k8s.io/v1beta2` (the object as
//! Cluster API v1.11+ stores it). A stack source says it in `csctl.yaml` under the same key;
//! `capstan releases build` copies it here.

use std::path::Path;

use super::capi::CapiVersion;
use super::doc::{DocumentError, read_text, with_root};
use super::name::KubernetesVersion;
use super::version::Version;

/// The `apiVersion` of `metadata.yaml`.
pub const METADATA_API_VERSION: &str = "metadata.clusterstack.x-k8s.io/v1alpha1";

/// The file name of the metadata in a release.
pub const METADATA_FILE: &str = "metadata.yaml";

/// A validated `metadata.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// `versions.clusterStack`.
    pub cluster_stack: Version,
    /// `versions.kubernetes`, as written (`v1.27.3`; validated).
    pub kubernetes: String,
    /// `versions.components.clusterAddon`.
    pub cluster_addon: Version,
    /// `versions.components.nodeImage`, when present.
    pub node_image: Option<Version>,
    /// `capstan.valuesTemplateAPIVersion`: the shape of `.Cluster` in the values templates.
    pub values_template_api: CapiVersion,
}

impl Metadata {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Metadata, DocumentError> {
        Metadata::parse(&read_text(path)?, path)
    }

    /// Validates the text of a `metadata.yaml`; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Metadata, DocumentError> {
        with_root(text, file, |root| {
            let api_version = root.required_string("apiVersion")?;
            if api_version != METADATA_API_VERSION {
                return Err(DocumentError::field(
                    file,
                    "apiVersion",
                    format!("expected {METADATA_API_VERSION:?}, found {api_version:?}"),
                ));
            }
            root.with_field("versions", |versions| {
                let Some(versions) = versions else {
                    return Err(DocumentError::field(file, "versions", "is missing"));
                };
                let version = |node: &super::doc::Node<'_>, key: &str| {
                    let text = node.required_string(key)?;
                    Version::parse(&text).map_err(|e| {
                        DocumentError::field(file, &format!("{}.{key}", node.path()), e.to_string())
                    })
                };
                let cluster_stack = version(&versions, "clusterStack")?;
                let kubernetes = versions.required_string("kubernetes")?;
                KubernetesVersion::parse_release(&kubernetes)
                    .map_err(|e| DocumentError::field(file, "versions.kubernetes", e.to_string()))?;
                let (cluster_addon, node_image) = versions.with_field("components", |components| {
                    let Some(components) = components else {
                        return Err(DocumentError::field(file, "versions.components", "is missing"));
                    };
                    let cluster_addon = version(&components, "clusterAddon")?;
                    let node_image = match components.optional_string("nodeImage")? {
                        None => None,
                        Some(text) => Some(Version::parse(&text).map_err(|e| {
                            DocumentError::field(file, "versions.components.nodeImage", e.to_string())
                        })?),
                    };
                    Ok((cluster_addon, node_image))
                })?;
                Ok((cluster_stack, kubernetes, cluster_addon, node_image))
            })
            .and_then(|(cluster_stack, kubernetes, cluster_addon, node_image)| {
                Ok(Metadata {
                    cluster_stack,
                    kubernetes,
                    cluster_addon,
                    node_image,
                    values_template_api: values_template_api(&root)?,
                })
            })
        })
    }

    /// The Kubernetes minor line of `versions.kubernetes` (`1.27` for `v1.27.3`).
    pub fn kubernetes_minor(&self) -> KubernetesVersion {
        // Validated on construction by `parse`; a hand-built value falls back to 0.0.
        KubernetesVersion::parse_release(&self.kubernetes).unwrap_or(KubernetesVersion { major: 0, minor: 0 })
    }

    /// The file's text in the layout of published releases.
    pub fn to_yaml(&self) -> String {
        let mut out = format!(
            "apiVersion: {METADATA_API_VERSION}\nversions:\n  clusterStack: {}\n  kubernetes: {}\n  components:\n    clusterAddon: {}\n",
            self.cluster_stack, self.kubernetes, self.cluster_addon
        );
        if let Some(node_image) = &self.node_image {
            out.push_str(&format!("    nodeImage: {node_image}\n"));
        }
        if self.values_template_api != CapiVersion::V1Beta1 {
            out.push_str(&format!(
                "capstan:\n  {VALUES_TEMPLATE_API_FIELD}: {}\n",
                self.values_template_api.api_version()
            ));
        }
        out
    }
}

/// The key below `capstan:` (in `metadata.yaml` and `csctl.yaml`) naming the Cluster API
/// version values templates see.
pub const VALUES_TEMPLATE_API_FIELD: &str = "valuesTemplateAPIVersion";

/// `capstan.valuesTemplateAPIVersion` of a `metadata.yaml` or `csctl.yaml` (default v1beta1).
pub(crate) fn values_template_api(root: &super::doc::Node<'_>) -> Result<CapiVersion, DocumentError> {
    root.with_field("capstan", |capstan| {
        let Some(capstan) = capstan else {
            return Ok(CapiVersion::V1Beta1);
        };
        capstan.with_field(VALUES_TEMPLATE_API_FIELD, |field| {
            let Some(field) = field else {
                return Ok(CapiVersion::V1Beta1);
            };
            let text = field.string()?;
            CapiVersion::of_api_version(&text).ok_or_else(|| {
                field.error(format!(
                    "expected cluster.x-k8s.io/v1beta1 or cluster.x-k8s.io/v1beta2, found {text:?}"
                ))
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: v3\n  kubernetes: v1.27.3\n  components:\n    clusterAddon: v2\n    nodeImage: v2\n";

    fn parse(text: &str) -> Result<Metadata, DocumentError> {
        Metadata::parse(text, Path::new("rel/metadata.yaml"))
    }

    #[test]
    fn parses_and_round_trips() {
        let m = parse(GOOD).unwrap();
        assert_eq!(m.cluster_stack, Version::parse("v3").unwrap());
        assert_eq!(m.cluster_addon, Version::parse("v2").unwrap());
        assert_eq!(m.node_image, Some(Version::parse("v2").unwrap()));
        assert_eq!(m.kubernetes, "v1.27.3");
        assert_eq!(m.kubernetes_minor(), KubernetesVersion::new(1, 27));
        assert_eq!(m.to_yaml(), GOOD);
        assert_eq!(m.values_template_api, CapiVersion::V1Beta1);
        let v1beta2 = format!("{GOOD}capstan:\n  valuesTemplateAPIVersion: cluster.x-k8s.io/v1beta2\n");
        let m = parse(&v1beta2).unwrap();
        assert_eq!(m.values_template_api, CapiVersion::V1Beta2);
        assert_eq!(m.to_yaml(), v1beta2);
        let explicit = format!("{GOOD}capstan:\n  valuesTemplateAPIVersion: cluster.x-k8s.io/v1beta1\n");
        assert_eq!(parse(&explicit).unwrap().to_yaml(), GOOD);
        let no_image = GOOD.replace("    nodeImage: v2\n", "");
        let m = parse(&no_image).unwrap();
        assert_eq!(m.node_image, None);
        assert_eq!(m.to_yaml(), no_image);
    }

    #[test]
    fn errors_name_file_and_field() {
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "rel/metadata.yaml: the document is empty"),
            (
                "- a".into(),
                "rel/metadata.yaml: expected a mapping at the top, found a list",
            ),
            (
                "a: [".into(),
                "rel/metadata.yaml: yaml: line 1: did not find expected node content",
            ),
            (
                GOOD.replace("apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\n", ""),
                "field apiVersion: is missing",
            ),
            (
                GOOD.replace("x-k8s.io/v1alpha1", "x-k8s.io/v2"),
                "field apiVersion: expected \"metadata.clusterstack.x-k8s.io/v1alpha1\"",
            ),
            (
                GOOD.replace("  clusterStack: v3\n", ""),
                "field versions.clusterStack: is missing",
            ),
            (
                GOOD.replace("clusterStack: v3", "clusterStack: 3"),
                "field versions.clusterStack: expected a string, found the number 3",
            ),
            (
                GOOD.replace("clusterStack: v3", "clusterStack: v3-alpha-1"),
                "field versions.clusterStack: invalid cluster-stack version \"v3-alpha-1\"",
            ),
            (
                GOOD.replace("kubernetes: v1.27.3", "kubernetes: \"1.27\""),
                "field versions.kubernetes: invalid Kubernetes version \"1.27\"",
            ),
            (
                GOOD.replace("kubernetes: v1.27.3", "kubernetes: 1.27"),
                "field versions.kubernetes: expected a string, found the number 1.27",
            ),
            (
                GOOD.replace("clusterAddon: v2", "clusterAddon: \"\""),
                "field versions.components.clusterAddon: is empty",
            ),
            (
                GOOD.replace("nodeImage: v2", "nodeImage: x"),
                "field versions.components.nodeImage: invalid",
            ),
            (
                GOOD.replace("  components:\n    clusterAddon: v2\n    nodeImage: v2\n", ""),
                "field versions.components: is missing",
            ),
            (
                format!("{GOOD}capstan:\n  valuesTemplateAPIVersion: v1beta2\n"),
                "field capstan.valuesTemplateAPIVersion: expected cluster.x-k8s.io/v1beta1 or cluster.x-k8s.io/v1beta2, found \"v1beta2\"",
            ),
            (
                format!("{GOOD}capstan: 3\n"),
                "field capstan: expected a mapping, found the number 3",
            ),
            (
                "apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions: 3\n".into(),
                "field versions: expected a mapping, found the number 3",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(&text).unwrap_err().to_string();
            assert!(
                err.contains(expected),
                "{text:?}\n  got: {err}\n  want: {expected}"
            );
            assert!(err.starts_with("rel/metadata.yaml: "), "{err}");
        }
        let err = Metadata::load(Path::new("/nonexistent/metadata.yaml")).unwrap_err();
        assert_eq!(err.to_string(), "/nonexistent/metadata.yaml: file not found");
    }
}
