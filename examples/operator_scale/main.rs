//! Fleet benchmark of `capstan operator` (a benchmark, not a test): the test harness's
//! management API server, a few workload API servers, the fake GitHub serving the benchmark
//! stack `stacks/bench` built at v1 and v2, and N Clusters spread over the workload servers.
//! Every Cluster's addon objects carry its name and live in its own namespace, so Clusters
//! sharing a workload API server never touch each other's objects.
//!
//! Measures, phase by phase: the time until every Cluster's v1 addons are applied, until a
//! switch of all to v2 converges, an idle drift interval, and the repair of objects deleted on
//! random Clusters; the requests each phase costs the workload API servers per Cluster
//! (`apiserver_request_total`, less the servers' own idle traffic); CPU seconds per process
//! (operator, API servers, etcds, this driver, the rest of the machine) from `/proc`; the
//! operators' peak RSS; then the floor (module `floor`): the same objects applied by
//! `capstan apply` alone, for the first apply and the switch, and the operator's times divided
//! by it. `--capi v1beta2` runs it on Cluster API v1.14's CRDs serving only v1beta2 (issue
//! 47): the Clusters are v1beta2's, and the release controller does not run (the bench
//! stack's ClusterClass is v1beta1's, which such a management cluster refuses): the driver
//! reports both releases ready. Prints markdown rows (`HEADER <table> …`, `ROW <table> …`) that
//! `scripts/bench-operator.sh` assembles into tables.
//!
//! ```sh
//! scripts/bench-operator.sh 100 300        # builds, runs, prints the tables
//! target/release/examples/operator_scale --help
//! ```
//! Everything this process starts is killed when it exits, also on SIGINT/SIGTERM.

// Examples may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../tests/it/operator_common.rs"]
mod operator_common;

mod floor;
mod measure;
mod phase;
mod profile;
mod run;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use capstan_operator::api::ClusterAddon;
use capstan_stack::build;
use capstan_stack::capi::CapiVersion;
use capstan_stack::version::Version;
use capstan_testenv::{Binaries, ChildGuard, TestCluster};
use clap::Parser;
use futures::StreamExt;
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::json;

use measure::{Procs, Requests};
use phase::{Phase, PhaseCost};
use run::print_table;

#[derive(Debug, Parser)]
#[command(about = "Fleet benchmark of capstan operator (see scripts/bench-operator.sh)")]
struct Args {
    /// Clusters in the fleet.
    #[arg(default_value_t = 100)]
    clusters: usize,
    /// Workload API servers (kube-apiserver + etcd each) the Clusters are spread over.
    #[arg(long, default_value_t = 3)]
    workloads: usize,
    /// Operator processes, each its own shard: the first runs without --shard (the default
    /// shard: unlabeled objects), shard i > 0 with `--shard shard-i`; Cluster k goes to shard
    /// k mod SHARDS through the --shard-label label.
    #[arg(long, default_value_t = 1)]
    shards: usize,
    /// The label that assigns a Cluster to a shard.
    #[arg(long, default_value = "sharding.capstan.dev/key")]
    shard_label: String,
    /// The operator's --concurrency.
    #[arg(long, default_value_t = 8)]
    concurrency: u16,
    /// The operator's --drift-interval (its floor is 1m); also the idle window.
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    drift_interval: Duration,
    /// The operator's --drift-watches (false: repairs wait for the interval pass; the run
    /// then shows what the watches cost).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    drift_watches: bool,
    /// Objects deleted (each on a random Cluster) to measure the drift repair.
    #[arg(long, default_value_t = 30)]
    drift_samples: usize,
    /// Longest time one phase (apply, upgrade) may take before the run fails.
    #[arg(long, default_value = "20m", value_parser = parse_duration)]
    phase_timeout: Duration,
    /// Seed of the random choice of deleted objects (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Profile the first apply with `perf record` (the operators and the workload API
    /// servers) and write `perf report` by process and symbol into this directory.
    #[arg(long)]
    perf_dir: Option<PathBuf>,
    /// The Cluster API CRDs: v1beta1 (v1.6.0's) or v1beta2 (v1.14's, only v1beta2 served).
    #[arg(long, default_value = "v1beta1", value_parser = parse_capi)]
    capi: CapiVersion,
    /// Leave out the floor (its columns show `–`): a run for request counts in a third of
    /// the time.
    #[arg(long)]
    no_floor: bool,
}

