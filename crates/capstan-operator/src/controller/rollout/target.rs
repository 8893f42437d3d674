//! Which release a rollout moves its Clusters to: `spec.version` of the rollout resolved
//! against the ClusterStackReleases of its stack — `latest` is the newest ready one, else
//! the named version (dot or dash form), which must exist and be ready. Pure.

use capstan_stack::name::{ReleaseTag, StackName};
use capstan_stack::version::Version;

/// A release of the stack as its ClusterStackRelease reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseSeen {
    /// The ClusterStackRelease's name, the release tag (`docker-ferrol-1-27-v3`).
    pub name: String,
    pub ready: bool,
    /// `status.kubernetesVersion` (`v1.27.3`).
    pub kubernetes: Option<String>,
}

impl ReleaseSeen {
    /// What a ClusterStackRelease reports of itself.
    pub fn of(release: &crate::api::ClusterStackRelease) -> ReleaseSeen {
        ReleaseSeen {
            name: kube::ResourceExt::name_any(release),
            ready: release.status.as_ref().is_some_and(|s| s.ready),
            kubernetes: release.status.as_ref().and_then(|s| s.kubernetes_version.clone()),
        }
    }
}

/// The release Clusters are switched to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The ClusterStackRelease (`docker-ferrol-1-27-v3`).
    pub release: String,
    /// Its ClusterClass (`docker-ferrol-1-27-v3`; a hash version in dot form).
    pub class: String,
    /// Its Kubernetes version with patch level (`v1.27.3`).
    pub kubernetes: String,
}

/// Why no target: the rollout waits (and says why in its status) until this changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unresolved {
    #[error(
        "spec.version {version:?} is not a release version (v3, v1-alpha.0, v0-sha.abc, or latest): {problem}"
    )]
    BadVersion { version: String, problem: String },
    #[error("ClusterStack {stack} has no ready release yet")]
    NoReadyRelease { stack: String },
    #[error("release {release} of ClusterStack {stack} does not exist (not subscribed, or not yet seen)")]
    Missing { stack: String, release: String },
    #[error("release {release} is not ready yet")]
    NotReady { release: String },
    #[error("release {release} reports no Kubernetes version yet")]
    NoKubernetesVersion { release: String },
}

/// The version a `spec.version` names (dot or dash form); `None` for `latest`.
pub fn parse_version(version: &str) -> Result<Option<Version>, Unresolved> {
    let text = version.trim();
    if text.is_empty() || text == "latest" {
        return Ok(None);
    }
    Version::parse(text)
        .or_else(|_| Version::parse_dashed(text))
        .map(Some)
        .map_err(|e| Unresolved::BadVersion {
            version: version.to_string(),
            problem: e.to_string(),
        })
}

/// Resolves `version` of `stack` against the releases seen (any order; those of other
/// stacks are ignored).
pub fn resolve(stack: &StackName, version: &str, releases: &[ReleaseSeen]) -> Result<Resolved, Unresolved> {
    let ours: Vec<(ReleaseTag, &ReleaseSeen)> = releases
        .iter()
        .filter_map(|r| ReleaseTag::parse(&r.name).ok().map(|tag| (tag, r)))
        .filter(|(tag, _)| tag.stack() == stack)
        .collect();
    let (tag, seen) = match parse_version(version)? {
        None => ours
            .into_iter()
            .filter(|(_, r)| r.ready)
            .max_by(|(a, _), (b, _)| a.version().cmp(b.version()))
            .ok_or_else(|| Unresolved::NoReadyRelease {
                stack: stack.to_string(),
            })?,
        Some(wanted) => {
            let tag = stack.release(wanted);
            let found = ours.into_iter().find(|(t, _)| *t == tag);
            let Some(found) = found else {
                return Err(Unresolved::Missing {
                    stack: stack.to_string(),
                    release: tag.tag(),
                });
            };
            if !found.1.ready {
                return Err(Unresolved::NotReady { release: tag.tag() });
            }
            found
        }
    };
    let kubernetes = seen
        .kubernetes
        .clone()
        .filter(|k| !k.is_empty())
        .ok_or_else(|| Unresolved::NoKubernetesVersion { release: tag.tag() })?;
    Ok(Resolved {
        release: tag.tag(),
        class: tag.cluster_class_name(),
        kubernetes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(name: &str, ready: bool) -> ReleaseSeen {
        ReleaseSeen {
            name: name.into(),
            ready,
            kubernetes: Some(format!("v1.27.{}", name.len() % 10)),
        }
    }

    #[test]
    fn versions_resolve_to_a_ready_release_of_the_stack() {
        let stack = StackName::parse("docker-ferrol-1-27").expect("stack");
        let releases = [
            seen("docker-ferrol-1-27-v1", true),
            seen("docker-ferrol-1-27-v2", true),
            seen("docker-ferrol-1-27-v3", false),
            seen("docker-ferrol-1-27-v0-sha-abc123", true),
            seen("docker-ferrol-1-28-v9", true),
            seen("docker-other-1-27-v7", true),
            seen("not-a-release", true),
        ];
        #[rustfmt::skip]
        // (spec.version, Ok((release, class)) or Err(text of the error))
        type Row<'a> = (&'a str, Result<(&'a str, &'a str), &'a str>);
        let table: &[Row] = &[
            ("latest", Ok(("docker-ferrol-1-27-v2", "docker-ferrol-1-27-v2"))),
            ("", Ok(("docker-ferrol-1-27-v2", "docker-ferrol-1-27-v2"))),
            ("v1", Ok(("docker-ferrol-1-27-v1", "docker-ferrol-1-27-v1"))),
            (
                "v0-sha.abc123",
                Ok((
                    "docker-ferrol-1-27-v0-sha-abc123",
                    "docker-ferrol-1-27-v0-sha.abc123",
                )),
            ),
            (
                "v0-sha-abc123",
                Ok((
                    "docker-ferrol-1-27-v0-sha-abc123",
                    "docker-ferrol-1-27-v0-sha.abc123",
                )),
            ),
            ("v3", Err("not ready yet")),
            (
                "v4",
                Err("docker-ferrol-1-27-v4 of ClusterStack docker-ferrol-1-27 does not exist"),
            ),
            ("v9", Err("does not exist")),
            ("three", Err("not a release version")),
        ];
        for (version, want) in table {
            match (resolve(&stack, version, &releases), want) {
                (Ok(got), Ok((release, class))) => {
                    assert_eq!(
                        (got.release.as_str(), got.class.as_str()),
                        (*release, *class),
                        "{version}"
                    );
                    assert!(got.kubernetes.starts_with("v1.27."), "{version}: {got:?}");
                }
                (Err(e), Err(text)) => assert!(e.to_string().contains(text), "{version}: {e}"),
                (got, want) => panic!("{version}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn latest_waits_for_a_ready_release_and_its_kubernetes_version() {
        let stack = StackName::parse("docker-ferrol-1-27").expect("stack");
        let none = resolve(&stack, "latest", &[seen("docker-ferrol-1-27-v1", false)]);
        assert!(matches!(none, Err(Unresolved::NoReadyRelease { .. })), "{none:?}");
        let mut bare = seen("docker-ferrol-1-27-v1", true);
        bare.kubernetes = None;
        let none = resolve(&stack, "latest", &[bare]);
        assert!(
            matches!(none, Err(Unresolved::NoKubernetesVersion { .. })),
            "{none:?}"
        );
    }
}
