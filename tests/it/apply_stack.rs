//! The applier against a real kube-apiserver with the CAPI CRDs: the shared cluster stack
//! release's charts (rendered by `capstan render`) applied, upgraded with pruning and
//! re-applied; a CRD and a custom resource of it in one go; field-manager conflicts with force
//! off and on; invalid objects failing alone. One API server for the whole file (the steps run
//! in order on it).

use std::collections::BTreeMap;

use crate::apply_common::*;
use capstan_apply::{Action, Applier, DesiredObject, SyncStatus};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stack_charts_crds_conflicts_and_failures() {
    let test = "stack_charts_crds_conflicts_and_failures";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let (Some(crds), Some(cc_v1), Some(cc_v2), Some(addon_v1), Some(addon_v2)) = (
        capstan_testenv::shared_path("capi-crds/v1.6.0"),
        release_chart("v1", "cluster-class"),
        release_chart("v2", "cluster-class"),
        release_chart("v1", "cluster-addon"),
        release_chart("v2", "cluster-addon"),
    ) else {
        capstan_testenv::skip_or_fail(
            test,
            "shared CAPI CRDs or docker-ferrol-1-27 releases missing (CAPSTAN_SHARED)",
        );
        return;
    };
    let cluster = TestCluster::start(&bins, "apply-stack")
        .await
        .expect("cluster starts");
    capstan_testenv::install_crds(&cluster.client(), &crds)
        .await
        .expect("CAPI CRDs install");
    let applier = Applier::new(cluster.client(), cluster.server_url());

    cluster_class_upgrade(&applier, &cluster, &cc_v1, &cc_v2).await;
    addon_upgrade(&applier, &addon_v1, &addon_v2).await;
    crd_and_custom_resource_in_one_go(&applier).await;
    prune_spares_crds_and_what_others_own(&applier, &cluster).await;
    conflicts(&applier, &cluster).await;
    invalid_objects_fail_alone(&applier).await;
}

/// The real ClusterClass release: v1 all Synced; v2 over it prunes v1's objects; a re-apply
/// sends nothing.
async fn cluster_class_upgrade(
    applier: &Applier,
    cluster: &TestCluster,
    v1: &std::path::Path,
    v2: &std::path::Path,
) {
    let ns = "cluster-stacks";
    let opts = capstan_apply::ApplyOptions {
        prune: true,
        ..options(ns, Some("docker-ferrol-1-27"))
    };
    let mut desired = vec![namespace(ns)];
    desired.extend(objects(&render("docker-ferrol-1-27", v1, ns, &[])));
    let kinds: Vec<&str> = desired.iter().map(|o| o.kind.as_str()).collect();
    assert!(kinds.contains(&"ClusterClass") && desired.len() >= 6, "{kinds:?}");

    let report = applier.apply(&desired, &opts).await.expect("apply v1");
    assert_all_synced(&report, "cluster-class v1");
    assert_eq!(report.summary.created, desired.len(), "{}", lines(&report));
    let class = get(
        cluster,
        "cluster.x-k8s.io",
        "v1beta1",
        "ClusterClass",
        "clusterclasses",
        ns,
    )
    .await;
    assert_eq!(class.len(), 1);
    // The chart's labels as `capstan render` printed them (issue 32: capstan wrote its
    // `managed-by` over the chart's before), and capstan's own label.
    let labels = class[0].metadata.labels.clone().unwrap_or_default();
    let rendered = desired
        .iter()
        .find(|o| o.kind == "ClusterClass")
        .and_then(|o| o.data.pointer("/metadata/labels/app.kubernetes.io~1managed-by"))
        .and_then(|v| v.as_str());
    assert_eq!(
        labels.get("app.kubernetes.io/managed-by").map(String::as_str),
        rendered
    );
    assert_eq!(
        labels.get("capstan.dev/managed").map(String::as_str),
        Some("true")
    );

    let mut desired_v2 = vec![namespace(ns)];
    desired_v2.extend(objects(&render("docker-ferrol-1-27", v2, ns, &[])));
    let report = applier.apply(&desired_v2, &opts).await.expect("apply v2");
    assert_all_synced(
        &capstan_apply::ApplyReport {
            results: report
                .results
                .iter()
                .filter(|r| r.status != SyncStatus::Pruned)
                .cloned()
                .collect(),
            ..report.clone()
        },
        "cluster-class v2",
    );
    let got = outcome(&report);
    let v1_names: Vec<&str> = desired[1..].iter().map(|o| o.name.as_str()).collect();
    for o in &desired[1..] {
        let key = format!("{}/{}", o.kind, o.name);
        assert_eq!(
            got.get(&key),
            Some(&(SyncStatus::Pruned, Action::Pruned)),
            "{key}\n{}",
            lines(&report)
        );
    }
    for o in &desired_v2[1..] {
        let key = format!("{}/{}", o.kind, o.name);
        assert_eq!(
            got.get(&key),
            Some(&(SyncStatus::Synced, Action::Created)),
            "{key}"
        );
    }
    assert_eq!(
        got.get(&format!("Namespace/{ns}")),
        Some(&(SyncStatus::Synced, Action::Unchanged))
    );
    let classes = get(
        cluster,
        "cluster.x-k8s.io",
        "v1beta1",
        "ClusterClass",
        "clusterclasses",
        ns,
    )
    .await;
    let names: Vec<String> = classes.iter().filter_map(|c| c.metadata.name.clone()).collect();
    assert_eq!(
        names,
        vec![
            desired_v2
                .iter()
                .find(|o| o.kind == "ClusterClass")
                .map(|o| o.name.clone())
                .unwrap_or_default()
        ]
    );
    assert!(!names.iter().any(|n| v1_names.contains(&n.as_str())));

    // Nothing changed: nothing is sent.
    let report = applier.apply(&desired_v2, &opts).await.expect("re-apply v2");
    assert_all_synced(&report, "cluster-class v2 again");
    assert_eq!(report.summary.unchanged, desired_v2.len(), "{}", lines(&report));
    assert_eq!(report.summary.apply_requests, 0);
}

