//! What `capstan operator` is told on its command line, as one value the runtime and the
//! controllers share. The CLI only fills it in.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::api::{GitHubSource, OciSource, StackSource};

/// Shortest drift interval: re-applying every object of every release more often than this
/// would load the API servers for little gain.
pub const MIN_DRIFT_INTERVAL: Duration = Duration::from_secs(60);

/// Default time between drift passes of an applied release.
pub const DEFAULT_DRIFT_INTERVAL: Duration = Duration::from_secs(10 * 60);

/// Settings of one operator process.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Namespaces watched; empty: all namespaces.
    pub namespaces: Vec<String>,
    /// The shard this operator reconciles (`--shard`, see [`crate::shard`]); `None`: the
    /// default shard, the objects without a shard label.
    pub shard: Option<String>,
    /// Reconciles of one kind that run at once.
    pub concurrency: u16,
    /// Time between drift passes (at least [`MIN_DRIFT_INTERVAL`]).
    pub drift_interval: Duration,
    /// Whether objects applied to workload clusters are watched, so an out-of-band change is
    /// repaired at once; without, only the drift pass repairs it. Off for fleets whose
    /// addons are edited on purpose between passes (an autoscaler's replicas, say).
    pub drift_watches: bool,
    /// Where `/metrics` is served; `None`: not served.
    pub metrics_addr: Option<SocketAddr>,
    /// Where `/healthz` and `/readyz` are served; `None`: not served.
    pub health_addr: Option<SocketAddr>,
    /// The validating webhooks' HTTPS server; `None`: not served.
    pub webhook: Option<WebhookSettings>,
    /// The Cluster API Runtime SDK hooks' HTTPS server; `None`: not served.
    pub hooks: Option<HooksSettings>,
    /// Leader election on a Lease; `None`: this process always leads.
    pub leader_election: Option<LeaderElection>,
    /// Release cache (downloads, git mirrors), kept across restarts when on a volume.
    pub cache_dir: PathBuf,
    /// GitHub API base URL for sources that name none.
    pub github_url: String,
    /// Token for GitHub sources without a Secret (`GITHUB_TOKEN`, else the cluster-stack
    /// operator's `GIT_ACCESS_TOKEN`).
    pub github_token: Option<String>,
    /// The source of ClusterStacks without `spec.source` (see [`default_source`]); `None`: such
    /// a ClusterStack is an error.
    pub default_source: Option<StackSource>,
    /// Credentials for OCI sources without a Secret (`OCI_USERNAME`/`OCI_PASSWORD`, or
    /// `OCI_ACCESS_TOKEN`).
    pub oci_credentials: capstan_source::oci::Credentials,
    /// Plain http for OCI registries that are not on loopback.
    pub oci_insecure: bool,
    /// Where the addon and ClusterClass charts' missing dependencies come from (mirrors,
    /// credentials, offline); fetched charts are kept in the release cache.
    pub chart_repositories: capstan_source::charts::Settings,
    /// The controllers this process runs (`--controllers`; default all).
    pub controllers: crate::controllers::ControllerSet,
}

/// Which kind of default source the cluster-stack operator's `--source` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultSourceKind {
    Oci,
    Github,
}

/// The cluster-stack operator's settings that make the default source (flags or environment
/// variables, already read; empty values count as unset).
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultSourceSettings<'a> {
    /// `--source oci|github`.
    pub source: Option<DefaultSourceKind>,
    /// `GIT_PROVIDER` (`--git-provider`): only `github`.
    pub git_provider: Option<&'a str>,
    /// `GIT_ORG_NAME` (`--git-org-name`).
    pub git_org_name: Option<&'a str>,
    /// `GIT_REPOSITORY_NAME` (`--git-repository-name`).
    pub git_repository_name: Option<&'a str>,
    /// `OCI_REGISTRY`, e.g. `registry.scs.community`.
    pub oci_registry: Option<&'a str>,
    /// `OCI_REPOSITORY`, e.g. `kaas/cluster-stacks`.
    pub oci_repository: Option<&'a str>,
}

