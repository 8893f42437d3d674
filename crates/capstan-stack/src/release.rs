//! A release on disk: the assets a published GitHub release holds, discovered and validated.
//!
//! ```text
//! <release dir>/
//!   metadata.yaml                                       versions (required)
//!   <stack>-cluster-class-<version>.tgz                 the ClusterClass chart (required)
//!   <stack>-cluster-addon-<addonVersion>.tgz            the addon: one chart, or one chart
//!                                                       directory per stage (required)
//!   clusteraddon.yaml                                   present ⇒ multi-stage addon
//!   cluster-addon-values.yaml                           values template of a single-chart addon
//!   hashes.json, <stack>-node-image-<v>.tgz, …          optional, not needed to render
//! ```
//!
//! The stack (`<provider>-<name>-<k8sMajor>-<k8sMinor>`) comes from the ClusterClass asset's
//! name, the version from `metadata.yaml`; the addon asset is named by
//! `versions.components.clusterAddon`, which may be older than the stack version. Everything
//! is checked on load, including that every stage of `clusteraddon.yaml` has its chart
//! directory in the addon archive; charts themselves are loaded when rendered.

use std::path::{Path, PathBuf};

use capstan_chart::load::{self, LoadError};
use capstan_chart::{Chart, ChartFile};

use super::addon_config::{ADDON_CONFIG_FILE, AddonConfig};
use super::archive;
use super::doc::{DocumentError, read_text};
use super::metadata::{METADATA_FILE, Metadata};
use super::name::{ReleaseTag, StackName};

/// The values template of a single-chart addon.
pub const ADDON_VALUES_FILE: &str = "cluster-addon-values.yaml";
/// The values template of one stage of a multi-stage addon (inside its chart directory).
pub const OVERWRITE_FILE: &str = "overwrite.yaml";
/// csctl's content hashes of the source a release was built from.
pub const HASHES_FILE: &str = "hashes.json";

/// The files of a published release capstan reads, once its `metadata.yaml` is known: the
/// required ones (metadata, ClusterClass chart, addon chart — named by the metadata's addon
/// version) and the optional ones (`clusteraddon.yaml`, `cluster-addon-values.yaml`,
/// `hashes.json`). Other assets (node images) are not needed to render.
pub fn release_files(tag: &ReleaseTag, metadata: &Metadata) -> (Vec<String>, Vec<String>) {
    (
        vec![
            METADATA_FILE.to_string(),
            tag.cluster_class_asset(),
            tag.cluster_addon_asset(&metadata.cluster_addon),
        ],
        vec![
            ADDON_CONFIG_FILE.to_string(),
            ADDON_VALUES_FILE.to_string(),
            HASHES_FILE.to_string(),
        ],
    )
}

/// A release directory that does not hold a valid release.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// Something about the directory's assets (missing, ambiguous, inconsistent).
    #[error("release {}: {problem}", dir.display())]
    Layout { dir: PathBuf, problem: String },
    /// An archive that cannot be read safely.
    #[error("{}: {problem}", archive.display())]
    Archive { archive: PathBuf, problem: String },
    /// A chart of the release that cannot be loaded (Helm's message).
    #[error("release {release}: {part} chart {}: {error}", path.display())]
    Chart {
        release: String,
        part: String,
        path: PathBuf,
        error: Box<LoadError>,
    },
}

/// How the addon of a release is packaged.
#[derive(Debug, Clone)]
pub enum Addon {
    /// One chart; its values come from `cluster-addon-values.yaml` when the release has it.
    Single {
        chart: PathBuf,
        values_template: Option<PathBuf>,
    },
    /// `clusteraddon.yaml` lists stages; the archive holds one chart directory per stage.
    Staged {
        archive: PathBuf,
        config: AddonConfig,
        /// The chart directories the archive holds (name order).
        stage_dirs: Vec<String>,
    },
}

/// One addon chart to render: the single chart, or one stage's chart.
#[derive(Debug, Clone)]
pub struct AddonChart {
    /// `None` for a single-chart addon, else the stage (= chart directory) name.
    pub stage: Option<String>,
    pub chart: Chart,
    /// The values template (`cluster-addon-values.yaml` or the stage's `overwrite.yaml`) and
    /// the name it is reported under.
    pub values_template: Option<(String, String)>,
}

/// A validated release directory.
#[derive(Debug, Clone)]
pub struct Release {
    dir: PathBuf,
    tag: ReleaseTag,
    metadata: Metadata,
    cluster_class: PathBuf,
    addon: Addon,
    hashes: Option<PathBuf>,
}

