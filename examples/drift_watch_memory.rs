//! What the drift watches of a fleet cost in memory (issue 36 §3, docs/benchmarks.md): N
//! simulated workload clusters — each its own client, so its own connection, as the operator's
//! workload cache holds them — on one throw-away API server, each with the 11 kinds of the
//! benchmark stack (`stacks/bench`) watched for I inventories (1: a one-chart addon; 2 or more:
//! a staged addon's stages). Prints this process' RSS after the clients are connected and their
//! kinds discovered, and again once every watch has listed, per watch and per cluster.
//!
//! ```sh
//! cargo run --example drift_watch_memory -- --clusters 200 --inventories 2 --layout shared
//! cargo run --example drift_watch_memory -- --clusters 200 --inventories 2 --layout per-inventory
//! ```
//!
//! `--layout shared` is the operator's: one `DriftWatches` per cluster, one watch per kind for
//! all its inventories. `per-inventory` gives each inventory its own `DriftWatches`, so one
//! watch per inventory and kind: what the operator ran before issue 36 §3.

// Examples may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan_apply::discovery::Discovery;
use capstan_operator::testing::drift::{DriftWatches, Kind};

/// The kinds of the benchmark stack's 25 objects.
const BENCH_KINDS: [(&str, &str, &str); 11] = [
    ("", "v1", "Namespace"),
    ("", "v1", "ServiceAccount"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "Service"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "DaemonSet"),
];

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let clusters: usize = arg(&args, "--clusters", "100").parse()?;
    let inventories: usize = arg(&args, "--inventories", "1").parse()?;
    let layout = arg(&args, "--layout", "shared");
    let shared = match layout.as_str() {
        "shared" => true,
        "per-inventory" => false,
        other => return Err(format!("--layout is shared or per-inventory, not {other}").into()),
    };
    let kinds: Vec<Kind> = BENCH_KINDS
        .iter()
        .map(|(g, v, k)| (g.to_string(), v.to_string(), k.to_string()))
        .collect();

    let bins = capstan_testenv::Binaries::find()?;
    let server = capstan_testenv::TestCluster::start(&bins, "drift-memory").await?;
    let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig_path())?;

    // Connected and discovered: what the workload cache holds anyway.
    let mut discoveries = Vec::new();
    for _ in 0..clusters {
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig.clone(),
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        let discovery = Discovery::new(capstan_apply::client::client(config)?);
        for (g, v, k) in &kinds {
            discovery.resolve(g, v, k).await?;
        }
        discoveries.push(discovery);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let connected = rss_kib();

    let notify: capstan_operator::testing::drift::Notify = Arc::new(|| {});
    let mut held: Vec<(Arc<DriftWatches>, String)> = Vec::new();
    for (c, discovery) in discoveries.iter().enumerate() {
        let one = Arc::new(DriftWatches::default());
        for i in 0..inventories {
            let inventory = format!("kube-system/capstan.caddon.cluster-{c}.stage-{i}");
            let watches = if shared {
                one.clone()
            } else {
                Arc::new(DriftWatches::default())
            };
            watches
                .ensure(discovery, &inventory, &kinds, notify.clone())
                .await;
            held.push((watches, inventory));
        }
    }
    let started = Instant::now();
    while !held.iter().all(|(w, inventory)| w.covers(inventory, &kinds)) {
        if started.elapsed() > Duration::from_secs(600) {
            return Err("the watches did not all list within 10 minutes".into());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let watching = rss_kib();
    let watch_count: usize = if shared {
        clusters * kinds.len()
    } else {
        clusters * inventories * kinds.len()
    };
    let grown = watching.saturating_sub(connected);
    println!(
        "layout {layout}, {clusters} clusters x {inventories} inventories x {} kinds: {watch_count} watches \
         (all listed after {:.1} s); RSS connected {} KiB, watching {} KiB: +{grown} KiB, \
         {:.1} KiB per watch, {:.1} KiB per cluster",
        kinds.len(),
        started.elapsed().as_secs_f64(),
        connected,
        watching,
        grown as f64 / watch_count as f64,
        grown as f64 / clusters as f64,
    );
    drop(held);
    drop(server);
    Ok(())
}
