//! Rollout benchmark (issue 33; a benchmark, not a test): N Clusters moved from
//! `docker-ferrol-1-27-v1` to `-v2` by one ClusterStackRollout in waves (by default 1 %, 9 %,
//! 40 %, 50 % of the fleet, soak 0), on the test harness's real API server, with Cluster API
//! played by the rollout tests' simulator (`tests/it/rollout_sim.rs`): a fixed `--upgrade`
//! time after it sees a Cluster's class change, it reports the Cluster upgraded and its
//! ClusterAddon applied.
//!
//! Issue 48: `--steps 2` moves the Clusters two Kubernetes minors instead, across stacks
//! (`docker-example-1-27` → `-1-28` → `-1-29`, built from `stacks/example` as the paths test
//! builds them; `from: auto`), one switch per step; `--preflight` gives every Cluster a
//! kubeconfig Secret naming one workload API server of the harness (with an audit log of its
//! own), so the pre-flight's evidence (the server's `/metrics`, its stored Helm releases) is
//! really read, and counted. Without it the pre-flight still runs, and finds no workload
//! cluster. Issue 47: `--capi v1beta2` runs it all on Cluster API v1.14's CRDs serving only
//! v1beta2 (the release controller does not run there: the driver reports the releases ready).
//!
//! Two operator processes: the measured one runs only the rollout controller
//! (`--controllers rollout`); the ClusterStack, release and Cluster controllers (the Cluster
//! controller makes the ClusterAddons the rollout reads) run in another, whose kubeconfig
//! impersonates another user, as do the simulator and this driver. So the API server's audit
//! log counts exactly the rollout operator's requests.
//!
//! Per wave and in total: wall time, the simulated Cluster API floor (what a rollout with no
//! overhead of its own would take with the same maxInFlight: `ceil(Clusters / maxInFlight)`
//! upgrades one after the other), the overhead beyond it, the rollout operator's requests by
//! verb and CPU seconds per process. A wave runs from the end of the one before (the
//! rollout's creation for the first) until the operator switches the first Cluster of the next
//! wave (for the last: until the rollout reports Complete). Prints markdown rows
//! (`HEADER <table> …`, `ROW <table> …`) that `scripts/bench-rollout.sh` assembles.
//!
//! ```sh
//! scripts/bench-rollout.sh 100 1000          # builds, runs, prints the tables
//! target/release/examples/rollout_scale --help
//! ```
//! Everything this process starts is killed when it exits, also on SIGINT/SIGTERM.

// Examples may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../operator_scale/measure.rs"]
#[allow(dead_code)]
mod measure;
#[path = "../../tests/it/operator_common.rs"]
mod operator_common;
#[path = "../../tests/it/rollout_sim.rs"]
mod rollout_sim;
#[path = "../operator_scale/run.rs"]
mod run;
mod scenario;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use capstan_operator::api::ClusterAddon;
use capstan_operator::api::rollout::{ClusterStackRollout, RolloutPhase};
use capstan_testenv::audit::{AuditLog, is_overhead};
use clap::Parser;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ListParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use capstan_stack::capi::CapiVersion;
use measure::{CpuSnapshot, Procs};
use operator_common::NS;
use run::print_table;
use scenario::Scenario;

const ROLLOUT: &str = "fleet";
const WAVE_LABEL: &str = "ring";

#[derive(Debug, Parser)]
#[command(about = "Rollout benchmark of capstan operator (see scripts/bench-rollout.sh)")]
struct Args {
    /// Clusters in the fleet.
    #[arg(default_value_t = 1000)]
    clusters: usize,
    /// The waves' shares of the fleet in percent, in order (the last takes the rest).
    #[arg(long, default_value = "1,9,40,50", value_delimiter = ',')]
    waves: Vec<usize>,
    /// maxInFlight of every wave: a number or a percentage of the wave ("20%").
    #[arg(long, default_value = "20%")]
    max_in_flight: String,
    /// Simulated upgrade time of one Cluster, in seconds.
    #[arg(long, default_value_t = 5.0)]
    upgrade_secs: f64,
    /// The rollout operator's --concurrency.
    #[arg(long, default_value_t = 4)]
    concurrency: u16,
    /// Longest time the rollout may take before the run fails, in minutes.
    #[arg(long, default_value_t = 30)]
    timeout_mins: u64,
    /// Switches per Cluster: 1 (a release of the same stack) or 2 (two Kubernetes minors
    /// across stacks, `from: auto`).
    #[arg(long, default_value_t = 1)]
    steps: usize,
    /// Every Cluster's kubeconfig Secret names one workload API server of the harness, where
    /// the pre-flight reads its evidence.
    #[arg(long)]
    preflight: bool,
    /// The Cluster API CRDs: v1beta1 (v1.6.0's) or v1beta2 (v1.14's, only v1beta2 served).
    #[arg(long, default_value = "v1beta1", value_parser = parse_capi)]
    capi: CapiVersion,
}

