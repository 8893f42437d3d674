//! `capstan rollout plan`: the waves of a ClusterStackRollout for a fleet, offline, with the
//! operator's own assignment (fixtures in testdata/rollout/).

use std::process::{Command, Output};

use serde_json::json;

fn capstan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("capstan runs")
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "capstan failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8")
}

const ROLLOUT: &str = "testdata/rollout/rollout.yaml";
const CLUSTERS: &str = "testdata/rollout/clusters.yaml";

fn expected() -> serde_json::Value {
    json!({
        "waves": [
            {"name": "canary", "clusters": ["tenant-a/canary-1", "tenant-a/edge-2"]},
            {"name": "beta", "clusters": []},
            {"name": "rest", "clusters": ["tenant-a/prod-a", "tenant-a/prod-b", "tenant-b/guest"]},
        ],
        "excluded": [
            {"cluster": "tenant-a/dev-1", "reason": "not selected by spec.clusterSelector"},
            {"cluster": "tenant-a/hand-made", "reason": "no spec.topology.class"},
            {"cluster": "tenant-a/old-k8s", "reason": "class docker-ferrol-1-26-v1 is not a release of docker-ferrol-1-27"},
            {"cluster": "tenant-c/elsewhere", "reason": "class namespace tenant-c is not the rollout's namespace tenant-a"},
        ],
    })
}

/// `capstan rollout plan -f ROLLOUT --clusters CLUSTERS` with `extra`: its stdout.
fn plan(rollout: &str, clusters: &str, extra: &[&str]) -> String {
    let mut args = vec!["rollout", "plan", "-f", rollout, "--clusters", clusters];
    args.extend(extra);
    stdout(&capstan(&args))
}

#[test]
fn rollout_plan_prints_waves_in_order_and_the_excluded_clusters_as_json() {
    let text = plan(ROLLOUT, CLUSTERS, &["-o", "json"]);
    let got: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(got, expected());
    let (waves, excluded) = (text.find("\"waves\""), text.find("\"excluded\""));
    assert!(waves < excluded, "waves first: {text}");
}

#[test]
fn rollout_plan_reads_a_yaml_stream_as_well_as_a_list() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The same Clusters, one document each (JSON documents: YAML too).
    let text = std::fs::read_to_string(CLUSTERS).expect("fixture");
    let objects = capstan_apply::object::parse_stream(&text, CLUSTERS).expect("the List parses");
    assert_eq!(objects.len(), 9);
    let stream: String = objects
        .iter()
        .map(|o| format!("---\n{}\n", serde_json::to_string(&o.data).expect("JSON")))
        .collect();
    let path = dir.path().join("clusters.yaml");
    std::fs::write(&path, stream).expect("write the stream");
    let text = plan(ROLLOUT, path.to_str().expect("path"), &["-o", "json"]);
    let got: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(got, expected());
}

#[test]
fn rollout_plan_prints_a_table_by_default() {
    assert_eq!(
        plan(ROLLOUT, CLUSTERS, &["--version", "v3"]),
        "Rollout of docker-ferrol-1-27 version v3\n\
         \n\
         WAVE    CLUSTERS\n\
         canary  tenant-a/canary-1, tenant-a/edge-2\n\
         beta    (none)\n\
         rest    tenant-a/prod-a, tenant-a/prod-b, tenant-b/guest\n\
         \n\
         EXCLUDED            REASON\n\
         tenant-a/dev-1      not selected by spec.clusterSelector\n\
         tenant-a/hand-made  no spec.topology.class\n\
         tenant-a/old-k8s    class docker-ferrol-1-26-v1 is not a release of docker-ferrol-1-27\n\
         tenant-c/elsewhere  class namespace tenant-c is not the rollout's namespace tenant-a\n"
    );
}

#[test]
fn rollout_plan_takes_the_stack_from_a_clusterstack_file_when_its_name_does_not_say() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rollout = std::fs::read_to_string(ROLLOUT)
        .expect("fixture")
        .replace("clusterStack: docker-ferrol-1-27", "clusterStack: ferrol");
    let path = dir.path().join("rollout.yaml");
    std::fs::write(&path, rollout).expect("write");
    let path = path.to_str().expect("path");

    let out = capstan(&["rollout", "plan", "-f", path, "--clusters", CLUSTERS]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spec.clusterStack \"ferrol\" does not say the stack")
            && stderr.contains("--stack-file"),
        "{stderr}"
    );

    let text = plan(
        path,
        CLUSTERS,
        &["--stack-file", "testdata/rollout/stack.yaml", "-o", "json"],
    );
    let got: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(got, expected());
}

