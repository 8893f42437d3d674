//! The operator on Cluster API's two worlds (issue 47): v1.6.0's CRDs (v1beta1 only) and
//! v1.14.0-rc.1's CRDs with only v1beta2 served (what v1.16 will be), on the real API server.
//!
//! - A Cluster gets its ClusterAddon through the gates of its version (v1beta2:
//!   `status.initialization.controlPlaneInitialized`), owned by the Cluster in the version the
//!   operator chose, its addons applied with values from the Cluster; on v1beta2 no v1beta1
//!   request reaches the API server (its audit log; discovery aside).
//! - The rollout's switch patch moves `class` (v1beta1) or `classRef` (v1beta2) and the
//!   version under capstan's field manager, and nothing else (managed fields).
//! - Without Cluster API the operator says so on each resource it blocks (rollout,
//!   ClusterAddon, ClusterStackRelease): a `ClusterAPINotServed` condition and Warning, a few
//!   log lines instead of a loop, and it goes on by itself once Cluster API is installed.

use std::time::Duration;

use capstan_apply::FIELD_MANAGER;
use capstan_operator::api::ClusterAddon;
use capstan_stack::capi::CapiVersion;
use capstan_testenv::audit::{AuditLog, is_overhead};
use capstan_testenv::{Binaries, TestCluster};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::operator_common::{Env, eventually};

const CLUSTER: &str = "workload";
const HOST: &str = "cp.workload.example";
const V1: &str = "docker-ferrol-1-27-v1";

async fn addon(env: &Env) -> Option<ClusterAddon> {
    let api: Api<ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    api.get_opt(&format!("cluster-addon-{CLUSTER}"))
        .await
        .ok()
        .flatten()
}

/// The ClusterAddon's `ClusterReady` condition: reason and message.
async fn gate(env: &Env) -> Option<(String, String)> {
    addon(env)
        .await?
        .status?
        .conditions
        .iter()
        .find(|c| c.type_ == "ClusterReady")
        .map(|c| (c.reason.clone(), c.message.clone()))
}

