//! `capstan get stacks|releases|addons|rollouts` and `capstan get addon CLUSTER`: a fleet at a
//! glance.
//! This file is the thin shell — flags, listing and watching through the API server, printing;
//! what each row and table holds is decided in `get_rows` and `describe_addon`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde::Serialize;

use capstan_operator::api::rollout::ClusterStackRollout;
use capstan_operator::api::{ClusterAddon, ClusterStack, ClusterStackRelease};

use super::describe_addon::{self, Detail, Health, Live};
use super::get_follow;
use super::get_rows::{
    self, AddonRow, Layout, ReleaseRow, RolloutRow, StackRow, addons_table, releases_table, rollouts_table,
    stacks_table,
};
use super::get_select;
use super::get_table::{Table, colour_stdout};

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
    let runtime = super::kube::runtime()?;
    runtime.block_on(async {
        let target = super::kube::connect_to(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.namespace.as_deref(),
        )
        .await?;
        match &args.what {
            What::Stacks(list) => run_list::<StackKind>(&target, list).await,
            What::Releases(list) => run_list::<ReleaseKind>(&target, list).await,
            What::Addons(list) => run_list::<AddonKind>(&target, list).await,
            What::Addon(one) => show_addon(&target, one).await,
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

/// Where a list reads from.
pub(super) struct Scope<'a> {
    client: &'a Client,
    namespace: Option<&'a str>,
    pub(super) params: ListParams,
    /// ClusterAddons selected by their Clusters' labels (`-l` of `get addons`).
    pub(super) by_cluster: Option<get_select::ByCluster>,
}

impl Scope<'_> {
    pub(super) fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match self.namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }
}

