//! The flags of `capstan get` (and of `describe addon`, which shares them).

use std::path::PathBuf;

/// The cluster to read from.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE", global = true)]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME", global = true)]
    pub context: Option<String>,

    /// Namespace (default: the context's namespace, else `default`).
    #[arg(short = 'n', long, value_name = "NS", global = true)]
    pub namespace: Option<String>,
}

/// `capstan get`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub(super) what: What,

    #[command(flatten)]
    pub(super) cluster: ClusterArgs,
}

#[derive(Debug, clap::Subcommand)]
pub(super) enum What {
    /// ClusterStacks: channel, newest and usable releases, source, readiness.
    #[command(visible_aliases = ["stack", "clusterstacks", "csk"])]
    Stacks(ListArgs),
    /// ClusterStackReleases: Kubernetes version, readiness, objects synced, Clusters on each.
    #[command(visible_aliases = ["release", "clusterstackreleases", "cskr"])]
    Releases(ListArgs),
    /// ClusterAddons: one line per Cluster — release applied and wanted, stage, readiness,
    /// objects synced, last drift correction.
    #[command(visible_aliases = ["clusteraddons", "caddon"])]
    Addons(ListArgs),
    /// One Cluster's addons in full: objects with sync and health, stages, inputs, Events.
    Addon(OneArgs),
    /// ClusterStackRollouts: target release, phase, current wave, Clusters healthy and failed
    /// (`--fail-not-ready`: any rollout not Complete or Idle).
    #[command(visible_aliases = ["rollout", "clusterstackrollouts", "csro"])]
    Rollouts(ListArgs),
}

/// Output formats of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// More columns, whole messages.
    Wide,
    /// The rows as JSON (`{"kind": "...List", "items": [...]}`; fields in the README).
    Json,
    /// The rows as YAML, the same fields as JSON.
    Yaml,
    /// `KIND.GROUP/NAME`, one object a line (as `kubectl get -o name`).
    Name,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only these objects, by name (addons also by their Cluster's name); a name not found is
    /// an error.
    #[arg(value_name = "NAME")]
    pub(super) names: Vec<String>,

    /// Every namespace (a NAMESPACE column is added).
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub(super) all_namespaces: bool,

    /// Only objects with these labels (`key=value,key2!=value,!key,key in (a,b)`).
    /// ClusterAddons: by their Cluster's labels together with their own (each carries its
    /// Cluster's name as `cluster.x-k8s.io/cluster-name`).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub(super) selector: Option<String>,

    /// After the list, print each object again when it changes or is deleted (until
    /// interrupted).
    #[arg(short = 'w', long)]
    pub(super) watch: bool,

    /// With `-w`: say what happened (`ADDED`, `MODIFIED`, `DELETED`) in an EVENT column first,
    /// or as `{"type": …, "object": …}` with `-o json|yaml`.
    #[arg(long, requires = "watch")]
    pub(super) output_watch_events: bool,

    /// Print the table without its header line.
    #[arg(long)]
    pub(super) no_headers: bool,

    /// Output format (default: a table).
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    pub(super) output: Option<Format>,

    /// Exit with status 1 when any object listed is not ready (for scripts and CI).
    #[arg(long)]
    pub(super) fail_not_ready: bool,
}

#[derive(Debug, clap::Args)]
pub struct OneArgs {
    /// The Cluster (its ClusterAddon is found by `spec.clusterRef`), or the ClusterAddon's name.
    #[arg(value_name = "CLUSTER")]
    pub(super) cluster: String,

    /// Output format (default: the text view).
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    pub(super) output: Option<Format>,

    /// Exit with status 1 when the addon is not ready.
    #[arg(long)]
    pub(super) fail_not_ready: bool,
}
