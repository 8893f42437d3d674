//! `capstan operator`: parses the flags into [`Settings`] and runs the operator until SIGTERM
//! or SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use super::kube::{connect_to, parse_duration, runtime};
use capstan_operator::cli::operator::{WORKLOAD_CLUSTER_CAPACITY, lease_name, parse_shard_key};
use capstan_operator::settings::{
    DEFAULT_DRIFT_INTERVAL, DEFAULT_UPGRADE_HOOK_TIMEOUT, DefaultSourceKind, DefaultSourceSettings,
    HooksSettings, LeaderElection, MIN_DRIFT_INTERVAL, Settings, WebhookSettings, default_source,
};
use capstan_operator::{ControllerSet, Metrics, run, shutdown_on};
use capstan_source::net::NetworkTimeouts;

/// Arguments of `capstan operator`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Run the operator: ClusterStack, ClusterStackRelease, Cluster and ClusterAddon controllers, webhooks, Runtime SDK hooks, metrics"
)]
pub struct Args {
    /// Kubeconfig of the management cluster (default: $KUBECONFIG, else ~/.kube/config, else
    /// in-cluster).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    context: Option<String>,

    /// Only reconcile objects in this namespace; repeatable (default: all namespaces).
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    namespaces: Vec<String>,

    /// Reconcile only the shard KEY: Clusters and ClusterStacks labelled
    /// sharding.capstan.dev/key=KEY and what the operator makes for them; its own leader Lease
    /// (capstan-operator-KEY). Without it: the objects without that label (the default shard).
    #[arg(long, value_name = "KEY", value_parser = parse_shard)]
    shard: Option<String>,

    /// Reconciles of one kind that run at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    concurrency: u16,

    /// Workload clusters whose connection and drift watches are kept at most; set it above
    /// the Clusters this replica (shard) serves, or the least recently used reconnect on
    /// nearly every pass.
    #[arg(long, default_value_t = WORKLOAD_CLUSTER_CAPACITY, value_name = "N")]
    workload_clusters: usize,

    /// Longest time between two drift checks of an applied release (floor 1m).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    drift_interval: Option<Duration>,

    /// Watch what was applied to workload clusters and repair a change at once (`false`:
    /// only the drift pass, every --drift-interval, repairs it).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    drift_watches: bool,

    /// Serve Prometheus metrics on /metrics at this address (e.g. :8080).
    #[arg(long, value_parser = parse_addr, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,

    /// Serve /healthz and /readyz at this address (e.g. :8081).
    #[arg(long, value_parser = parse_addr, value_name = "ADDR")]
    health_addr: Option<SocketAddr>,

    /// Serve the validating webhooks (HTTPS) at this address (e.g. :9443).
    #[arg(long, value_parser = parse_addr, value_name = "ADDR")]
    webhook_addr: Option<SocketAddr>,

    /// Directory with the webhook's tls.crt and tls.key (default: a generated self-signed
    /// certificate); the runtime hooks server uses it too.
    #[arg(long, value_name = "DIR")]
    webhook_cert_dir: Option<PathBuf>,

    /// Extra DNS name or IP of the generated webhook certificate (besides localhost and
    /// 127.0.0.1); repeatable; the runtime hooks server's generated certificate too.
    #[arg(long = "webhook-host", value_name = "NAME")]
    webhook_hosts: Vec<String>,

    /// Serve the Cluster API Runtime SDK hooks (HTTPS: BeforeClusterUpgrade,
    /// AfterControlPlaneInitialized) at this address (e.g. :9444); register it with an
    /// ExtensionConfig.
    #[arg(long, value_parser = parse_addr, value_name = "ADDR")]
    hooks_addr: Option<SocketAddr>,

    /// Longest time BeforeClusterUpgrade holds an upgrade back waiting for the new release's
    /// addons; then the upgrade proceeds and an event reports it.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION", requires = "hooks_addr")]
    upgrade_hook_timeout: Option<Duration>,

    /// The controllers to run: a comma list of clusterstack, clusterstackrelease, cluster,
    /// clusteraddon, rollout; `*` for all, `-name` leaves one out (`*,-clusteraddon`).
    #[arg(long, default_value = "*", value_parser = parse_controllers, value_name = "LIST")]
    controllers: ControllerSet,

    /// Run the controllers only while holding the leader Lease.
    #[arg(long)]
    leader_elect: bool,

