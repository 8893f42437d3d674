//! What the operator tests share: a real API server with the CAPI and capstan CRDs, the fake
//! GitHub serving `../shared/cluster-stack-releases`, the `capstan operator` binary as a child
//! process, and polling helpers.
//!
//! [`start`] gives a test an API server of its own; [`start_shared`] a namespace of the run's
//! shared one when `scripts/test.sh` started it (docs/testing.md, "Shared API servers"), where
//! the operator watches only that namespace (`-n`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use capstan_operator::api::{self, ClusterStack, ClusterStackRelease};
use capstan_stack::capi::CapiVersion;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

use capstan_testenv::fake_github::FakeGitHub;
use capstan_testenv::{self, Binaries, TestCluster};

pub const REPO: &str = "scs/cluster-stacks";
/// The test's namespace on a server of its own ([`Env::ns`] on the shared one).
pub const NS: &str = "tenant";

pub struct Env {
    pub cluster: TestCluster,
    /// The Cluster API version the CRDs serve: `v1beta1` (v1.6.0's) or `v1beta2` (v1.14's,
    /// only v1beta2 served); the helpers make and patch Cluster API objects in it.
    pub capi: CapiVersion,
    /// Where the test's objects live: [`NS`], or the test's namespace on the shared server.
    pub ns: String,
    pub github: FakeGitHub,
    pub releases: PathBuf,
    pub cache: tempfile::TempDir,
    pub logs: tempfile::TempDir,
}

/// Starts everything but the operator, on an API server of the test's own; `None` (after
/// printing why) when a part is missing.
pub async fn start(test: &str, published: &[&str]) -> Option<Env> {
    start_on(test, published, false, &[]).await
}

/// [`start`] with more kube-apiserver flags (e.g. an audit log's).
pub async fn start_with_apiserver_args(
    test: &str,
    published: &[&str],
    apiserver_args: &[String],
) -> Option<Env> {
    start_on(test, published, false, apiserver_args).await
}

/// [`start`] on a namespace of the run's shared API server when there is one: for tests that
/// neither stop the server nor need it to themselves. The operator ([`Env::operator`]) then
/// watches only [`Env::ns`].
pub async fn start_shared(test: &str, published: &[&str]) -> Option<Env> {
    start_on(test, published, true, &[]).await
}

/// [`start_with_apiserver_args`] on Cluster API v1.14.0-rc.1's CRDs serving only v1beta2
/// (what v1.16 will be), on an API server of the test's own.
pub async fn start_v1beta2(test: &str, published: &[&str], apiserver_args: &[String]) -> Option<Env> {
    start_capi(test, published, false, apiserver_args, CapiVersion::V1Beta2).await
}

/// [`start`] or [`start_v1beta2`] by `capi`; v1beta1 on the shared server when there is one.
pub async fn start_for(test: &str, published: &[&str], capi: CapiVersion) -> Option<Env> {
    start_capi(test, published, capi == CapiVersion::V1Beta1, &[], capi).await
}

/// [`start`] (an API server of the test's own) on `capi`'s CRDs.
pub async fn start_own(test: &str, published: &[&str], capi: CapiVersion) -> Option<Env> {
    start_capi(test, published, false, &[], capi).await
}

/// [`start`] on a server of the test's own without Cluster API's CRDs (capstan's only);
/// [`Env::install_cluster_api`] brings them later. `capi` is the version they will serve.
pub async fn start_without_cluster_api(test: &str, published: &[&str], capi: CapiVersion) -> Option<Env> {
    start_env(test, published, false, &[], capi, false).await
}

async fn start_on(test: &str, published: &[&str], shared: bool, apiserver_args: &[String]) -> Option<Env> {
    start_capi(test, published, shared, apiserver_args, CapiVersion::V1Beta1).await
}

async fn start_capi(
    test: &str,
    published: &[&str],
    shared: bool,
    apiserver_args: &[String],
    capi: CapiVersion,
) -> Option<Env> {
    start_env(test, published, shared, apiserver_args, capi, true).await
}