fn parse_capi(text: &str) -> Result<CapiVersion, String> {
    match text {
        "v1beta1" => Ok(CapiVersion::V1Beta1),
        "v1beta2" => Ok(CapiVersion::V1Beta2),
        _ => Err(format!("v1beta1 or v1beta2, not {text:?}")),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    run::until_signal("operator_scale", run(&args)).await
}

async fn run(args: &Args) -> anyhow::Result<()> {
    if args.clusters == 0 || args.workloads == 0 || args.shards == 0 {
        bail!("clusters, --workloads and --shards must be at least 1");
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1
    });
    eprintln!(
        "operator_scale: {} Clusters ({}), {} workload API servers, {} shard(s), drift interval {}s, seed {seed}",
        args.clusters,
        args.capi,
        args.workloads,
        args.shards,
        args.drift_interval.as_secs()
    );

    // The benchmark stack at v1 and v2.
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/bench");
    let built = tempfile::tempdir().context("temp dir for the built releases")?;
    let mut tags = Vec::new();
    for major in [1, 2] {
        let version = Version::stable(major);
        let tag = build::release_tag(&source, &version)?.to_string();
        build::build(&source, &version, &built.path().join(&tag))
            .with_context(|| format!("building {tag} from {}", source.display()))?;
        tags.push(tag);
    }

    let env = operator_common::start_own("operator-scale", &[], args.capi).await.ok_or_else(|| {
        anyhow!("the harness binaries (CAPSTAN_KUBE_APISERVER, CAPSTAN_ETCD) or the shared CAPI CRDs (CAPSTAN_SHARED) are missing; scripts/install-test-deps.sh installs them")
    })?;
    for tag in &tags {
        env.github
            .add_release_dir(operator_common::REPO, &built.path().join(tag))
            .with_context(|| format!("publishing {tag}"))?;
    }
    let bins = Binaries::find().map_err(|e| anyhow!("harness binaries: {e}"))?;
    let mut workloads = Vec::new();
    for i in 0..args.workloads {
        workloads.push(TestCluster::start(&bins, &format!("workload-{i}")).await?);
    }
    let servers: Vec<kube::Client> = workloads.iter().map(TestCluster::client).collect();

    // The workload servers' own traffic (leases, their controllers), subtracted from every phase.
    let baseline = baseline_rate(&servers).await?;

    let caches: Vec<tempfile::TempDir> = (1..args.shards)
        .map(|_| tempfile::tempdir())
        .collect::<Result<_, _>>()
        .context("temp dir for a shard's cache")?;
    let mut operators = Vec::new();
    let mut procs = Procs::default();
    for shard in 0..args.shards {
        let cache = if shard == 0 {
            env.cache.path()
        } else {
            caches[shard - 1].path()
        };
        let operator = start_operator(&env, args, shard, cache)?;
        procs.add("operator", operator.pid());
        operators.push(operator);
    }
    let (etcd, apiserver) = env.cluster.pids();
    procs.add("mgmt kube-apiserver", apiserver);
    procs.add("mgmt etcd", etcd);
    for w in &workloads {
        let (etcd, apiserver) = w.pids();
        procs.add("workload kube-apiservers", apiserver);
        procs.add("workload etcds", etcd);
    }
    procs.add("bench driver", std::process::id());
    let ops = Operators(&operators);

    create_stack(&env).await?;
    if args.capi == CapiVersion::V1Beta2 {
        ops.wait(
            "the releases v1 and v2 made",
            Duration::from_secs(300),
            Duration::from_secs(1),
            || async { (env.release_names().await.len() == tags.len()).then_some(()) },
        )
        .await?;
        report_ready(&env, &tags).await?;
    }
    ops.wait(
        "the releases v1 and v2 ready",
        Duration::from_secs(300),
        Duration::from_secs(1),
        || async { (env.ready_releases().await.len() == tags.len()).then_some(()) },
    )
    .await?;

    let names: Vec<String> = (0..args.clusters).map(|i| format!("fleet-{i}")).collect();
    let all = FleetWatch {
        env: &env,
        names: &names,
        ops: &ops,
        timeout: args.phase_timeout,
    };

    // The management API server's requests and seconds in the first apply and the switch: the
    // operator's status writes, render Secrets and Events, and the driver's own Cluster writes.
    let management = [env.client()];

    // 1. First apply: Clusters created, gates opened, every ClusterAddon applied on v1.
    let management_before = measure::scrape(&management).await?;
    let phase = Phase::begin("first apply", &procs, &servers).await?;
    let recording = args.perf_dir.as_deref().and_then(|dir| {
        let mut pids: Vec<u32> = operators.iter().map(ChildGuard::pid).collect();
        pids.extend(workloads.iter().map(|w| w.pids().1));
        profile::start(dir, &format!("first-apply-{}-clusters", args.clusters), &pids)
    });
    futures::stream::iter(names.iter().enumerate())
        .map(|(i, name)| create_cluster(&env, args, name, &tags[0], &workloads[i % args.workloads], i))
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<()>>>()?;
    let created = phase.elapsed();
    all.converged(&tags[0]).await?;
    let apply = phase.end(&procs, &servers, &baseline).await?;
    let apply_management = measure::scrape(&management).await?.since(&management_before);
    report_management("first apply", &apply_management, args.clusters);
    if let Some(recording) = recording {
        let report = recording.finish()?;
        eprintln!("  first apply: profile in {}", report.display());
    }
    let objects = objects_per_cluster(&env, &names[0]).await?;

    // 2. Upgrade: every Cluster switched to v2.
    let management_before = measure::scrape(&management).await?;
    let phase = Phase::begin("upgrade", &procs, &servers).await?;
    futures::stream::iter(names.iter())
        .for_each_concurrent(16, |name| env.set_class(name, &tags[1]))
        .await;
    all.converged(&tags[1]).await?;
    let upgrade = phase.end(&procs, &servers, &baseline).await?;
    let upgrade_management = measure::scrape(&management).await?.since(&management_before);
    report_management("upgrade", &upgrade_management, args.clusters);

    // 3. An idle drift interval.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let phase = Phase::begin("idle drift interval", &procs, &servers).await?;
    // The management API server's requests too (issue 36 §2): every ClusterAddon's interval
    // pass reads the Cluster and what it references there.
    let management_before = measure::scrape(&management).await?;
    tokio::time::sleep(args.drift_interval).await;
    ops.alive()?;
    let idle_management = measure::scrape(&management).await?.since(&management_before);
    let idle = phase.end(&procs, &servers, &baseline).await?;
    // What the fleet costs to hold, apart from the apply's peak.
    let idle_rss = mib(operators.iter().map(|op| measure::rss_kib(op.pid())));

    // 4. Drift: objects deleted on random Clusters, each polled until it is back.
    let phase = Phase::begin("drift repair", &procs, &servers).await?;
    let latencies = drift_repair(&env, &names, &workloads, args, seed).await?;
    ops.alive()?;
    let drift = phase.end(&procs, &servers, &baseline).await?;

    let rss = mib(operators.iter().map(|op| measure::peak_rss_kib(op.pid())));

    // 5. The floor: the same objects of as many Clusters applied by `capstan apply` alone.
    let capstan = operator_common::capstan_binary();
    let kubeconfigs: Vec<PathBuf> = workloads
        .iter()
        .map(|w| w.kubeconfig_path().to_path_buf())
        .collect();
    let rendered = tempfile::tempdir().context("temp dir for the floor's manifests")?;
    let mut floors = Vec::new();
    let floor_phases = if args.no_floor {
        Vec::new()
    } else {
        tags.iter().zip(["floor: first apply", "floor: switch"]).collect()
    };
    for (tag, name) in floor_phases {
        let release = built.path().join(tag);
        let manifests =
            floor::render(&capstan, &release, args.clusters, &kubeconfigs, rendered.path()).await?;
        let per_cluster = floor::objects_in(&manifests[0])?;
        if per_cluster != objects {
            bail!("the floor renders {per_cluster} objects per Cluster, the operator applied {objects}");
        }
        let phase = Phase::begin(name, &procs, &servers).await?;
        floor::apply(&capstan, &manifests, usize::from(args.concurrency) * args.shards).await?;
        floors.push(phase.end(&procs, &servers, &baseline).await?);
    }
    let cpu: f64 = operators
        .iter()
        .filter_map(|op| measure::process_cpu_seconds(op.pid()))
        .sum();

    let watches = if args.drift_watches {
        ""
    } else {
        ", drift watches off"
    };
    let capi = match args.capi {
        CapiVersion::V1Beta1 => "",
        CapiVersion::V1Beta2 => ", v1beta2",
    };
    let key = format!("| {} | {}{watches}{capi} ", args.clusters, args.shards);
    print_table(
        "converge",
        "| Clusters | shards | objects per Cluster | Clusters created in | all v1 addons applied | floor | ÷ floor | switch to v2 converged | floor | ÷ floor | operator peak RSS | operator RSS idle | operator CPU |",
        &format!(
            "{key}| {objects} | {:.1} s | {:.1} s | {} | {} | {:.1} s | {} | {} | {rss} | {idle_rss} | {cpu:.1} s |",
            created.as_secs_f64(),
            apply.wall.as_secs_f64(),
            floor_cell(&floors, 0, |f| format!("{:.1} s", f.wall.as_secs_f64())),
            floor_cell(&floors, 0, |f| ratio(&apply, f)),
            upgrade.wall.as_secs_f64(),
            floor_cell(&floors, 1, |f| format!("{:.1} s", f.wall.as_secs_f64())),
            floor_cell(&floors, 1, |f| ratio(&upgrade, f)),
        ),
    );
    let per = |cost: &PhaseCost| cost.requests.total() / args.clusters as f64;
    print_table(
        "requests",
        &format!(
            "| Clusters | shards | first apply | floor | upgrade | floor | idle {}s (one drift interval) | watches open while idle |",
            args.drift_interval.as_secs()
        ),
        &format!(
            "{key}| {:.1} | {} | {:.1} | {} | {:.1} | {:.1} |",
            per(&apply),
            floor_cell(&floors, 0, |f| format!("{:.1}", per(f))),
            per(&upgrade),
            floor_cell(&floors, 1, |f| format!("{:.1}", per(f))),
            per(&idle),
            idle.requests.open_watches / args.clusters as f64,
        ),
    );
    for cost in [&apply, &upgrade, &idle].into_iter().chain(&floors) {
        print_table(
            "verbs",
            "| Clusters | shards | phase | requests per Cluster by verb |",
            &format!(
                "{key}| {} | {} |",
                cost.name,
                by_verb(&cost.requests, args.clusters)
            ),
        );
    }
    for cost in std::iter::once(&apply).chain(floors.first()) {
        print_table(
            "breakdown",
            "| Clusters | shards | phase | requests per Cluster by verb and resource (at least 0.5) |",
            &format!(
                "{key}| {} | {} |",
                cost.name,
                by_resource(&cost.requests, args.clusters)
            ),
        );
    }
    for (phase, requests) in [
        ("first apply", &apply_management),
        ("upgrade", &upgrade_management),
    ] {
        print_table(
            "management-phases",
            "| Clusters | shards | phase | management requests per Cluster by verb and resource (at least 0.5) | management API server seconds by verb and resource (top 6) |",
            &format!(
                "{key}| {phase} | {} | {} |",
                by_resource(requests, args.clusters),
                by_seconds(requests)
            ),
        );
    }
    let idle_secs = idle.wall.as_secs_f64().max(0.001);
    print_table(
        "management",
        "| Clusters | shards | idle window | management requests per s by verb | per Cluster per pass |",
        &format!(
            "{key}| {:.0} s | {} | {} |",
            idle_secs,
            by_verb(&idle_management.scaled(1.0 / idle_secs), 1),
            by_verb(
                &idle_management.scaled(args.drift_interval.as_secs_f64() / idle_secs),
                args.clusters
            ),
        ),
    );
    let repaired: Vec<Duration> = latencies.iter().flatten().copied().collect();
    print_table(
        "drift",
        "| Clusters | shards | drift interval | objects deleted | repaired | p50 | p99 | max |",
        &format!(
            "{key}| {}s | {} | {} | {} | {} | {} |",
            args.drift_interval.as_secs(),
            latencies.len(),
            repaired.len(),
            percentile(&repaired, 50.0),
            percentile(&repaired, 99.0),
            percentile(&repaired, 100.0),
        ),
    );
    let mut header = "| Clusters | shards | phase | wall |".to_string();
    for name in procs.names() {
        header.push_str(&format!(" {name} |"));
    }
    header.push_str(" rest of the machine |");
    for cost in [&apply, &upgrade, &idle, &drift].into_iter().chain(&floors) {
        print_table("cpu", &header, &format!("{key}{}", cost.cpu_cells()));
    }
    Ok(())
}