/// The default source from the cluster-stack operator's settings. `--source oci`: the
/// repository `OCI_REGISTRY/OCI_REPOSITORY` (checked now, so a typo stops the operator at
/// start, not at every reconcile). `--source github`, or no `--source` but any of the git
/// settings: the GitHub repository `GIT_ORG_NAME/GIT_REPOSITORY_NAME` (`GIT_PROVIDER` may only
/// be `github`). Nothing set: no default source.
pub fn default_source(settings: &DefaultSourceSettings) -> Result<Option<StackSource>, String> {
    fn set(v: Option<&str>) -> Option<&str> {
        v.map(str::trim).filter(|v| !v.is_empty())
    }
    let provider = set(settings.git_provider);
    let org = set(settings.git_org_name);
    let repository = set(settings.git_repository_name);
    let kind = match settings.source {
        Some(kind) => kind,
        None if provider.is_none() && org.is_none() && repository.is_none() => return Ok(None),
        None => DefaultSourceKind::Github,
    };
    match kind {
        DefaultSourceKind::Oci => {
            let registry = set(settings.oci_registry)
                .ok_or("--source oci needs OCI_REGISTRY: the registry's host, e.g. registry.scs.community")?;
            let path = set(settings.oci_repository)
                .ok_or("--source oci needs OCI_REPOSITORY: the repository, e.g. kaas/cluster-stacks")?;
            let full = format!(
                "{}/{}",
                registry.trim_start_matches("oci://").trim_end_matches('/'),
                path.trim_start_matches('/')
            );
            capstan_source::oci::OciRepo::parse(&full)
                .map_err(|e| format!("--source oci: OCI_REGISTRY/OCI_REPOSITORY {full}: {e}"))?;
            Ok(Some(StackSource::Oci(OciSource {
                repository: full,
                secret_ref: None,
            })))
        }
        DefaultSourceKind::Github => {
            if let Some(p) = provider
                && !p.eq_ignore_ascii_case("github")
            {
                return Err(format!(
                    "GIT_PROVIDER {p:?} is not supported: the default source can only be github (or --source oci)"
                ));
            }
            match (org, repository) {
                (Some(owner), Some(repo)) => Ok(Some(StackSource::Github(GitHubSource {
                    owner: owner.to_string(),
                    repo: repo.to_string(),
                    ..GitHubSource::default()
                }))),
                (None, _) => Err(
                    "the default source needs GIT_ORG_NAME (--git-org-name): the repository's owner".into(),
                ),
                (_, None) => {
                    Err("the default source needs GIT_REPOSITORY_NAME (--git-repository-name)".into())
                }
            }
        }
    }
}

/// The webhook server.
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    pub addr: SocketAddr,
    /// Directory with `tls.crt` and `tls.key` (a mounted Secret). `None`: a self-signed
    /// certificate is generated at start.
    pub cert_dir: Option<PathBuf>,
    /// Names a generated certificate is valid for besides `localhost` and `127.0.0.1`, e.g.
    /// the webhook Service's `<service>.<namespace>.svc`.
    pub hosts: Vec<String>,
}

/// Default bound of a `BeforeClusterUpgrade` wait for the new release's addons.
pub const DEFAULT_UPGRADE_HOOK_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The Runtime SDK hooks' server.
#[derive(Clone, Debug)]
pub struct HooksSettings {
    pub addr: SocketAddr,
    /// Longest time `BeforeClusterUpgrade` holds one upgrade back.
    pub upgrade_timeout: Duration,
    /// Directory with `tls.crt` and `tls.key`; `None`: a self-signed certificate is
    /// generated at start.
    pub cert_dir: Option<PathBuf>,
    /// Names a generated certificate is valid for besides `localhost` and `127.0.0.1`.
    pub hosts: Vec<String>,
}

/// Leader election.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// This process's identity in the Lease (pod name, else host name + pid).
    pub identity: String,
    /// How long a lease is valid without renewal.
    pub lease_duration: Duration,
}