    /// Namespace of the leader Lease (default: the kubeconfig context's namespace).
    #[arg(long, value_name = "NS")]
    leader_election_namespace: Option<String>,

    /// Release cache: downloads and git mirrors (default $XDG_CACHE_HOME/capstan/release-cache).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,

    /// GitHub API for sources that name none.
    #[arg(long, default_value = "https://api.github.com", value_name = "URL")]
    github_url: String,

    /// The source of ClusterStacks without spec.source, as the cluster-stack operator's
    /// `--source`: `oci` (the repository $OCI_REGISTRY/$OCI_REPOSITORY, credentials
    /// $OCI_USERNAME and $OCI_PASSWORD or $OCI_ACCESS_TOKEN) or `github` (the --git-* settings
    /// below). Default: github when only --git-* settings are given, oci when only
    /// $OCI_REGISTRY/$OCI_REPOSITORY are; both kinds without --source is refused.
    #[arg(long, value_enum, value_name = "oci|github")]
    source: Option<SourceKindArg>,

    /// Provider of the default GitHub source: github (default: $GIT_PROVIDER, as for the
    /// cluster-stack operator). Its token: $GITHUB_TOKEN, else $GIT_ACCESS_TOKEN.
    #[arg(long, value_name = "PROVIDER")]
    git_provider: Option<String>,

    /// Owner of the default source's GitHub repository (default: $GIT_ORG_NAME).
    #[arg(long, value_name = "OWNER")]
    git_org_name: Option<String>,

    /// Name of the default source's GitHub repository (default: $GIT_REPOSITORY_NAME).
    #[arg(long, value_name = "REPO")]
    git_repository_name: Option<String>,

    /// Use plain http for OCI registries that are not on loopback.
    #[arg(long)]
    insecure_registry: bool,

    /// A public key (PEM, as cosign.pub) whose cosign signature every release of a
    /// ClusterStack without spec.verify must carry; repeat for several keys (any one
    /// suffices). A release that fails is neither rendered nor applied. Also what every
    /// `oci://` chart dependency must carry (unless --dependency-policy names its repository).
    #[arg(long = "verify-key", value_name = "FILE")]
    verify_keys: Vec<std::path::PathBuf>,
    /// A keyless signer (`ISSUER=SUBJECT`, regexes) releases of every ClusterStack without
    /// spec.verify may be signed by; repeat for several (any one suffices).
    #[arg(long = "verify-identity", value_name = "ISSUER=SUBJECT", value_parser = super::source_args::parse_identity)]
    verify_identities: Vec<capstan_source::verify::Identity>,
    /// Sigstore trusted root (`trusted_root.json`) for --verify-identity [default: Sigstore's
    /// public-good instance, shipped with capstan].
    #[arg(long, value_name = "FILE")]
    trusted_root: Option<std::path::PathBuf>,

    /// Where the charts' missing dependencies come from (mirrors, credentials, --offline).
    #[command(flatten)]
    repositories: super::repository_args::RepositoryArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SourceKindArg {
    Oci,
    Github,
}

impl From<SourceKindArg> for DefaultSourceKind {
    fn from(kind: SourceKindArg) -> DefaultSourceKind {
        match kind {
            SourceKindArg::Oci => DefaultSourceKind::Oci,
            SourceKindArg::Github => DefaultSourceKind::Github,
        }
    }
}

/// An environment variable's value (empty counts as unset).
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A flag's value, else the environment variable's.
fn flag_or_env(flag: &Option<String>, var: &str) -> Option<String> {
    flag.clone().or_else(|| env_var(var))
}

/// A `--shard` key: a label value.
fn parse_shard(text: &str) -> Result<String, String> {
    parse_shard_key(text).map_err(|e| e.to_string())
}

/// A `--controllers` list.
fn parse_controllers(text: &str) -> Result<ControllerSet, String> {
    ControllerSet::parse(text).map_err(|e| e.to_string())
}

/// `:8080` (all interfaces), `127.0.0.1:8080`, `[::1]:8080`.
fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let full = if text.starts_with(':') {
        format!("0.0.0.0{text}")
    } else {
        text.to_string()
    };
    full.parse()
        .map_err(|e| format!("{text:?} is not an address like :8080 or 127.0.0.1:8080: {e}"))
}

