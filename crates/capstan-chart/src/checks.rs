//! The checks `helm template` makes before rendering, in Helm's order: declared dependencies
//! must be present in `charts/`, the release name must be valid, then (after dependency
//! processing and the values schema, inside the render) the chart's `kubeVersion` range must
//! admit the cluster version.

use crate::Chart;
use crate::objects::KubeVersion;
use capstan_go::fmt::quote;

/// Helm's longest release name (its names become parts of object names and labels).
pub const MAX_RELEASE_NAME_LEN: usize = 53;

/// The pattern Helm names in its refusal (a DNS-1123 subdomain).
const RELEASE_NAME_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// A chart `helm template` refuses to render; the messages are Helm's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Dependencies named in Chart.yaml that `charts/` lacks (by name, not alias, as Helm).
    #[error(
        "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}",
        .missing.join(", ")
    )]
    MissingDependencies { missing: Vec<String> },
    #[error("release name check failed: release name {}: {}", quote(.name), release_name_problem(.name))]
    ReleaseName { name: String },
    /// `version` is the version as given (`v1.27.0-rc.1`), as Helm's message shows it.
    #[error("chart requires kubeVersion: {range} which is incompatible with Kubernetes {version}")]
    KubeVersion { range: String, version: String },
}

fn release_name_problem(name: &str) -> String {
    if name.is_empty() {
        "no name provided".into()
    } else {
        format!(
            "invalid release name, must match regex {RELEASE_NAME_PATTERN} and the length must not be longer than {MAX_RELEASE_NAME_LEN}"
        )
    }
}

/// Helm's release names: at most 53 bytes, dot-separated labels of lowercase ASCII letters,
/// digits and inner dashes.
pub fn check_release_name(name: &str) -> Result<(), CheckError> {
    let label_ok = |label: &str| {
        let b = label.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter().all(|c| alnum(c) || *c == b'-')
    };
    if name.len() <= MAX_RELEASE_NAME_LEN && name.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(CheckError::ReleaseName { name: name.into() })
    }
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

/// `helm template` checks the chart's `kubeVersion` range against the normalized cluster
/// version (`v1.30`, read as 1.30.0; `v1.2.3.4` is no semantic version, so incompatible); an
/// unparsable range counts as incompatible, as in Helm. The refusal shows the version as given.
pub fn check_kube_version(chart: &Chart, kube: &KubeVersion) -> Result<(), CheckError> {
    let range = &chart.metadata.kube_version;
    if range.is_empty() {
        return Ok(());
    }
    let compatible =
        capstan_template::funcs::semver::constraint_matches(range, &kube.normalized).unwrap_or(false);
    if compatible {
        Ok(())
    } else {
        Err(CheckError::KubeVersion {
            range: range.clone(),
            version: kube.version.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_names_as_helm_judges_them() {
        let fifty_three = "a".repeat(53);
        for name in [
            "a",
            "0",
            "cluster-addon",
            "a.b-c.d",
            "a-1.b-2",
            fifty_three.as_str(),
        ] {
            assert_eq!(check_release_name(name), Ok(()), "{name:?}");
        }
        let fifty_four = "a".repeat(54);
        for name in [
            fifty_four.as_str(),
            "Cluster-Addon",
            "a_b",
            "a..b",
            "a.-b",
            "a-.b",
            "-a",
            ".a",
            "a-",
            "a.",
            "a b",
            " a",
            "a\n",
            "café",
            "a/b",
        ] {
            assert_eq!(
                check_release_name(name).unwrap_err().to_string(),
                format!(
                    "release name check failed: release name {}: invalid release name, must match regex \
                     ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length \
                     must not be longer than 53",
                    quote(name)
                ),
                "{name:?}"
            );
        }
        assert_eq!(
            check_release_name("").unwrap_err().to_string(),
            r#"release name check failed: release name "": no name provided"#
        );
    }
}