/// The shared directory of `capi`'s CRDs and how they install: v1.6.0's, or v1.14.0-rc.1's
/// serving only v1beta2.
fn crd_set(capi: CapiVersion) -> (&'static str, Option<capstan_testenv::CrdOptions>) {
    match capi {
        CapiVersion::V1Beta1 => ("capi-crds/v1.6.0", None),
        CapiVersion::V1Beta2 => (
            "capi-crds/v1.14.0-rc.1",
            Some(capstan_testenv::CrdOptions::v1beta2_only()),
        ),
    }
}

async fn install_capi_crds(client: &Client, crds: &Path, capi: CapiVersion) {
    match &crd_set(capi).1 {
        None => capstan_testenv::install_crds(client, crds).await,
        Some(options) => capstan_testenv::install_crds_with(client, crds, options).await,
    }
    .expect("CAPI CRDs install");
}

async fn start_env(
    test: &str,
    published: &[&str],
    shared: bool,
    apiserver_args: &[String],
    capi: CapiVersion,
    with_capi: bool,
) -> Option<Env> {
    let bins = Binaries::find_or_skip(test)?;
    let (Some(crds), Some(releases)) = (
        capstan_testenv::shared_path(crd_set(capi).0),
        capstan_testenv::shared_path("cluster-stack-releases"),
    ) else {
        capstan_testenv::skip_or_fail(
            test,
            "shared CAPI CRDs or cluster-stack releases missing (CAPSTAN_SHARED)",
        );
        return None;
    };
    let cluster = if shared {
        TestCluster::shared_or_start(&bins, test).await
    } else {
        TestCluster::start_with_args(&bins, test, apiserver_args).await
    }
    .expect("cluster starts");
    let client = cluster.client();
    if with_capi {
        install_capi_crds(&client, &crds, capi).await;
    }
    let ours = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        ours.path().join("capstan.yaml"),
        api::crds_yaml().expect("CRD YAML"),
    )
    .expect("write CRDs");
    capstan_testenv::install_crds(&client, ours.path())
        .await
        .expect("capstan CRDs install");
    // The shared server's namespace is the test's already.
    let ns = if cluster.is_shared() {
        cluster.namespace().to_string()
    } else {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": NS}})).expect("namespace"),
            )
            .await
            .expect("namespace created");
        NS.to_string()
    };
    let github = FakeGitHub::start().await;
    github.add_repo(REPO);
    let env = Env {
        cluster,
        capi,
        ns,
        github,
        releases,
        cache: tempfile::tempdir().expect("temp dir"),
        logs: tempfile::tempdir().expect("temp dir"),
    };
    for tag in published {
        env.publish(tag);
    }
    Some(env)
}

impl Env {
    pub fn client(&self) -> Client {
        self.cluster.client()
    }

    /// Installs Cluster API's CRDs of [`Env::capi`] (after [`start_without_cluster_api`]).
    pub async fn install_cluster_api(&self) {
        let crds = capstan_testenv::shared_path(crd_set(self.capi).0).expect("CAPI CRDs");
        install_capi_crds(&self.client(), &crds, self.capi).await;
    }

    /// Publishes the shared release `tag` on the fake GitHub (as the newest release).
    pub fn publish(&self, tag: &str) {
        self.github
            .add_release_dir(REPO, &self.releases.join(tag))
            .unwrap_or_else(|e| panic!("publishing {tag}: {e}"));
    }

    /// Starts `capstan operator` against the cluster and the fake GitHub.
    pub fn operator(&self, run: usize, extra: &[&str]) -> capstan_testenv::ChildGuard {
        self.operator_with_env(run, extra, &[])
    }