impl Release {
    /// Loads the release in `dir`, finding the stack from the ClusterClass asset's name.
    pub fn load(dir: &Path) -> Result<Release, ReleaseError> {
        let layout = |problem: String| ReleaseError::Layout {
            dir: dir.to_path_buf(),
            problem,
        };
        if !dir.is_dir() {
            return Err(layout("not a directory".into()));
        }
        let metadata = Metadata::load(&dir.join(METADATA_FILE))?;
        let names = file_names(dir).map_err(|e| layout(format!("cannot list: {e}")))?;
        let suffix = format!("-cluster-class-{}.tgz", metadata.cluster_stack);
        let candidates: Vec<&String> = names.iter().filter(|n| n.ends_with(&suffix)).collect();
        let stack_text = match candidates.as_slice() {
            [one] => one.trim_end_matches(&suffix).to_string(),
            [] => {
                let others: Vec<&str> = names
                    .iter()
                    .filter(|n| n.contains("-cluster-class-") && n.ends_with(".tgz"))
                    .map(String::as_str)
                    .collect();
                return Err(layout(format!(
                    "no ClusterClass chart <stack>{suffix} for versions.clusterStack {} of {METADATA_FILE}{}",
                    metadata.cluster_stack,
                    found_list(&others)
                )));
            }
            many => {
                return Err(layout(format!(
                    "several ClusterClass charts for version {}: {}",
                    metadata.cluster_stack,
                    many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
        };
        let stack = StackName::parse(&stack_text).map_err(|e| {
            layout(format!(
                "the ClusterClass chart {} does not start with a valid stack name: {e}",
                candidates[0]
            ))
        })?;
        let tag = stack.release(metadata.cluster_stack.clone());
        Release::assemble(dir, tag, metadata, &names)
    }

    /// Loads the release in `dir` and checks that it is `tag`.
    pub fn load_tagged(dir: &Path, tag: &ReleaseTag) -> Result<Release, ReleaseError> {
        let metadata = Metadata::load(&dir.join(METADATA_FILE))?;
        if metadata.cluster_stack != *tag.version() {
            return Err(ReleaseError::Layout {
                dir: dir.to_path_buf(),
                problem: format!(
                    "release tag {tag} has version {}, but {METADATA_FILE} says versions.clusterStack: {}",
                    tag.version(),
                    metadata.cluster_stack
                ),
            });
        }
        let names = file_names(dir).map_err(|e| ReleaseError::Layout {
            dir: dir.to_path_buf(),
            problem: format!("cannot list: {e}"),
        })?;
        Release::assemble(dir, tag.clone(), metadata, &names)
    }

    fn assemble(
        dir: &Path,
        tag: ReleaseTag,
        metadata: Metadata,
        names: &[String],
    ) -> Result<Release, ReleaseError> {
        let layout = |problem: String| ReleaseError::Layout {
            dir: dir.to_path_buf(),
            problem,
        };
        if metadata.kubernetes_minor() != tag.stack().kubernetes() {
            return Err(layout(format!(
                "{METADATA_FILE}: versions.kubernetes {} is not of Kubernetes {} the stack {} is for",
                metadata.kubernetes,
                tag.stack().kubernetes(),
                tag.stack()
            )));
        }
        let cluster_class_name = tag.cluster_class_asset();
        if !names.contains(&cluster_class_name) {
            return Err(layout(format!(
                "the ClusterClass chart {cluster_class_name} is missing"
            )));
        }
        let addon_name = tag.cluster_addon_asset(&metadata.cluster_addon);
        if !names.contains(&addon_name) {
            let others: Vec<&str> = names
                .iter()
                .filter(|n| n.contains("-cluster-addon-") && n.ends_with(".tgz"))
                .map(String::as_str)
                .collect();
            return Err(layout(format!(
                "the addon chart {addon_name} (versions.components.clusterAddon {} of {METADATA_FILE}) is missing{}",
                metadata.cluster_addon,
                found_list(&others)
            )));
        }
        let addon_path = dir.join(&addon_name);
        let config_path = dir.join(ADDON_CONFIG_FILE);
        let addon = if names.iter().any(|n| n == ADDON_CONFIG_FILE) {
            let config = AddonConfig::load(&config_path)?;
            let entries = archive::read_tgz(&addon_path).map_err(|problem| ReleaseError::Archive {
                archive: addon_path.clone(),
                problem,
            })?;
            let stage_dirs = archive::top_dirs(&entries);
            for (hook, stages) in &config.hooks {
                for stage in stages {
                    let has_chart = entries
                        .iter()
                        .any(|e| e.path == format!("{}/Chart.yaml", stage.name));
                    if !has_chart {
                        return Err(layout(format!(
                            "{ADDON_CONFIG_FILE} names stage {:?} (hook {hook}), but {addon_name} has no chart directory {}/ (it has: {})",
                            stage.name,
                            stage.name,
                            if stage_dirs.is_empty() {
                                "nothing".to_string()
                            } else {
                                stage_dirs.join(", ")
                            }
                        )));
                    }
                }
            }
            Addon::Staged {
                archive: addon_path,
                config,
                stage_dirs,
            }
        } else {
            let values = dir.join(ADDON_VALUES_FILE);
            Addon::Single {
                chart: addon_path,
                values_template: names.iter().any(|n| n == ADDON_VALUES_FILE).then_some(values),
            }
        };
        let hashes = names
            .iter()
            .any(|n| n == HASHES_FILE)
            .then(|| dir.join(HASHES_FILE));
        Ok(Release {
            dir: dir.to_path_buf(),
            cluster_class: dir.join(cluster_class_name),
            tag,
            metadata,
            addon,
            hashes,
        })
    }

    /// The directory the release was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn tag(&self) -> &ReleaseTag {
        &self.tag
    }

    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The ClusterClass chart archive.
    pub fn cluster_class_asset(&self) -> &Path {
        &self.cluster_class
    }

    pub fn addon(&self) -> &Addon {
        &self.addon
    }

    /// `hashes.json`, when the release has one.
    pub fn hashes_file(&self) -> Option<&Path> {
        self.hashes.as_deref()
    }

    /// Loads the ClusterClass chart.
    pub fn cluster_class_chart(&self) -> Result<Chart, ReleaseError> {
        load::load(&self.cluster_class).map_err(|error| ReleaseError::Chart {
            release: self.tag.to_string(),
            part: "cluster-class".into(),
            path: self.cluster_class.clone(),
            error: Box::new(error),
        })
    }

    /// Loads the addon chart(s) with their values templates: the single chart, or each stage
    /// of `clusteraddon.yaml` once, in order of first appearance.
    pub fn addon_charts(&self) -> Result<Vec<AddonChart>, ReleaseError> {
        match &self.addon {
            Addon::Single {
                chart,
                values_template,
            } => {
                let loaded = load::load(chart).map_err(|error| ReleaseError::Chart {
                    release: self.tag.to_string(),
                    part: "cluster-addon".into(),
                    path: chart.clone(),
                    error: Box::new(error),
                })?;
                let values_template = match values_template {
                    None => None,
                    Some(path) => Some((ADDON_VALUES_FILE.to_string(), read_text(path)?)),
                };
                Ok(vec![AddonChart {
                    stage: None,
                    chart: loaded,
                    values_template,
                }])
            }
            Addon::Staged {
                archive: path,
                config,
                ..
            } => {
                let archive_err = |problem: String| ReleaseError::Archive {
                    archive: path.clone(),
                    problem,
                };
                let entries = archive::read_tgz(path).map_err(archive_err)?;
                let mut out = Vec::new();
                for stage in config.stage_names() {
                    let files: Vec<ChartFile> = archive::chart_files(&entries, stage).map_err(archive_err)?;
                    let overwrite = files
                        .iter()
                        .find(|f| f.name == OVERWRITE_FILE)
                        .map(|f| {
                            String::from_utf8(f.data.clone())
                                .map(|text| (format!("{stage}/{OVERWRITE_FILE}"), text))
                                .map_err(|_| {
                                    archive_err(format!("{stage}/{OVERWRITE_FILE} is not UTF-8 text"))
                                })
                        })
                        .transpose()?;
                    let source = path.join(stage);
                    let chart = load::load_files_in_memory(files, &source.display().to_string()).map_err(
                        |error| ReleaseError::Chart {
                            release: self.tag.to_string(),
                            part: format!("cluster-addon stage {stage:?}"),
                            path: source.clone(),
                            error: Box::new(error),
                        },
                    )?;
                    out.push(AddonChart {
                        stage: Some(stage.to_string()),
                        chart,
                        values_template: overwrite,
                    });
                }
                Ok(out)
            }
        }
    }
}

fn file_names(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

fn found_list(found: &[&str]) -> String {
    if found.is_empty() {
        String::new()
    } else {
        format!(" (found: {})", found.join(", "))
    }
}
