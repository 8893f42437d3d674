//! Starts the API servers a test run shares (`scripts/test.sh`, docs/testing.md "Shared API
//! servers"): one etcd + kube-apiserver per name given, each line of stdout `NAME=KUBECONFIG`
//! once all are ready, then keeps them until stdin closes, SIGTERM or SIGINT (and removes
//! their files). Without names it starts one called `management`.
//!
//! ```sh
//! testenv-up management <fifo >paths &
//! ```

use std::io::Read;

use capstan_testenv::{Binaries, TestCluster};

// One thread: the servers die with the thread that started them (see `ChildGuard`).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names.push("management".into());
    }
    let bins = Binaries::find()?;
    let mut clusters = Vec::new();
    for name in &names {
        clusters.push(TestCluster::start(&bins, name).await?);
    }
    for cluster in &clusters {
        println!("{}={}", cluster.name(), cluster.kubeconfig_path().display());
    }

    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = [0u8; 512];
        while std::io::stdin().read(&mut sink).is_ok_and(|n| n > 0) {}
    });
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = stdin_closed => {}
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    drop(clusters);
    // Not a return: the runtime would wait for the thread still blocked reading stdin.
    std::process::exit(0)
}
