//! Rollout benchmark (issue 33; a benchmark, not a test): N Clusters moved from
//! `docker-ferrol-1-27-v1` to `-v2` by one ClusterStackRollout in waves (by default 1 %, 9 %,
//! 40 %, 50 % of the fleet, soak 0), on the test harness's real API server, with Cluster API
//! played by the rollout tests' simulator (`tests/it/rollout_sim.rs`): a fixed `--upgrade`
//! time after it sees a Cluster's class change, it reports the Cluster upgraded and its
//! ClusterAddon applied.
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

use measure::{CpuSnapshot, Procs};
use operator_common::NS;
use run::print_table;

const V1: &str = "docker-ferrol-1-27-v1";
const V2: &str = "docker-ferrol-1-27-v2";
/// The Clusters' Kubernetes version before the switch: v2's is v1.27.3, so every switch also
/// upgrades the control plane (and the rollout reads its version), as in the rollout tests.
const OLD_KUBERNETES: &str = "v1.27.2";
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
    let upgrade = Duration::from_secs_f64(args.upgrade_secs);
    eprintln!(
        "rollout_scale: {} Clusters in waves of {}, maxInFlight {}, simulated upgrade {:.1} s",
        args.clusters,
        waves
            .iter()
            .map(|w| w.clusters.len().to_string())
            .collect::<Vec<_>>()
            .join("/"),
        args.max_in_flight,
        upgrade.as_secs_f64()
    );

    let audit = AuditLog::new().context("audit log")?;
    let env = operator_common::start_with_apiserver_args("rollout-scale", &[V1, V2], &audit.apiserver_args())
        .await
        .ok_or_else(|| {
            anyhow!("the harness binaries (CAPSTAN_KUBE_APISERVER, CAPSTAN_ETCD) or the shared CAPI CRDs and releases (CAPSTAN_SHARED) are missing")
        })?;
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
            "clusterstack,clusterstackrelease,cluster",
        ],
    );
    let concurrency = args.concurrency.to_string();
    let operator = env.operator(0, &["--controllers", "rollout", "--concurrency", &concurrency]);

    env.create_stack(&["v1", "v2"], "5s").await;
    let want = vec![V1.to_string(), V2.to_string()];
    operator_common::eventually("v1 and v2 ready", Duration::from_secs(300), &others, || async {
        (env.ready_releases().await == want).then_some(())
    })
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
            async move {
                let mut attempt = 0;
                loop {
                    let labels = json!({ WAVE_LABEL: wave });
                    match rollout_sim::try_create_cluster(&driver, NS, name, V1, OLD_KUBERNETES, labels).await
                    {
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
    let count_addons = |applied: Option<&'static str>| {
        let addons = addons.clone();
        async move {
            let list = addons.list(&ListParams::default()).await.ok()?;
            let n = list
                .items
                .iter()
                .filter(|a| {
                    applied.is_none_or(|class| {
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
    operator_common::eventually("every ClusterAddon on v1", setup, &others, || {
        count_addons(Some(V1))
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
    let rollout: ClusterStackRollout = serde_json::from_value(json!({
        "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
        "metadata": {"name": ROLLOUT, "namespace": NS},
        "spec": {"clusterStack": "ferrol", "version": "v2", "waves": spec_waves,
                 "health": {"timeout": "30m"}},
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
                "  {switched}/{} switched after {:.0} s",
                args.clusters,
                start.elapsed().as_secs_f64()
            );
            reported = Instant::now();
        }
    }
    watch.abort();
    // The audit log is written as requests are answered.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let requests = requests_by_wave(&audit, start, start_time, &ends);
    let (switches, doubles, most_in_flight) = sim.snapshot(|r| {
        (
            r.switches.len(),
            r.double_switches().len(),
            r.max_in_flight.clone(),
        )
    });
    if switches != args.clusters || doubles > 0 {
        bail!(
            "{switches} switches of {} Clusters, {doubles} switched twice",
            args.clusters
        );
    }

    print_tables(
        args,
        &waves,
        upgrade,
        start,
        &cpu_start,
        &ends,
        &requests,
        &most_in_flight,
        &procs,
    );
    Ok(())
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
    most_in_flight: &BTreeMap<String, usize>,
    procs: &Procs,
) {
    let key = format!("| {} ", args.clusters);
    let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
    let mut from = (start, cpu_start.clone());
    let mut total_floor = Duration::ZERO;
    let mut all = BTreeMap::new();
    let mut rows = Vec::new();
    for (i, wave) in waves.iter().enumerate() {
        let (end, cpu) = &ends[i];
        let wall = end.duration_since(from.0);
        let floor = upgrade * wave.batches() as u32;
        total_floor += floor;
        for (verb, n) in &requests[i] {
            *all.entry(verb.clone()).or_insert(0) += n;
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
    ));
    for (name, clusters, limit, batches, wall, floor, cpu, verbs) in &rows {
        let overhead = wall.saturating_sub(*floor);
        print_table(
            "time",
            "| Clusters | wave | Clusters in it | maxInFlight (most seen in flight) | upgrades in a row | simulated CAPI floor | wall | overhead beyond the floor | overhead per upgrade in a row | wall / floor |",
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
        let by_verb = verbs
            .iter()
            .map(|(verb, n)| format!("{verb} {n}"))
            .collect::<Vec<_>>()
            .join(" · ");
        print_table(
            "requests",
            "| Clusters | wave | rollout operator's requests | per Cluster | by verb |",
            &format!(
                "{key}| {name} | {total} | {:.1} | {} |",
                total as f64 / (*clusters).max(1) as f64,
                if by_verb.is_empty() {
                    "none".into()
                } else {
                    by_verb
                }
            ),
        );
        let wall_secs = wall.as_secs_f64().max(0.001);
        let cell = |s: f64| format!("{s:.1} s ({:.2})", s / wall_secs);
        let mut header = "| Clusters | wave | wall |".to_string();
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
