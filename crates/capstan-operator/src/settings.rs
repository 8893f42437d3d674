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
    /// Workload clusters whose connection and drift watches are kept at most (the workload
    /// cluster cache; past it the least recently used reconnects on its next pass).
    pub workload_clusters: usize,
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
    /// The signature policy of ClusterStacks without `spec.verify` (`--verify-key`); empty:
    /// such releases are not verified.
    pub verify: capstan_source::verify::Policy,
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

/// The default source and why it was chosen (logged at start).
#[derive(Clone, Debug, PartialEq)]
pub struct DefaultSource {
    pub source: StackSource,
    pub reason: DefaultSourceReason,
}

/// Why a default source was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultSourceReason {
    /// `--source` named its kind.
    Flag,
    /// No `--source`; only git settings were set (`GIT_*`, `--git-*`).
    GitSettings,
    /// No `--source`; only `OCI_REGISTRY`/`OCI_REPOSITORY` were set.
    OciSettings,
}

impl std::fmt::Display for DefaultSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            StackSource::Oci(oci) => write!(f, "OCI repository {}", oci.repository)?,
            StackSource::Github(gh) => write!(f, "GitHub repository {}/{}", gh.owner, gh.repo)?,
            other => write!(f, "{other:?}")?,
        }
        f.write_str(match self.reason {
            DefaultSourceReason::Flag => " (named by --source)",
            DefaultSourceReason::GitSettings => {
                " (no --source; inferred from the git settings GIT_ORG_NAME/GIT_REPOSITORY_NAME)"
            }
            DefaultSourceReason::OciSettings => " (no --source; inferred from OCI_REGISTRY/OCI_REPOSITORY)",
        })
    }
}

/// Why the cluster-stack operator's settings make no default source.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DefaultSourceError {
    #[error(
        "both git settings ({git}) and OCI settings ({oci}) are set and no --source says which is the default source: pass --source github or --source oci, or unset one kind"
    )]
    Ambiguous { git: String, oci: String },
    #[error("the default source oci needs OCI_REGISTRY: the registry's host, e.g. registry.scs.community")]
    MissingOciRegistry,
    #[error("the default source oci needs OCI_REPOSITORY: the repository, e.g. kaas/cluster-stacks")]
    MissingOciRepository,
    #[error("the default source oci: OCI_REGISTRY/OCI_REPOSITORY {repository}: {message}")]
    InvalidOciRepository { repository: String, message: String },
    #[error("GIT_PROVIDER {0:?} is not supported: the default source can only be github (or --source oci)")]
    UnsupportedGitProvider(String),
    #[error("the default source needs GIT_ORG_NAME (--git-org-name): the repository's owner")]
    MissingGitOrgName,
    #[error("the default source needs GIT_REPOSITORY_NAME (--git-repository-name)")]
    MissingGitRepositoryName,
}