/// A floor phase's cell, `–` without the floor (`--no-floor`).
fn floor_cell(floors: &[PhaseCost], index: usize, cell: impl Fn(&PhaseCost) -> String) -> String {
    floors.get(index).map_or_else(|| "–".to_string(), cell)
}

/// `phase`'s wall time ÷ the floor's, e.g. `0.33×`.
fn ratio(phase: &PhaseCost, floor: &PhaseCost) -> String {
    format!(
        "{:.2}×",
        phase.wall.as_secs_f64() / floor.wall.as_secs_f64().max(0.001)
    )
}

/// Requests per Cluster by verb and resource, most first, e.g. `APPLY configmaps 4.0 · …`.
fn by_resource(requests: &Requests, clusters: usize) -> String {
    let mut parts: Vec<(&String, f64)> = requests
        .by_resource
        .iter()
        .map(|(key, n)| (key, n / clusters as f64))
        .filter(|(_, n)| *n >= 0.5)
        .collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
        .iter()
        .map(|(key, n)| format!("{key} {n:.1}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The API server's seconds by verb and resource, most first (the top six), e.g.
/// `LIST secrets 41.2 s · …`.
fn by_seconds(requests: &Requests) -> String {
    let mut parts: Vec<(&String, f64)> = requests
        .seconds_by_resource
        .iter()
        .map(|(k, s)| (k, *s))
        .collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
        .iter()
        .take(6)
        .map(|(key, secs)| format!("{key} {secs:.1} s"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// Prints a phase's management requests at once (the tables come at the run's end).
fn report_management(phase: &str, requests: &Requests, clusters: usize) {
    eprintln!(
        "  {phase}: management API server: {} per Cluster; seconds: {}",
        by_resource(requests, clusters),
        by_seconds(requests)
    );
}

/// Requests per Cluster by verb, e.g. `GET 24.0 · PATCH 0.1`, leaving out verbs below 0.05.
fn by_verb(requests: &Requests, clusters: usize) -> String {
    let parts: Vec<String> = requests
        .by_verb
        .iter()
        .map(|(verb, n)| (verb, n / clusters as f64))
        .filter(|(_, n)| *n >= 0.05)
        .map(|(verb, n)| format!("{verb} {n:.1}"))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(" · ")
    }
}

/// Nearest-rank percentile, formatted; `–` for no samples.
fn percentile(samples: &[Duration], p: f64) -> String {
    if samples.is_empty() {
        return "–".into();
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    format!("{:.1} s", sorted[rank.min(sorted.len()) - 1].as_secs_f64())
}

/// `30s`, `5m`, `1h`, `1m30s` or plain seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?} (use e.g. 30s, 5m, 1h)");
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let (mut total, mut number) = (0u64, String::new());
    for c in text.chars() {
        let unit = match c {
            '0'..='9' => {
                number.push(c);
                continue;
            }
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(bad()),
        };
        total += number.parse::<u64>().map_err(|_| bad())? * unit;
        number.clear();
    }
    if !number.is_empty() || text.is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// Sizes in KiB as MiB, one per operator joined by " + " ("?" for a process gone).
fn mib(kib: impl Iterator<Item = Option<u64>>) -> String {
    kib.map(|kib| kib.map_or("?".into(), |kib| format!("{:.0} MiB", kib as f64 / 1024.0)))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Requests per second the workload servers make with no Cluster on them (15 s window), and
/// the watches they hold open then (their own).
async fn baseline_rate(servers: &[kube::Client]) -> anyhow::Result<Requests> {
    const WINDOW: Duration = Duration::from_secs(15);
    let before = measure::scrape(servers).await?;
    tokio::time::sleep(WINDOW).await;
    let after = measure::scrape(servers).await?;
    Ok(after.since(&before).scaled(1.0 / WINDOW.as_secs_f64()))
}

/// `capstan operator` for shard `shard` (0: the default shard, no --shard).
fn start_operator(
    env: &operator_common::Env,
    args: &Args,
    shard: usize,
    cache: &Path,
) -> anyhow::Result<ChildGuard> {
    let mut argv: Vec<String> = vec![
        "operator".into(),
        "--kubeconfig".into(),
        env.cluster.kubeconfig_path().display().to_string(),
        "--cache-dir".into(),
        cache.display().to_string(),
        "--github-url".into(),
        env.github.base_url(),
        "--drift-interval".into(),
        format!("{}s", args.drift_interval.as_secs()),
        "--concurrency".into(),
        args.concurrency.to_string(),
        "--drift-watches".into(),
        args.drift_watches.to_string(),
    ];
    if shard > 0 {
        argv.extend(["--shard".into(), format!("shard-{shard}")]);
    }
    if args.capi == CapiVersion::V1Beta2 {
        argv.extend(["--controllers".into(), "*,-clusterstackrelease".into()]);
    }
    let log: PathBuf = env.logs.path().join(format!("operator-{shard}.log"));
    let binary = operator_common::capstan_binary();
    ChildGuard::spawn_with_env(
        &format!("capstan operator (shard {shard})"),
        &binary,
        &argv,
        &[],
        &log,
    )
    .with_context(|| format!("starting {}", binary.display()))
}

/// The operators of the run: every wait fails at once, with the log, when one has exited.
struct Operators<'a>(&'a [ChildGuard]);

impl Operators<'_> {
    fn alive(&self) -> anyhow::Result<()> {
        for op in self.0 {
            // `exited` needs &mut; /proc tells the same without it.
            if !Path::new(&format!("/proc/{}", op.pid())).exists()
                || std::fs::read_to_string(format!("/proc/{}/stat", op.pid())).is_ok_and(|s| {
                    s.rsplit_once(')')
                        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
                })
            {
                bail!("the operator exited\n{}", op.log_tail(60));
            }
        }
        Ok(())
    }

    /// A timed-out phase's whole operator logs, kept where `CAPSTAN_BENCH_KEEP_LOGS` names
    /// (the logs' directory is removed with the run): the last lines rarely tell why a fleet
    /// stopped converging.
    fn keep_logs(&self) {
        let Some(dir) = std::env::var_os("CAPSTAN_BENCH_KEEP_LOGS") else {
            return;
        };
        let dir = PathBuf::from(dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("operator_scale: keeping the logs in {}: {e}", dir.display());
            return;
        }
        for op in self.0 {
            let log = op.log_path();
            let kept = dir.join(log.file_name().unwrap_or_default());
            match std::fs::copy(log, &kept) {
                Ok(_) => eprintln!("operator_scale: kept {}", kept.display()),
                Err(e) => eprintln!("operator_scale: keeping {}: {e}", log.display()),
            }
        }
    }

    fn logs(&self) -> String {
        self.0
            .iter()
            .map(|op| op.log_tail(40))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Polls `check` every `poll` until it gives `Some`; fails after `limit`.
    async fn wait<T, F, Fut>(
        &self,
        what: &str,
        limit: Duration,
        poll: Duration,
        mut check: F,
    ) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(value) = check().await {
                return Ok(value);
            }
            self.alive()?;
            if Instant::now() > deadline {
                self.keep_logs();
                bail!(
                    "timed out after {} s waiting for {what}\n{}",
                    limit.as_secs(),
                    self.logs()
                );
            }
            tokio::time::sleep(poll).await;
        }
    }
}

struct FleetWatch<'a> {
    env: &'a operator_common::Env,
    names: &'a [String],
    ops: &'a Operators<'a>,
    timeout: Duration,
}

impl FleetWatch<'_> {
    /// Waits until every Cluster's ClusterAddon is ready with `class` applied (progress on
    /// stderr every 15 s).
    async fn converged(&self, class: &str) -> anyhow::Result<()> {
        let addons: Api<ClusterAddon> = Api::namespaced(self.env.client(), operator_common::NS);
        let wanted: BTreeSet<String> = self.names.iter().map(|n| format!("cluster-addon-{n}")).collect();
        let started = Instant::now();
        let reported = std::cell::Cell::new(Instant::now());
        self.ops
            .wait(
                &format!("every Cluster's addons of {class}"),
                self.timeout,
                // One LIST of all ClusterAddons (about 5 kB each) a second, every 2 s from
                // 500 Clusters on, to keep the driver's load on the management server small.
                Duration::from_millis(1000.max(2 * self.names.len() as u64)),
                || {
                    let addons = addons.clone();
                    let wanted = &wanted;
                    let reported = &reported;
                    async move {
                        let list = addons.list(&ListParams::default()).await.ok()?;
                        let done = list
                            .items
                            .iter()
                            .filter(|a| a.metadata.name.as_ref().is_some_and(|n| wanted.contains(n)))
                            .filter(|a| {
                                a.status.as_ref().is_some_and(|s| {
                                    s.ready && s.applied_cluster_stack.as_deref() == Some(class)
                                })
                            })
                            .count();
                        if reported.get().elapsed() > Duration::from_secs(15) {
                            eprintln!(
                                "  {class}: {done}/{} applied after {:.0} s",
                                wanted.len(),
                                started.elapsed().as_secs_f64()
                            );
                            reported.set(Instant::now());
                        }
                        (done == wanted.len()).then_some(())
                    }
                },
            )
            .await
    }
}

async fn create_stack(env: &operator_common::Env) -> anyhow::Result<()> {
    let stack: capstan_operator::api::ClusterStack = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": "bench", "namespace": operator_common::NS},
        "spec": {
            "provider": "docker", "name": "bench", "kubernetesVersion": "1.27",
            "channel": "stable", "autoSubscribe": false, "versions": ["v1", "v2"],
            "source": {"github": {"owner": "scs", "repo": "cluster-stacks"}},
        }
    }))?;
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .context("creating the ClusterStack bench")?;
    Ok(())
}

