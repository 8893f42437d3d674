//! `Chart.yaml`: the chart's metadata (placeholder types).

use std::collections::BTreeMap;

/// The fields of `Chart.yaml` (Helm's `chart.Metadata`).
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    pub api_version: String,
    pub name: String,
    pub version: String,
    pub kube_version: String,
    pub description: String,
    pub chart_type: String,
    pub keywords: Vec<String>,
    pub home: String,
    pub sources: Vec<String>,
    pub dependencies: Vec<Dependency>,
    pub maintainers: Vec<Maintainer>,
    pub icon: String,
    pub app_version: String,
    pub deprecated: bool,
    /// `None` when Chart.yaml has no `annotations` (prints as null in `.Chart`).
    pub annotations: Option<BTreeMap<String, String>>,
    pub condition: String,
    pub tags: String,
}

/// One entry of `dependencies:`.
#[derive(Debug, Clone, Default)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub repository: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub enabled: bool,
    /// `import-values` entries as written (strings or `{child, parent}` maps).
    pub import_values: Vec<crate::template::value::Value>,
    pub alias: String,
}

/// One entry of `maintainers:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
    pub url: String,
}
