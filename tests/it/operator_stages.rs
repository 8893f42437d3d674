//! Multi-stage addons (`clusteraddon.yaml`) of the shared release
//! docker-ferrol-1-27-v0-sha-hipstsw through `capstan operator`, on real API servers:
//! - a Cluster created on it runs the `AfterControlPlaneInitialized` stages (metrics-server)
//!   and nothing of `BeforeClusterUpgrade`;
//! - a Cluster upgraded to it from v1 runs the `BeforeClusterUpgrade` stage (ngnix) and waits
//!   in `waitingForPostCondition` while the CEL post-condition
//!   `msdeployment.spec.replicas == ngnix.spec.replicas` is false, then finishes once it holds;
//! - an object a stage applied and someone deleted is restored within the drift interval;
//! - a stage phase edited to one capstan does not know is reported and runs nothing;
//! - a ClusterAddon deleted alone leaves none of its inventories on the workload cluster;
//! - the two-stage example stack (`stacks/example`) is never ready before its last stage, its
//!   status sampled every 0.2 s while the stages run (issue 32).

use std::time::Duration;

use crate::operator_common::{NS, eventually, names};
use capstan_operator::api::conditions::ConditionStatus;
use capstan_operator::api::{ClusterAddon, ClusterAddonStatus, ClusterStack};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::json;

const STAGED: &str = "docker-ferrol-1-27-v0-sha.hipstsw";
/// The class of the example stack's release.
const CLASS: &str = "docker-example-1-30-v1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stages_run_in_order_and_honour_their_conditions() {
    let test = "stages_run_in_order_and_honour_their_conditions";
    let published = ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v0-sha-hipstsw"];
    let Some(env) = crate::operator_common::start_shared(test, &published).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let fresh = TestCluster::start(&bins, "fresh")
        .await
        .expect("workload cluster starts");
    let upgraded = TestCluster::start(&bins, "upgraded")
        .await
        .expect("workload cluster starts");
    // The test scales metrics-server out of band to hold a stage's post-condition false; with
    // drift watches that edit is repaired within seconds, before the stage could see it.
    let operator = env.operator(0, &["--drift-watches", "false"]);
    env.create_stack_named("ferrol", "stable", &[], "5s").await;
    env.create_stack_named("ferrol-custom", "custom", &[], "5s").await;
    let want = names(&["docker-ferrol-1-27-v0-sha-hipstsw", "docker-ferrol-1-27-v1"]);
    eventually(
        "both releases ready",
        Duration::from_secs(90),
        &operator,
        || async { (env.ready_releases().await == want).then_some(()) },
    )
    .await;

    // Created on the staged release: its AfterControlPlaneInitialized stage only.
    env.cluster_api("fresh", STAGED, "fresh.example", &fresh, false)
        .await;
    env.wait_applied("fresh", STAGED, &operator, Duration::from_secs(60))
        .await;
    let status = env.addon("fresh").await.and_then(|a| a.status).expect("status");
    assert_eq!(
        status.stages_for.as_ref().map(ToString::to_string).as_deref(),
        Some("AfterControlPlaneInitialized docker-ferrol-1-27-v0-sha.hipstsw")
    );
    let stages: Vec<(String, String, String)> = status
        .stages
        .iter()
        .map(|s| (s.name.clone(), s.action.to_string(), s.phase.to_string()))
        .collect();
    assert_eq!(
        stages,
        vec![("metrics-server".into(), "apply".into(), "done".into())]
    );
    let fresh_deployments: Api<Deployment> = Api::namespaced(fresh.client(), "kube-system");
    fresh_deployments
        .get("metrics-server")
        .await
        .expect("metrics-server applied");
    assert!(
        fresh_deployments
            .get_opt("cluster-addon-ngnix")
            .await
            .expect("get")
            .is_none(),
        "a BeforeClusterUpgrade stage ran on creation"
    );

    // Upgraded from v1 with metrics-server scaled to 2: ngnix (1 replica) is applied, and the
    // stage waits for its post-condition.
    env.cluster_api(
        "upgraded",
        "docker-ferrol-1-27-v1",
        "upgraded.example",
        &upgraded,
        false,
    )
    .await;
    env.wait_applied(
        "upgraded",
        "docker-ferrol-1-27-v1",
        &operator,
        Duration::from_secs(60),
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(upgraded.client(), "kube-system");
    let scale = |replicas: i32| {
        let deployments = deployments.clone();
        async move {
            deployments
                .patch(
                    "metrics-server",
                    &PatchParams::default(),
                    &Patch::Merge(&serde_json::json!({"spec": {"replicas": replicas}})),
                )
                .await
                .expect("metrics-server scaled");
        }
    };
    scale(2).await;
    env.set_class("upgraded", STAGED).await;
    let message = eventually(
        "ngnix waits for its post-condition",
        Duration::from_secs(60),
        &operator,
        || async {
            // The phase is recorded after the apply, the reason once the condition was
            // evaluated: wait for the second write.
            let status = env.addon("upgraded").await?.status?;
            let stage = status.stages.first()?;
            let message = status
                .conditions
                .iter()
                .find(|c| c.type_ == "Applied")
                .map(|c| c.message.clone())
                .unwrap_or_default();
            (stage.name == "ngnix"
                && stage.phase.to_string() == "waitingForPostCondition"
                && message.starts_with("stage ngnix (1/1): waitingForPostCondition:"))
            .then_some(message)
        },
    )
    .await;
    assert!(
        message.starts_with("stage ngnix (1/1): waitingForPostCondition: `msdeployment.spec.replicas == ngnix.spec.replicas` is false"),
        "{message}"
    );
    deployments
        .get("cluster-addon-ngnix")
        .await
        .expect("ngnix applied before the wait");
    let status = env
        .addon("upgraded")
        .await
        .and_then(|a| a.status)
        .expect("status");
    assert_eq!(
        status.applied_cluster_stack.as_deref(),
        Some("docker-ferrol-1-27-v1")
    );

    // The condition holds: the stage finishes and the upgrade is recorded.
    scale(1).await;
    env.wait_applied("upgraded", STAGED, &operator, Duration::from_secs(60))
        .await;
    let status = env
        .addon("upgraded")
        .await
        .and_then(|a| a.status)
        .expect("status");
    assert_eq!(
        status.stages_for.as_ref().map(ToString::to_string).as_deref(),
        Some("BeforeClusterUpgrade docker-ferrol-1-27-v0-sha.hipstsw")
    );
    assert_eq!(status.stages.len(), 1);
    assert_eq!(status.stages[0].phase.to_string(), "done");

    // Drift of a multi-stage addon: what its stage applied comes back within the interval.
    fresh_deployments
        .delete("metrics-server", &Default::default())
        .await
        .expect("metrics-server deleted");
    eventually(
        "the stage's metrics-server restored",
        Duration::from_secs(90),
        &operator,
        || async {
            fresh_deployments
                .get_opt("metrics-server")
                .await
                .ok()
                .flatten()
                .map(drop)
        },
    )
    .await;

    unknown_phase_runs_nothing(&env, &operator, &fresh_deployments).await;
    deletion_leaves_no_inventory(&env, &operator, &upgraded).await;
}

