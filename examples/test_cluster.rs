//! Starts a throw-away etcd + kube-apiserver (the test harness of `crates/capstan-testenv`), prints
//! the path of its kubeconfig on stdout, and keeps it running until stdin closes (or the
//! process is killed). For scripts such as `scripts/bench-apply.sh`:
//!
//! ```sh
//! coproc cargo run --release --example test_cluster
//! read -r KUBECONFIG <&"${COPROC[0]}"
//! ```
//!
//! `--crds DIR` also installs the CRDs of a directory first.

// Examples may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bins = capstan_testenv::Binaries::find()?;
    let cluster = capstan_testenv::TestCluster::start(&bins, "bench").await?;
    if let Some(i) = args.iter().position(|a| a == "--crds")
        && let Some(dir) = args.get(i + 1)
    {
        capstan_testenv::install_crds(&cluster.client(), std::path::Path::new(dir)).await?;
    }
    println!("{}", cluster.kubeconfig_path().display());
    // Wait for stdin to close; the cluster (kept on this thread) is torn down on return.
    tokio::task::block_in_place(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    });
    drop(cluster);
    Ok(())
}
