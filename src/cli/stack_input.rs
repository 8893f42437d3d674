//! The RELEASE argument of `capstan render` and `capstan releases diff` (a release directory,
//! a stack source tree, a GitHub release `OWNER/REPO@TAG`, a release in an OCI registry
//! `oci://HOST/REPO@TAG`, a git ref `git+URL#REF[:PATH]`, or a
//! tag in the cache) and the workload objects (`--cluster`, `--control-plane`,
//! `--infra-cluster`).

use std::path::{Path, PathBuf};

use anyhow::bail;

use capstan_source::local::{self, Opened};
use capstan_stack::build::CSCTL_FILE;
use capstan_stack::capi::CapiVersion;
use capstan_stack::metadata::METADATA_FILE;
use capstan_stack::values::ClusterObjects;

use super::release_ref::ReleaseRef;
use super::source_args::{self, SourceArgs};

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

    /// `--cluster`, which rendering a release requires.
    pub fn require_cluster(&self) -> anyhow::Result<&Path> {
        match &self.cluster {
            Some(cluster) => Ok(cluster),
            None => bail!(
                "rendering a release needs --cluster FILE: the workload Cluster its runtime values are computed from"
            ),
        }
    }

    /// The objects, for values templates that see the Cluster as `templates` (a release's
    /// `capstan.valuesTemplateAPIVersion`): a v1beta1 or v1beta2 Cluster (what `kubectl get
    /// -o yaml` prints on either), converted as Cluster API does where the versions differ;
    /// refused when `--cluster` is not a Cluster, its fields cannot be read, or
    /// `--control-plane` / `--infra-cluster` is not what the Cluster references.
    pub fn load(&self, templates: CapiVersion) -> anyhow::Result<ClusterObjects> {
        let cluster = self.require_cluster()?;
        Ok(ClusterObjects::load_for(
            cluster,
            self.control_plane.as_deref(),
            self.infra_cluster.as_deref(),
            templates,
        )?)
    }
}

/// Whether `path` is a release directory or a stack source tree (rather than a chart).
pub fn is_release(path: &Path) -> bool {
    local::kind(path).is_some()
}

/// Whether `arg` names a release that is not a path: `git+URL#REF`, `OWNER/REPO@TAG` or a
/// release tag (an existing path is always a path).
pub fn names_a_release(arg: &str) -> bool {
    matches!(
        ReleaseRef::parse(arg),
        Ok(Some(
            ReleaseRef::Git(_) | ReleaseRef::GitHub { .. } | ReleaseRef::CachedTag(_)
        ))
    )
}

/// Opens the RELEASE argument:
/// - a release directory, or a stack source tree built at `v0-sha.<content hash>` like
///   `csctl create --mode hash` (an existing path always wins);
/// - `git+URL#REF[:PATH]`: the commit REF names, built into a `v0-sha.<hash>` release and kept
///   in the cache;
/// - `OWNER/REPO@TAG`: a GitHub release, from the cache, pulled first when missing;
/// - `oci://HOST/REPO@TAG`: a release in an OCI registry, likewise;
/// - `TAG`: a release already in the cache (from any source).
pub fn open(arg: &str, sources: &SourceArgs) -> anyhow::Result<Opened> {
    let Some(release) = ReleaseRef::parse(arg)? else {
        bail!(
            "{arg}: no such release directory or stack source tree (nor OWNER/REPO@TAG, oci://HOST/REPO@TAG, git+URL#REF or a release tag)"
        );
    };
    open_ref(arg, &release, sources)
}

