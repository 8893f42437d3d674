//! The RELEASE argument of `capstan render` and `capstan releases diff`: a release directory
//! or a stack source tree (built into a scratch directory at its csctl hash version), and the
//! workload objects (`--cluster`, `--control-plane`, `--infra-cluster`).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::stack::ReleaseTag;
use crate::stack::build::{self, CSCTL_FILE};
use crate::stack::metadata::METADATA_FILE;
use crate::stack::release::Release;
use crate::stack::values::ClusterObjects;

/// The workload objects runtime values are computed from.
#[derive(Debug, Clone, clap::Args)]
pub struct ObjectArgs {
    /// The workload Cluster (YAML), `.Cluster` in values templates.
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<PathBuf>,
    /// Its control plane object (YAML), `.ControlPlane` in values templates.
    #[arg(long, value_name = "FILE")]
    pub control_plane: Option<PathBuf>,
    /// Its infrastructure cluster object (YAML), `.InfraCluster` in values templates.
    #[arg(long, value_name = "FILE")]
    pub infra_cluster: Option<PathBuf>,
}

impl ObjectArgs {
    pub fn any(&self) -> bool {
        self.cluster.is_some() || self.control_plane.is_some() || self.infra_cluster.is_some()
    }

    /// The objects; `--cluster` is required.
    pub fn load(&self) -> anyhow::Result<ClusterObjects> {
        let Some(cluster) = &self.cluster else {
            bail!(
                "rendering a release needs --cluster FILE: the workload Cluster its runtime values are computed from"
            );
        };
        Ok(ClusterObjects::load(
            cluster,
            self.control_plane.as_deref(),
            self.infra_cluster.as_deref(),
        )?)
    }
}

/// Whether `path` is a release directory or a stack source tree (rather than a chart).
pub fn is_release(path: &Path) -> bool {
    path.is_dir() && (path.join(METADATA_FILE).is_file() || path.join(CSCTL_FILE).is_file())
}

/// A loaded release; a source tree's build lives in a scratch directory removed on drop.
pub struct Opened {
    pub release: Release,
    scratch: Option<PathBuf>,
}

impl Drop for Opened {
    fn drop(&mut self) {
        if let Some(dir) = &self.scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Opens the RELEASE argument: a release directory, or a stack source tree built at
/// `v0-sha.<content hash>` like `csctl create --mode hash`.
pub fn open(arg: &str) -> anyhow::Result<Opened> {
    let path = Path::new(arg);
    if path.is_dir() && path.join(METADATA_FILE).is_file() {
        let release = Release::load(path)?;
        return Ok(Opened {
            release,
            scratch: None,
        });
    }
    if path.is_dir() && path.join(CSCTL_FILE).is_file() {
        let version = build::hash_version(path)?;
        let scratch = scratch_dir()?;
        let built = build::build(path, &version, &scratch.join("release"));
        if built.is_err() {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        return Ok(Opened {
            release: built?,
            scratch: Some(scratch),
        });
    }
    if !path.exists() && ReleaseTag::parse(arg).is_ok() {
        // Hook for the release cache (src/source/): a tag in a subscribed repository resolves
        // to a release directory in the cache; until then only local releases render.
        bail!(
            "{arg} is a release tag, but rendering a tag from a repository needs the release cache; give a release directory (metadata.yaml and chart archives) or a stack source tree (csctl.yaml)"
        );
    }
    if path.is_dir() {
        bail!(
            "{arg} is neither a release directory (it has no {METADATA_FILE}) nor a stack source tree (it has no {CSCTL_FILE})"
        );
    }
    bail!("{arg}: no such release directory or stack source tree")
}

fn scratch_dir() -> anyhow::Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("capstan-build-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}
