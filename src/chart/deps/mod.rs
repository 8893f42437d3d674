//! Resolving a chart's declared dependencies, the decisions only (no I/O): what a chart's
//! `charts/` lacks, the repository a dependency names, Helm's choice among a repository's
//! versions for a constraint, and `Chart.lock` (its digest and whether it is in sync).
//! Fetching lives in `source::charts`; these functions are what it asks.

pub mod index;
pub mod lock;
pub mod reference;

use crate::chart::{Chart, Dependency};
use crate::template::funcs::semver::constraint::Constraints;
use crate::template::funcs::semver::version::Version;

pub use index::{IndexEntry, IndexError, RepoIndex};
pub use lock::{Lock, LockedDependency};
pub use reference::{RepositoryRef, parse_repository};

/// The dependencies of `chart` that its `charts/` lacks, in Chart.yaml order (matched by
/// chart name, not alias, as `helm template` checks them). Vendored charts are used as they are.
pub fn missing_dependencies(chart: &Chart) -> Vec<&Dependency> {
    chart
        .metadata
        .dependencies
        .iter()
        .filter(|d| !chart.dependencies.iter().any(|c| c.name() == d.name))
        .collect()
}

/// What completes a chart's dependencies before it is rendered: given a chart (and its
/// directory, when it has one, for `file://` dependencies), returns it with every declared
/// dependency that `charts/` lacks loaded as a subchart. Implemented where fetching is
/// allowed (`source::charts`); renders above `chart` take one.
pub trait DependencyResolver: Send + Sync {
    fn resolve(&self, chart: Chart, chart_dir: Option<&std::path::Path>) -> Result<Chart, String>;
}

/// Why no version of a dependency could be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChooseError {
    /// Helm's words for a constraint Masterminds/semver cannot parse.
    #[error("dependency {name:?} has an invalid version/constraint format: {message}")]
    InvalidConstraint { name: String, message: String },
}

/// Helm's choice among a repository's versions of a chart for `constraint`: the highest
/// version (semver order; entries that are not versions skipped) that satisfies it, with
/// Masterminds' pre-release rule (a pre-release only matches a constraint that names one).
/// Returns the version as the repository writes it; `None` when none matches.
pub fn choose_version<'a>(
    name: &str,
    constraint: &str,
    versions: impl IntoIterator<Item = &'a str>,
) -> Result<Option<String>, ChooseError> {
    let constraints = Constraints::parse(constraint).map_err(|message| ChooseError::InvalidConstraint {
        name: name.to_string(),
        message,
    })?;
    let mut parsed: Vec<Version> = versions
        .into_iter()
        .filter_map(|v| Version::parse(v).ok())
        .collect();
    // Highest first, as Helm sorts an index; a stable sort keeps the index's order for ties.
    parsed.sort_by(|a, b| b.compare(a));
    Ok(parsed
        .into_iter()
        .find(|v| constraints.check(v))
        .map(|v| v.original))
}

/// A constraint that names one version exactly (`1.17.4`, `=1.17.4`): what a cache can
/// answer without a repository index.
pub fn exact_version(constraint: &str) -> Option<String> {
    let c = constraint.trim();
    let c = c.strip_prefix('=').unwrap_or(c).trim();
    let v = Version::parse(c).ok()?;
    (v.render() == c).then(|| c.to_string())
}

/// Whether `version` satisfies `constraint` (false when either does not parse).
pub fn version_satisfies(constraint: &str, version: &str) -> bool {
    crate::template::funcs::semver::constraint_matches(constraint, version).unwrap_or(false)
}

/// Helm's refusal when some dependencies have no matching version (`helm dependency update`).
pub fn no_valid_version_message(missing: &[(&Dependency, &str)]) -> String {
    let list: Vec<String> = missing
        .iter()
        .map(|(d, repo)| format!("{:?} (repository {:?}, version {:?})", d.name, repo, d.version))
        .collect();
    format!(
        "can't get a valid version for {} subchart(s): {}. Make sure a matching chart version exists in the repo, or change the version constraint in Chart.yaml",
        missing.len(),
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chooses_like_helm() {
        let versions = [
            "1.2.0",
            "1.10.0",
            "1.9.3",
            "2.0.0-rc.1",
            "not-a-version",
            "v1.9.4",
            "1.3.0-beta.1",
        ];
        let cases: &[(&str, Option<&str>)] = &[
            // exact pins, as the stacks write them
            ("1.9.3", Some("1.9.3")),
            ("1.9.4", Some("v1.9.4")),
            // ranges: the highest match
            (">=1.0.0", Some("1.10.0")),
            ("~1.9", Some("v1.9.4")),
            ("^1.2", Some("1.10.0")),
            (">=1.2.0 <1.10.0", Some("v1.9.4")),
            ("1.x", Some("1.10.0")),
            ("*", Some("1.10.0")),
            // pre-releases only when the constraint names one
            (">=2.0.0-0", Some("2.0.0-rc.1")),
            (">=1.3.0-0 <1.4.0", Some("1.3.0-beta.1")),
            (">1.10.0", None),
            ("3.0.0", None),
        ];
        for (constraint, want) in cases {
            let got = choose_version("x", constraint, versions).unwrap();
            assert_eq!(got.as_deref(), *want, "constraint {constraint}");
        }
    }

    #[test]
    fn exact_versions() {
        let cases = [
            ("1.17.4", Some("1.17.4")),
            ("=1.17.4", Some("1.17.4")),
            ("1.17", None),
            ("~1.17.4", None),
            ("v1.2.3", None),
            ("1.2.3-rc.1", Some("1.2.3-rc.1")),
        ];
        for (c, want) in cases {
            assert_eq!(exact_version(c).as_deref(), want, "{c}");
        }
    }

    #[test]
    fn invalid_constraint_has_helms_words() {
        let err = choose_version("cilium", "one.two", ["1.0.0"]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("dependency \"cilium\" has an invalid version/constraint format: "),
            "{err}"
        );
    }

    #[test]
    fn missing_lists_what_charts_lacks() {
        let mut chart = test_chart("parent", &[("a", ""), ("b", "bee")]);
        chart.dependencies.push(test_chart("a", &[]));
        let names: Vec<&str> = missing_dependencies(&chart)
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, ["b"]);
    }

    #[test]
    fn no_valid_version_message_is_helms() {
        let d = Dependency {
            name: "common".into(),
            version: "~2.20".into(),
            ..Dependency::default()
        };
        assert_eq!(
            no_valid_version_message(&[(&d, "http://127.0.0.1:18931/bitnami")]),
            "can't get a valid version for 1 subchart(s): \"common\" (repository \"http://127.0.0.1:18931/bitnami\", version \"~2.20\"). Make sure a matching chart version exists in the repo, or change the version constraint in Chart.yaml"
        );
    }

    pub(crate) fn test_chart(name: &str, deps: &[(&str, &str)]) -> Chart {
        let mut yaml = format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n");
        if !deps.is_empty() {
            yaml.push_str("dependencies:\n");
            for (n, alias) in deps {
                yaml.push_str(&format!(
                    "  - name: {n}\n    version: 1.0.0\n    repository: https://x.test/\n"
                ));
                if !alias.is_empty() {
                    yaml.push_str(&format!("    alias: {alias}\n"));
                }
            }
        }
        crate::chart::load::load_files_in_memory(
            vec![crate::chart::ChartFile {
                name: "Chart.yaml".into(),
                data: yaml.into_bytes(),
            }],
            name,
        )
        .unwrap()
    }
}