/// Opens the release `release`, named `arg` on the command line.
pub fn open_ref(arg: &str, release: &ReleaseRef, sources: &SourceArgs) -> anyhow::Result<Opened> {
    match release {
        ReleaseRef::Path(path) => {
            if path.is_dir() && local::kind(path).is_none() {
                bail!(
                    "{arg} is neither a release directory (it has no {METADATA_FILE}) nor a stack source tree (it has no {CSCTL_FILE})"
                );
            }
            sources.refuse_policy_for(arg)?;
            Ok(local::open(path)?)
        }
        ReleaseRef::Git(git) => {
            sources.refuse_policy_for(arg)?;
            let cache = sources.open_cache()?;
            let manifest = super::releases_git::fetch(git, &cache)?.manifest;
            Ok(local::open_cached_as(&cache, &manifest, arg)?)
        }
        ReleaseRef::Oci { repo, tag } => {
            // A policy that cannot be read is refused before anything is fetched.
            sources.policy()?;
            let cache = sources.open_cache()?;
            let summary = super::pull_progress::pull_oci_with_bar(sources, &cache, repo, tag, false)?;
            // Never opened unless it passes the policy: the error names the reason.
            if let Some(verified) = sources.verify_oci(&cache, repo, tag)? {
                for skipped in &verified.skipped {
                    eprintln!("{repo}:{tag}: skipped an unreadable signature: {skipped}");
                }
            }
            Ok(local::open_cached_as(&cache, &summary.manifest, tag)?)
        }
        ReleaseRef::GitHub { repo, tag } => {
            sources.refuse_policy_for(arg)?;
            let cache = sources.open_cache()?;
            let summary = super::pull_progress::pull_with_bar(sources, &cache, repo, tag)
                .map_err(|e| source_args::explain_not_found(e, &cache))?;
            Ok(local::open_cached_as(&cache, &summary.manifest, tag)?)
        }
        ReleaseRef::CachedTag(tag) => {
            sources.refuse_policy_for(arg)?;
            let cache = sources.open_cache()?;
            let keys = cache.find_tag(tag)?;
            match keys.as_slice() {
                [key] => match cache.release_verified(key)? {
                    Some(manifest) => Ok(local::open_cached_as(&cache, &manifest, tag)?),
                    None => bail!(
                        "release {key} in the cache {} is damaged (a file is missing or does not match its sha256; the bad file was removed); {}",
                        cache.root().display(),
                        repair_hint(&cache, key)
                    ),
                },
                [] => bail!(
                    "{arg} is a release tag, but no release of that tag is in the cache {}: name its repository as OWNER/REPO@{arg} (pulled when missing), pull it with `capstan releases pull OWNER/REPO {arg}`, or give a release directory or a stack source tree",
                    cache.root().display()
                ),
                many => bail!(
                    "{arg} is in the cache more than once ({}); name the repository as OWNER/REPO@{arg}",
                    many.join(", ")
                ),
            }
        }
    }
}

/// How to repair a damaged cached release: the command that fetches it again.
fn repair_hint(cache: &capstan_source::cache::Cache, key: &str) -> String {
    let origin = cache.manifest(key).ok().flatten().map(|m| m.origin);
    match repair_command(key, origin.as_deref()) {
        Some(command) => format!("repair it with `{command}`"),
        None => format!("fetch it again from where it came from (cache key {key})"),
    }
}

/// The command that fetches the release under `key` again: a GitHub release from its key,
/// a git build from the origin its manifest records (`git URL#REF[:PATH] (commit …)`).
pub fn repair_command(key: &str, origin: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = key.split('/').collect();
    if let ["github", owner, repo, tag] = parts.as_slice() {
        return Some(format!("capstan releases pull {owner}/{repo} {tag}"));
    }
    let spec = origin?.strip_prefix("git ")?;
    let spec = spec.split_once(" (commit ").map_or(spec, |(s, _)| s);
    Some(format!("capstan releases pull 'git+{spec}'"))
}

#[cfg(test)]
mod tests {
    use super::repair_command;

    #[test]
    fn release_names_that_are_not_paths() {
        use super::names_a_release;
        for (arg, want) in [
            ("git+https://h/r#main", true),
            ("o/r@docker-scs-1-30-v1", true),
            ("docker-scs-1-30-v1", true),
            ("testdata/chart-load", false), // an existing path
            ("no/such/chart", false),
            ("chart@1.0", false),
        ] {
            assert_eq!(names_a_release(arg), want, "{arg}");
        }
    }

    #[test]
    fn repair_commands() {
        let table = [
            ("github/o/r/t-v1", None, Some("capstan releases pull o/r t-v1")),
            (
                "git/h/r/t-v0-sha-1",
                Some("git https://h/r#main:p (commit abc)"),
                Some("capstan releases pull 'git+https://h/r#main:p'"),
            ),
            ("git/h/r/t", None, None),
            ("other/k", Some("local"), None),
        ];
        for (key, origin, want) in table {
            assert_eq!(repair_command(key, origin).as_deref(), want, "{key}");
        }
    }
}