/// Reports the releases `tags` ready, as the release controller would (it does not run on
/// v1beta2 here).
async fn report_ready(env: &operator_common::Env, tags: &[String]) -> anyhow::Result<()> {
    for tag in tags {
        env.releases()
            .patch_status(
                tag,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"status": {"ready": true, "kubernetesVersion": "v1.27.3"}})),
            )
            .await
            .with_context(|| format!("reporting ClusterStackRelease {tag} ready"))?;
    }
    Ok(())
}

/// Plays Cluster API for one Cluster: its objects (with the shard label when sharded), then
/// the gates opened with the kubeconfig of `workload`.
async fn create_cluster(
    env: &operator_common::Env,
    args: &Args,
    name: &str,
    class: &str,
    workload: &TestCluster,
    index: usize,
) -> anyhow::Result<()> {
    let shard = index % args.shards;
    let labels = if shard == 0 {
        json!({})
    } else {
        json!({ args.shard_label.as_str(): format!("shard-{shard}") })
    };
    let topology = env.topology(class, None);
    env.cluster_api_labeled(
        operator_common::NS,
        name,
        topology,
        &format!("{name}.example"),
        labels,
    )
    .await;
    env.open_gates(name, workload).await;
    Ok(())
}

async fn objects_per_cluster(env: &operator_common::Env, name: &str) -> anyhow::Result<usize> {
    let addon = env
        .addon(name)
        .await
        .ok_or_else(|| anyhow!("the ClusterAddon of {name} is gone"))?;
    Ok(addon.status.map_or(0, |s| s.resources.len()))
}

