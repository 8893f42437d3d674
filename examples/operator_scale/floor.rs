//! The floor the operator is measured against (issue 36 §5): the same addon objects of the
//! same number of Clusters applied straight to the same workload API servers by
//! `capstan apply` — no operator, no inventory, no status, no watches — with as many applies in
//! flight as the operator runs reconciles, and each apply as many requests in flight as the
//! operator's. Absolute times on a shared machine move threefold from one day to the next;
//! the operator's time divided by the floor measured in the same run does not.
//!
//! The floor's Clusters are named `floor-<i>`: their objects (a namespace `bench-floor-<i>`
//! and what is in it) never meet the fleet's. Rendering them is not timed.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context as _, bail};
use futures::StreamExt;

/// Requests one `capstan apply` keeps in flight: the operator's per apply
/// (`ApplyOptions::concurrency` of its pipeline).
const APPLY_CONCURRENCY: &str = "8";

/// One floor Cluster's addon objects, and the workload API server they go to.
pub struct Manifest {
    pub file: PathBuf,
    pub kubeconfig: PathBuf,
}

/// Renders the addons of `release` for `count` Clusters named `floor-<i>` into `dir`, Cluster
/// `i` going to `kubeconfigs[i % len]` (as the fleet's Clusters are spread); two renders at
/// a time (the machine's cores), untimed.
pub async fn render(
    capstan: &Path,
    release: &Path,
    count: usize,
    kubeconfigs: &[PathBuf],
    dir: &Path,
) -> anyhow::Result<Vec<Manifest>> {
    let renders = futures::stream::iter(0..count)
        .map(|i| async move {
            let name = format!("floor-{i}");
            let cluster = dir.join(format!("{name}.cluster.yaml"));
            std::fs::write(&cluster, cluster_yaml(&name))
                .with_context(|| format!("writing {}", cluster.display()))?;
            let output = tokio::process::Command::new(capstan)
                .arg("render")
                .arg(release)
                .arg("--cluster")
                .arg(&cluster)
                .stdin(Stdio::null())
                .output()
                .await
                .with_context(|| format!("running {} render", capstan.display()))?;
            if !output.status.success() {
                bail!(
                    "capstan render of {} for {name} failed: {}",
                    release.display(),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            let stream = String::from_utf8(output.stdout).context("capstan render printed non-UTF-8")?;
            let addons = addon_documents(&stream);
            if addons.is_empty() {
                bail!(
                    "capstan render of {} for {name} printed no addon objects",
                    release.display()
                );
            }
            let file = dir.join(format!("{name}.{}.yaml", release_name(release)));
            std::fs::write(&file, addons).with_context(|| format!("writing {}", file.display()))?;
            Ok(Manifest {
                file,
                kubeconfig: kubeconfigs[i % kubeconfigs.len()].clone(),
            })
        })
        .buffered(2)
        .collect::<Vec<_>>()
        .await;
    renders.into_iter().collect()
}

/// Applies every manifest with `capstan apply`, `in_flight` applies at a time; fails on the
/// first apply that fails.
pub async fn apply(capstan: &Path, manifests: &[Manifest], in_flight: usize) -> anyhow::Result<()> {
    let applies = futures::stream::iter(manifests)
        .map(|m| async move {
            let output = tokio::process::Command::new(capstan)
                .arg("apply")
                .arg("--filename")
                .arg(&m.file)
                .arg("--kubeconfig")
                .arg(&m.kubeconfig)
                .args(["--concurrency", APPLY_CONCURRENCY])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .output()
                .await
                .with_context(|| format!("running {} apply", capstan.display()))?;
            if !output.status.success() {
                bail!(
                    "capstan apply -f {} failed: {}",
                    m.file.display(),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            Ok(())
        })
        .buffer_unordered(in_flight.max(1))
        .collect::<Vec<_>>()
        .await;
    applies.into_iter().collect()
}

/// A Cluster as the fleet's look to a render (name, endpoint, topology).
fn cluster_yaml(name: &str) -> String {
    format!(
        "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: bench\n\
         spec:\n  controlPlaneEndpoint:\n    host: {name}.example\n    port: 6443\n  topology:\n    class: bench\n    version: v1.27.3\n"
    )
}

fn release_name(release: &Path) -> String {
    release
        .file_name()
        .map_or_else(|| "release".to_string(), |n| n.to_string_lossy().into_owned())
}

/// The documents of a release render that come from its addon chart (`# Source:
/// cluster-addon/…`), leaving out the ClusterClass part, which goes to the management cluster.
fn addon_documents(stream: &str) -> String {
    let mut out = String::new();
    for document in stream.split("---\n") {
        if document.trim_start().starts_with("# Source: cluster-addon/") {
            out.push_str("---\n");
            out.push_str(document);
        }
    }
    out
}

/// Objects in a rendered manifest (its documents).
pub fn objects_in(manifest: &Manifest) -> anyhow::Result<usize> {
    let text = std::fs::read_to_string(&manifest.file)
        .with_context(|| format!("reading {}", manifest.file.display()))?;
    Ok(text.matches("---\n# Source: ").count())
}