/// A Cluster on `capi`'s CRDs gets its addons; returns the env for more checks.
async fn addons_arrive(
    test: &str,
    capi: CapiVersion,
    audit: Option<&AuditLog>,
) -> Option<(Env, TestCluster)> {
    let env = match audit {
        Some(audit) => crate::operator_common::start_v1beta2(test, &[V1], &audit.apiserver_args()).await?,
        None => crate::operator_common::start_for(test, &[V1], capi).await?,
    };
    assert_eq!(env.capi, capi);
    let bins = Binaries::find_or_skip(test)?;
    let workload = TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    let operator = env.operator(0, &[]);
    env.create_stack(&["v1"], "5s").await;
    env.cluster_api(CLUSTER, V1, HOST, &workload, true).await;

    let initialized = match capi {
        CapiVersion::V1Beta1 => "status.controlPlaneReady",
        CapiVersion::V1Beta2 => "status.initialization.controlPlaneInitialized",
    };
    let (_, message) = eventually(
        "the control-plane gate reported",
        Duration::from_secs(60),
        &operator,
        || async {
            gate(&env)
                .await
                .filter(|(reason, _)| reason == "ControlPlaneNotReady")
        },
    )
    .await;
    assert_eq!(
        message,
        format!("waiting for Cluster {CLUSTER}: {initialized} is not true")
    );
    env.open_gates(CLUSTER, &workload).await;
    env.wait_applied(CLUSTER, V1, &operator, Duration::from_secs(90))
        .await;

    let addon = addon(&env).await.expect("ClusterAddon");
    let owner = addon
        .metadata
        .owner_references
        .as_ref()
        .and_then(|owners| owners.first())
        .expect("owner reference");
    assert_eq!(owner.api_version, capi.api_version());
    assert_eq!(owner.kind, "Cluster");
    assert_eq!(addon.spec.cluster_ref.api_version, Some(capi.api_version()));
    // The values come from the Cluster (its control plane endpoint), whichever version.
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(workload.client(), "kube-system");
    let listed = deployments.list(&Default::default()).await.expect("deployments");
    assert!(!listed.items.is_empty(), "addons applied to the workload cluster");
    // Its release is Ready on either: on v1beta2 its v1beta1 ClusterClass chart is applied
    // converted (a v1.16 server would refuse it as rendered).
    eventually(
        "the release Ready",
        Duration::from_secs(60),
        &operator,
        || async { env.ready_releases().await.contains(&V1.to_string()).then_some(()) },
    )
    .await;
    let class = env.classes().get(V1).await.expect("ClusterClass");
    assert_eq!(
        class.types.as_ref().map(|t| t.api_version.clone()),
        Some(capi.api_version())
    );
    drop(operator);
    Some((env, workload))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1beta1_cluster_gets_its_addons() {
    addons_arrive("a_v1beta1_cluster_gets_its_addons", CapiVersion::V1Beta1, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1beta2_cluster_gets_its_addons_without_a_v1beta1_request() {
    let test = "a_v1beta2_cluster_gets_its_addons_without_a_v1beta1_request";
    let audit = AuditLog::new().expect("audit log");
    let Some(_env) = addons_arrive(test, CapiVersion::V1Beta2, Some(&audit)).await else {
        return;
    };
    // Discovery (`/apis/cluster.x-k8s.io/v1beta1`, which a v1beta1 manifest's apply asks)
    // aside, nothing asks for v1beta1.
    let deprecated: Vec<String> = audit
        .requests()
        .into_iter()
        .filter(|r| r.contains("/apis/cluster.x-k8s.io/v1beta1/") && !is_overhead(r))
        .collect();
    assert_eq!(deprecated, Vec::<String>::new());
    let spoken: Vec<String> = audit
        .requests()
        .into_iter()
        .filter(|r| r.contains("/apis/cluster.x-k8s.io/v1beta2/") && r.contains("clusters"))
        .collect();
    assert!(!spoken.is_empty(), "the Clusters were read at v1beta2");
}

/// The switch patch on the real API server: `class` or `classRef.name` and the version
/// change, under capstan's field manager, and nothing else.
async fn the_switch_moves_only_the_class_and_version(test: &str, capi: CapiVersion) {
    let Some(env) = crate::operator_common::start_for(test, &[], capi).await else {
        return;
    };
    let clusters = env.clusters();
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": capi.api_version(), "kind": "Cluster",
        "metadata": {"name": "switched", "namespace": env.ns, "labels": {"ring": "canary"}},
        "spec": {"controlPlaneEndpoint": {"host": HOST, "port": 6443},
                 "topology": env.topology(V1, None)},
    }))
    .expect("Cluster");
    let made = clusters
        .create(
            &PostParams {
                field_manager: Some("someone".into()),
                ..PostParams::default()
            },
            &object,
        )
        .await
        .expect("Cluster created");
    let patch = capstan_operator::testing::controller::rollout::act::switch_patch(
        capi,
        made.metadata
            .resource_version
            .as_deref()
            .expect("resourceVersion"),
        "docker-ferrol-1-27-v2",
        None,
        Some("v1.27.4"),
    );
    let switched = clusters
        .patch(
            "switched",
            &PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&patch),
        )
        .await
        .expect("switched");
    let fields =
        capstan_stack::capi::ClusterFields::from_object(&serde_json::to_value(&switched).expect("JSON"))
            .expect("fields");
    assert_eq!(
        fields.class.map(|c| c.name).as_deref(),
        Some("docker-ferrol-1-27-v2")
    );
    assert_eq!(fields.kubernetes_version.as_deref(), Some("v1.27.4"));
    // Everything else as it was.
    let mut before = made.data["spec"].clone();
    let mut after = switched.data["spec"].clone();
    for spec in [&mut before, &mut after] {
        let topology = spec["topology"].as_object_mut().expect("topology");
        topology.remove("version");
        topology.remove(if capi == CapiVersion::V1Beta1 {
            "class"
        } else {
            "classRef"
        });
    }
    assert_eq!(before, after);
    assert_eq!(made.metadata.labels, switched.metadata.labels);
    // capstan's manager owns the class and the version, and nothing else.
    let ours: Vec<serde_json::Value> = switched
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.manager.as_deref() == Some(FIELD_MANAGER))
        .map(|m| m.fields_v1.as_ref().map(|f| f.0.clone()).unwrap_or_default())
        .collect();
    let class = match capi {
        CapiVersion::V1Beta1 => json!({"f:class": {}}),
        CapiVersion::V1Beta2 => json!({"f:classRef": {"f:name": {}}}),
    };
    let mut topology = class.as_object().expect("object").clone();
    topology.insert("f:version".into(), json!({}));
    assert_eq!(ours, vec![json!({"f:spec": {"f:topology": topology}})]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switch_moves_only_class_and_version_on_v1beta1() {
    the_switch_moves_only_the_class_and_version(
        "the_switch_moves_only_class_and_version_on_v1beta1",
        CapiVersion::V1Beta1,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switch_moves_only_class_ref_and_version_on_v1beta2() {
    the_switch_moves_only_the_class_and_version(
        "the_switch_moves_only_class_ref_and_version_on_v1beta2",
        CapiVersion::V1Beta2,
    )
    .await;
}

/// The condition `type_` of `conditions` when it is False with `reason`: its message.
fn false_because(
    conditions: &[capstan_operator::api::conditions::Condition],
    type_: &str,
    reason: &str,
) -> Option<String> {
    capstan_operator::api::conditions::find(conditions, type_)
        .filter(|c| !c.is_true() && c.reason == reason)
        .map(|c| c.message.clone())
}

/// Without Cluster API every resource it blocks says so (issue 47 §5): the rollout
/// (`Progressing`), a ClusterAddon (`ClusterReady`; its Cluster unreadable is not its Cluster
/// gone, so it stays) and a ClusterStackRelease (`Applied`, its ClusterClass being Cluster
/// API's kind), each False with reason `ClusterAPINotServed` and a Warning Event; a few log
/// lines, no loop. Cluster API installed, each goes on by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cluster_api_each_blocked_resource_says_so_until_it_is_installed() {
    let test = "without_cluster_api_each_blocked_resource_says_so_until_it_is_installed";
    let Some(env) =
        crate::operator_common::start_without_cluster_api(test, &[V1], CapiVersion::V1Beta1).await
    else {
        return;
    };
    let operator = env.operator(0, &[]);
    env.create_stack(&["v1"], "1h").await;
    let addon_name = format!("cluster-addon-{CLUSTER}");
    let addons: Api<ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    let made = addons
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
                "metadata": {"name": addon_name, "namespace": env.ns},
                "spec": {"clusterRef": {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                                        "name": CLUSTER, "namespace": env.ns}},
            }))
            .expect("ClusterAddon"),
        )
        .await
        .expect("ClusterAddon created");
    let rollouts: Api<capstan_operator::api::rollout::ClusterStackRollout> =
        Api::namespaced(env.client(), &env.ns);
    rollouts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
                "metadata": {"name": "r", "namespace": env.ns},
                "spec": {"clusterStack": "ferrol", "version": "latest",
                         "waves": [{"name": "all", "maxInFlight": 1}]},
            }))
            .expect("rollout"),
        )
        .await
        .expect("rollout created");

    // Each says so: a condition False for it, and a Warning Event.
    let wait = Duration::from_secs(60);
    let addon = eventually(
        "the ClusterAddon's ClusterReady False for it",
        wait,
        &operator,
        || async {
            let status = addons.get_opt(&addon_name).await.ok()??.status?;
            false_because(&status.conditions, "ClusterReady", "ClusterAPINotServed")
        },
    )
    .await;
    let release = eventually("the release's Applied False for it", wait, &operator, || async {
        let status = env.releases().get_opt(V1).await.ok()??.status?;
        false_because(&status.conditions, "Applied", "ClusterAPINotServed")
    })
    .await;
    let rollout = eventually(
        "the rollout's Progressing False for it",
        wait,
        &operator,
        || async {
            let status = rollouts.get_opt("r").await.ok()??.status?;
            false_because(&status.conditions, "Progressing", "ClusterAPINotServed")
        },
    )
    .await;
    for message in [&release, &addon, &rollout] {
        assert!(message.contains("cluster.x-k8s.io is not served"), "{message}");
    }
    for (kind, name) in [
        ("ClusterStackRelease", V1),
        ("ClusterAddon", addon_name.as_str()),
        ("ClusterStackRollout", "r"),
    ] {
        eventually(
            &format!("a Warning on {kind} {name}"),
            wait,
            &operator,
            || async {
                crate::operator_common::events_about(env.client(), &env.ns, kind, name)
                    .await
                    .into_iter()
                    .find(|e| {
                        e.type_.as_deref() == Some("Warning")
                            && e.note
                                .as_deref()
                                .is_some_and(|n| n.contains("Cluster API cannot be used"))
                    })
            },
        )
        .await;
    }

    // `capstan describe addon` shows it among the conditions.
    let described = std::process::Command::new(crate::operator_common::capstan_binary())
        .args(["describe", "addon", CLUSTER, "-n", &env.ns, "--kubeconfig"])
        .arg(env.cluster.kubeconfig_path())
        .output()
        .expect("capstan describe runs");
    let text = String::from_utf8_lossy(&described.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("ClusterReady") && l.contains("ClusterAPINotServed")),
        "{text}{}",
        String::from_utf8_lossy(&described.stderr)
    );

    // Twenty seconds more: no loop in the log, and the ClusterAddon still there (a Cluster
    // that cannot be read is not a Cluster gone).
    tokio::time::sleep(Duration::from_secs(20)).await;
    let log = std::fs::read_to_string(env.logs.path().join("operator-0.log")).unwrap_or_default();
    let capi_lines = log
        .lines()
        .filter(|l| l.contains("cluster.x-k8s.io") || l.contains("Cluster API") || l.contains("Clusters"))
        .count();
    // The first error of each of the three objects, the choice, the backoff's few retries.
    assert!(capi_lines <= 20, "{capi_lines} lines about Cluster API:\n{log}");
    let kept = addons.get(&addon_name).await.expect("the ClusterAddon stays");
    assert_eq!(kept.metadata.uid, made.metadata.uid);

    // Cluster API installed (and the Cluster created): each goes on by itself.
    env.install_cluster_api().await;
    env.cluster_api_in(&env.ns, CLUSTER, env.topology(V1, None), HOST)
        .await;
    let wait = Duration::from_secs(90);
    eventually("the release Ready", wait, &operator, || async {
        env.releases()
            .get_opt(V1)
            .await
            .ok()??
            .status?
            .ready
            .then_some(())
    })
    .await;
    let (reason, _) = eventually("the ClusterAddon at its next gate", wait, &operator, || async {
        gate(&env)
            .await
            .filter(|(reason, _)| reason != "ClusterAPINotServed")
    })
    .await;
    assert_eq!(reason, "ControlPlaneNotReady");
    eventually(
        "the rollout's Progressing no longer for it",
        wait,
        &operator,
        || async {
            let status = rollouts.get_opt("r").await.ok()??.status?;
            capstan_operator::api::conditions::find(&status.conditions, "Progressing")
                .filter(|c| c.reason != "ClusterAPINotServed")
                .map(drop)
        },
    )
    .await;
}