/// A stage phase this version does not know (a hand edit, a newer version's) where the stage
/// would run: `Applied` says so and nothing runs — the stage's metrics-server, deleted, is
/// not applied again — until the phase is one capstan knows; from there the stage goes on.
async fn unknown_phase_runs_nothing(
    env: &crate::operator_common::Env,
    operator: &capstan_testenv::ChildGuard,
    deployments: &Api<Deployment>,
) {
    let addons: Api<ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    let edit = |phase: &str, hook: Option<&str>| {
        let addons = addons.clone();
        let status = json!({"status": {"appliedClusterStack": null, "stages": [
            {"name": "metrics-server", "action": "apply", "phase": phase}]}});
        let spec = json!({"spec": {"hook": hook}});
        async move {
            addons
                .patch_status(
                    "cluster-addon-fresh",
                    &PatchParams::default(),
                    &Patch::Merge(&status),
                )
                .await
                .expect("status edited");
            // A new generation wakes the ClusterAddon controller (status edits do not).
            addons
                .patch(
                    "cluster-addon-fresh",
                    &PatchParams::default(),
                    &Patch::Merge(&spec),
                )
                .await
                .expect("spec edited");
        }
    };
    // The edit first: a pass the deletion wakes (the drift watches) that had read the status
    // before the edit would write its stages back over it. A pass still running from the drift
    // repair above can do the same — the status is the operator's, last writer wins — so the
    // edit is made again whenever the phase is found overwritten.
    let edit = &edit;
    let addons = &addons;
    edit("later", Some("AfterControlPlaneInitialized")).await;
    let message = eventually(
        "the unknown phase reported",
        Duration::from_secs(60),
        operator,
        || async move {
            let status = env.addon("fresh").await?.status?;
            let applied = status.conditions.iter().find(|c| c.type_ == "Applied")?;
            if applied.reason == "UnknownStageState" {
                return Some(applied.message.clone());
            }
            let phase = status.stages.first().map(|s| s.phase.to_string());
            if phase.as_deref() != Some("later") {
                edit("later", Some("AfterControlPlaneInitialized")).await;
                wake(addons).await;
            }
            None
        },
    )
    .await;
    assert!(
        message.contains(r#"status.stages[0].phase is "later""#),
        "{message}"
    );
    // Deleted now, the stage's object wakes the ClusterAddon at once (its drift watch): the
    // pass runs nothing.
    deployments
        .delete("metrics-server", &Default::default())
        .await
        .expect("metrics-server deleted");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        deployments
            .get_opt("metrics-server")
            .await
            .expect("get")
            .is_none(),
        "the stage ran on an unknown phase"
    );
    edit("applyingOrDeleting", None).await;
    env.wait_applied("fresh", STAGED, operator, Duration::from_secs(60))
        .await;
    deployments
        .get("metrics-server")
        .await
        .expect("metrics-server applied by its stage");
}