impl Settings {
    /// Settings for a test or a local run: all namespaces, no servers, no leader election.
    pub fn local(cache_dir: PathBuf) -> Settings {
        Settings {
            namespaces: Vec::new(),
            shard: None,
            concurrency: 4,
            drift_interval: DEFAULT_DRIFT_INTERVAL,
            drift_watches: true,
            metrics_addr: None,
            health_addr: None,
            webhook: None,
            hooks: None,
            leader_election: None,
            cache_dir,
            github_url: "https://api.github.com".into(),
            github_token: None,
            default_source: None,
            oci_credentials: capstan_source::oci::Credentials::Anonymous,
            oci_insecure: false,
            chart_repositories: capstan_source::charts::Settings::default(),
            controllers: crate::controllers::ControllerSet::all(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_source_from_the_cluster_stack_operators_settings() {
        use DefaultSourceKind::{Github, Oci};
        #[derive(Debug)]
        enum Want {
            Nothing,
            GitHub(&'static str, &'static str),
            Oci(&'static str),
            Refused(&'static str),
        }
        // (--source, GIT_PROVIDER, GIT_ORG_NAME, GIT_REPOSITORY_NAME, OCI_REGISTRY, OCI_REPOSITORY)
        type Row = (
            (
                Option<DefaultSourceKind>,
                Option<&'static str>,
                Option<&'static str>,
                Option<&'static str>,
                Option<&'static str>,
                Option<&'static str>,
            ),
            Want,
        );
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            ((None, None, None, None, None, None), Want::Nothing),
            ((None, Some(""), Some(" "), None, None, None), Want::Nothing),
            // No --source: github inferred from the git settings, as before --source existed.
            ((None, Some("github"), Some("scs"), Some("cluster-stacks"), None, None), Want::GitHub("scs", "cluster-stacks")),
            ((None, None, Some("scs"), Some("cluster-stacks"), None, None), Want::GitHub("scs", "cluster-stacks")),
            ((None, Some("GitHub"), Some("scs"), Some("cluster-stacks"), None, None), Want::GitHub("scs", "cluster-stacks")),
            ((None, Some("gitlab"), Some("scs"), Some("cluster-stacks"), None, None), Want::Refused("not supported")),
            ((None, Some("github"), None, None, None, None), Want::Refused("GIT_ORG_NAME")),
            ((None, None, Some("scs"), None, None, None), Want::Refused("GIT_REPOSITORY_NAME")),
            ((None, None, None, Some("cluster-stacks"), None, None), Want::Refused("GIT_ORG_NAME")),
            // The OCI settings alone choose nothing: CSO's --source names the kind.
            ((None, None, None, None, Some("registry.scs.community"), Some("kaas/cluster-stacks")), Want::Nothing),
            // --source github: the git settings are required.
            ((Some(Github), None, None, None, None, None), Want::Refused("GIT_ORG_NAME")),
            ((Some(Github), None, Some("scs"), Some("cluster-stacks"), Some("r.example"), Some("x")), Want::GitHub("scs", "cluster-stacks")),
            // --source oci: the OCI settings; the git ones are not looked at.
            (
                (Some(Oci), None, None, None, Some("registry.scs.community"), Some("kaas/cluster-stacks")),
                Want::Oci("registry.scs.community/kaas/cluster-stacks"),
            ),
            (
                (Some(Oci), Some("gitlab"), Some("scs"), None, Some("oci://127.0.0.1:5000/"), Some("/stacks")),
                Want::Oci("127.0.0.1:5000/stacks"),
            ),
            ((Some(Oci), None, None, None, None, Some("kaas/cluster-stacks")), Want::Refused("OCI_REGISTRY")),
            ((Some(Oci), None, None, None, Some("registry.scs.community"), Some(" ")), Want::Refused("OCI_REPOSITORY")),
            ((Some(Oci), None, None, None, Some("bad host"), Some("x")), Want::Refused("bad host")),
        ];
        for (
            i,
            ((source, git_provider, git_org_name, git_repository_name, oci_registry, oci_repository), want),
        ) in table.into_iter().enumerate()
        {
            let got = default_source(&DefaultSourceSettings {
                source,
                git_provider,
                git_org_name,
                git_repository_name,
                oci_registry,
                oci_repository,
            });
            match want {
                Want::Nothing => assert_eq!(got, Ok(None), "row {i}"),
                Want::GitHub(owner, repo) => assert_eq!(
                    got,
                    Ok(Some(StackSource::Github(GitHubSource {
                        owner: owner.into(),
                        repo: repo.into(),
                        ..GitHubSource::default()
                    }))),
                    "row {i}"
                ),
                Want::Oci(repository) => assert_eq!(
                    got,
                    Ok(Some(StackSource::Oci(OciSource {
                        repository: repository.into(),
                        secret_ref: None,
                    }))),
                    "row {i}"
                ),
                Want::Refused(part) => {
                    let err = got.expect_err("refused");
                    assert!(err.contains(part), "row {i}: {err}");
                }
            }
        }
    }
}
