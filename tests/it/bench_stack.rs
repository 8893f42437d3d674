//! The benchmark stack `stacks/bench` (scripts/bench-operator.sh): its addon objects of two
//! Clusters never share a name in a namespace, so simulated clusters can share one workload
//! API server; a release switch changes every object; it renders like Helm; what its first
//! apply, an idle pass and the switch cost the workload API server, counted in its audit log.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use capstan_apply::{Applier, ApplyOptions, DesiredObject, InventoryRef, parse_stream};
use capstan_stack::Version;
use capstan_stack::build::build;
use capstan_stack::release::Release;
use capstan_stack::render::ADDON_NAMESPACE;
use capstan_stack::render::render_release;
use capstan_stack::values::ClusterObjects;
use capstan_testenv::audit::{AuditLog, verbs};
use capstan_testenv::shared::stack::{self, deterministic};
use capstan_testenv::{Binaries, TestCluster};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bench_release(dir: &Path, version: &str) -> Release {
    build(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/bench"),
        &Version::parse(version).unwrap(),
        &dir.join(format!("release-{version}")),
    )
    .expect("the bench stack builds")
}

/// A Cluster as the benchmark creates it.
fn cluster(dir: &Path, name: &str) -> ClusterObjects {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: tenant\n\
             spec:\n  controlPlaneEndpoint:\n    host: {name}.example\n    port: 6443\n"
        ),
    )
    .unwrap();
    ClusterObjects::load(&path, None, None).expect("the Cluster loads")
}

/// The addon objects rendered for `objects`.
fn addon_stream(release: &Release, objects: &ClusterObjects) -> Vec<DesiredObject> {
    let parts = render_release(release, objects, &deterministic()).expect("the bench release renders");
    let addon = parts
        .iter()
        .find(|p| p.name == "cluster-addon")
        .expect("a single-chart addon");
    parse_stream(&addon.stream, "cluster-addon").expect("the addon stream parses")
}

/// (kind, namespace, name, the whole object) of the addon objects rendered for `objects`.
fn addon_objects(release: &Release, objects: &ClusterObjects) -> Vec<(String, String, String, String)> {
    addon_stream(release, objects)
        .into_iter()
        .map(|o| {
            let whole = o.data.to_string();
            (o.kind, o.namespace.unwrap_or_default(), o.name, whole)
        })
        .collect()
}

#[test]
fn bench_stack_keeps_clusters_apart() {
    let dir = scratch("bench-stack-apart");
    let release = bench_release(&dir, "v1");
    let a = addon_objects(&release, &cluster(&dir, "fleet-1"));
    let b = addon_objects(&release, &cluster(&dir, "fleet-12"));
    assert_eq!(a.len(), 25, "about the objects of the SCS addon charts");
    for (objects, cluster) in [(&a, "fleet-1"), (&b, "fleet-12")] {
        let prefix = format!("bench-{cluster}");
        for (kind, namespace, name, _) in objects.iter() {
            assert!(
                name == &prefix || name.starts_with(&format!("{prefix}-")),
                "{kind} {name} of {cluster} does not carry the Cluster's name"
            );
            let cluster_scoped = ["Namespace", "ClusterRole", "ClusterRoleBinding"].contains(&kind.as_str());
            let want = if cluster_scoped { "" } else { prefix.as_str() };
            assert_eq!(namespace, want, "{kind} {name} of {cluster}");
        }
    }
    let keys = |objects: &[(String, String, String, String)]| -> BTreeSet<(String, String, String)> {
        objects
            .iter()
            .map(|(k, ns, n, _)| (k.clone(), ns.clone(), n.clone()))
            .collect()
    };
    assert_eq!(keys(&a).len(), 25, "no object twice");
    assert!(
        keys(&a).is_disjoint(&keys(&b)),
        "two Clusters' objects collide on one API server"
    );
}