/// The release's addon chart: v2 drops a Deployment (pruned) and a changed value updates
/// the metrics-server Deployment; the rest stays unchanged.
async fn addon_upgrade(applier: &Applier, v1: &std::path::Path, v2: &std::path::Path) {
    let ns = "addons";
    let opts = capstan_apply::ApplyOptions {
        prune: true,
        ..options(ns, Some("cluster-addon"))
    };
    // Rendered for the test server's version (v1.20 serves PodDisruptionBudget only as
    // policy/v1beta1, which the chart picks by the Kubernetes version).
    let pdb = "--kube-version=1.20.0";
    let mut desired = vec![namespace(ns)];
    desired.extend(addon_objects(&render("cluster-addon", v1, ns, &[pdb])));
    let report = applier.apply(&desired, &opts).await.expect("apply addon v1");
    assert_all_synced(&report, "addon v1");
    assert!(
        outcome(&report).contains_key("Deployment/web"),
        "{}",
        lines(&report)
    );

    let mut desired_v2 = vec![namespace(ns)];
    let replicas = "metrics-server.replicas=2";
    desired_v2.extend(addon_objects(&render(
        "cluster-addon",
        v2,
        ns,
        &[pdb, "--set", replicas],
    )));
    let report = applier.apply(&desired_v2, &opts).await.expect("apply addon v2");
    let got = outcome(&report);
    assert_eq!(
        got.get("Deployment/web"),
        Some(&(SyncStatus::Pruned, Action::Pruned)),
        "{}",
        lines(&report)
    );
    assert_eq!(
        got.get("Deployment/metrics-server"),
        Some(&(SyncStatus::Synced, Action::Configured)),
        "{}",
        lines(&report)
    );
    let unchanged = report
        .results
        .iter()
        .filter(|r| r.action == Action::Unchanged)
        .count();
    assert_eq!(unchanged, desired_v2.len() - 1, "{}", lines(&report));
    assert_eq!(report.summary.failed, 0, "{}", lines(&report));
}

/// The addon chart's objects without its APIService: kube-apiserver v1.20 cannot server-side
/// apply aggregator objects (it panics: "FieldManager must be installed to run apply"; fixed
/// in v1.21), with capstan as with `kubectl apply --server-side`.
fn addon_objects(stream: &str) -> Vec<DesiredObject> {
    let mut all = objects(stream);
    all.retain(|o| o.kind != "APIService");
    all
}