    /// [`Env::operator`] with these environment variables set. A `--kubeconfig` in `extra`
    /// replaces the admin's. On the shared server the operator watches only [`Env::ns`]
    /// unless `extra` names namespaces.
    pub fn operator_with_env(
        &self,
        run: usize,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> capstan_testenv::ChildGuard {
        let admin = self.cluster.kubeconfig_path().display().to_string();
        let kubeconfig: &[&str] = if extra.contains(&"--kubeconfig") {
            &[]
        } else {
            &["--kubeconfig", &admin]
        };
        let mut args: Vec<String> = kubeconfig
            .iter()
            .chain(&[
                "--cache-dir",
                &self.cache.path().display().to_string(),
                "--github-url",
                &self.github.base_url(),
            ])
            .map(|s| s.to_string())
            .collect();
        args.insert(0, "operator".into());
        let namespaced = extra.iter().any(|a| *a == "-n" || *a == "--namespace");
        if self.cluster.is_shared() && !namespaced {
            args.extend(["--namespace".to_string(), self.ns.clone()]);
        }
        // 1m unless the test sets its own.
        if !extra.contains(&"--drift-interval") {
            args.extend(["--drift-interval".to_string(), "1m".to_string()]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let log = self.logs.path().join(format!("operator-{run}.log"));
        capstan_testenv::ChildGuard::spawn_with_env("capstan operator", &capstan_binary(), &args, env, &log)
            .expect("operator starts")
    }

    pub fn stacks(&self) -> Api<ClusterStack> {
        Api::namespaced(self.client(), &self.ns)
    }

    pub fn releases(&self) -> Api<ClusterStackRelease> {
        Api::namespaced(self.client(), &self.ns)
    }

    pub fn classes(&self) -> Api<DynamicObject> {
        let resource = capstan_operator::testing::capi_api::cluster_class_resource_of(self.capi);
        Api::namespaced_with(self.client(), &self.ns, &resource)
    }

    pub fn clusters(&self) -> Api<DynamicObject> {
        self.clusters_in(&self.ns)
    }

    pub fn clusters_in(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client(),
            namespace,
            &capstan_operator::testing::capi_api::cluster_resource_of(self.capi),
        )
    }

    /// Creates the ClusterStack `ferrol` following the fake GitHub repository.
    pub async fn create_stack(&self, versions: &[&str], interval: &str) {
        let stack: ClusterStack = serde_json::from_value(json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
            "kind": "ClusterStack",
            "metadata": {"name": "ferrol", "namespace": self.ns},
            "spec": {
                "provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                "channel": "stable", "autoSubscribe": true, "versions": versions,
                "interval": interval,
                "source": {"github": {"owner": "scs", "repo": "cluster-stacks"}},
            }
        }))
        .expect("ClusterStack");
        self.stacks()
            .create(&PostParams::default(), &stack)
            .await
            .expect("ClusterStack created");
    }

    /// Creates a Cluster using class `class` (no Cluster API controllers run).
    pub async fn create_cluster(&self, name: &str, class: &str) {
        let cluster: DynamicObject = serde_json::from_value(json!({
            "apiVersion": self.capi.api_version(),
            "kind": "Cluster",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": {"topology": self.topology(class, None)},
        }))
        .expect("Cluster");
        self.clusters()
            .create(&PostParams::default(), &cluster)
            .await
            .expect("Cluster created");
    }

    /// Names of the ClusterStackReleases, sorted.
    pub async fn release_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .releases()
            .list(&Default::default())
            .await
            .expect("list releases")
            .items
            .into_iter()
            .filter_map(|r| r.metadata.name)
            .collect();
        names.sort();
        names
    }

    /// Names of the ClusterClasses, sorted.
    pub async fn class_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .classes()
            .list(&Default::default())
            .await
            .expect("list classes")
            .items
            .into_iter()
            .filter_map(|r| r.metadata.name)
            .collect();
        names.sort();
        names
    }

    pub async fn ready_releases(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .releases()
            .list(&Default::default())
            .await
            .expect("list releases")
            .items
            .into_iter()
            .filter(|r| r.status.as_ref().is_some_and(|s| s.ready))
            .filter_map(|r| r.metadata.name)
            .collect();
        names.sort();
        names
    }
}

