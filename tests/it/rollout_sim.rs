//! A Cluster API simulator for the rollout tests: a task that watches the Clusters of one
//! namespace on the real API server and, `upgrade` after a Cluster's `spec.topology.class`
//! changes, reports it upgraded as Cluster API v1.6 does — the Cluster's `Ready` and
//! `TopologyReconciled` conditions True, its KubeadmControlPlane's `status.version` the
//! topology's version — and plays the addon controller, writing the ClusterAddon's
//! `appliedClusterStack` and `ready`. Clusters chosen to fail never become healthy on a class
//! other than the one they started on (switched back, they recover).
//!
//! It records what a rollout must never do: per wave (a label of the Cluster) the largest
//! number of Clusters switched and not yet healthy at once, every switch of every Cluster
//! (a Cluster switched twice toward the same class is a double switch), and when each
//! switch and each recovery happened, so tests check wave order and soak.
//!
//! v1.6's Cluster status has no version field: the control plane's version is its
//! KubeadmControlPlane's `status.version`, which the rollout controller reads through
//! `spec.controlPlaneRef`.
//!
//! It speaks the Cluster API version the test process speaks
//! (`capstan_operator::testing::capi_api::current`, v1beta1 unless a test chose v1beta2): on v1beta2
//! the objects are v1.14's (`classRef`, references by group), and an upgraded Cluster is
//! `Available` and `TopologyReconciled` and not `RollingOut`, with
//! `status.controlPlane.versions`.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;

use capstan_operator::api::ClusterAddon;
use capstan_stack::capi::CapiVersion;

/// The Cluster API version the simulator speaks.
fn capi() -> CapiVersion {
    capstan_operator::testing::capi_api::current()
}

/// One class change seen on a Cluster.
#[derive(Clone, Debug)]
pub struct Switch {
    pub cluster: String,
    pub wave: String,
    pub from: String,
    pub to: String,
    pub version: Option<String>,
    pub at: Instant,
}

/// What the simulator saw; shared with the test.
#[derive(Default, Debug)]
pub struct Record {
    /// Every class change, in the order seen.
    pub switches: Vec<Switch>,
    /// Cluster → when it last became healthy.
    pub healthy_at: BTreeMap<String, Instant>,
    /// Wave → Clusters switched and not yet healthy.
    in_flight: BTreeMap<String, BTreeSet<String>>,
    /// Wave → the most Clusters ever in flight at once.
    pub max_in_flight: BTreeMap<String, usize>,
}

impl Record {
    /// The switches of `cluster`, in order.
    pub fn switches_of(&self, cluster: &str) -> Vec<&Switch> {
        self.switches.iter().filter(|s| s.cluster == cluster).collect()
    }

    /// Clusters switched to the same class twice in a row without a switch away between
    /// (`a → b`, then `a → b` again once the watch saw it back on `a` — which only a
    /// duplicated patch of a switch that a rollback had undone could do — or `x → b`, `b → b`
    /// cannot happen: a patch to the class it has is no change).
    pub fn double_switches(&self) -> Vec<String> {
        let mut out = Vec::new();
        let clusters: BTreeSet<&str> = self.switches.iter().map(|s| s.cluster.as_str()).collect();
        for cluster in clusters {
            let targets: Vec<&str> = self.switches_of(cluster).iter().map(|s| s.to.as_str()).collect();
            let mut seen = BTreeSet::new();
            for to in targets {
                if !seen.insert(to) {
                    out.push(cluster.to_string());
                    break;
                }
            }
        }
        out
    }

    /// When the first Cluster of `wave` was switched.
    pub fn first_switch(&self, wave: &str) -> Option<Instant> {
        self.switches
            .iter()
            .filter(|s| s.wave == wave)
            .map(|s| s.at)
            .min()
    }

    /// When the last Cluster of `wave` that became healthy did.
    pub fn last_healthy(&self, wave: &str) -> Option<Instant> {
        let clusters: BTreeSet<&str> = self
            .switches
            .iter()
            .filter(|s| s.wave == wave)
            .map(|s| s.cluster.as_str())
            .collect();
        clusters
            .iter()
            .filter_map(|c| self.healthy_at.get(*c))
            .copied()
            .max()
    }
}

/// The simulator's settings.
pub struct Simulator {
    pub namespace: String,
    /// Time from a class change to the Cluster reported upgraded.
    pub upgrade: Duration,
    /// The label whose value names a Cluster's wave in the record.
    pub wave_label: String,
    /// Clusters that never become healthy on a class other than their first.
    pub failing: BTreeSet<String>,
}

/// The running simulator: its record, and the task (aborted on drop).
pub struct Running {
    pub record: Arc<Mutex<Record>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Running {
    pub fn snapshot<T>(&self, read: impl FnOnce(&Record) -> T) -> T {
        read(&self.record.lock().expect("record lock"))
    }
}

pub fn control_plane_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "controlplane.cluster.x-k8s.io",
        capi().as_str(),
        "KubeadmControlPlane",
    ))
}

