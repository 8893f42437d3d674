//! Helm charts: loading (directory, `.tgz`, `.helmignore`), metadata, values, dependencies,
//! rendering with Helm v4.2.3's semantics, and the `helm template` manifest stream.
//!
//! Builds on [`crate::template`]; knows nothing of Kubernetes APIs or cluster stacks.

pub mod checks;
pub mod coalesce;
pub mod compiled;
pub mod dependencies;
pub mod deps;
pub mod enablement;
pub mod glob;
pub mod ignore;
pub mod kube_version;
pub mod load;
pub mod manifest;
pub mod metadata;
pub mod objects;
pub mod render;
pub mod schema;
pub mod strvals;
pub mod values;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::go::value::frozen::Frozen;

pub use metadata::{Dependency, Maintainer, Metadata};

/// A loaded chart with its subcharts, before values are processed.
#[derive(Debug, Clone)]
pub struct Chart {
    pub metadata: Metadata,
    /// Files under `templates/`, names relative to the chart root (`templates/x.yaml`).
    pub templates: Vec<ChartFile>,
    /// Every other file that is not Chart.yaml, values.yaml, values.schema.json,
    /// Chart.lock, requirements.yaml/lock or under `charts/` (`.Files` content, incl. `crds/`).
    pub files: Vec<ChartFile>,
    /// The text of `values.yaml` (multi-document; parsed by the values pipeline).
    pub values_text: Option<String>,
    /// The text of `values.schema.json`.
    pub schema: Option<Vec<u8>>,
    /// Subcharts from `charts/` (directories or `.tgz`), in name order.
    pub dependencies: Vec<Chart>,
    /// The text of `Chart.lock`, for dependency resolution (`chart::deps`).
    pub lock: Option<String>,
    /// Where it was loaded from, for error messages.
    pub source: PathBuf,
    /// What every render derives from the fields above, computed once. A chart is not
    /// changed after loading; a changed copy must start from `Memo::default()`.
    pub memo: Memo,
}

/// Per-chart results shared by every render and thread: the decoded `values.yaml`, the
/// `.Files` map and the compiled values schema.
#[derive(Debug, Clone, Default)]
pub struct Memo {
    pub(crate) defaults: OnceLock<Frozen>,
    files: OnceLock<Arc<objects::FileMap>>,
    /// `values.schema.json`, compiled (or why it cannot be).
    pub(crate) schema: OnceLock<Result<Arc<jsonschema::Validator>, String>>,
}

/// A file of a chart: its path relative to the chart root and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartFile {
    pub name: String,
    pub data: Vec<u8>,
}

impl Chart {
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Files under `crds/` with a `.yaml`, `.yml` or `.json` extension.
    pub fn crd_files(&self) -> impl Iterator<Item = &ChartFile> {
        self.files.iter().filter(|f| {
            f.name.starts_with("crds/")
                && (f.name.ends_with(".yaml") || f.name.ends_with(".yml") || f.name.ends_with(".json"))
        })
    }

    /// `.Files` content as a name → bytes map, built once and shared.
    pub fn files_map(&self) -> Arc<objects::FileMap> {
        Arc::clone(self.memo.files.get_or_init(|| {
            Arc::new(
                self.files
                    .iter()
                    .map(|f| (f.name.clone(), Arc::from(&f.data[..])))
                    .collect::<BTreeMap<_, _>>(),
            )
        }))
    }
}