pub fn run_operator(args: &Args) -> anyhow::Result<()> {
    let drift_interval = args.drift_interval.unwrap_or(DEFAULT_DRIFT_INTERVAL);
    if drift_interval < MIN_DRIFT_INTERVAL {
        tracing::warn!(
            requested = ?drift_interval,
            "--drift-interval below the floor of 1m: using 1m"
        );
    }
    let provider = flag_or_env(&args.git_provider, "GIT_PROVIDER");
    let org = flag_or_env(&args.git_org_name, "GIT_ORG_NAME");
    let repository = flag_or_env(&args.git_repository_name, "GIT_REPOSITORY_NAME");
    let (oci_registry, oci_repository) = (env_var("OCI_REGISTRY"), env_var("OCI_REPOSITORY"));
    let default_source = default_source(&DefaultSourceSettings {
        source: args.source.map(DefaultSourceKind::from),
        git_provider: provider.as_deref(),
        git_org_name: org.as_deref(),
        git_repository_name: repository.as_deref(),
        oci_registry: oci_registry.as_deref(),
        oci_repository: oci_repository.as_deref(),
    })
    .context("the default source of ClusterStacks without spec.source")?;
    match &default_source {
        Some(chosen) => tracing::info!("default source of ClusterStacks without spec.source: {chosen}"),
        None => tracing::info!(
            "no default source (no --source, no GIT_ORG_NAME/GIT_REPOSITORY_NAME, no OCI_REGISTRY/OCI_REPOSITORY): every ClusterStack needs spec.source"
        ),
    }
    let default_source = default_source.map(|chosen| chosen.source);
    let runtime = runtime()?;
    runtime.block_on(async {
        let target = connect_to(args.kubeconfig.as_deref(), args.context.as_deref(), None).await?;
        let cache_dir = match &args.cache_dir {
            Some(dir) => dir.clone(),
            None => super::source_args::default_cache_dir()?,
        };
        let identity = std::env::var("POD_NAME").unwrap_or_else(|_| {
            let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
            format!("{}-{}", host.trim(), std::process::id())
        });
        let verify = super::source_args::read_policy(
            &args.verify_keys,
            &args.verify_identities,
            args.trusted_root.as_deref(),
        )?;
        let settings = Settings {
            namespaces: args.namespaces.clone(),
            shard: args.shard.clone(),
            concurrency: args.concurrency.max(1),
            workload_clusters: args.workload_clusters.max(1),
            drift_interval: drift_interval.max(MIN_DRIFT_INTERVAL),
            drift_watches: args.drift_watches,
            metrics_addr: args.metrics_addr,
            health_addr: args.health_addr,
            webhook: args.webhook_addr.map(|addr| WebhookSettings {
                addr,
                cert_dir: args.webhook_cert_dir.clone(),
                hosts: args.webhook_hosts.clone(),
            }),
            hooks: args.hooks_addr.map(|addr| HooksSettings {
                addr,
                upgrade_timeout: args.upgrade_hook_timeout.unwrap_or(DEFAULT_UPGRADE_HOOK_TIMEOUT),
                cert_dir: args.webhook_cert_dir.clone(),
                hosts: args.webhook_hosts.clone(),
            }),
            leader_election: args.leader_elect.then(|| LeaderElection {
                namespace: args
                    .leader_election_namespace
                    .clone()
                    .unwrap_or_else(|| target.namespace.clone()),
                lease_name: lease_name(args.shard.as_deref()),
                identity,
                lease_duration: Duration::from_secs(15),
            }),
            cache_dir,
            github_url: args.github_url.clone(),
            github_token: env_var("GITHUB_TOKEN").or_else(|| env_var("GIT_ACCESS_TOKEN")),
            default_source,
            oci_credentials: capstan_source::oci::Credentials::from_env(),
            oci_insecure: args.insecure_registry,
            chart_repositories: capstan_source::charts::Settings {
                // As the CLI's: the --verify-* policy is also that of `oci://` chart
                // dependencies (unless --dependency-policy names their repository).
                cosign: verify.clone(),
                ..args.repositories.settings(false, NetworkTimeouts::default())?
            },
            controllers: args.controllers.clone(),
            verify,
        };
        let metrics = Arc::new(Metrics::new());
        let shutdown = shutdown_on(async {
            wait_for_signal().await;
            tracing::info!("shutdown signal: finishing running reconciles");
        });
        run(target.client, settings, metrics, shutdown)
            .await
            .context("operator")
    })
}

/// SIGTERM (Kubernetes stopping the pod) or SIGINT.
async fn wait_for_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; stopping on SIGINT only");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