/// The default source from the cluster-stack operator's settings. `--source oci`: the
/// repository `OCI_REGISTRY/OCI_REPOSITORY` (checked now, so a typo stops the operator at
/// start, not at every reconcile). `--source github`: the GitHub repository
/// `GIT_ORG_NAME/GIT_REPOSITORY_NAME` (`GIT_PROVIDER` may only be `github`). No `--source`:
/// the kind whose settings alone are set — the cluster-stack operator's chart sets only the
/// variables of the kind its `-source` names — and both kinds set is refused as ambiguous.
/// Nothing set: no default source.
pub fn default_source(settings: &DefaultSourceSettings) -> Result<Option<DefaultSource>, DefaultSourceError> {
    fn set(v: Option<&str>) -> Option<&str> {
        v.map(str::trim).filter(|v| !v.is_empty())
    }
    fn named(vars: &[(&str, Option<&str>)]) -> String {
        let names: Vec<&str> = vars
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(n, _)| *n)
            .collect();
        names.join(", ")
    }
    let provider = set(settings.git_provider);
    let org = set(settings.git_org_name);
    let repository = set(settings.git_repository_name);
    let registry = set(settings.oci_registry);
    let oci_path = set(settings.oci_repository);
    let git = named(&[
        ("GIT_PROVIDER", provider),
        ("GIT_ORG_NAME", org),
        ("GIT_REPOSITORY_NAME", repository),
    ]);
    let oci = named(&[("OCI_REGISTRY", registry), ("OCI_REPOSITORY", oci_path)]);
    let (kind, reason) = match settings.source {
        Some(kind) => (kind, DefaultSourceReason::Flag),
        None => match (git.is_empty(), oci.is_empty()) {
            (true, true) => return Ok(None),
            (false, false) => return Err(DefaultSourceError::Ambiguous { git, oci }),
            (false, true) => (DefaultSourceKind::Github, DefaultSourceReason::GitSettings),
            (true, false) => (DefaultSourceKind::Oci, DefaultSourceReason::OciSettings),
        },
    };
    let source = match kind {
        DefaultSourceKind::Oci => {
            let registry = registry.ok_or(DefaultSourceError::MissingOciRegistry)?;
            let path = oci_path.ok_or(DefaultSourceError::MissingOciRepository)?;
            let full = format!(
                "{}/{}",
                registry.trim_start_matches("oci://").trim_end_matches('/'),
                path.trim_start_matches('/')
            );
            capstan_source::oci::OciRepo::parse(&full).map_err(|e| {
                DefaultSourceError::InvalidOciRepository {
                    repository: full.clone(),
                    message: e.to_string(),
                }
            })?;
            StackSource::Oci(OciSource {
                repository: full,
                secret_ref: None,
            })
        }
        DefaultSourceKind::Github => {
            if let Some(p) = provider
                && !p.eq_ignore_ascii_case("github")
            {
                return Err(DefaultSourceError::UnsupportedGitProvider(p.to_string()));
            }
            match (org, repository) {
                (Some(owner), Some(repo)) => StackSource::Github(GitHubSource {
                    owner: owner.to_string(),
                    repo: repo.to_string(),
                    ..GitHubSource::default()
                }),
                (None, _) => return Err(DefaultSourceError::MissingGitOrgName),
                (_, None) => return Err(DefaultSourceError::MissingGitRepositoryName),
            }
        }
    };
    Ok(Some(DefaultSource { source, reason }))
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
            workload_clusters: crate::addon::cache::CAPACITY,
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
            verify: capstan_source::verify::Policy::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_source_from_the_cluster_stack_operators_settings() {
        use DefaultSourceKind::{Github, Oci};
        use DefaultSourceReason::{Flag, GitSettings, OciSettings};
        #[derive(Debug)]
        enum Want {
            Nothing,
            GitHub(&'static str, &'static str, DefaultSourceReason),
            Oci(&'static str, DefaultSourceReason),
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
            ((None, Some(""), Some(" "), None, Some(""), Some(" ")), Want::Nothing),
            // No --source: github inferred from the git settings, as before --source existed.
            ((None, Some("github"), Some("scs"), Some("cluster-stacks"), None, None), Want::GitHub("scs", "cluster-stacks", GitSettings)),
            ((None, None, Some("scs"), Some("cluster-stacks"), None, None), Want::GitHub("scs", "cluster-stacks", GitSettings)),
            ((None, Some("GitHub"), Some("scs"), Some("cluster-stacks"), Some(""), None), Want::GitHub("scs", "cluster-stacks", GitSettings)),
            ((None, Some("gitlab"), Some("scs"), Some("cluster-stacks"), None, None), Want::Refused("not supported")),
            ((None, Some("github"), None, None, None, None), Want::Refused("GIT_ORG_NAME")),
            ((None, None, Some("scs"), None, None, None), Want::Refused("GIT_REPOSITORY_NAME")),
            ((None, None, None, Some("cluster-stacks"), None, None), Want::Refused("GIT_ORG_NAME")),
            // No --source: oci inferred from the OCI settings alone (CSO's chart sets only
            // them with `-source oci`).
            (
                (None, None, None, None, Some("registry.scs.community"), Some("kaas/cluster-stacks")),
                Want::Oci("registry.scs.community/kaas/cluster-stacks", OciSettings),
            ),
            (
                (None, Some(" "), Some(""), None, Some("oci://127.0.0.1:5000/"), Some("/stacks")),
                Want::Oci("127.0.0.1:5000/stacks", OciSettings),
            ),
            ((None, None, None, None, None, Some("kaas/cluster-stacks")), Want::Refused("needs OCI_REGISTRY")),
            ((None, None, None, None, Some("registry.scs.community"), None), Want::Refused("needs OCI_REPOSITORY")),
            // Both kinds and no --source: refused, naming what is set.
            (
                (None, None, Some("scs"), Some("cluster-stacks"), Some("registry.scs.community"), Some("kaas/cluster-stacks")),
                Want::Refused("git settings (GIT_ORG_NAME, GIT_REPOSITORY_NAME) and OCI settings (OCI_REGISTRY, OCI_REPOSITORY) are set and no --source"),
            ),
            ((None, Some("github"), None, None, None, Some("x")), Want::Refused("(GIT_PROVIDER) and OCI settings (OCI_REPOSITORY)")),
            // --source github: the git settings are required.
            ((Some(Github), None, None, None, None, None), Want::Refused("GIT_ORG_NAME")),
            ((Some(Github), None, Some("scs"), Some("cluster-stacks"), Some("r.example"), Some("x")), Want::GitHub("scs", "cluster-stacks", Flag)),
            // --source oci: the OCI settings; the git ones are not looked at.
            (
                (Some(Oci), None, None, None, Some("registry.scs.community"), Some("kaas/cluster-stacks")),
                Want::Oci("registry.scs.community/kaas/cluster-stacks", Flag),
            ),
            (
                (Some(Oci), Some("gitlab"), Some("scs"), None, Some("oci://127.0.0.1:5000/"), Some("/stacks")),
                Want::Oci("127.0.0.1:5000/stacks", Flag),
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
                Want::GitHub(owner, repo, reason) => assert_eq!(
                    got,
                    Ok(Some(DefaultSource {
                        source: StackSource::Github(GitHubSource {
                            owner: owner.into(),
                            repo: repo.into(),
                            ..GitHubSource::default()
                        }),
                        reason,
                    })),
                    "row {i}"
                ),
                Want::Oci(repository, reason) => assert_eq!(
                    got,
                    Ok(Some(DefaultSource {
                        source: StackSource::Oci(OciSource {
                            repository: repository.into(),
                            secret_ref: None,
                        }),
                        reason,
                    })),
                    "row {i}"
                ),
                Want::Refused(part) => {
                    let err = got.expect_err("refused").to_string();
                    assert!(err.contains(part), "row {i}: {err}");
                }
            }
        }
    }

    #[test]
    fn the_chosen_default_source_says_why() {
        let oci = DefaultSource {
            source: StackSource::Oci(OciSource {
                repository: "registry.scs.community/kaas/cluster-stacks".into(),
                secret_ref: None,
            }),
            reason: DefaultSourceReason::OciSettings,
        };
        assert_eq!(
            oci.to_string(),
            "OCI repository registry.scs.community/kaas/cluster-stacks (no --source; inferred from OCI_REGISTRY/OCI_REPOSITORY)"
        );
        let github = DefaultSource {
            source: StackSource::Github(GitHubSource {
                owner: "scs".into(),
                repo: "cluster-stacks".into(),
                ..GitHubSource::default()
            }),
            reason: DefaultSourceReason::Flag,
        };
        assert_eq!(
            github.to_string(),
            "GitHub repository scs/cluster-stacks (named by --source)"
        );
    }
}
