//! What a benchmark rollout moves its Clusters between (`--steps`), and the management
//! cluster's part of it: the releases published on the fake GitHub, their ClusterStacks, the
//! releases reported ready where the release controller does not run (v1beta2), and — for
//! `--preflight` — every Cluster's kubeconfig Secret naming the one workload API server.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::operator_common::{Env, NS, REPO};

/// One stack: `docker-ferrol-1-27` v1 → v2 (the shared releases), one switch per Cluster.
const FERROL_V1: &str = "docker-ferrol-1-27-v1";
const FERROL_V2: &str = "docker-ferrol-1-27-v2";
/// The minors of the stacks built from `stacks/example` for two steps.
const MINORS: [u32; 3] = [27, 28, 29];

/// The rollout of the run.
pub struct Scenario {
    /// Switches per Cluster.
    pub steps: usize,
    /// Releases that must be ready before the fleet is made.
    pub releases: Vec<String>,
    /// The Clusters' class and Kubernetes version before the rollout.
    pub class: String,
    pub kubernetes: String,
    /// The rollout's spec fields that name its target (and its `from`).
    pub target: serde_json::Value,
    /// Each release's Kubernetes version (what the release controller would report).
    versions: Vec<(String, String)>,
    /// The built releases (two steps), kept until the run ends.
    _built: Option<tempfile::TempDir>,
}

impl Scenario {
    /// The rollout of `steps` switches per Cluster: 1, a release of the same stack; 2, two
    /// Kubernetes minors across stacks (`from: auto`, one minor per step).
    pub fn new(steps: usize) -> anyhow::Result<Scenario> {
        match steps {
            // v2's Kubernetes is v1.27.3: every switch also upgrades the control plane (and the
            // rollout reads its version), as in the rollout tests.
            1 => Ok(Scenario {
                steps,
                releases: vec![FERROL_V1.into(), FERROL_V2.into()],
                class: FERROL_V1.into(),
                kubernetes: "v1.27.2".into(),
                target: json!({"clusterStack": "ferrol", "version": "v2"}),
                versions: vec![
                    (FERROL_V1.into(), "v1.27.2".into()),
                    (FERROL_V2.into(), "v1.27.3".into()),
                ],
                _built: None,
            }),
            2 => {
                let built = tempfile::tempdir().context("temp dir for the built releases")?;
                let releases: Vec<String> = MINORS.iter().map(|m| example_release(*m)).collect();
                Ok(Scenario {
                    steps,
                    class: releases[0].clone(),
                    kubernetes: example_kubernetes(MINORS[0]),
                    target: json!({"clusterStack": format!("example-1-{}", MINORS[2]), "from": "auto"}),
                    versions: MINORS
                        .iter()
                        .map(|m| (example_release(*m), example_kubernetes(*m)))
                        .collect(),
                    releases,
                    _built: Some(built),
                })
            }
            _ => bail!("--steps must be 1 or 2, got {steps}"),
        }
    }

    /// The shared releases the harness publishes at its start (one stack); none for two steps.
    pub fn shared_releases(&self) -> Vec<&str> {
        match self.steps {
            1 => vec![FERROL_V1, FERROL_V2],
            _ => Vec::new(),
        }
    }

    /// Builds and publishes the releases of two steps (nothing for one stack: the harness
    /// published the shared ones), then creates the ClusterStacks.
    pub async fn create_stacks(&self, env: &Env) -> anyhow::Result<()> {
        let Some(built) = &self._built else {
            env.create_stack(&["v1", "v2"], "5s").await;
            return Ok(());
        };
        for minor in MINORS {
            let release = build_example_release(built.path(), minor)?;
            env.github
                .add_release_dir(REPO, &release)
                .with_context(|| format!("publishing {}", release.display()))?;
        }
        for minor in MINORS {
            create_example_stack(env, minor).await?;
        }
        Ok(())
    }

    /// Reports every release ready, as the release controller would (it does not run on
    /// v1beta2 here: the shared ClusterClass charts are v1beta1's, which a v1beta2-only
    /// management cluster refuses).
    pub async fn report_ready(&self, env: &Env) -> anyhow::Result<()> {
        for (name, kubernetes) in &self.versions {
            env.releases()
                .patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"ready": true, "kubernetesVersion": kubernetes}})),
                )
                .await
                .with_context(|| format!("reporting ClusterStackRelease {name} ready"))?;
        }
        Ok(())
    }
}

fn example_release(minor: u32) -> String {
    format!("docker-example-1-{minor}-v1")
}

fn example_kubernetes(minor: u32) -> String {
    format!("v1.{minor}.4")
}

/// `stacks/example` at Kubernetes `v1.<minor>.4` built as release v1 into `dir`, as the
/// paths test (`tests/it/operator_rollout_paths.rs`) builds it.
fn build_example_release(dir: &Path, minor: u32) -> anyhow::Result<PathBuf> {
    let source = dir.join(format!("example-1-{minor}"));
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/example"),
        &source,
    )?;
    let csctl = source.join("csctl.yaml");
    let text = std::fs::read_to_string(&csctl).with_context(|| format!("reading {}", csctl.display()))?;
    const SOURCE_VERSION: &str = "kubernetesVersion: v1.30.4";
    if !text.contains(SOURCE_VERSION) {
        bail!("{} has no `{SOURCE_VERSION}` to replace", csctl.display());
    }
    let text = text.replacen(
        SOURCE_VERSION,
        &format!("kubernetesVersion: {}", example_kubernetes(minor)),
        1,
    );
    std::fs::write(&csctl, text).with_context(|| format!("writing {}", csctl.display()))?;
    let out = dir.join(example_release(minor));
    let version = capstan_stack::Version::parse("v1")?;
    capstan_stack::build::build(&source, &version, &out)
        .with_context(|| format!("building {}", out.display()))?;
    Ok(out)
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &dest)?;
        } else {
            std::fs::copy(entry.path(), &dest).with_context(|| format!("copying to {}", dest.display()))?;
        }
    }
    Ok(())
}

async fn create_example_stack(env: &Env, minor: u32) -> anyhow::Result<()> {
    let stack: capstan_operator::api::ClusterStack = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": format!("example-1-{minor}"), "namespace": NS},
        "spec": {
            "provider": "docker", "name": "example", "kubernetesVersion": format!("1.{minor}"),
            "channel": "stable", "autoSubscribe": true, "versions": [], "interval": "5s",
            "source": {"github": {"owner": "scs", "repo": "cluster-stacks"}},
        }
    }))?;
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .with_context(|| format!("creating ClusterStack example-1-{minor}"))?;
    Ok(())
}

/// The kubeconfig Secret of Cluster `name` (as Cluster API writes it), naming the workload
/// API server whose kubeconfig is `kubeconfig`; an existing one is kept.
pub async fn write_kubeconfig(client: &Client, name: &str, kubeconfig: &[u8]) -> Result<(), kube::Error> {
    use base64::Engine;
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-kubeconfig"), "namespace": NS,
                     "labels": {"cluster.x-k8s.io/cluster-name": name}},
        "data": {"value": base64::engine::general_purpose::STANDARD.encode(kubeconfig)},
    }))
    .map_err(kube::Error::SerdeError)?;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), NS);
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}