/// Creates Cluster `name` on `class` at Kubernetes `version` with `labels`, its
/// KubeadmControlPlane, and reports it healthy as the simulator would (the addon status is
/// written once the Cluster controller has made its ClusterAddon, by [`Simulator::run`]).
pub async fn create_cluster(
    client: &Client,
    namespace: &str,
    name: &str,
    class: &str,
    version: &str,
    labels: serde_json::Value,
) {
    try_create_cluster(client, namespace, name, class, version, labels)
        .await
        .unwrap_or_else(|e| panic!("Cluster {name} created and reported healthy: {e}"));
}

/// [`create_cluster`], returning the API server's error; repeatable after one (objects it
/// made already are kept), e.g. by a benchmark on an overloaded server.
pub async fn try_create_cluster(
    client: &Client,
    namespace: &str,
    name: &str,
    class: &str,
    version: &str,
    labels: serde_json::Value,
) -> Result<(), kube::Error> {
    let planes: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &control_plane_resource());
    let plane = match capi() {
        CapiVersion::V1Beta1 => json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"version": version, "kubeadmConfigSpec": {},
                     "machineTemplate": {"infrastructureRef": {
                         "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                         "kind": "DockerMachineTemplate", "name": "cp"}}}}),
        CapiVersion::V1Beta2 => json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"version": version, "kubeadmConfigSpec": {"format": "cloud-config"},
                     "machineTemplate": {"spec": {"infrastructureRef": {
                         "apiGroup": "infrastructure.cluster.x-k8s.io",
                         "kind": "DockerMachineTemplate", "name": "cp"}}}}}),
    };
    let plane: DynamicObject = serde_json::from_value(plane).expect("KubeadmControlPlane");
    create_unless_exists(&planes, &plane).await?;
    let cluster = match capi() {
        CapiVersion::V1Beta1 => json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {
                "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}},
                "controlPlaneRef": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
                                    "kind": "KubeadmControlPlane", "name": name},
                "topology": {"class": class, "version": version}}}),
        CapiVersion::V1Beta2 => json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {
                "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}},
                "controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io",
                                    "kind": "KubeadmControlPlane", "name": name},
                "topology": {"classRef": {"name": class}, "version": version}}}),
    };
    let cluster: DynamicObject = serde_json::from_value(cluster).expect("Cluster");
    create_unless_exists(&clusters_api(client, namespace), &cluster).await?;
    report_upgraded(client, namespace, name, version).await
}

async fn create_unless_exists(api: &Api<DynamicObject>, object: &DynamicObject) -> Result<(), kube::Error> {
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

fn clusters_api(client: &Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        namespace,
        &capstan_operator::testing::clusters::cluster_resource(),
    )
}

fn condition(kind: &str, status: bool, reason: Option<&str>) -> serde_json::Value {
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let mut c =
        json!({"type": kind, "status": if status { "True" } else { "False" }, "lastTransitionTime": now});
    match capi() {
        CapiVersion::V1Beta1 => {
            if let Some(reason) = reason {
                c["reason"] = json!(reason);
                c["severity"] = json!("Info");
            }
        }
        // metav1.Condition: a reason and a message always.
        CapiVersion::V1Beta2 => {
            c["reason"] = json!(reason.unwrap_or(if status { kind } else { "Not" }));
            c["message"] = json!("reported by the simulator");
        }
    }
    c
}

/// The control plane at `version` and the Cluster `Ready` with its topology reconciled.
async fn report_upgraded(
    client: &Client,
    namespace: &str,
    name: &str,
    version: &str,
) -> Result<(), kube::Error> {
    let planes: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &control_plane_resource());
    planes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"version": version, "ready": true, "initialized": true}})),
        )
        .await?;
    clusters_api(client, namespace)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(match capi() {
                CapiVersion::V1Beta1 => json!({"status": {
                    "phase": "Provisioned", "controlPlaneReady": true, "infrastructureReady": true,
                    "conditions": [condition("Ready", true, None), condition("TopologyReconciled", true, None)],
                }}),
                CapiVersion::V1Beta2 => json!({"status": {
                    "phase": "Provisioned",
                    "initialization": {"controlPlaneInitialized": true, "infrastructureProvisioned": true},
                    "conditions": [condition("Available", true, None), condition("TopologyReconciled", true, None),
                                   condition("RollingOut", false, Some("NotRollingOut"))],
                    "controlPlane": {"versions": [{"version": version, "replicas": 1}]},
                }}),
            }),
        )
        .await?;
    Ok(())
}

/// What Cluster API reports while a Cluster's topology is being rolled to a new class.
async fn report_upgrading(client: &Client, namespace: &str, name: &str) -> Result<(), kube::Error> {
    clusters_api(client, namespace)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(match capi() {
                CapiVersion::V1Beta1 => json!({"status": {"conditions": [
                    condition("Ready", true, None),
                    condition("TopologyReconciled", false, Some("TopologyReconciledControlPlaneUpgradePending")),
                ]}}),
                CapiVersion::V1Beta2 => json!({"status": {"conditions": [
                    condition("Available", true, None),
                    condition("TopologyReconciled", false, Some("ControlPlaneUpgradePending")),
                    condition("RollingOut", true, Some("RollingOut")),
                ]}}),
            }),
        )
        .await?;
    Ok(())
}