#[test]
fn bench_stack_switch_changes_every_object() {
    let dir = scratch("bench-stack-switch");
    let objects = cluster(&dir, "fleet-3");
    let v1 = addon_objects(&bench_release(&dir, "v1"), &objects);
    let v2 = addon_objects(&bench_release(&dir, "v2"), &objects);
    assert_eq!(v1.len(), v2.len());
    for (old, new) in v1.iter().zip(&v2) {
        assert_eq!(
            (&old.0, &old.1, &old.2),
            (&new.0, &new.1, &new.2),
            "same objects, same order"
        );
        assert_ne!(old.3, new.3, "{} {} unchanged by the switch to v2", old.0, old.2);
    }
}

#[test]
fn bench_release_renders_like_helm() {
    let Some(shared) = capstan_testenv::shared::dir("bench release vs helm") else {
        return;
    };
    let Some(python) = stack::helm_python("bench release vs helm") else {
        return;
    };
    let dir = scratch("bench-stack-helm");
    let release = bench_release(&dir, "v1");
    let oracle = dir.join("oracle");
    std::fs::create_dir_all(&oracle).unwrap();
    let questions = stack::release_questions(&release, &cluster(&dir, "fleet-7"), &oracle);
    assert_eq!(questions.len(), 2 * 2);
    let failures = stack::differences(&shared, &python, &questions, &oracle);
    assert!(failures.is_empty(), "parts that differ from Helm: {failures:?}");
}

/// Issue 36 §1: a Cluster's addon applied as the operator applies it (inventory in
/// kube-system, pruning, 8 at once) costs the workload API server, discovery aside: first
/// apply one apply per object, one inventory write and the inventory read, no list (≤ 30);
/// an idle pass the inventory read and one list per resource; the switch to v2 (every object
/// changed) the same plus one apply per object and one inventory write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_addon_requests_per_pass() {
    let test = "bench_addon_requests_per_pass";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let dir = scratch("bench-stack-requests");
    let cluster_objects = cluster(&dir, "fleet-1");
    let v1 = addon_stream(&bench_release(&dir, "v1"), &cluster_objects);
    let v2 = addon_stream(&bench_release(&dir, "v2"), &cluster_objects);
    let audit = AuditLog::new().expect("audit log");
    let workload = TestCluster::start_with_args(&bins, "bench-requests", &audit.apiserver_args())
        .await
        .expect("cluster starts");
    let applier = Applier::new(workload.client(), "bench-requests");
    let inventory = InventoryRef {
        namespace: ADDON_NAMESPACE.into(),
        name: "capstan.caddon.fleet-1".into(),
    };
    let opts = ApplyOptions {
        namespace: inventory.namespace.clone(),
        inventory: Some(inventory),
        prune: true,
        concurrency: 8,
        ..ApplyOptions::default()
    };
    let n = v1.len();
    // One list per resource (and namespace) of the addon.
    let resources: std::collections::BTreeSet<(String, String)> =
        v1.iter().map(|o| (o.group.clone(), o.kind.clone())).collect();
    let k = resources.len();

    let before = audit.requests().len();
    let report = applier.apply(&v1, &opts).await.expect("first apply");
    assert!(!report.failed(), "{report:?}");
    let (first, sent) = audit.sent_since(before).await;
    eprintln!("first apply of {n} objects: {} requests: {first:?}", sent.len());
    assert_eq!(first, verbs(&[("get", 1), ("patch", n + 1)]), "{sent:#?}");
    assert!(sent.len() <= 30, "{} requests", sent.len());

    let before = audit.requests().len();
    let report = applier.apply(&v1, &opts).await.expect("idle pass");
    assert_eq!(report.summary.unchanged, n, "{:?}", report.summary);
    let (idle, sent) = audit.sent_since(before).await;
    eprintln!("idle pass: {} requests: {idle:?}", sent.len());
    assert_eq!(idle, verbs(&[("get", 1), ("list", k)]), "{sent:#?}");

    let before = audit.requests().len();
    let report = applier.apply(&v2, &opts).await.expect("switch to v2");
    assert!(!report.failed(), "{report:?}");
    assert_eq!(report.summary.configured, n, "{:?}", report.summary);
    let (switch, sent) = audit.sent_since(before).await;
    eprintln!("switch to v2: {} requests: {switch:?}", sent.len());
    assert_eq!(
        switch,
        verbs(&[("get", 1), ("list", k), ("patch", n + 1)]),
        "{sent:#?}"
    );
}
