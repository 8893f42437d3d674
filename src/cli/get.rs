//! `capstan get stacks|releases|addons` and `capstan get addon CLUSTER`: a fleet at a glance.
//! This file is the thin shell — flags, listing and watching through the API server, printing;
//! what each row and table holds is decided in `get_rows` and `describe_addon`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde::Serialize;

use capstan_operator::api::rollout::ClusterStackRollout;
use capstan_operator::api::{ClusterAddon, ClusterStack, ClusterStackRelease};

use super::describe_addon::{self, Detail, Health, Live};
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
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Every namespace (a NAMESPACE column is added).
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    all_namespaces: bool,

    /// Only objects with these labels (`key=value,key2!=value,!key,key in (a,b)`).
    /// ClusterAddons: by their Cluster's labels together with their own (each carries its
    /// Cluster's name as `cluster.x-k8s.io/cluster-name`).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    selector: Option<String>,

    /// After the list, print each object again when it changes (until interrupted).
    #[arg(short = 'w', long)]
    watch: bool,

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
struct Scope<'a> {
    client: &'a Client,
    namespace: Option<&'a str>,
    params: ListParams,
    /// ClusterAddons selected by their Clusters' labels (`-l` of `get addons`).
    by_cluster: Option<get_select::ByCluster>,
}

impl Scope<'_> {
    fn api<K>(&self) -> Api<K>
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
trait Kind {
    type Object: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static;
    type Row: Serialize;
    /// Plural of the kind in messages and `kind` of the JSON list (`AddonList`).
    const PLURAL: &'static str;
    const LIST_KIND: &'static str;
    /// What besides the objects the rows need, read once.
    type Extra: Send;
    async fn extra(scope: &Scope<'_>) -> anyhow::Result<Self::Extra>;
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
        .with_context(|| format!("listing {} {where_} on {}", K::PLURAL, target.server))?
        .items
        .into_iter()
        .filter(|o| scope.by_cluster.as_ref().is_none_or(|by| K::selected(o, by)))
        .collect::<Vec<_>>();
    let extra = K::extra(&scope).await?;
    let mut rows: Vec<K::Row> = objects.iter().map(|o| K::row(o, &extra)).collect();
    rows.sort_by_key(|r| K::sort_key(r));
    let layout = Layout {
        namespaces: args.all_namespaces,
        wide: args.output == Some(Format::Wide),
    };
    let colour = colour_stdout();
    let widths = match args.output {
        Some(Format::Json) => {
            print_json(K::LIST_KIND, &rows)?;
            Vec::new()
        }
        Some(Format::Yaml) => {
            print_yaml(K::LIST_KIND, &rows)?;
            Vec::new()
        }
        _ if rows.is_empty() => {
            eprintln!("No {} found {where_}.", K::PLURAL);
            Vec::new()
        }
        _ => {
            let table = K::table(&rows, layout, Timestamp::now());
            print!("{}", table.render(colour));
            table.widths()
        }
    };
    if args.watch {
        let printed = rows
            .iter()
            .map(|row| Ok((K::sort_key(row), serde_json::to_string(row)?)))
            .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
        watch::<K>(&scope, &extra, printed, layout, args.output, &widths, colour).await?;
    }
    let not_ready = rows.iter().filter(|r| !K::ready(r)).count();
    if args.fail_not_ready && not_ready > 0 {
        eprintln!("{not_ready} of {} {} not ready", rows.len(), K::PLURAL);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints each object again when it changes or goes (one row, or one JSON/YAML document).
/// Prints each object again when its row changes. The watch lists anew before it follows
/// changes, so a change between the first list and the watch shows as a row that differs from
/// the one printed (`printed`: each row as last printed, by key); a row printed as it is again
/// (a relist) is not repeated.
#[allow(clippy::too_many_arguments)]
async fn watch<K: Kind>(
    scope: &Scope<'_>,
    extra: &K::Extra,
    mut printed: BTreeMap<(String, String), String>,
    layout: Layout,
    format: Option<Format>,
    widths: &[usize],
    colour: bool,
) -> anyhow::Result<()> {
    let mut config = watcher::Config::default();
    if let Some(labels) = &scope.params.label_selector {
        config = config.labels(labels);
    }
    // Reconnects with kube's backoff; a failed watch request is reported and retried, not fatal.
    let mut events = watcher(scope.api::<K::Object>(), config)
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let (object, deleted) = match event {
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => (object, false),
            Ok(watcher::Event::Delete(object)) => (object, true),
            Ok(_) => continue,
            Err(e) => {
                eprintln!("watching {}: {e} (retrying)", K::PLURAL);
                continue;
            }
        };
        // Selected by the Clusters listed before the watch began.
        if scope
            .by_cluster
            .as_ref()
            .is_some_and(|by| !K::selected(&object, by))
        {
            continue;
        }
        let row = K::row(&object, extra);
        let text = serde_json::to_string(&row)?;
        if deleted {
            printed.remove(&K::sort_key(&row));
        } else if printed.get(&K::sort_key(&row)) == Some(&text) {
            continue;
        } else {
            printed.insert(K::sort_key(&row), text);
        }
        match format {
            Some(Format::Json) => println!("{}", serde_json::to_string(&row)?),
            Some(Format::Yaml) => print!("---\n{}", yaml(&serde_json::to_value(&row)?)?),
            _ => {
                let table = K::table(std::slice::from_ref(&row), layout, Timestamp::now());
                print!("{}", table.render_rows(widths, colour));
            }
        }
        std::io::Write::flush(&mut std::io::stdout()).context("writing to stdout")?;
    }
    Ok(())
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
    let cluster = capstan_operator::clusters::get(client, ns, &row.cluster)
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
    use capstan_operator::addon::workload;
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