/// Cluster API upgraded under a running operator (v1.6's CRDs replaced by v1.14's serving only
/// v1beta2): its v1beta1 watch is answered 404, it discovers v1beta2 and watches that — the
/// same process makes the ClusterAddon of a v1beta2 Cluster created afterwards, owned by the
/// Cluster as v1beta2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_follows_cluster_api_from_v1beta1_to_v1beta2_without_a_restart() {
    let test = "the_operator_follows_cluster_api_from_v1beta1_to_v1beta2_without_a_restart";
    let Some(mut env) = crate::operator_common::start_own(test, &[V1], CapiVersion::V1Beta1).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    let mut operator = env.operator(0, &[]);
    env.create_stack(&["v1"], "5s").await;
    let log = operator.log_path().to_path_buf();
    let said = |text: &'static str| {
        let log = log.clone();
        move || {
            let log = log.clone();
            async move {
                std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains(text)
                    .then_some(())
            }
        }
    };
    eventually(
        "the operator speaking v1beta1",
        Duration::from_secs(30),
        &operator,
        said("speaking Cluster API cluster.x-k8s.io/v1beta1"),
    )
    .await;

    let crds = capstan_testenv::shared_path("capi-crds/v1.14.0-rc.1").expect("v1.14 CRDs");
    capstan_testenv::install_crds_with(&env.client(), &crds, &capstan_testenv::CrdOptions::v1beta2_only())
        .await
        .expect("Cluster API upgraded");
    env.capi = CapiVersion::V1Beta2;
    eventually(
        "the operator switching to v1beta2",
        Duration::from_secs(60),
        &operator,
        said("speaking cluster.x-k8s.io/v1beta2 from now on"),
    )
    .await;
    env.cluster_api(CLUSTER, V1, HOST, &workload, false).await;
    env.wait_applied(CLUSTER, V1, &operator, Duration::from_secs(90))
        .await;
    let addon = addon(&env).await.expect("ClusterAddon");
    let owner = addon
        .metadata
        .owner_references
        .as_ref()
        .and_then(|owners| owners.first())
        .expect("owner reference");
    assert_eq!(owner.api_version, "cluster.x-k8s.io/v1beta2");
    assert_eq!(operator.exited(), None, "the same operator process");
}