/// A chart with a CRD and a custom resource of it, given in the wrong order: the applier
/// applies the CRD first and waits for it.
async fn crd_and_custom_resource_in_one_go(applier: &Applier) {
    let chart = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/apply/addon-with-crd");
    let mut desired = objects(&render("gadgets", &chart, "default", &["--include-crds"]));
    desired.reverse();
    assert_eq!(desired[0].kind, "Widget");
    let report = applier
        .apply(&desired, &options("default", None))
        .await
        .expect("apply");
    assert_all_synced(&report, "CRD + CR");
    assert_eq!(
        outcome(&report).get("Widget/gadgets-widget"),
        Some(&(SyncStatus::Synced, Action::Created))
    );
    // CRDs come first in the results (apply order).
    assert_eq!(report.results[0].key.kind, "CustomResourceDefinition");
}

/// Pruning deletes only what still carries the inventory's mark, keeps CRDs unless asked.
async fn prune_spares_crds_and_what_others_own(applier: &Applier, cluster: &TestCluster) {
    let chart = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/apply/addon-with-crd");
    let mut desired = objects(&render("owned", &chart, "default", &["--include-crds"]));
    desired.extend(objects(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stays-ours}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: taken-over}\n",
    ));
    let opts = capstan_apply::ApplyOptions {
        prune: true,
        ..options("default", Some("owned"))
    };
    let report = applier.apply(&desired, &opts).await.expect("apply");
    assert_all_synced(&report, "owned set");

    // Someone else takes `taken-over` into their own inventory.
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let theirs = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "taken-over", "annotations": {"capstan.dev/inventory": "default/someone-else"}}});
    api.patch(
        "taken-over",
        &PatchParams::apply("someone-else").force(),
        &Patch::Apply(&theirs),
    )
    .await
    .expect("take over");

    // An empty set prunes only when asked to (the default guard refuses it).
    let refused = applier.apply(&[], &opts).await;
    assert!(
        matches!(refused, Err(capstan_apply::Error::Refused(_))),
        "an empty set pruned without being asked"
    );
    let everything = capstan_apply::ApplyOptions {
        prune_scope: capstan_apply::PruneScope::Any,
        ..opts.clone()
    };
    let report = applier.apply(&[], &everything).await.expect("prune all");
    let got = outcome(&report);
    assert_eq!(
        got.get("ConfigMap/stays-ours"),
        Some(&(SyncStatus::Pruned, Action::Pruned)),
        "{}",
        lines(&report)
    );
    assert_eq!(
        got.get("Widget/owned-widget"),
        Some(&(SyncStatus::Pruned, Action::Pruned)),
        "{}",
        lines(&report)
    );
    assert_eq!(
        got.get("CustomResourceDefinition/widgets.test.capstan.dev"),
        Some(&(SyncStatus::Synced, Action::None)),
        "{}",
        lines(&report)
    );
    assert!(!got.contains_key("ConfigMap/taken-over"), "{}", lines(&report));
    assert_eq!(report.prune_skipped.len(), 1);
    assert_eq!(report.prune_skipped[0].name, "taken-over");
    assert!(
        api.get_opt("taken-over").await.expect("get").is_some(),
        "never delete what others own"
    );
    assert!(api.get_opt("stays-ours").await.expect("get").is_none());

    // Asked to, the CRD goes too (it stayed in the inventory).
    let with_crds = capstan_apply::ApplyOptions {
        prune_crds: true,
        ..everything
    };
    let report = applier.apply(&[], &with_crds).await.expect("prune CRDs");
    assert_eq!(
        outcome(&report).get("CustomResourceDefinition/widgets.test.capstan.dev"),
        Some(&(SyncStatus::Pruned, Action::Pruned)),
        "{}",
        lines(&report)
    );
}