/// The `capstan` binary: Cargo's for integration tests, else `CAPSTAN_BIN` (examples).
pub fn capstan_binary() -> std::path::PathBuf {
    match option_env!("CARGO_BIN_EXE_capstan") {
        Some(path) => path.into(),
        None => std::env::var_os("CAPSTAN_BIN")
            .map(Into::into)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/capstan")),
    }
}

/// Polls `check` every 250 ms until it returns `Some`, or panics after `limit` with `what`
/// and the operator's log.
pub async fn eventually<T, F, Fut>(
    what: &str,
    limit: Duration,
    operator: &capstan_testenv::ChildGuard,
    mut check: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {}s waiting for {what}\n{}",
                limit.as_secs(),
                operator.log_tail(60)
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

pub fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

impl Env {
    /// Creates a ClusterStack following the fake GitHub repository.
    pub async fn create_stack_named(&self, name: &str, channel: &str, versions: &[&str], interval: &str) {
        let stack: ClusterStack = serde_json::from_value(json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
            "kind": "ClusterStack",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": {
                "provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                "channel": channel, "autoSubscribe": true, "versions": versions,
                "interval": interval,
                "source": {"github": {"owner": "scs", "repo": "cluster-stacks"}},
            }
        }))
        .expect("ClusterStack");
        self.stacks()
            .create(&PostParams::default(), &stack)
            .await
            .expect("ClusterStack created");
    }

    fn dynamic(&self, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
        self.dynamic_in(&self.ns, group, version, kind)
    }

    pub fn dynamic_in(&self, namespace: &str, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        Api::namespaced_with(self.client(), namespace, &resource)
    }

    /// Plays Cluster API for Cluster `name` on `class`: its DockerCluster and
    /// KubeadmControlPlane, the Cluster (control plane endpoint `host`), and — unless
    /// `gated` — `status.controlPlaneReady` and the kubeconfig Secret of `workload`.
    pub async fn cluster_api(
        &self,
        name: &str,
        class: &str,
        host: &str,
        workload: &TestCluster,
        gated: bool,
    ) {
        let topology = self.topology(class, None);
        self.cluster_api_in(&self.ns, name, topology, host).await;
        if !gated {
            self.open_gates(name, workload).await;
        }
    }

    /// Plays Cluster API for Cluster `namespace/name` with `topology`: its DockerCluster,
    /// KubeadmControlPlane and the Cluster (control plane endpoint `host`); the gates closed.
    pub async fn cluster_api_in(&self, namespace: &str, name: &str, topology: serde_json::Value, host: &str) {
        self.cluster_api_labeled(namespace, name, topology, host, json!({}))
            .await;
    }

    /// [`Env::cluster_api_in`] with these `labels` on the Cluster (e.g. a shard label, set
    /// before any controller sees the Cluster).
    pub async fn cluster_api_labeled(
        &self,
        namespace: &str,
        name: &str,
        topology: serde_json::Value,
        host: &str,
        labels: serde_json::Value,
    ) {
        let create = |api: Api<DynamicObject>, object: serde_json::Value| async move {
            let object: DynamicObject = serde_json::from_value(object).expect("object");
            api.create(&PostParams::default(), &object)
                .await
                .expect("created");
        };
        let version = self.capi.as_str();
        create(
            self.dynamic_in(namespace, "infrastructure.cluster.x-k8s.io", version, "DockerCluster"),
            json!({"apiVersion": format!("infrastructure.cluster.x-k8s.io/{version}"), "kind": "DockerCluster",
                   "metadata": {"name": name, "namespace": namespace}, "spec": {}}),
        )
        .await;
        // v1beta2 references name the group, not the version.
        let reference = |group: &str, kind: &str, name: &str| match self.capi {
            CapiVersion::V1Beta1 => {
                json!({"apiVersion": format!("{group}/v1beta1"), "kind": kind, "name": name})
            }
            CapiVersion::V1Beta2 => json!({"apiGroup": group, "kind": kind, "name": name}),
        };
        create(
            self.dynamic_in(namespace, "controlplane.cluster.x-k8s.io", version, "KubeadmControlPlane"),
            json!({"apiVersion": format!("controlplane.cluster.x-k8s.io/{version}"), "kind": "KubeadmControlPlane",
                   "metadata": {"name": name, "namespace": namespace},
                   // v1beta2 wants at least one field in it.
                   "spec": {"version": "v1.27.3", "kubeadmConfigSpec": match self.capi {
                                CapiVersion::V1Beta1 => json!({}),
                                CapiVersion::V1Beta2 => json!({"format": "cloud-config"}),
                            },
                            "machineTemplate": match self.capi {
                                CapiVersion::V1Beta1 => json!({"infrastructureRef":
                                    reference("infrastructure.cluster.x-k8s.io", "DockerMachineTemplate", "cp")}),
                                CapiVersion::V1Beta2 => json!({"spec": {"infrastructureRef":
                                    reference("infrastructure.cluster.x-k8s.io", "DockerMachineTemplate", "cp")}}),
                            }}}),
        )
        .await;
        create(
            self.clusters_in(namespace),
            json!({"apiVersion": self.capi.api_version(), "kind": "Cluster",
                   "metadata": {"name": name, "namespace": namespace, "labels": labels},
                   "spec": {
                       "controlPlaneEndpoint": {"host": host, "port": 6443},
                       "controlPlaneRef": reference("controlplane.cluster.x-k8s.io", "KubeadmControlPlane", name),
                       "infrastructureRef": reference("infrastructure.cluster.x-k8s.io", "DockerCluster", name),
                       "topology": topology}}),
        )
        .await;
    }

    /// `spec.topology` on `class` (in `class_namespace` when given) at v1.27.3, in the
    /// Cluster API version of the CRDs.
    pub fn topology(&self, class: &str, class_namespace: Option<&str>) -> serde_json::Value {
        match (self.capi, class_namespace) {
            (CapiVersion::V1Beta1, None) => json!({"class": class, "version": "v1.27.3"}),
            (CapiVersion::V1Beta1, Some(ns)) => {
                json!({"class": class, "classNamespace": ns, "version": "v1.27.3"})
            }
            (CapiVersion::V1Beta2, None) => json!({"classRef": {"name": class}, "version": "v1.27.3"}),
            (CapiVersion::V1Beta2, Some(ns)) => {
                json!({"classRef": {"name": class, "namespace": ns}, "version": "v1.27.3"})
            }
        }
    }

    /// Sets `status.controlPlaneReady` and writes the kubeconfig Secret of `workload`.
    pub async fn open_gates(&self, name: &str, workload: &TestCluster) {
        self.set_control_plane_ready(name).await;
        self.write_kubeconfig(name, workload).await;
    }

    pub async fn set_control_plane_ready(&self, name: &str) {
        self.set_control_plane_ready_in(&self.ns, name).await;
    }

    pub async fn set_control_plane_ready_in(&self, namespace: &str, name: &str) {
        self.clusters_in(namespace)
            .patch_status(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&match self.capi {
                    CapiVersion::V1Beta1 => json!({"status": {"controlPlaneReady": true}}),
                    CapiVersion::V1Beta2 => {
                        json!({"status": {"initialization": {"controlPlaneInitialized": true}}})
                    }
                }),
            )
            .await
            .expect("controlPlaneReady set");
    }

    pub async fn write_kubeconfig(&self, name: &str, workload: &TestCluster) {
        self.write_kubeconfig_in(&self.ns, name, workload).await;
    }

    pub async fn write_kubeconfig_in(&self, namespace: &str, name: &str, workload: &TestCluster) {
        use base64::Engine;
        let kubeconfig = std::fs::read(workload.kubeconfig_path()).expect("workload kubeconfig");
        let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
            "metadata": {"name": format!("{name}-kubeconfig"), "namespace": namespace,
                         "labels": {"cluster.x-k8s.io/cluster-name": name}},
            "data": {"value": base64::engine::general_purpose::STANDARD.encode(kubeconfig)},
        }))
        .expect("Secret");
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(self.client(), namespace)
            .create(&PostParams::default(), &secret)
            .await
            .expect("kubeconfig Secret created");
    }

    /// Switches Cluster `name` to `class`.
    pub async fn set_class(&self, name: &str, class: &str) {
        self.clusters()
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&match self.capi {
                    CapiVersion::V1Beta1 => json!({"spec": {"topology": {"class": class}}}),
                    CapiVersion::V1Beta2 => json!({"spec": {"topology": {"classRef": {"name": class}}}}),
                }),
            )
            .await
            .expect("class switched");
    }

    /// The ClusterAddon of Cluster `name`.
    pub async fn addon(&self, name: &str) -> Option<capstan_operator::api::ClusterAddon> {
        let api: Api<capstan_operator::api::ClusterAddon> = Api::namespaced(self.client(), &self.ns);
        api.get_opt(&format!("cluster-addon-{name}")).await.ok().flatten()
    }

    /// The start the drift, reach and owner scenarios share: Cluster `name` on `class` (the
    /// stack's release `v1`, polled each minute) with a workload API server of its own, the
    /// operator (run 0, with `args`) and the addons applied in full.
    pub async fn applied_cluster(
        &self,
        bins: &Binaries,
        name: &str,
        class: &str,
        args: &[&str],
    ) -> (TestCluster, capstan_testenv::ChildGuard) {
        let workload = TestCluster::start(bins, &format!("{name}-workload"))
            .await
            .expect("workload cluster starts");
        let operator = self.operator(0, args);
        self.create_stack(&["v1"], "1m").await;
        self.cluster_api(name, class, &format!("cp.{name}.example"), &workload, false)
            .await;
        self.wait_applied(name, class, &operator, Duration::from_secs(180))
            .await;
        (workload, operator)
    }

    /// Waits until the addons of `class` are applied in full to Cluster `name`'s workload.
    pub async fn wait_applied(
        &self,
        name: &str,
        class: &str,
        operator: &capstan_testenv::ChildGuard,
        limit: Duration,
    ) {
        eventually(&format!("{class} addons on {name}"), limit, operator, || async {
            let status = self.addon(name).await?.status?;
            (status.ready && status.applied_cluster_stack.as_deref() == Some(class)).then_some(())
        })
        .await;
    }
}

