//! `capstan render RELEASE --cluster`: a v1beta1 and a v1beta2 Cluster (what `kubectl get -o
//! yaml` prints on either kind of management cluster) render a release byte for byte alike;
//! what is not the Cluster (or not its control plane / infrastructure cluster) is refused up
//! front, naming the file (issue 45 item 15, issue 47).

use std::path::PathBuf;
use std::process::{Command, Output};

fn capstan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("capstan runs")
}

fn render(release: &str, cluster: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "render",
        release,
        "--cluster",
        cluster,
        "--control-plane",
        "testdata/control-plane.yaml",
        "--infra-cluster",
        "testdata/infra-cluster.yaml",
    ];
    args.extend(extra);
    let out = capstan(&args);
    assert!(
        out.status.success(),
        "{release} with {cluster}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Values-template lines that reach every Cluster field the conversion changes.
const REACHING: &str = "  reach:
    class: \"{{ .Cluster.spec.topology.class }}\"
    classNamespace: \"{{ .Cluster.spec.topology.classNamespace }}\"
    classRef: \"{{ .Cluster.spec.topology.classRef }}\"
    version: \"{{ .Cluster.spec.topology.version }}\"
    cpRef: \"{{ .Cluster.spec.controlPlaneRef.apiVersion }} {{ .Cluster.spec.controlPlaneRef.kind }} {{ .Cluster.spec.controlPlaneRef.namespace }}/{{ .Cluster.spec.controlPlaneRef.name }}\"
    infraRef: \"{{ .Cluster.spec.infrastructureRef.apiVersion }} {{ .Cluster.spec.infrastructureRef.namespace }}/{{ .Cluster.spec.infrastructureRef.name }}\"
    ready: \"{{ .Cluster.status.controlPlaneReady }} {{ .Cluster.status.infrastructureReady }}\"
    initialization: \"{{ .Cluster.status.initialization }}\"
    workers: \"{{ range .Cluster.spec.topology.workers.machineDeployments }}{{ .name }}={{ .replicas }} {{ end }}\"
";

/// The example stack with [`REACHING`] in its cluster-info values template, and `csctl` (the
/// text after `csctl.yaml`'s own) added.
fn example_reaching(dir: &std::path::Path, csctl: &str) -> String {
    let stack = dir.join("stack");
    copy_tree(std::path::Path::new("stacks/example"), &stack);
    let overwrite = stack.join("cluster-addon/cluster-info/overwrite.yaml");
    let text = std::fs::read_to_string(&overwrite).expect("overwrite.yaml");
    std::fs::write(&overwrite, format!("{text}{REACHING}")).expect("write");
    let csctl_file = stack.join("csctl.yaml");
    let text = std::fs::read_to_string(&csctl_file).expect("csctl.yaml");
    std::fs::write(&csctl_file, format!("{text}{csctl}")).expect("write");
    stack.to_str().expect("path").to_string()
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).expect("copy");
        }
    }
}

/// The computed values of the cluster-info part (`-o json`).
fn cluster_info_values(json: &str) -> String {
    let parts: serde_json::Value = serde_json::from_str(json).expect("JSON");
    parts
        .as_array()
        .expect("parts")
        .iter()
        .find(|p| p["part"] == "cluster-addon/cluster-info")
        .and_then(|p| p["values"].as_str())
        .expect("cluster-info values")
        .to_string()
}

#[test]
fn a_release_renders_alike_from_a_v1beta1_and_a_v1beta2_cluster() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reaching = example_reaching(dir.path(), "");
    let mut releases = vec![PathBuf::from("stacks/example"), PathBuf::from(&reaching)];
    if let Some(shared) = capstan_testenv::shared::dir("render from v1beta1 and v1beta2 Clusters") {
        for version in ["v1", "v2", "v3"] {
            releases.push(shared.join(format!("cluster-stack-releases/docker-ferrol-1-27-{version}")));
        }
    }
    for release in &releases {
        let release = release.to_str().expect("path");
        for format in [&[][..], &["-o", "json"][..]] {
            let old = render(release, "testdata/cluster.yaml", format);
            let new = render(release, "testdata/cluster-v1beta2.yaml", format);
            assert_eq!(old, new, "{release} {format:?}");
            // The Cluster reaches the output (the comparison is not of two renders without it).
            assert!(
                old.contains("harbor-east") || old.contains("172.18.0.3"),
                "{release}"
            );
        }
    }
    // The v1beta1 fields the templates reach, from the v1beta2 Cluster.
    let values = cluster_info_values(&render(
        &reaching,
        "testdata/cluster-v1beta2.yaml",
        &["-o", "json"],
    ));
    for want in [
        "class: \"docker-example-1-30-v1\"",
        "classNamespace: \"<no value>\"",
        "classRef: \"<no value>\"",
        "version: \"v1.30.4\"",
        "cpRef: \"controlplane.cluster.x-k8s.io/v1beta1 KubeadmControlPlane tenant-a/harbor-east-cp\"",
        "infraRef: \"infrastructure.cluster.x-k8s.io/v1beta1 tenant-a/harbor-east-infra\"",
        "ready: \"true true\"",
        "initialization: \"<no value>\"",
        "workers: \"md-0=2 \"",
    ] {
        assert!(values.contains(want), "{want}:\n{values}");
    }
}

