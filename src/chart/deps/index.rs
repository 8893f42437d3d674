//! A Helm repository's `index.yaml`: the versions of each chart, where their archives are
//! and their digests. Read as Helm reads it (sigs.k8s.io/yaml: YAML 1.1 through JSON).

use std::collections::BTreeMap;

use crate::encoding::{json, yaml_load};

/// One version of a chart in an index.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct IndexEntry {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub urls: Vec<String>,
    /// sha256 hex of the archive (Helm writes it when indexing).
    #[serde(default)]
    pub digest: String,
}

/// A repository index: chart name → its versions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoIndex {
    pub entries: BTreeMap<String, Vec<IndexEntry>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("index.yaml is not valid YAML: {0}")]
    Yaml(String),
    #[error("index.yaml is malformed: {0}")]
    Shape(String),
    /// Helm's `ErrNoAPIVersion`.
    #[error("no API version specified")]
    NoApiVersion,
}

#[derive(serde::Deserialize)]
struct RawIndex {
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    entries: Option<BTreeMap<String, Option<Vec<Option<IndexEntry>>>>>,
}

impl RepoIndex {
    /// Parses `index.yaml`; entries without a version or URL are kept (the choice skips them).
    pub fn parse(text: &str) -> Result<RepoIndex, IndexError> {
        let value = yaml_load::load_document(text).map_err(|e| IndexError::Yaml(e.to_string()))?;
        let json = json::marshal(&value).map_err(|e| IndexError::Yaml(e.to_string()))?;
        let raw: RawIndex = serde_json::from_str(&json).map_err(|e| IndexError::Shape(e.to_string()))?;
        if raw.api_version.is_empty() {
            return Err(IndexError::NoApiVersion);
        }
        let entries = raw
            .entries
            .unwrap_or_default()
            .into_iter()
            .map(|(name, versions)| {
                let versions = versions.unwrap_or_default().into_iter().flatten().collect();
                (name, versions)
            })
            .collect();
        Ok(RepoIndex { entries })
    }

    /// The versions of `chart` the choice may take: parsable and with a URL, as Helm's resolver.
    pub fn versions(&self, chart: &str) -> Option<Vec<&str>> {
        self.entries.get(chart).map(|vs| {
            vs.iter()
                .filter(|e| !e.urls.is_empty())
                .map(|e| e.version.as_str())
                .collect()
        })
    }

    /// The entry of `chart` at exactly `version` (as written in the index).
    pub fn entry(&self, chart: &str, version: &str) -> Option<&IndexEntry> {
        self.entries
            .get(chart)?
            .iter()
            .find(|e| e.version == version && !e.urls.is_empty())
    }
}

/// An entry's archive URL against the repository URL: absolute URLs as they are, relative ones
/// below the repository (whose path is taken as a directory), as Helm resolves them.
pub fn chart_url(repository: &str, entry_url: &str) -> String {
    if entry_url.contains("://") {
        return entry_url.to_string();
    }
    let base = repository.trim_end_matches('/');
    if let Some(rest) = entry_url.strip_prefix('/') {
        // Absolute path: the repository's origin.
        let origin_end = base.find("://").map(|i| i + 3).unwrap_or(0);
        let host_end = base[origin_end..]
            .find('/')
            .map(|i| origin_end + i)
            .unwrap_or(base.len());
        return format!("{}/{rest}", &base[..host_end]);
    }
    format!("{base}/{}", entry_url.trim_start_matches("./"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_helm_index() {
        let text = "apiVersion: v1\nentries:\n  common:\n  - name: common\n    version: 2.14.1\n    urls: [common-2.14.1.tgz]\n    digest: abc\n  - name: common\n    version: 2.31.10\n    urls: []\ngenerated: \"2024-01-01T00:00:00Z\"\n";
        let index = RepoIndex::parse(text).unwrap();
        assert_eq!(index.versions("common").unwrap(), ["2.14.1"]);
        assert_eq!(index.entry("common", "2.14.1").unwrap().digest, "abc");
        assert!(index.versions("other").is_none());
    }

    #[test]
    fn malformed_indexes() {
        assert_eq!(
            RepoIndex::parse("entries: {}\n").unwrap_err(),
            IndexError::NoApiVersion
        );
        assert!(matches!(
            RepoIndex::parse("apiVersion: v1\nentries: [1]\n"),
            Err(IndexError::Shape(_))
        ));
        assert!(matches!(
            RepoIndex::parse("apiVersion: v1\nentries: {a: [\n"),
            Err(IndexError::Yaml(_))
        ));
        assert!(matches!(
            RepoIndex::parse("<html>nope</html>"),
            Err(IndexError::Shape(_))
        ));
    }

    #[test]
    fn urls() {
        let cases = [
            (
                "http://h:1/cilium/",
                "cilium-1.17.4.tgz",
                "http://h:1/cilium/cilium-1.17.4.tgz",
            ),
            (
                "http://h:1/cilium",
                "./cilium-1.17.4.tgz",
                "http://h:1/cilium/cilium-1.17.4.tgz",
            ),
            ("http://h:1/cilium", "/x/c.tgz", "http://h:1/x/c.tgz"),
            (
                "http://h:1/a",
                "https://other.test/c.tgz",
                "https://other.test/c.tgz",
            ),
        ];
        for (repo, url, want) in cases {
            assert_eq!(chart_url(repo, url), want);
        }
    }
}
