//! What `capstan operator` is told on its command line, as one value the runtime and the
//! controllers share. The CLI only fills it in.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Token for GitHub sources without a Secret (`GITHUB_TOKEN`).
    pub github_token: Option<String>,
    /// Where the addon and ClusterClass charts' missing dependencies come from (mirrors,
    /// credentials, offline); fetched charts are kept in the release cache.
    pub chart_repositories: crate::source::charts::Settings,
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
            chart_repositories: crate::source::charts::Settings::default(),
        }
    }
}
