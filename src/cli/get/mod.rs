//! `capstan get stacks|releases|addons|rollouts` and `capstan get addon CLUSTER`: a fleet at a
//! glance.
//! This module is the thin shell: the flags and the list (here), the kinds listed (`kinds`),
//! printing (`print`), following changes (`watch`) and one addon's view (`addon_view`); what
//! each row and table holds is decided in `rows` and `describe_addon`.

mod addon_view;
mod describe_addon;
mod follow;
mod kinds;
mod print;
mod rows;
mod select;
mod table;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use kube::api::ListParams;

use kinds::{AddonKind, Kind, ReleaseKind, RolloutKind, Scope, StackKind};
use print::{Listed, Printer};
use rows::Layout;
use table::colour_stdout;

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
    what: What,

    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(Debug, clap::Subcommand)]
enum What {
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
    names: Vec<String>,

    /// Every namespace (a NAMESPACE column is added).
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    all_namespaces: bool,

    /// Only objects with these labels (`key=value,key2!=value,!key,key in (a,b)`).
    /// ClusterAddons: by their Cluster's labels together with their own (each carries its
    /// Cluster's name as `cluster.x-k8s.io/cluster-name`).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    selector: Option<String>,

    /// After the list, print each object again when it changes or is deleted (until
    /// interrupted).
    #[arg(short = 'w', long)]
    watch: bool,

    /// With `-w`: say what happened (`ADDED`, `MODIFIED`, `DELETED`) in an EVENT column first,
    /// or as `{"type": …, "object": …}` with `-o json|yaml`.
    #[arg(long, requires = "watch")]
    output_watch_events: bool,

    /// Print the table without its header line.
    #[arg(long)]
    no_headers: bool,

    /// Output format (default: a table).
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    output: Option<Format>,

    /// Exit with status 1 when any object listed is not ready (for scripts and CI).
    #[arg(long)]
    fail_not_ready: bool,
}

#[derive(Debug, clap::Args)]
pub struct OneArgs {
    /// The Cluster (its ClusterAddon is found by `spec.clusterRef`), or the ClusterAddon's name.
    #[arg(value_name = "CLUSTER")]
    cluster: String,

    /// Output format (default: the text view).
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    output: Option<Format>,

    /// Exit with status 1 when the addon is not ready.
    #[arg(long)]
    fail_not_ready: bool,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let runtime = crate::cli::kube::runtime()?;
    runtime.block_on(async {
        let target = crate::cli::kube::connect_to(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.namespace.as_deref(),
        )
        .await?;
        match &args.what {
            What::Stacks(list) => run_list::<StackKind>(&target, list).await,
            What::Releases(list) => run_list::<ReleaseKind>(&target, list).await,
            What::Addons(list) => run_list::<AddonKind>(&target, list).await,
            What::Addon(one) => addon_view::show_addon(&target, one).await,
            What::Rollouts(list) => run_list::<RolloutKind>(&target, list).await,
        }
    })
}

/// `capstan describe addon CLUSTER`: the same view as `capstan get addon CLUSTER`.
pub fn describe(cluster: &ClusterArgs, one: &OneArgs) -> anyhow::Result<ExitCode> {
    run(&Args {
        what: What::Addon(OneArgs {
            cluster: one.cluster.clone(),
            output: one.output,
            fail_not_ready: one.fail_not_ready,
        }),
        cluster: cluster.clone(),
    })
}

async fn run_list<K: Kind>(target: &crate::cli::kube::Target, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let mut params = ListParams::default();
    let namespace = (!args.all_namespaces).then_some(target.namespace.as_str());
    let mut by_cluster = None;
    match &args.selector {
        Some(selector) if K::BY_CLUSTER => {
            by_cluster = Some(select::ByCluster::list(&target.client, namespace, selector).await?)
        }
        Some(selector) => params = params.labels(selector),
        None => {}
    }
    let scope = Scope {
        client: &target.client,
        namespace,
        params,
        by_cluster,
    };
    let where_ = match scope.namespace {
        Some(ns) => format!("in namespace {ns}"),
        None => "in any namespace".to_string(),
    };
    let objects = scope
        .api::<K::Object>()
        .list(&scope.params)
        .await
        .with_context(|| {
            let labels = args
                .selector
                .as_ref()
                .map(|s| format!(" with labels {s:?}"))
                .unwrap_or_default();
            format!("listing {} {where_}{labels} on {}", K::PLURAL, target.server)
        })?
        .items
        .into_iter()
        .filter(|o| scope.by_cluster.as_ref().is_none_or(|by| K::selected(o, by)))
        .collect::<Vec<_>>();
    let extra = K::extra(&scope).await?;
    let mut rows: Vec<Listed<K>> = objects
        .iter()
        .map(|o| Listed::of(o, &extra))
        .filter(|r| args.names.is_empty() || r.names(&args.names))
        .collect();
    rows.sort_by_key(|r| K::sort_key(&r.row));
    let missing: Vec<&String> = args
        .names
        .iter()
        .filter(|name| !rows.iter().any(|r| r.names(&[name.to_string()])))
        .collect();
    let printer = Printer {
        layout: Layout {
            namespaces: args.all_namespaces,
            wide: args.output == Some(Format::Wide),
        },
        format: args.output,
        events: args.output_watch_events,
        colour: colour_stdout(),
    };
    let widths = if rows.is_empty() && args.output.is_none_or(|f| f == Format::Wide) {
        if args.names.is_empty() {
            eprintln!("No {} found {where_}.", K::PLURAL);
        }
        Vec::new()
    } else {
        printer.list::<K>(&rows, args.no_headers)?
    };
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|n| format!("{n:?}")).collect();
        bail!(
            "{} {} not found {where_}",
            if missing.len() == 1 {
                <K::Object as kube::Resource>::kind(&())
            } else {
                K::PLURAL.into()
            },
            names.join(", ")
        );
    }
    if args.watch {
        watch::watch::<K>(&scope, extra, &rows, &args.names, &printer, &widths).await?;
    }
    let not_ready = rows.iter().filter(|r| !K::ready(&r.row)).count();
    if args.fail_not_ready && not_ready > 0 {
        eprintln!("{not_ready} of {} {} not ready", rows.len(), K::PLURAL);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