fn parse_capi(text: &str) -> Result<CapiVersion, String> {
    match text {
        "v1beta1" => Ok(CapiVersion::V1Beta1),
        "v1beta2" => Ok(CapiVersion::V1Beta2),
        _ => Err(format!("v1beta1 or v1beta2, not {text:?}")),
    }
}

impl Args {
    /// The run's name in the tables.
    fn label(&self) -> String {
        let steps = match self.steps {
            1 => "one stack".to_string(),
            n => format!("{n} minors"),
        };
        let workload = if self.preflight { ", workload" } else { "" };
        format!("{steps}, {}{workload}", self.capi)
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    run::until_signal("rollout_scale", run(&args)).await
}

/// One wave of the run: its name (also its label value), its Clusters and maxInFlight.
struct Wave {
    name: String,
    clusters: Vec<String>,
    max_in_flight: usize,
}

/// The fleet cut into waves by cumulative shares (rounded), so the sizes add up to `clusters`.
fn waves(args: &Args) -> anyhow::Result<Vec<Wave>> {
    if args.waves.is_empty() || args.waves.iter().sum::<usize>() != 100 {
        bail!(
            "--waves must be percentages adding up to 100, got {:?}",
            args.waves
        );
    }
    let limit = match args.max_in_flight.parse::<i32>() {
        Ok(n) if n > 0 => IntOrString::Int(n),
        Ok(_) => bail!("--max-in-flight must be at least 1"),
        Err(_) => IntOrString::String(args.max_in_flight.clone()),
    };
    let mut out = Vec::new();
    let (mut share, mut start) = (0, 0);
    for (i, percent) in args.waves.iter().enumerate() {
        share += percent;
        let end = (args.clusters * share + 50) / 100;
        let clusters: Vec<String> = (start..end).map(|c| format!("fleet-{c}")).collect();
        if clusters.is_empty() {
            bail!(
                "wave {} of {percent} % has no Cluster among {}",
                i + 1,
                args.clusters
            );
        }
        out.push(Wave {
            name: format!("w{}", i + 1),
            max_in_flight: capstan_operator::testing::rollout::plan::max_in_flight(
                Some(&limit),
                clusters.len(),
            ),
            clusters,
        });
        start = end;
    }
    Ok(out)
}

impl Wave {
    /// Upgrades one after the other at the wave's limit: `ceil(Clusters / maxInFlight)`.
    fn batches(&self) -> usize {
        self.clusters.len().div_ceil(self.max_in_flight)
    }
}

async fn run(args: &Args) -> anyhow::Result<()> {
    let waves = waves(args)?;
    let scenario = Scenario::new(args.steps)?;
    let upgrade = Duration::from_secs_f64(args.upgrade_secs);
    // This process (the simulator, the driver) speaks the CRDs' version too.
    capstan_operator::testing::capi_api::set(capstan_operator::testing::capi_api::Choice::Chosen(args.capi));
    eprintln!(
        "rollout_scale: {} ({}) Clusters in waves of {}, maxInFlight {}, simulated upgrade {:.1} s",
        args.clusters,
        args.label(),
        waves
            .iter()
            .map(|w| w.clusters.len().to_string())
            .collect::<Vec<_>>()
            .join("/"),
        args.max_in_flight,
        upgrade.as_secs_f64()
    );

    let audit = AuditLog::new().context("audit log")?;
    let shared = scenario.shared_releases();
    let env = match args.capi {
        CapiVersion::V1Beta1 => {
            operator_common::start_with_apiserver_args("rollout-scale", &shared, &audit.apiserver_args()).await
        }
        CapiVersion::V1Beta2 => {
            operator_common::start_v1beta2("rollout-scale", &shared, &audit.apiserver_args()).await
        }
    }
    .ok_or_else(|| {
        anyhow!("the harness binaries (CAPSTAN_KUBE_APISERVER, CAPSTAN_ETCD) or the shared CAPI CRDs and releases (CAPSTAN_SHARED) are missing")
    })?;
    // The one workload API server every Cluster's kubeconfig names, with an audit log of its
    // own: the rollout operator's requests there are the pre-flight's.
    let workload_audit = AuditLog::new().context("workload audit log")?;
    let workload = if args.preflight {
        let bins = capstan_testenv::Binaries::find().map_err(|e| anyhow!("harness binaries: {e}"))?;
        Some(
            capstan_testenv::TestCluster::start_with_args(
                &bins,
                "workload",
                &workload_audit.apiserver_args(),
            )
            .await?,
        )
    } else {
        None
    };
    let workload_kubeconfig = match &workload {
        Some(w) => Some(std::fs::read(w.kubeconfig_path()).context("the workload kubeconfig")?),
        None => None,
    };
    // Everything but the rollout operator acts as another user.
    let masters = ["system:masters"];
    let driver = env.cluster.client_as("capi-simulator", &masters).await?;
    let others_kubeconfig = env.logs.path().join("other-controllers.kubeconfig");
    env.cluster
        .write_kubeconfig_as("capstan-other-controllers", &masters, &others_kubeconfig)?;
    let others_kubeconfig = others_kubeconfig.display().to_string();
    let others = env.operator(
        1,
        &[
            "--kubeconfig",
            &others_kubeconfig,
            "--controllers",
            match args.capi {
                CapiVersion::V1Beta1 => "clusterstack,clusterstackrelease,cluster",
                CapiVersion::V1Beta2 => "clusterstack,cluster",
            },
        ],
    );
    let concurrency = args.concurrency.to_string();
    let operator = env.operator(0, &["--controllers", "rollout", "--concurrency", &concurrency]);

    scenario.create_stacks(&env).await?;
    let want = scenario.releases.clone();
    if args.capi == CapiVersion::V1Beta2 {
        operator_common::eventually("the releases made", Duration::from_secs(300), &others, || async {
            (env.release_names().await == want).then_some(())
        })
        .await;
        scenario.report_ready(&env).await?;
    }
    operator_common::eventually(
        "the releases ready",
        Duration::from_secs(300),
        &others,
        || async { (env.ready_releases().await == want).then_some(()) },
    )
    .await;

    // The fleet on v1, each Cluster labelled with its wave.
    let started = Instant::now();
    let fleet: Vec<(&str, &str)> = waves
        .iter()
        .flat_map(|w| w.clusters.iter().map(|c| (c.as_str(), w.name.as_str())))
        .collect();
    // Few at once, each tried again: a loaded API server answers a burst of creations with
    // timeouts (its quota evaluation).
    futures::stream::iter(&fleet)
        .map(|(name, wave)| {
            let driver = driver.clone();
            let (scenario, kubeconfig) = (&scenario, workload_kubeconfig.as_deref());
            async move {
                let mut attempt = 0;
                loop {
                    let labels = json!({ WAVE_LABEL: wave });
                    let created = rollout_sim::try_create_cluster(
                        &driver,
                        NS,
                        name,
                        &scenario.class,
                        &scenario.kubernetes,
                        labels,
                    )
                    .await;
                    let created = match (created, kubeconfig) {
                        (Ok(()), Some(kubeconfig)) => {
                            scenario::write_kubeconfig(&driver, name, kubeconfig).await
                        }
                        (created, _) => created,
                    };
                    match created {
                        Ok(()) => return Ok(()),
                        Err(e) if attempt < 5 => {
                            eprintln!("  creating {name} (attempt {}): {e}", attempt + 1);
                            attempt += 1;
                            tokio::time::sleep(Duration::from_secs(2)).await;
                        }
                        Err(e) => return Err(anyhow!("creating Cluster {name}: {e}")),
                    }
                }
            }
        })
        .buffer_unordered(4)
        .collect::<Vec<anyhow::Result<()>>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<()>>>()?;
    let addons: Api<ClusterAddon> = Api::namespaced(driver.clone(), NS);
    let count_addons = |applied: Option<&str>| {
        let addons = addons.clone();
        let applied = applied.map(str::to_string);
        async move {
            let list = addons.list(&ListParams::default()).await.ok()?;
            let n = list
                .items
                .iter()
                .filter(|a| {
                    applied.as_deref().is_none_or(|class| {
                        a.status
                            .as_ref()
                            .is_some_and(|s| s.ready && s.applied_cluster_stack.as_deref() == Some(class))
                    })
                })
                .count();
            (n == args.clusters).then_some(())
        }
    };
    let setup = Duration::from_secs(600);
    operator_common::eventually("every ClusterAddon made", setup, &others, || count_addons(None)).await;
    // The simulator reports each ClusterAddon applied when it first sees its Cluster.
    let sim = rollout_sim::Simulator {
        namespace: NS.into(),
        upgrade,
        wave_label: WAVE_LABEL.into(),
        failing: Default::default(),
    }
    .run(driver.clone());
    operator_common::eventually("every ClusterAddon on the first class", setup, &others, || {
        count_addons(Some(&scenario.class))
    })
    .await;
    eprintln!(
        "rollout_scale: fleet ready after {:.0} s",
        started.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;

    let mut procs = Procs::default();
    procs.add("rollout operator", operator.pid());
    let (etcd, apiserver) = env.cluster.pids();
    procs.add("kube-apiserver", apiserver);
    procs.add("etcd", etcd);
    procs.add("other controllers", others.pid());
    procs.add("simulator + driver", std::process::id());
    procs.declare("workload kube-apiserver + etcd");
    if let Some(workload) = &workload {
        let (etcd, apiserver) = workload.pids();
        procs.add("workload kube-apiserver + etcd", apiserver);
        procs.add("workload kube-apiserver + etcd", etcd);
    }

    // The rollout, and a watch on it that notes when it completes (or halts).
    let rollouts: Api<ClusterStackRollout> = Api::namespaced(driver.clone(), NS);
    let finished: Arc<Mutex<Option<(RolloutPhase, Instant)>>> = Arc::default();
    let watch = {
        let (rollouts, finished) = (rollouts.clone(), finished.clone());
        tokio::spawn(async move {
            let config = watcher::Config::default().fields(&format!("metadata.name={ROLLOUT}"));
            let mut events = watcher(rollouts, config).boxed();
            while let Some(event) = events.next().await {
                let Ok(watcher::Event::Apply(rollout) | watcher::Event::InitApply(rollout)) = event else {
                    continue;
                };
                let phase = rollout.status.map(|s| s.phase);
                if let Some(phase @ (RolloutPhase::Complete | RolloutPhase::Halted)) = phase {
                    let mut finished = finished.lock().unwrap();
                    if finished.is_none() {
                        *finished = Some((phase, Instant::now()));
                    }
                }
            }
        })
    };
    let spec_waves: Vec<serde_json::Value> = waves
        .iter()
        .map(|w| {
            json!({"name": w.name, "clusterSelector": {"matchLabels": {WAVE_LABEL: w.name}},
                   "maxInFlight": args.max_in_flight.parse::<i64>().map_or_else(|_| json!(args.max_in_flight), |n| json!(n))})
        })
        .collect();
    let mut spec = scenario.target.clone();
    spec["waves"] = json!(spec_waves);
    spec["health"] = json!({"timeout": "30m"});
    let rollout: ClusterStackRollout = serde_json::from_value(json!({
        "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
        "metadata": {"name": ROLLOUT, "namespace": NS},
        "spec": spec,
    }))?;
    let start = Instant::now();
    let start_time = Timestamp::now();
    let cpu_start = procs.snapshot();
    rollouts
        .create(&PostParams::default(), &rollout)
        .await
        .context("creating the ClusterStackRollout")?;

    // Wave k ends when the first Cluster of wave k + 1 is switched, the last when the rollout
    // is Complete.
    let limit = Duration::from_secs(args.timeout_mins * 60);
    let mut ends: Vec<(Instant, CpuSnapshot)> = Vec::new();
    let mut reported = Instant::now();
    while ends.len() < waves.len() {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let next = ends.len();
        let end = if next + 1 < waves.len() {
            sim.snapshot(|r| r.first_switch(&waves[next + 1].name))
        } else {
            match *finished.lock().unwrap() {
                Some((RolloutPhase::Complete, at)) => Some(at),
                Some((phase, _)) => bail!("the rollout is {phase:?}\n{}", operator.log_tail(60)),
                None => None,
            }
        };
        if let Some(at) = end {
            ends.push((at, procs.snapshot()));
            eprintln!(
                "  {} done after {:.1} s",
                waves[next].name,
                at.duration_since(start).as_secs_f64()
            );
            continue;
        }
        if start.elapsed() > limit {
            bail!(
                "the rollout did not complete within {} min\n{}",
                args.timeout_mins,
                operator.log_tail(60)
            );
        }
        if reported.elapsed() > Duration::from_secs(15) {
            let switched = sim.snapshot(|r| r.switches.len());
            eprintln!(
                "  {switched}/{} switches after {:.0} s",
                args.clusters * scenario.steps,
                start.elapsed().as_secs_f64()
            );
            reported = Instant::now();
        }
    }
    watch.abort();
    // The audit log is written as requests are answered.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let requests = requests_by_wave(&audit, start, start_time, &ends);
    let workload_requests = workload
        .is_some()
        .then(|| requests_by_wave(&workload_audit, start, start_time, &ends));
    let memory = Memory {
        rss: measure::rss_kib(operator.pid()),
        peak: measure::peak_rss_kib(operator.pid()),
    };
    let (switches, doubles, most_in_flight) = sim.snapshot(|r| {
        (
            r.switches.len(),
            r.double_switches().len(),
            r.max_in_flight.clone(),
        )
    });
    if switches != args.clusters * scenario.steps || doubles > 0 {
        bail!(
            "{switches} switches of {} Clusters in {} step(s), {doubles} switched twice",
            args.clusters,
            scenario.steps
        );
    }

    print_tables(
        args,
        &waves,
        upgrade * scenario.steps as u32,
        start,
        &cpu_start,
        &ends,
        &requests,
        workload_requests.as_deref(),
        &most_in_flight,
        &procs,
    );
    print_memory(args, &memory);
    Ok(())
}

/// The rollout operator's resident memory when the rollout completed, and its peak.
struct Memory {
    rss: Option<u64>,
    peak: Option<u64>,
}

fn print_memory(args: &Args, memory: &Memory) {
    let mib =
        |kib: Option<u64>| kib.map_or_else(|| "?".to_string(), |k| format!("{:.0} MiB", k as f64 / 1024.0));
    print_table(
        "memory",
        "| Clusters | rollout | rollout operator RSS at the end | peak |",
        &format!(
            "| {} | {} | {} | {} |",
            args.clusters,
            args.label(),
            mib(memory.rss),
            mib(memory.peak)
        ),
    );
}

/// `count` requests by verb as `VERB n · …` (`none` without any).
fn by_verb(verbs: &BTreeMap<String, usize>) -> String {
    if verbs.is_empty() {
        return "none".into();
    }
    verbs
        .iter()
        .map(|(verb, n)| format!("{verb} {n}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The rollout operator's requests (discovery aside) answered during each wave, by verb; the
/// last entry is those after the rollout completed (left out of the tables).
fn requests_by_wave(
    audit: &AuditLog,
    start: Instant,
    start_time: Timestamp,
    ends: &[(Instant, CpuSnapshot)],
) -> Vec<BTreeMap<String, usize>> {
    let bounds: Vec<Duration> = ends.iter().map(|(at, _)| at.duration_since(start)).collect();
    let mut out = vec![BTreeMap::new(); bounds.len() + 1];
    for (at, request) in audit.requests_at() {
        if is_overhead(&request) {
            continue;
        }
        let Ok(at) = at.parse::<Timestamp>() else { continue };
        let Ok(offset) = Duration::try_from(at.duration_since(start_time)) else {
            continue; // before the rollout
        };
        let wave = bounds.iter().position(|b| offset < *b).unwrap_or(bounds.len());
        let verb = request.split(' ').next().unwrap_or_default().to_uppercase();
        *out[wave].entry(verb).or_default() += 1;
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn print_tables(
    args: &Args,
    waves: &[Wave],
    upgrade: Duration,
    start: Instant,
    cpu_start: &CpuSnapshot,
    ends: &[(Instant, CpuSnapshot)],
    requests: &[BTreeMap<String, usize>],
    workload_requests: Option<&[BTreeMap<String, usize>]>,
    most_in_flight: &BTreeMap<String, usize>,
    procs: &Procs,
) {
    let key = format!("| {} | {} ", args.clusters, args.label());
    let empty = BTreeMap::new();
    let workload_of = |i: usize| workload_requests.map(|w| w.get(i).unwrap_or(&empty).clone());
    let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
    let mut from = (start, cpu_start.clone());
    let mut total_floor = Duration::ZERO;
    let mut all = BTreeMap::new();
    let mut all_workload = BTreeMap::new();
    let mut rows = Vec::new();
    for (i, wave) in waves.iter().enumerate() {
        let (end, cpu) = &ends[i];
        let wall = end.duration_since(from.0);
        let floor = upgrade * wave.batches() as u32;
        total_floor += floor;
        for (verb, n) in &requests[i] {
            *all.entry(verb.clone()).or_insert(0) += n;
        }
        for (verb, n) in workload_of(i).unwrap_or_default() {
            *all_workload.entry(verb).or_insert(0) += n;
        }
        rows.push((
            format!(
                "{} ({} %)",
                wave.name,
                args.waves.get(i).copied().unwrap_or_default()
            ),
            wave.clusters.len(),
            format!(
                "{} ({})",
                wave.max_in_flight,
                most_in_flight.get(&wave.name).copied().unwrap_or_default()
            ),
            wave.batches(),
            wall,
            floor,
            cpu.since(&from.1),
            requests[i].clone(),
            workload_of(i),
        ));
        from = (*end, cpu.clone());
    }
    let (end, cpu_end) = ends.last().expect("waves");
    rows.push((
        "total".into(),
        args.clusters,
        String::new(),
        waves.iter().map(Wave::batches).sum(),
        end.duration_since(start),
        total_floor,
        cpu_end.since(cpu_start),
        all,
        workload_requests.map(|_| all_workload),
    ));
    for (name, clusters, limit, batches, wall, floor, cpu, verbs, workload) in &rows {
        let overhead = wall.saturating_sub(*floor);
        print_table(
            "time",
            "| Clusters | rollout | wave | Clusters in it | maxInFlight (most seen in flight) | upgrades in a row | simulated CAPI floor | wall | overhead beyond the floor | overhead per upgrade in a row | wall / floor |",
            &format!(
                "{key}| {name} | {clusters} | {limit} | {batches} | {} | {} | {} | {:.2} s | {:.2} |",
                secs(*floor),
                secs(*wall),
                secs(overhead),
                overhead.as_secs_f64() / (*batches).max(1) as f64,
                wall.as_secs_f64() / floor.as_secs_f64().max(0.001),
            ),
        );
        let total: usize = verbs.values().sum();
        print_table(
            "requests",
            "| Clusters | rollout | wave | rollout operator's requests | per Cluster | by verb |",
            &format!(
                "{key}| {name} | {total} | {:.1} | {} |",
                total as f64 / (*clusters).max(1) as f64,
                by_verb(verbs)
            ),
        );
        if let Some(workload) = workload {
            let total: usize = workload.values().sum();
            print_table(
                "workload",
                "| Clusters | rollout | wave | rollout operator's requests to the workload API server | per Cluster | by verb |",
                &format!(
                    "{key}| {name} | {total} | {:.1} | {} |",
                    total as f64 / (*clusters).max(1) as f64,
                    by_verb(workload)
                ),
            );
        }
        let wall_secs = wall.as_secs_f64().max(0.001);
        let cell = |s: f64| format!("{s:.1} s ({:.2})", s / wall_secs);
        let mut header = "| Clusters | rollout | wave | wall |".to_string();
        for group in procs.names() {
            header.push_str(&format!(" {group} |"));
        }
        header.push_str(" rest of the machine |");
        let mut row = format!("{key}| {name} | {} |", secs(*wall));
        for s in &cpu.groups {
            row.push_str(&format!(" {} |", cell(*s)));
        }
        let ours: f64 = cpu.groups.iter().sum();
        row.push_str(&format!(" {} |", cell((cpu.machine - ours).max(0.0))));
        print_table("cpu", &header, &row);
    }
}