/// A small deterministic generator (xorshift64) for the choice of deleted objects.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Deletes `--drift-samples` objects, each from a random Cluster (never its Namespace: with no
/// namespace controller it would stay Terminating) at a random moment of one drift interval,
/// and polls each from then on (GET every 100 ms) until it is back with a new uid. `None` for an object not back within two drift
/// intervals and a minute.
async fn drift_repair(
    env: &operator_common::Env,
    names: &[String],
    workloads: &[TestCluster],
    args: &Args,
    seed: u64,
) -> anyhow::Result<Vec<Option<Duration>>> {
    let mut rng = Rng(seed);
    let mut picked: HashMap<(usize, String, String, String), ()> = HashMap::new();
    let mut targets = Vec::new();
    let mut attempts = 0;
    while targets.len() < args.drift_samples && attempts < args.drift_samples * 20 {
        attempts += 1;
        let index = rng.below(names.len());
        let Some(status) = env.addon(&names[index]).await.and_then(|a| a.status) else {
            continue;
        };
        let candidates: Vec<_> = status
            .resources
            .iter()
            .filter(|r| r.kind != "Namespace")
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let r = candidates[rng.below(candidates.len())];
        let key = (index, r.kind.clone(), r.namespace.clone(), r.name.clone());
        if picked.insert(key, ()).is_some() {
            continue;
        }
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(&r.group, &r.version, &r.kind));
        let client = workloads[index % workloads.len()].client();
        let api: Api<DynamicObject> = if r.namespace.is_empty() {
            Api::all_with(client, &resource)
        } else {
            Api::namespaced_with(client, &r.namespace, &resource)
        };
        targets.push((
            format!("{}/{} {}", r.kind, r.namespace, r.name),
            api,
            r.name.clone(),
        ));
    }
    if targets.len() < args.drift_samples {
        bail!(
            "found only {} objects to delete in the ClusterAddons' status",
            targets.len()
        );
    }
    let limit = args.drift_interval * 2 + Duration::from_secs(60);
    // Each deletion at a random moment of one drift interval, so that it meets the Clusters'
    // drift passes at random phases even when their passes run in step.
    let offsets: Vec<Duration> = targets
        .iter()
        .map(|_| Duration::from_millis(rng.below(args.drift_interval.as_millis().max(1) as usize) as u64))
        .collect();
    // One future per object: deleted at its offset and polled from that moment on (polling
    // only after every deletion would count the wait for the last deletion as latency).
    let latencies = futures::future::join_all(targets.iter().zip(offsets).map(
        |((what, api, name), offset)| async move {
            tokio::time::sleep(offset).await;
            let uid = api
                .get(name)
                .await
                .with_context(|| format!("reading {what} before deleting it"))?
                .metadata
                .uid;
            api.delete(name, &DeleteParams::default())
                .await
                .with_context(|| format!("deleting {what}"))?;
            let at = Instant::now();
            loop {
                if let Ok(Some(object)) = api.get_opt(name).await
                    && object.metadata.uid != uid
                {
                    return Ok(Some(at.elapsed()));
                }
                if at.elapsed() > limit {
                    eprintln!("  drift: {what} not repaired within {} s", limit.as_secs());
                    return Ok::<_, anyhow::Error>(None);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        },
    ))
    .await;
    latencies.into_iter().collect()
}