/// How many kills a SIGKILL loop makes (`CAPSTAN_OPERATOR_KILLS`, default 5) and the seed of
/// its kill points (`CAPSTAN_OPERATOR_SEED`, default from the clock), printed so a run can be
/// repeated.
pub fn kill_plan(test: &str) -> (usize, Rng) {
    let kills: usize = std::env::var("CAPSTAN_OPERATOR_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let seed: u64 = std::env::var("CAPSTAN_OPERATOR_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("{test}: {kills} kills, CAPSTAN_OPERATOR_SEED={seed}");
    (kills, Rng(seed))
}

/// A small deterministic generator (xorshift) for kill points.
pub struct Rng(u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The Events in `namespace` about the `kind` object `name`.
pub async fn events_about(
    client: Client,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Vec<k8s_openapi::api::events::v1::Event> {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client, namespace);
    api.list(&Default::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name))
        })
        .collect()
}

/// The sum of the samples of `metric` labelled `kind` on the API server of `cluster` (its own
/// `/metrics`, Kubernetes 1.20's names: `apiserver_watch_events_total`,
/// `apiserver_registered_watchers`).
pub async fn apiserver_metric(cluster: &TestCluster, metric: &str, kind: &str) -> f64 {
    let request = http::Request::get("/metrics").body(Vec::new()).expect("request");
    let text = tokio::time::timeout(Duration::from_secs(30), cluster.client().request_text(request))
        .await
        .expect("/metrics answers within 30 s")
        .expect("/metrics");
    let (series, wanted) = (format!("{metric}{{"), format!("kind=\"{kind}\""));
    text.lines()
        .filter(|line| line.starts_with(&series) && line.contains(&wanted))
        .filter_map(|line| line.rsplit_once("} ")?.1.trim().parse::<f64>().ok())
        .sum()
}