/// One kind `capstan get` lists: how its objects become rows and a table.
pub(super) trait Kind {
    type Object: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static;
    type Row: Serialize + Clone;
    /// Plural of the kind in messages and `kind` of the JSON list (`AddonList`).
    const PLURAL: &'static str;
    const LIST_KIND: &'static str;
    /// What besides the objects the rows need, read once.
    type Extra: Send;
    async fn extra(scope: &Scope<'_>) -> anyhow::Result<Self::Extra>;
    /// For `-w`: `extra` anew each time it changes; `None` when the rows need nothing that
    /// changes apart from the objects (or it is not followed).
    fn follow_extra(_scope: &Scope<'_>) -> Option<BoxStream<'static, Self::Extra>> {
        None
    }
    fn row(object: &Self::Object, extra: &Self::Extra) -> Self::Row;
    fn sort_key(row: &Self::Row) -> (String, String);
    fn ready(row: &Self::Row) -> bool;
    fn table(rows: &[Self::Row], layout: Layout, now: Timestamp) -> Table;
    /// Whether `-l` selects by the objects' Clusters ([`get_select::ByCluster`]), not by
    /// their own labels on the API server.
    const BY_CLUSTER: bool = false;
    /// Whether `object` is among those `-l` selected by their Clusters.
    fn selected(_object: &Self::Object, _by_cluster: &get_select::ByCluster) -> bool {
        true
    }
}

struct StackKind;
struct ReleaseKind;
struct AddonKind;
struct RolloutKind;

impl Kind for RolloutKind {
    type Object = ClusterStackRollout;
    type Row = RolloutRow;
    const PLURAL: &'static str = "ClusterStackRollouts";
    const LIST_KIND: &'static str = "RolloutList";
    type Extra = ();
    async fn extra(_: &Scope<'_>) -> anyhow::Result<()> {
        Ok(())
    }
    fn row(object: &ClusterStackRollout, _: &()) -> RolloutRow {
        RolloutRow::of(object)
    }
    fn sort_key(row: &RolloutRow) -> (String, String) {
        (row.namespace.clone(), row.name.clone())
    }
    fn ready(row: &RolloutRow) -> bool {
        row.is_settled()
    }
    fn table(rows: &[RolloutRow], layout: Layout, now: Timestamp) -> Table {
        rollouts_table(rows, layout, now)
    }
}

impl Kind for StackKind {
    type Object = ClusterStack;
    type Row = StackRow;
    const PLURAL: &'static str = "ClusterStacks";
    const LIST_KIND: &'static str = "StackList";
    type Extra = ();
    async fn extra(_: &Scope<'_>) -> anyhow::Result<()> {
        Ok(())
    }
    fn row(object: &ClusterStack, _: &()) -> StackRow {
        StackRow::of(object)
    }
    fn sort_key(row: &StackRow) -> (String, String) {
        (row.namespace.clone(), row.name.clone())
    }
    fn ready(row: &StackRow) -> bool {
        row.ready.is_ready()
    }
    fn table(rows: &[StackRow], layout: Layout, now: Timestamp) -> Table {
        stacks_table(rows, layout, now)
    }
}

impl Kind for ReleaseKind {
    type Object = ClusterStackRelease;
    type Row = ReleaseRow;
    const PLURAL: &'static str = "ClusterStackReleases";
    const LIST_KIND: &'static str = "ReleaseList";
    /// The ClusterAddons, to count the Clusters on each release.
    type Extra = Vec<ClusterAddon>;
    async fn extra(scope: &Scope<'_>) -> anyhow::Result<Vec<ClusterAddon>> {
        let addons = scope.api::<ClusterAddon>();
        Ok(addons
            .list(&ListParams::default())
            .await
            .context("listing ClusterAddons")?
            .items)
    }
    /// The CLUSTERS column follows the ClusterAddons.
    fn follow_extra(scope: &Scope<'_>) -> Option<BoxStream<'static, Vec<ClusterAddon>>> {
        Some(get_follow::follow_all(
            scope.api::<ClusterAddon>(),
            "ClusterAddons",
        ))
    }
    fn row(object: &ClusterStackRelease, addons: &Vec<ClusterAddon>) -> ReleaseRow {
        ReleaseRow::of(object, addons)
    }
    fn sort_key(row: &ReleaseRow) -> (String, String) {
        (row.namespace.clone(), row.name.clone())
    }
    fn ready(row: &ReleaseRow) -> bool {
        row.ready.is_ready()
    }
    fn table(rows: &[ReleaseRow], layout: Layout, now: Timestamp) -> Table {
        releases_table(rows, layout, now)
    }
}

impl Kind for AddonKind {
    type Object = ClusterAddon;
    type Row = AddonRow;
    const PLURAL: &'static str = "ClusterAddons";
    const LIST_KIND: &'static str = "AddonList";
    /// The newest drift correction of each addon.
    type Extra = BTreeMap<(String, String), String>;
    async fn extra(scope: &Scope<'_>) -> anyhow::Result<Self::Extra> {
        let events = scope.api::<Event>();
        let params = ListParams::default().fields(&format!(
            "involvedObject.kind=ClusterAddon,reason={}",
            get_rows::DRIFT_CORRECTED
        ));
        let events = events.list(&params).await.context("listing Events")?;
        Ok(get_rows::last_drift_corrections(&events.items))
    }
    fn row(object: &ClusterAddon, drift: &Self::Extra) -> AddonRow {
        AddonRow::of(object, drift)
    }
    fn sort_key(row: &AddonRow) -> (String, String) {
        (row.namespace.clone(), row.cluster.clone())
    }
    fn ready(row: &AddonRow) -> bool {
        row.ready.is_ready()
    }
    fn table(rows: &[AddonRow], layout: Layout, now: Timestamp) -> Table {
        addons_table(rows, layout, now)
    }
    const BY_CLUSTER: bool = true;
    fn selected(addon: &ClusterAddon, by_cluster: &get_select::ByCluster) -> bool {
        by_cluster.selects(addon)
    }
}

async fn run_list<K: Kind>(target: &super::kube::Target, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let mut params = ListParams::default();
    let namespace = (!args.all_namespaces).then_some(target.namespace.as_str());
    let mut by_cluster = None;
    match &args.selector {
        Some(selector) if K::BY_CLUSTER => {
            by_cluster = Some(get_select::ByCluster::list(&target.client, namespace, selector).await?)
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
        watch::<K>(&scope, extra, &rows, &args.names, &printer, &widths).await?;
    }
    let not_ready = rows.iter().filter(|r| !K::ready(&r.row)).count();
    if args.fail_not_ready && not_ready > 0 {
        eprintln!("{not_ready} of {} {} not ready", rows.len(), K::PLURAL);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// A listed object's row and the object's name.
pub(super) struct Listed<K: Kind> {
    pub(super) row: K::Row,
    pub(super) name: String,
}

impl<K: Kind> Listed<K> {
    pub(super) fn of(object: &K::Object, extra: &K::Extra) -> Listed<K> {
        Listed {
            row: K::row(object, extra),
            name: object.name_any(),
        }
    }

    /// Whether this is one of `names` (by the object's name or the row's, e.g. the Cluster).
    pub(super) fn names(&self, names: &[String]) -> bool {
        names
            .iter()
            .any(|n| *n == self.name || *n == K::sort_key(&self.row).1)
    }
}

/// How a list and its changes are printed.
pub(super) struct Printer {
    layout: Layout,
    format: Option<Format>,
    /// `--output-watch-events`: each row says what happened to its object.
    events: bool,
    colour: bool,
}

impl Printer {
    /// The first list; returns the table's column widths (for the rows a watch prints).
    fn list<K: Kind>(&self, rows: &[Listed<K>], no_headers: bool) -> anyhow::Result<Vec<usize>> {
        let plain: Vec<K::Row> = rows.iter().map(|r| r.row.clone()).collect();
        match self.format {
            Some(Format::Json | Format::Yaml | Format::Name) if self.events => {
                for r in rows {
                    self.change::<K>(&r.row, &r.name, "ADDED", &[])?;
                }
                Ok(Vec::new())
            }
            Some(Format::Json) => {
                print_json(K::LIST_KIND, &plain)?;
                Ok(Vec::new())
            }
            Some(Format::Yaml) => {
                print_yaml(K::LIST_KIND, &plain)?;
                Ok(Vec::new())
            }
            Some(Format::Name) => {
                for r in rows {
                    println!("{}", resource_name::<K>(&r.name));
                }
                Ok(Vec::new())
            }
            Some(Format::Wide) | None => {
                let mut table = K::table(&plain, self.layout, Timestamp::now());
                if self.events {
                    with_event(&mut table, "ADDED");
                }
                if no_headers {
                    print!("{}", table.render_rows(&[], self.colour));
                } else {
                    print!("{}", table.render(self.colour));
                }
                Ok(table.widths())
            }
        }
    }

    /// One object's row after a change (`event`: `ADDED`, `MODIFIED` or `DELETED`).
    pub(super) fn change<K: Kind>(
        &self,
        row: &K::Row,
        name: &str,
        event: &str,
        widths: &[usize],
    ) -> anyhow::Result<()> {
        match self.format {
            Some(Format::Json) if self.events => {
                println!(
                    "{}",
                    serde_json::to_string(&serde_json::json!({"type": event, "object": row}))?
                );
            }
            Some(Format::Json) => println!("{}", serde_json::to_string(row)?),
            Some(Format::Yaml) if self.events => {
                let json = serde_json::json!({"type": event, "object": row});
                print!("---\n{}", yaml(&json)?);
            }
            Some(Format::Yaml) => print!("---\n{}", yaml(&serde_json::to_value(row)?)?),
            Some(Format::Name) if self.events => println!("{event} {}", resource_name::<K>(name)),
            Some(Format::Name) => println!("{}", resource_name::<K>(name)),
            Some(Format::Wide) | None => {
                let mut table = K::table(std::slice::from_ref(row), self.layout, Timestamp::now());
                if self.events {
                    with_event(&mut table, event);
                }
                print!("{}", table.render_rows(widths, self.colour));
            }
        }
        std::io::Write::flush(&mut std::io::stdout()).context("writing to stdout")
    }
}

/// An EVENT column first (`--output-watch-events`).
fn with_event(table: &mut Table, event: &str) {
    table.headers.insert(0, "EVENT");
    for row in &mut table.rows {
        row.insert(0, event.to_string());
    }
}

/// `KIND.GROUP/NAME` of an object of `K`, as `kubectl get -o name` prints it.
fn resource_name<K: Kind>(name: &str) -> String {
    format!(
        "{}.{}/{name}",
        <K::Object as kube::Resource>::kind(&()).to_lowercase(),
        <K::Object as kube::Resource>::group(&())
    )
}

fn list_json<T: Serialize>(kind: &str, items: &[T]) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::json!({"kind": kind, "items": serde_json::to_value(items)?}))
}

fn print_json<T: Serialize>(kind: &str, items: &[T]) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(&list_json(kind, items)?)?);
    Ok(())
}

fn print_yaml<T: Serialize>(kind: &str, items: &[T]) -> anyhow::Result<()> {
    print!("{}", yaml(&list_json(kind, items)?)?);
    Ok(())
}

/// JSON as YAML (keys sorted, as `kubectl` prints).
fn yaml(json: &serde_json::Value) -> anyhow::Result<String> {
    let value = capstan_encoding::json::unmarshal(&json.to_string()).context("re-reading the output")?;
    capstan_encoding::yaml_emit::marshal(&value).context("writing YAML")
}

/// The longest the view waits for the workload cluster.
const WORKLOAD_TIMEOUT: Duration = Duration::from_secs(15);

async fn show_addon(target: &super::kube::Target, args: &OneArgs) -> anyhow::Result<ExitCode> {
    let ns = target.namespace.as_str();
    let addons: Api<ClusterAddon> = Api::namespaced(target.client.clone(), ns);
    let list = addons
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing ClusterAddons in namespace {ns} on {}", target.server))?;
    let found = list
        .items
        .iter()
        .find(|a| a.spec.cluster_ref.name.as_deref() == Some(args.cluster.as_str()))
        .or_else(|| list.items.iter().find(|a| a.name_any() == args.cluster));
    let Some(addon) = found else {
        bail!("no ClusterAddon for Cluster {} in namespace {ns}", args.cluster);
    };
    let events: Api<Event> = Api::namespaced(target.client.clone(), ns);
    let events = events
        .list(&ListParams::default().fields(&format!(
            "involvedObject.kind=ClusterAddon,involvedObject.name={}",
            addon.name_any()
        )))
        .await
        .with_context(|| {
            format!(
                "listing the Events of ClusterAddon {}",
                describe_addon::label(addon)
            )
        })?
        .items;
    let row = AddonRow::of(addon, &get_rows::last_drift_corrections(&events));
    let values = value_sources(&target.client, &row).await;
    let live = match tokio::time::timeout(WORKLOAD_TIMEOUT, live_health(&target.client, addon)).await {
        Ok(live) => live,
        Err(_) => Err(format!(
            "the workload cluster gave no answer within {}s",
            WORKLOAD_TIMEOUT.as_secs()
        )),
    };
    match args.output {
        Some(Format::Name) => println!("{}", resource_name::<AddonKind>(&addon.name_any())),
        Some(Format::Json | Format::Yaml) => {
            let json = serde_json::json!({
                "kind": "AddonDetail",
                "summary": row,
                "objects": describe_addon::object_rows(addon, &live),
                "health": live.as_ref().err(),
                "stages": addon.status.as_ref().map(|s| s.stages.clone()).unwrap_or_default(),
                "values": values,
            });
            if args.output == Some(Format::Json) {
                println!("{}", serde_json::to_string_pretty(&json)?);
            } else {
                print!("{}", yaml(&json)?);
            }
        }
        _ => print!(
            "{}",
            describe_addon::render(
                addon,
                &Detail {
                    row: &row,
                    live: &live,
                    values: &values,
                    events: &events,
                    now: Timestamp::now(),
                    colour: colour_stdout(),
                },
            )
        ),
    }
    if args.fail_not_ready && !row.ready.is_ready() {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The sources of the addon's user values: the Cluster's annotations and the ClusterStack of
/// its release (a Cluster or stack that cannot be read adds nothing).
async fn value_sources(client: &Client, row: &AddonRow) -> Vec<String> {
    let ns = row.namespace.as_str();
    let cluster = capstan_operator::cli::clusters::get(client, ns, &row.cluster)
        .await
        .ok()
        .flatten();
    let stacks: Api<ClusterStack> = Api::namespaced(client.clone(), ns);
    let stack_with_values = match stacks.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .iter()
            .find(|s| Some(StackRow::of(s).stack) == row.stack && s.spec.addon_values.is_some())
            .map(|s| format!("{ns}/{}", s.name_any())),
        Err(_) => None,
    };
    let annotations = cluster.map(|c| c.annotations().clone()).unwrap_or_default();
    describe_addon::value_sources(stack_with_values.as_deref(), ns, &row.cluster, &annotations)
}

/// The health of every object of the addon's status, read from its workload cluster.
async fn live_health(management: &Client, addon: &ClusterAddon) -> Live {
    use capstan_apply::health::{Readiness, readiness};
    use capstan_operator::cli::workload;
    let ns = addon.namespace().unwrap_or_default();
    let cluster = addon.spec.cluster_ref.name.clone().unwrap_or_default();
    let secret = workload::read_secret(management, &ns, &cluster)
        .await
        .map_err(|e| e.to_string())?;
    let workload = workload::connect(&secret).await.map_err(|e| e.to_string())?;
    let discovery = capstan_apply::discovery::Discovery::new(workload.client.clone());
    let mut found = BTreeMap::new();
    let resources = addon
        .status
        .as_ref()
        .map(|s| s.resources.as_slice())
        .unwrap_or_default();
    for r in resources {
        let key = (
            r.group.clone(),
            r.kind.clone(),
            r.namespace.clone(),
            r.name.clone(),
        );
        let health = match discovery.resolve(&r.group, &r.version, &r.kind).await {
            Err(e) => Health::Unknown(e.to_string()),
            Ok(info) => {
                let api = discovery.api(&info, Some(r.namespace.as_str()).filter(|n| !n.is_empty()));
                match api.get_opt(&r.name).await {
                    Err(e) => Health::Unknown(e.to_string()),
                    Ok(None) => Health::Missing,
                    Ok(Some(object)) => match serde_json::to_value(&object) {
                        Err(e) => Health::Unknown(e.to_string()),
                        Ok(json) => match readiness(&r.group, &r.kind, &json) {
                            Readiness::Ready => Health::Healthy,
                            Readiness::Pending(why) => Health::Progressing(why),
                            Readiness::Failed(why) => Health::Degraded(why),
                        },
                    },
                }
            }
        };
        found.insert(key, health);
    }
    Ok(found)
}

// `capstan get -w`: after the list, each object's row again when it changes or goes, and the
// rows whose other inputs change (a release's CLUSTERS when its ClusterAddons do).

/// Prints each object again when its row changes, and once more when it is deleted
/// (`DELETED` with `--output-watch-events`). The watch lists anew before it follows changes, so
/// a change between the first list and the watch shows as a row that differs from the one
/// printed; a row printed as it is again (a relist) is not repeated. `names`: only these
/// objects (all when empty).
async fn watch<K: Kind>(
    scope: &Scope<'_>,
    mut extra: K::Extra,
    listed: &[Listed<K>],
    names: &[String],
    printer: &Printer,
    widths: &[usize],
) -> anyhow::Result<()> {
    let mut rows = Rows::<K> {
        printed: listed
            .iter()
            .map(|r| Ok((K::sort_key(&r.row), serde_json::to_string(&r.row)?)))
            .collect::<anyhow::Result<_>>()?,
        objects: BTreeMap::new(),
        names,
        by_cluster: scope.by_cluster.as_ref(),
        printer,
        widths,
    };
    let mut config = watcher::Config::default();
    if let Some(labels) = &scope.params.label_selector {
        config = config.labels(labels);
    }
    let mut events = watcher(scope.api::<K::Object>(), config)
        .default_backoff()
        .boxed();
    let mut extras = K::follow_extra(scope).unwrap_or_else(|| futures::stream::pending().boxed());
    loop {
        tokio::select! {
            event = events.next() => match event {
                None => return Ok(()),
                Some(Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => rows.show(o, false, &extra)?,
                Some(Ok(watcher::Event::Delete(o))) => rows.show(o, true, &extra)?,
                Some(Ok(_)) => {}
                Some(Err(e)) => eprintln!("watching {}: {e} (retrying)", K::PLURAL),
            },
            Some(new) = extras.next() => {
                extra = new;
                let objects: Vec<K::Object> = rows.objects.values().cloned().collect();
                for object in objects {
                    rows.show(object, false, &extra)?;
                }
            }
        }
    }
}

/// What a watch has printed and the objects it knows.
struct Rows<'a, K: Kind> {
    /// Each row as last printed, by its key.
    printed: BTreeMap<(String, String), String>,
    /// The objects watched, by namespace and name.
    objects: BTreeMap<(String, String), K::Object>,
    names: &'a [String],
    /// ClusterAddons selected by their Clusters' labels, as listed before the watch began.
    by_cluster: Option<&'a get_select::ByCluster>,
    printer: &'a Printer,
    widths: &'a [usize],
}

impl<K: Kind> Rows<'_, K> {
    fn show(&mut self, object: K::Object, deleted: bool, extra: &K::Extra) -> anyhow::Result<()> {
        let listed = Listed::<K>::of(&object, extra);
        if !self.names.is_empty() && !listed.names(self.names) {
            return Ok(());
        }
        if self.by_cluster.is_some_and(|by| !K::selected(&object, by)) {
            return Ok(());
        }
        let id = (object.namespace().unwrap_or_default(), object.name_any());
        let key = K::sort_key(&listed.row);
        let text = serde_json::to_string(&listed.row)?;
        let event = if deleted {
            self.objects.remove(&id);
            self.printed.remove(&key);
            "DELETED"
        } else {
            self.objects.insert(id, object);
            match self.printed.insert(key, text.clone()) {
                Some(before) if before == text => return Ok(()),
                Some(_) => "MODIFIED",
                None => "ADDED",
            }
        };
        self.printer
            .change::<K>(&listed.row, &listed.name, event, self.widths)
    }
}