#[test]
fn a_stack_asking_for_v1beta2_objects_gets_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let stack = example_reaching(
        dir.path(),
        "capstan:\n  valuesTemplateAPIVersion: cluster.x-k8s.io/v1beta2\n",
    );
    let values = cluster_info_values(&render(&stack, "testdata/cluster-v1beta2.yaml", &["-o", "json"]));
    for want in [
        "class: \"<no value>\"",
        "classRef: \"map[name:docker-example-1-30-v1]\"",
        "cpRef: \"<no value> KubeadmControlPlane <no value>/harbor-east-cp\"",
        "ready: \"<no value> <no value>\"",
        "initialization: \"map[controlPlaneInitialized:true infrastructureProvisioned:true]\"",
    ] {
        assert!(values.contains(want), "{want}:\n{values}");
    }
    // capstan does not convert upwards: a v1beta1 Cluster is refused for such a stack.
    let out = capstan(&["render", &stack, "--cluster", "testdata/cluster.yaml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("testdata/cluster.yaml: expected a v1beta2 Cluster (the stack's values templates are written for v1beta2), found a v1beta1 Cluster"),
        "{stderr}"
    );
}

#[test]
fn render_refuses_objects_that_are_not_the_cluster_or_its_parts_up_front() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("path").to_string()
    };
    let config_map = write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n",
    );
    let v1beta2 = std::fs::read_to_string("testdata/cluster-v1beta2.yaml").expect("fixture");
    let bad_class = write(
        "bad-class.yaml",
        &v1beta2.replace("name: docker-example-1-30-v1", "name: 3"),
    );
    let v1alpha4 = write(
        "v1alpha4.yaml",
        &v1beta2.replace("cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io/v1alpha4"),
    );
    let cp = "testdata/control-plane.yaml";
    let infra = "testdata/infra-cluster.yaml";
    let table: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--cluster", &config_map],
            format!("{config_map}: expected a Cluster API Cluster (cluster.x-k8s.io), found a ConfigMap (v1)"),
        ),
        (
            vec!["--cluster", cp],
            format!("{cp}: expected a Cluster API Cluster (cluster.x-k8s.io), found a KubeadmControlPlane"),
        ),
        (
            vec!["--cluster", "testdata/cluster.yaml", "--control-plane", infra],
            format!("{infra}: expected the control plane the Cluster names in spec.controlPlaneRef, a KubeadmControlPlane of controlplane.cluster.x-k8s.io, found a DockerCluster"),
        ),
        (
            vec!["--cluster", "testdata/cluster.yaml", "--infra-cluster", &config_map],
            format!("{config_map}: expected the infrastructure cluster the Cluster names in spec.infrastructureRef, a DockerCluster of infrastructure.cluster.x-k8s.io, found a ConfigMap (v1)"),
        ),
        (
            vec!["--cluster", &bad_class, "--control-plane", cp, "--infra-cluster", infra],
            format!("{bad_class}: field spec.topology.classRef.name: expected a string, found a number"),
        ),
        (
            vec!["--cluster", &v1alpha4],
            format!("{v1alpha4}: Cluster of apiVersion cluster.x-k8s.io/v1alpha4 is not supported"),
        ),
        // A v1beta2 reference has no apiVersion; without the object it cannot be told.
        (
            vec!["--cluster", "testdata/cluster-v1beta2.yaml", "--infra-cluster", infra],
            "testdata/cluster-v1beta2.yaml: field spec.controlPlaneRef: cannot tell the apiVersion of controlplane.cluster.x-k8s.io KubeadmControlPlane".to_string(),
        ),
    ];
    for (objects, want) in table {
        let mut args = vec!["render", "stacks/example"];
        args.extend(&objects);
        let out = capstan(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{objects:?} succeeded");
        assert!(
            stderr.contains(&want),
            "{objects:?}:\n  got: {stderr}\n  want: {want}"
        );
        assert!(out.stdout.is_empty(), "{objects:?} printed a render");
    }
}