/// Another field manager owns `data.owner`: with force off the object fails with the
/// server's conflict message; with force on capstan takes the field over.
async fn conflicts(applier: &Applier, cluster: &TestCluster) {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let theirs = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("contested".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("owner".to_string(), "them".to_string())])),
        ..Default::default()
    };
    api.patch(
        "contested",
        &PatchParams::apply("someone-else"),
        &Patch::Apply(&theirs),
    )
    .await
    .expect("other manager applies");
    let ours =
        objects("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: contested\ndata:\n  owner: capstan\n");

    let no_force = capstan_apply::ApplyOptions {
        force: false,
        ..options("default", None)
    };
    let report = applier
        .apply(&ours, &no_force)
        .await
        .expect("apply without force");
    let r = &report.results[0];
    assert_eq!(r.status, SyncStatus::Failed, "{}", r.line());
    assert!(
        r.message.contains("conflict") && r.message.contains("someone-else"),
        "{}",
        r.message
    );
    let live = api.get("contested").await.expect("get");
    assert_eq!(
        live.data.unwrap_or_default().get("owner").map(String::as_str),
        Some("them")
    );

    let report = applier
        .apply(&ours, &options("default", None))
        .await
        .expect("apply with force");
    assert_all_synced(&report, "forced");
    assert_eq!(report.results[0].action, Action::Configured);
    let live = api.get("contested").await.expect("get");
    assert_eq!(
        live.data
            .clone()
            .unwrap_or_default()
            .get("owner")
            .map(String::as_str),
        Some("capstan")
    );
    let managers: Vec<String> = live
        .metadata
        .managed_fields
        .unwrap_or_default()
        .iter()
        .filter(|m| {
            serde_json::to_string(&m.fields_v1)
                .unwrap_or_default()
                .contains("f:owner")
        })
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(managers, vec!["capstan".to_string()]);
}

/// A schema violation of a built-in kind, one of a CRD, and an unknown kind each fail with
/// the server's reason; the valid objects beside them are applied.
async fn invalid_objects_fail_alone(applier: &Applier) {
    let text = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: fine-1}
data: {a: b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: bad-data}
data: {a: [1, 2]}
---
apiVersion: example.invalid/v1
kind: Gizmo
metadata: {name: nope}
---
apiVersion: cluster.x-k8s.io/v1beta1
kind: ClusterClass
metadata: {name: bad-class}
spec:
  infrastructure: not-an-object
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: brokens.test.capstan.dev}
spec:
  group: test.capstan.dev
  scope: Everywhere
  names: {plural: brokens, singular: broken, kind: Broken}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
apiVersion: test.capstan.dev/v1
kind: Broken
metadata: {name: of-a-broken-crd}
---
apiVersion: v1
kind: Service
metadata: {name: fine-2}
spec:
  ports: [{port: 80, protocol: TCP}]  # v1.20 apply needs the protocol (a list-map key)
";
    let desired: Vec<DesiredObject> = objects(text);
    let started = std::time::Instant::now();
    let report = applier
        .apply(&desired, &options("default", None))
        .await
        .expect("apply");
    // The custom resource of the CRD that failed is not waited for (CRD timeout: 60 s).
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let by_name: BTreeMap<&str, &capstan_apply::ObjectResult> =
        report.results.iter().map(|r| (r.key.name.as_str(), r)).collect();
    for ok in ["fine-1", "fine-2"] {
        assert_eq!(by_name[ok].status, SyncStatus::Synced, "{}", lines(&report));
    }
    let message = |name: &str| {
        let r = by_name[name];
        assert_eq!(r.status, SyncStatus::Failed, "{}", r.line());
        r.message.clone()
    };
    assert!(message("bad-data").contains(".data.a"), "{}", message("bad-data"));
    assert!(
        message("nope").contains("no resource for kind Gizmo"),
        "{}",
        message("nope")
    );
    let class = message("bad-class");
    assert!(
        class.contains("spec.infrastructure") && class.contains("Invalid"),
        "{class}"
    );
    let crd = message("brokens.test.capstan.dev");
    assert!(crd.contains("spec.scope") && crd.contains("Invalid"), "{crd}");
    assert!(
        message("of-a-broken-crd").contains("no resource for kind Broken"),
        "{}",
        lines(&report)
    );
    assert_eq!(report.summary.failed, 5);
}

async fn get(
    cluster: &TestCluster,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    ns: &str,
) -> Vec<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let api: Api<DynamicObject> = Api::namespaced_with(
        cluster.client(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    );
    api.list(&Default::default()).await.expect("list").items
}