/// A ClusterAddon deleted alone takes every inventory of its own off the workload cluster —
/// the one chart's of v1 and its upgrade stage's — before the Cluster controller makes it
/// again: then only the new addon's stage inventory is there.
async fn deletion_leaves_no_inventory(
    env: &crate::operator_common::Env,
    operator: &capstan_testenv::ChildGuard,
    workload: &TestCluster,
) {
    let configmaps: Api<ConfigMap> = Api::namespaced(workload.client(), "kube-system");
    let inventories = || async {
        let params = ListParams::default().labels("capstan.dev/inventory-object=true");
        let listed = configmaps
            .list_metadata(&params)
            .await
            .expect("inventories listed");
        let mut names: Vec<String> = listed.items.into_iter().filter_map(|c| c.metadata.name).collect();
        names.sort();
        names
    };
    assert_eq!(
        inventories().await,
        [
            "capstan.caddon.cluster-addon-upgraded",
            "capstan.caddon.cluster-addon-upgraded.ngnix"
        ]
    );
    let addons: Api<ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    let old = addons
        .get("cluster-addon-upgraded")
        .await
        .expect("ClusterAddon")
        .metadata
        .uid;
    addons
        .delete("cluster-addon-upgraded", &Default::default())
        .await
        .expect("ClusterAddon deleted");
    eventually(
        "a new ClusterAddon with its stages applied",
        Duration::from_secs(90),
        operator,
        || async {
            let addon = env.addon("upgraded").await?;
            let status = addon.status?;
            (addon.metadata.uid != old
                && status.ready
                && status.applied_cluster_stack.as_deref() == Some(STAGED))
            .then_some(())
        },
    )
    .await;
    assert_eq!(
        inventories().await,
        ["capstan.caddon.cluster-addon-upgraded.metrics-server"]
    );
}

/// The example stack of `stacks/example` (two stages on creation: `cni`, then `cluster-info`
/// once cni's DaemonSet reports every pod ready) built as release `docker-example-1-30-v1`
/// into `dir`. Its cluster-info chart asks for Kubernetes 1.25+; the test's API servers are
/// v1.20, so the copy asks for none. Nothing runs pods here, and a DaemonSet that schedules
/// none reports 0 of 0 ready: the copy's pre-condition also wants one pod.
fn example_release(dir: &std::path::Path) -> std::path::PathBuf {
    let source = dir.join("example");
    crate::git_source::copy_dir(
        &std::path::Path::new(capstan_testenv::REPO_ROOT).join("stacks/example"),
        &source,
    );
    let edit = |file: &str, from: &str, to: &str| {
        let path = source.join(file);
        let text = std::fs::read_to_string(&path).expect("example file");
        assert!(text.contains(from), "{file} has {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write example file");
    };
    edit(
        "cluster-addon/cluster-info/Chart.yaml",
        "kubeVersion:",
        "# kubeVersion:",
    );
    edit(
        "clusteraddon.yaml",
        "conditions: cni.status.numberReady == ",
        "conditions: cni.status.numberReady > 0 && cni.status.numberReady == ",
    );
    let out = dir.join("docker-example-1-30-v1");
    let version = capstan_stack::Version::parse("v1").expect("version");
    capstan_stack::build::build(&source, &version, &out).expect("example release builds");
    out
}

