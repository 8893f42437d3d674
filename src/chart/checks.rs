//! The checks `helm template` makes before rendering: declared dependencies must be present
//! in `charts/`, and the chart's `kubeVersion` range must admit the cluster version.

use crate::chart::Chart;
use crate::chart::objects::KubeVersion;

/// A chart `helm template` refuses to render; the messages are Helm's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Dependencies named in Chart.yaml that `charts/` lacks (by name, not alias, as Helm).
    #[error(
        "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}",
        .missing.join(", ")
    )]
    MissingDependencies { missing: Vec<String> },
    #[error("chart requires kubeVersion: {range} which is incompatible with Kubernetes {version}")]
    KubeVersion { range: String, version: String },
}

/// `helm template` refuses charts whose declared dependencies are not in `charts/`.
pub fn check_dependencies(chart: &Chart) -> Result<(), CheckError> {
    let missing: Vec<String> = chart
        .metadata
        .dependencies
        .iter()
        .filter(|d| !chart.dependencies.iter().any(|c| c.name() == d.name))
        .map(|d| d.name.clone())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CheckError::MissingDependencies { missing })
    }
}

/// `helm template` checks the chart's `kubeVersion` range against the (normalized) cluster
/// version first; an unparsable range counts as incompatible, as in Helm.
pub fn check_kube_version(chart: &Chart, kube: &KubeVersion) -> Result<(), CheckError> {
    let range = &chart.metadata.kube_version;
    if range.is_empty() {
        return Ok(());
    }
    let compatible =
        crate::template::funcs::semver::constraint_matches(range, &kube.normalized).unwrap_or(false);
    if compatible {
        Ok(())
    } else {
        Err(CheckError::KubeVersion {
            range: range.clone(),
            version: kube.normalized.clone(),
        })
    }
}