/// The fixture's Clusters as Cluster API v1.11+ stores them (`cluster.x-k8s.io/v1beta2`:
/// `topology.classRef`, the v1beta1 conditions under `status.deprecated.v1beta1`).
fn clusters_as_v1beta2() -> String {
    let text = std::fs::read_to_string(CLUSTERS).expect("fixture");
    let objects = capstan_apply::object::parse_stream(&text, CLUSTERS).expect("the List parses");
    objects
        .into_iter()
        .map(|o| {
            let mut c = o.data;
            c["apiVersion"] = json!("cluster.x-k8s.io/v1beta2");
            if let Some(topology) = c.pointer_mut("/spec/topology").and_then(|t| t.as_object_mut()) {
                let mut class_ref = serde_json::Map::new();
                if let Some(class) = topology.remove("class") {
                    class_ref.insert("name".into(), class);
                }
                if let Some(namespace) = topology.remove("classNamespace") {
                    class_ref.insert("namespace".into(), namespace);
                }
                if !class_ref.is_empty() {
                    topology.insert("classRef".into(), class_ref.into());
                }
            }
            if let Some(conditions) = c
                .pointer_mut("/status")
                .and_then(|s| s.as_object_mut())
                .and_then(|s| s.remove("conditions"))
            {
                c["status"]["deprecated"] = json!({"v1beta1": {"conditions": conditions}});
            }
            format!("---\n{}\n", serde_json::to_string(&c).expect("JSON"))
        })
        .collect()
}

#[test]
fn rollout_plan_reads_v1beta2_clusters_like_v1beta1_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stream = clusters_as_v1beta2();
    assert!(stream.contains("\"classRef\"") && !stream.contains("\"class\""));
    let path = dir.path().join("clusters-v1beta2.yaml");
    std::fs::write(&path, &stream).expect("write");
    let text = plan(ROLLOUT, path.to_str().expect("path"), &["-o", "json"]);
    let got: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(got, expected());
}

#[test]
fn rollout_plan_refuses_unknown_fields_and_unreadable_clusters_naming_file_and_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("path").to_string()
    };
    let rollout = std::fs::read_to_string(ROLLOUT).expect("fixture");
    let unknown = write(
        "rollout.yaml",
        // A misspelt field (`spec.from` itself is a field since issue 48).
        &rollout.replace("spec:\n", "spec:\n  fromm: auto\n"),
    );
    let out = capstan(&["rollout", "plan", "-f", &unknown, "--clusters", CLUSTERS]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted an unknown field");
    assert!(
        stderr.contains(&unknown) && stderr.contains("strict decoding error: unknown field \"spec.fromm\""),
        "{stderr}"
    );

    let bad = clusters_as_v1beta2().replacen(
        "\"classRef\":{\"name\":\"docker-ferrol-1-27-v1\"}",
        "\"classRef\":{\"name\":7}",
        1,
    );
    let clusters = write("clusters.yaml", &bad);
    let out = capstan(&["rollout", "plan", "-f", ROLLOUT, "--clusters", &clusters]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted an unreadable Cluster");
    assert!(
        stderr.contains(&clusters)
            && stderr.contains("field spec.topology.classRef.name: expected a string, found a number"),
        "{stderr}"
    );
}

const ACROSS: &str = "testdata/rollout/across/rollout.yaml";
const ACROSS_CLUSTERS: &str = "testdata/rollout/across/clusters.yaml";
const ACROSS_STACKS: &str = "testdata/rollout/across/stacks.yaml";

/// Issue 48: with `from: auto`, each Cluster's path to the newest ready release of the target
/// stack, one minor per step through the newest ready release of each minor between, and
/// why a Cluster has none (no ClusterStack of 1.26: never a skipped minor).
#[test]
fn rollout_plan_shows_each_clusters_path_across_stacks_and_why_one_has_none() {
    let text = plan(
        ACROSS,
        ACROSS_CLUSTERS,
        &["--stacks", ACROSS_STACKS, "-o", "json"],
    );
    let got: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let step = |release: &str, kubernetes: &str| json!({"release": release, "class": release, "kubernetes": kubernetes});
    let target = step("docker-ferrol-1-29-v1", "v1.29.10");
    assert_eq!(
        got["waves"],
        json!([
            {"name": "canary", "clusters": ["tenant-a/canary-1"]},
            {"name": "rest", "clusters": ["tenant-a/legacy", "tenant-a/prod-a", "tenant-a/prod-b"]},
        ])
    );
    assert_eq!(
        got["clusters"],
        json!([
            {"cluster": "tenant-a/canary-1", "path": [target]},
            {"cluster": "tenant-a/legacy", "path": [], "blocked":
                "no path to docker-ferrol-1-29-v1: no ClusterStack for Kubernetes 1.26 (provider docker, name ferrol): a Cluster never skips a minor"},
            {"cluster": "tenant-a/prod-a", "path": [step("docker-ferrol-1-28-v2", "v1.28.15"), target]},
            {"cluster": "tenant-a/prod-b", "path": [target]},
        ])
    );

    let table = plan(ACROSS, ACROSS_CLUSTERS, &["--stacks", ACROSS_STACKS]);
    for line in [
        "tenant-a/prod-a    docker-ferrol-1-28-v2 (v1.28.15) → docker-ferrol-1-29-v1 (v1.29.10)",
        "tenant-a/legacy    Blocked: no path to docker-ferrol-1-29-v1: no ClusterStack for Kubernetes 1.26",
    ] {
        assert!(table.contains(line), "{line:?} in\n{table}");
    }

    let out = capstan(&[
        "rollout",
        "plan",
        "-f",
        ACROSS,
        "--clusters",
        ACROSS_CLUSTERS,
        "--stack-file",
        "testdata/rollout/stack.yaml",
    ]);
    assert!(!out.status.success());
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        error.contains("spec.from: give the namespace's ClusterStacks"),
        "{error}"
    );
}