/// Plays the addon controller: the ClusterAddon of `cluster` reports `class` applied and ready
/// (retried until the Cluster controller has made the ClusterAddon).
async fn report_addon(client: &Client, namespace: &str, cluster: &str, class: &str) {
    let addons: Api<ClusterAddon> = Api::namespaced(client.clone(), namespace);
    let name = format!("cluster-addon-{cluster}");
    for _ in 0..200 {
        let patch = json!({"status": {"appliedClusterStack": class, "ready": true}});
        match addons
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    eprintln!("simulator: ClusterAddon {namespace}/{name} never appeared");
}

fn class_of(cluster: &DynamicObject) -> Option<String> {
    let topology = &cluster.data["spec"]["topology"];
    topology["class"]
        .as_str()
        .or_else(|| topology["classRef"]["name"].as_str())
        .map(str::to_string)
}

fn version_of(cluster: &DynamicObject) -> Option<String> {
    cluster.data["spec"]["topology"]["version"]
        .as_str()
        .map(str::to_string)
}

impl Simulator {
    /// Starts the simulator on `client`.
    pub fn run(self, client: Client) -> Running {
        let record = Arc::new(Mutex::new(Record::default()));
        let shared = record.clone();
        let task = tokio::spawn(async move { self.watch(client, shared).await });
        Running { record, task }
    }

    fn wave_of(&self, cluster: &DynamicObject) -> String {
        cluster
            .labels()
            .get(&self.wave_label)
            .cloned()
            .unwrap_or_default()
    }

    async fn watch(self, client: Client, record: Arc<Mutex<Record>>) {
        let this = Arc::new(self);
        let api = clusters_api(&client, &this.namespace);
        // Cluster → (first class, last class seen).
        let mut classes: BTreeMap<String, (String, String)> = BTreeMap::new();
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let objects = match event {
                Ok(watcher::Event::Apply(cluster) | watcher::Event::InitApply(cluster)) => vec![cluster],
                Ok(_) => continue,
                Err(error) => {
                    eprintln!("simulator: watch: {error}");
                    continue;
                }
            };
            for cluster in objects {
                let name = cluster.name_any();
                let Some(class) = class_of(&cluster) else { continue };
                let version = version_of(&cluster);
                let first_seen = !classes.contains_key(&name);
                let (first, last) = classes
                    .entry(name.clone())
                    .or_insert_with(|| (class.clone(), class.clone()))
                    .clone();
                if first_seen {
                    // Created healthy: only its addon is left to report.
                    let (client, namespace) = (client.clone(), this.namespace.clone());
                    let cluster_name = name.clone();
                    tokio::spawn(
                        async move { report_addon(&client, &namespace, &cluster_name, &class).await },
                    );
                    continue;
                }
                if class == last {
                    continue;
                }
                classes.insert(name.clone(), (first.clone(), class.clone()));
                let wave = this.wave_of(&cluster);
                {
                    let mut record = record.lock().expect("record lock");
                    record.switches.push(Switch {
                        cluster: name.clone(),
                        wave: wave.clone(),
                        from: last.clone(),
                        to: class.clone(),
                        version: version.clone(),
                        at: Instant::now(),
                    });
                    let flying = record.in_flight.entry(wave.clone()).or_default();
                    flying.insert(name.clone());
                    let now = flying.len();
                    let max = record.max_in_flight.entry(wave.clone()).or_default();
                    *max = (*max).max(now);
                }
                let seen = Instant::now();
                let (this, client, record) = (this.clone(), client.clone(), record.clone());
                // Each switch in a task of its own: with a wave of hundreds switched at once,
                // reporting them one after the other would stretch the upgrade of the last.
                tokio::spawn(async move {
                    let _ = report_upgrading(&client, &this.namespace, &name).await;
                    if this.failing.contains(&name) && class != first {
                        return;
                    }
                    tokio::time::sleep_until((seen + this.upgrade).into()).await;
                    // Switched again meanwhile (a rollback): that switch reports.
                    let api = clusters_api(&client, &this.namespace);
                    let Ok(now) = api.get(&name).await else { return };
                    if class_of(&now).as_deref() != Some(class.as_str()) {
                        return;
                    }
                    let version = version_of(&now).unwrap_or_default();
                    // Tried again a few times: a loaded API server may time a write out.
                    let mut attempt = 1;
                    while let Err(error) = report_upgraded(&client, &this.namespace, &name, &version).await {
                        eprintln!("simulator: reporting {name} upgraded (attempt {attempt}): {error}");
                        if attempt == 5 {
                            return;
                        }
                        attempt += 1;
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    // Healthy from the moment the last write is sent: the operator can see it
                    // as soon as the server has it, which may be well before this task runs
                    // again on a loaded machine (so the soak is checked against a lower bound).
                    let healthy = Instant::now();
                    report_addon(&client, &this.namespace, &name, &class).await;
                    let mut record = record.lock().expect("record lock");
                    record.healthy_at.insert(name.clone(), healthy);
                    if let Some(flying) = record.in_flight.get_mut(&wave) {
                        flying.remove(&name);
                    }
                });
            }
        }
    }
}
