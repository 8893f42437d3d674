//! The benchmark stack `stacks/bench` (scripts/bench-operator.sh): its addon objects of two
//! Clusters never share a name in a namespace, so simulated clusters can share one workload
//! API server; a release switch changes every object; it renders like Helm.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use capstan_apply::parse_stream;
use capstan_stack::Version;
use capstan_stack::build::build;
use capstan_stack::release::Release;
use capstan_stack::render::render_release;
use capstan_stack::values::ClusterObjects;
use capstan_testenv::shared::stack::{self, deterministic};

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

/// (kind, namespace, name, the whole object) of the addon objects rendered for `objects`.
fn addon_objects(release: &Release, objects: &ClusterObjects) -> Vec<(String, String, String, String)> {
    let parts = render_release(release, objects, &deterministic()).expect("the bench release renders");
    let addon = parts
        .iter()
        .find(|p| p.name == "cluster-addon")
        .expect("a single-chart addon");
    parse_stream(&addon.stream, "cluster-addon")
        .expect("the addon stream parses")
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
