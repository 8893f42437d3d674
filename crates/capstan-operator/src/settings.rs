//! What `capstan operator` is told on its command line, as one value the runtime and the
//! controllers share. The CLI only fills it in.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::api::{GitHubSource, StackSource};

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
    /// Reconciles of one kind that run at once.
    pub concurrency: u16,
    /// Time between drift passes (at least [`MIN_DRIFT_INTERVAL`]).
    pub drift_interval: Duration,
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
    /// The source of ClusterStacks without `spec.source` (see [`default_source`]).
    pub default_source: Option<StackSource>,
}

/// The default source from the cluster-stack operator's settings: `GIT_PROVIDER` (only
/// `github`; unset means `github`), `GIT_ORG_NAME` and `GIT_REPOSITORY_NAME` (or the flags of
/// the same names). Nothing set: no default source. Empty values count as unset.
pub fn default_source(
    provider: Option<&str>,
    org: Option<&str>,
    repository: Option<&str>,
) -> Result<Option<StackSource>, String> {
    fn set(v: Option<&str>) -> Option<&str> {
        v.map(str::trim).filter(|v| !v.is_empty())
    }
    let (provider, org, repository) = (set(provider), set(org), set(repository));
    if let Some(p) = provider
        && !p.eq_ignore_ascii_case("github")
    {
        return Err(format!(
            "GIT_PROVIDER {p:?} is not supported: the default source can only be github"
        ));
    }
    match (org, repository) {
        (None, None) if provider.is_none() => Ok(None),
        (Some(owner), Some(repo)) => Ok(Some(StackSource::Github(GitHubSource {
            owner: owner.to_string(),
            repo: repo.to_string(),
            ..GitHubSource::default()
        }))),
        (None, _) => {
            Err("the default source needs GIT_ORG_NAME (--git-org-name): the repository's owner".into())
        }
        (_, None) => Err("the default source needs GIT_REPOSITORY_NAME (--git-repository-name)".into()),
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
            concurrency: 4,
            drift_interval: DEFAULT_DRIFT_INTERVAL,
            metrics_addr: None,
            health_addr: None,
            webhook: None,
            hooks: None,
            leader_election: None,
            cache_dir,
            github_url: "https://api.github.com".into(),
            github_token: None,
            default_source: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_source_from_the_cluster_stack_operators_settings() {
        let github = |owner: &str, repo: &str| {
            Ok(Some(StackSource::Github(GitHubSource {
                owner: owner.into(),
                repo: repo.into(),
                ..GitHubSource::default()
            })))
        };
        type Row<'a> = (
            (Option<&'a str>, Option<&'a str>, Option<&'a str>),
            Result<Option<StackSource>, &'a str>,
        );
        let table: &[Row] = &[
            ((None, None, None), Ok(None)),
            ((Some(""), Some(" "), None), Ok(None)),
            ((Some("github"), Some("scs"), Some("cluster-stacks")), Ok(None)),
            ((None, Some("scs"), Some("cluster-stacks")), Ok(None)),
            ((Some("GitHub"), Some("scs"), Some("cluster-stacks")), Ok(None)),
            (
                (Some("gitlab"), Some("scs"), Some("cluster-stacks")),
                Err("not supported"),
            ),
            ((Some("github"), None, None), Err("GIT_ORG_NAME")),
            ((None, Some("scs"), None), Err("GIT_REPOSITORY_NAME")),
            ((None, None, Some("cluster-stacks")), Err("GIT_ORG_NAME")),
        ];
        for (i, ((provider, org, repo), want)) in table.iter().enumerate() {
            let got = default_source(*provider, *org, *repo);
            match want {
                Ok(None) if org.is_some_and(|o| !o.trim().is_empty()) => {
                    assert_eq!(got, github("scs", "cluster-stacks"), "row {i}")
                }
                Ok(want) => assert_eq!(got, Ok(want.clone()), "row {i}"),
                Err(part) => {
                    let err = got.expect_err("refused");
                    assert!(err.contains(part), "row {i}: {err}");
                }
            }
        }
    }
}