/// Whether `status` claims the addons ready (`ready` or `Ready=True`).
fn claims_ready(status: &ClusterAddonStatus) -> bool {
    status.ready
        || status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == ConditionStatus::True)
}

/// Reads the ClusterAddon of `name` every 0.2 s until `done` holds, failing at once when a
/// sample claims the addons ready while a stage is not done. Returns the last status and how
/// many samples were taken.
async fn sample_until(
    env: &crate::operator_common::Env,
    name: &str,
    operator: &capstan_testenv::ChildGuard,
    what: &str,
    done: impl Fn(&ClusterAddonStatus) -> bool,
) -> (ClusterAddonStatus, usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let mut samples = 0;
    loop {
        if let Some(status) = env.addon(name).await.and_then(|a| a.status) {
            samples += 1;
            let pending: Vec<&str> = status
                .stages
                .iter()
                .filter(|s| s.phase.to_string() != "done")
                .map(|s| s.name.as_str())
                .collect();
            assert!(
                !(claims_ready(&status) && (status.stages.is_empty() || !pending.is_empty())),
                "ready with stages {pending:?} not done (sample {samples}): {status:#?}"
            );
            if done(&status) {
                return (status, samples);
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            operator.log_tail(60)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `stage/kind/name` of each `status.resources` entry, sorted.
fn listed(status: &ClusterAddonStatus) -> Vec<String> {
    let mut listed: Vec<String> = status
        .resources
        .iter()
        .map(|r| format!("{}/{}/{}", r.stage, r.kind, r.name))
        .collect();
    listed.sort();
    listed
}

/// Issue 32: a multi-stage addon is not ready between its stages (its `Ready` names the stage
/// it is at), lists the objects of every stage with their stage, and its ready event names
/// the release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_addon_is_ready_only_after_its_last_stage() {
    let test = "a_staged_addon_is_ready_only_after_its_last_stage";
    staged_addon_ready_after_last_stage(test, capstan_stack::capi::CapiVersion::V1Beta1).await;
}

/// The same on Cluster API v1.14's CRDs serving only v1beta2: the stages' values read the
/// v1beta2 Cluster converted to v1beta1's shape (`topology.controlPlane.replicas`, the pod CIDR).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_addon_is_ready_only_after_its_last_stage_on_v1beta2() {
    let test = "a_staged_addon_is_ready_only_after_its_last_stage_on_v1beta2";
    staged_addon_ready_after_last_stage(test, capstan_stack::capi::CapiVersion::V1Beta2).await;
}

async fn staged_addon_ready_after_last_stage(test: &str, capi: capstan_stack::capi::CapiVersion) {
    let Some(env) = crate::operator_common::start_own(test, &[], capi).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let built = tempfile::tempdir().expect("temp dir");
    let release = example_release(built.path());
    env.github
        .add_release_dir(crate::operator_common::REPO, &release)
        .expect("release published");
    let workload = TestCluster::start(&bins, "staged")
        .await
        .expect("workload cluster starts");
    let operator = env.operator(0, &[]);
    let stack: ClusterStack = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": "example", "namespace": NS},
        "spec": {
            "provider": "docker", "name": "example", "kubernetesVersion": "1.30",
            "channel": "stable", "autoSubscribe": true, "versions": [], "interval": "5s",
            "source": {"github": {"owner": "scs", "repo": "cluster-stacks"}},
        }
    }))
    .expect("ClusterStack");
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .expect("ClusterStack created");
    eventually("the release", Duration::from_secs(60), &operator, || async {
        (env.release_names().await == ["docker-example-1-30-v1"]).then_some(())
    })
    .await;

    // A Cluster with what the stages' values read: pod CIDR, replicas, load balancer image.
    let mut topology = env.topology(CLASS, None);
    topology["version"] = json!("v1.30.4");
    topology["controlPlane"] = json!({"replicas": 1});
    env.cluster_api_in(NS, "staged", topology, "staged.example").await;
    let merge = |api: Api<DynamicObject>, name: &str, patch: serde_json::Value| {
        let name = name.to_string();
        async move {
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap_or_else(|e| panic!("patching {name}: {e}"));
        }
    };
    merge(
        env.clusters(),
        "staged",
        json!({"spec": {"clusterNetwork": {"pods": {"cidrBlocks": ["10.244.0.0/16"]}}}}),
    )
    .await;
    let docker_clusters = Api::namespaced_with(
        env.client(),
        NS,
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "infrastructure.cluster.x-k8s.io",
            capi.as_str(),
            "DockerCluster",
        )),
    );
    merge(
        docker_clusters,
        "staged",
        json!({"spec": {"loadBalancer": {"imageRepository": "kindest"}}}),
    )
    .await;
    env.open_gates("staged", &workload).await;

    // cni is applied; cluster-info waits for cni's DaemonSet to report its pods ready (nothing
    // runs pods here): not ready, and `Ready` says where.
    let (status, first) = sample_until(
        &env,
        "staged",
        &operator,
        "cluster-info's pre-condition wait",
        |s| {
            s.stages
                .get(1)
                .is_some_and(|s| s.phase.to_string() == "waitingForPreCondition")
        },
    )
    .await;
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready condition");
    assert_eq!(ready.status, ConditionStatus::False, "{ready:?}");
    assert_eq!(ready.reason, "WaitingForCondition", "{ready:?}");
    assert!(
        ready
            .message
            .starts_with("stage cluster-info (2/2): waitingForPreCondition: "),
        "{ready:?}"
    );
    assert_eq!(
        listed(&status),
        ["cni/ConfigMap/example-cni-config", "cni/DaemonSet/example-cni"]
    );
    // Held there for a while: still not ready.
    let held = std::time::Instant::now() + Duration::from_secs(3);
    let (_, during) = sample_until(&env, "staged", &operator, "3 s", |_| {
        std::time::Instant::now() > held
    })
    .await;

    // The DaemonSet reports its pod ready: cluster-info runs, then the addons are ready.
    let daemon_sets: Api<DaemonSet> = Api::namespaced(workload.client(), "kube-system");
    daemon_sets
        .patch_status(
            "example-cni",
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"status": {"currentNumberScheduled": 1, "desiredNumberScheduled": 1,
                                             "numberMisscheduled": 0, "numberReady": 1}}),
            ),
        )
        .await
        .expect("DaemonSet status");
    let (status, last) = sample_until(&env, "staged", &operator, "the addons ready", |s| {
        s.ready && s.applied_cluster_stack.as_deref() == Some(CLASS)
    })
    .await;
    eprintln!(
        "{} samples of the addon's status, none ready before the last stage",
        first + during + last
    );
    assert!(
        status.stages.iter().all(|s| s.phase.to_string() == "done"),
        "{status:?}"
    );
    assert_eq!(
        listed(&status),
        [
            "cluster-info/ClusterInfo/staged",
            "cluster-info/ClusterRole/example-cluster-info-reader",
            "cluster-info/ClusterRoleBinding/example-cluster-info-reader",
            "cluster-info/CustomResourceDefinition/clusterinfos.example.capstan.dev",
            "cni/ConfigMap/example-cni-config",
            "cni/DaemonSet/example-cni",
        ]
    );
    assert_eq!(status.resources_omitted, 0);
    assert!(
        status.resources.iter().all(|r| r.status == "synced"),
        "{status:?}"
    );

    // The addons became ready once (no series of Ready events: a ready between the stages
    // made a second), and the event names the release and the Cluster.
    let events: Api<Event> = Api::namespaced(env.client(), NS);
    let event = eventually("the ready event", Duration::from_secs(30), &operator, || async {
        let events = events.list(&Default::default()).await.ok()?;
        events.items.into_iter().find(|e| {
            e.reason.as_deref() == Some("Ready")
                && e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("ClusterAddon")
        })
    })
    .await;
    assert!(event.series.is_none(), "ready more than once: {event:?}");
    assert_eq!(
        event.note.as_deref(),
        Some("addons of docker-example-1-30-v1 applied to Cluster staged (6 objects)")
    );
}

/// Wakes the ClusterAddon controller for `cluster-addon-fresh` when its spec is already as
/// wanted (an unchanged spec makes no new generation): a finalizer of the test's own, added
/// and taken off again, is a change the controller's trigger counts.
async fn wake(addons: &Api<ClusterAddon>) {
    let name = "cluster-addon-fresh";
    let finalizers = addons
        .get(name)
        .await
        .expect("ClusterAddon")
        .metadata
        .finalizers
        .unwrap_or_default();
    let mut woken = finalizers.clone();
    woken.push("test.capstan.dev/wake".to_string());
    for list in [woken, finalizers] {
        addons
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"metadata": {"finalizers": list}})),
            )
            .await
            .expect("finalizers patched");
    }
}
