//! Scale run of `capstan operator` (a benchmark, not a test): a management API server and three
//! workload API servers of the test harness, the fake GitHub serving the shared
//! docker-ferrol-1-27 releases, and N Clusters (default 50) spread over the workload servers.
//! Measures how long the operator takes until every Cluster's addons of v1 are applied, then
//! after switching every Cluster to v2, and the operator's peak RSS (VmHWM).
//!
//! ```sh
//! cargo build --release && cargo run --release --example operator_scale [-- N]
//! ```
//! (`scripts/bench-operator.sh` does both; results in docs/benchmarks.md.)

#[path = "../tests/it/operator_common.rs"]
mod operator_common;

use std::time::{Duration, Instant};

use futures::StreamExt;

const WORKLOADS: usize = 3;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let clusters: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(50);
    let published = ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"];
    let Some(env) = operator_common::start("operator-scale", &published).await else {
        eprintln!("the harness binaries or ../shared are missing");
        std::process::exit(2);
    };
    let bins = capstan_testenv::Binaries::find().expect("harness binaries");
    let mut workloads = Vec::new();
    for i in 0..WORKLOADS {
        workloads.push(
            capstan_testenv::TestCluster::start(&bins, &format!("workload-{i}"))
                .await
                .expect("workload cluster starts"),
        );
    }
    let operator = env.operator(0, &["--concurrency", "8"]);
    env.create_stack(&["v1"], "30s").await;
    let want = operator_common::names(&published);
    operator_common::eventually("v1 and v2 ready", Duration::from_secs(120), &operator, || async {
        (env.ready_releases().await == want).then_some(())
    })
    .await;

    let names: Vec<String> = (0..clusters).map(|i| format!("scale-{i}")).collect();
    let started = Instant::now();
    for (i, name) in names.iter().enumerate() {
        env.cluster_api(
            name,
            "docker-ferrol-1-27-v1",
            &format!("{name}.example"),
            &workloads[i % WORKLOADS],
            false,
        )
        .await;
    }
    let created = started.elapsed();
    wait_all(&env, &names, "docker-ferrol-1-27-v1", &operator).await;
    let first = started.elapsed();

    let switched = Instant::now();
    futures::stream::iter(names.iter())
        .for_each_concurrent(16, |name| env.set_class(name, "docker-ferrol-1-27-v2"))
        .await;
    wait_all(&env, &names, "docker-ferrol-1-27-v2", &operator).await;
    let switch = switched.elapsed();

    let status = std::fs::read_to_string(format!("/proc/{}/status", operator.pid())).unwrap_or_default();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!(
        "| Clusters | workload API servers | objects created in | all v1 addons applied after | switch to v2 converged after | operator peak RSS |"
    );
    println!("|---|---|---|---|---|---|");
    println!(
        "| {clusters} | {WORKLOADS} | {:.1} s | {:.1} s | {:.1} s | {peak} |",
        created.as_secs_f64(),
        first.as_secs_f64(),
        switch.as_secs_f64()
    );
}

async fn wait_all(
    env: &operator_common::Env,
    names: &[String],
    class: &str,
    operator: &capstan_testenv::ChildGuard,
) {
    operator_common::eventually(
        &format!("every Cluster on {class}"),
        Duration::from_secs(600),
        operator,
        || async {
            for name in names {
                let status = env.addon(name).await?.status?;
                if !(status.ready && status.applied_cluster_stack.as_deref() == Some(class)) {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
}
