//! What kubectl and flux users type, against a real API server: `capstan get stacks NAME`,
//! `--no-headers`, `-o name`, a bad label selector, `version -o json`; and `get releases -w`
//! following the ClusterAddons (the CLUSTERS column) and printing a deletion.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use capstan_operator::api::{self, ClusterAddon, ClusterStack, ClusterStackRelease};
use capstan_testenv::{Binaries, TestCluster};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::get_cli::{capstan, create, run};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn start(test: &str) -> Option<(TestCluster, String)> {
    let bins = Binaries::find_or_skip(test)?;
    let cluster = TestCluster::shared_or_start(&bins, test)
        .await
        .expect("cluster starts");
    let crds = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        crds.path().join("capstan.yaml"),
        api::crds_yaml().expect("CRD YAML"),
    )
    .expect("write CRDs");
    capstan_testenv::install_crds(&cluster.client(), crds.path())
        .await
        .expect("capstan CRDs install");
    let ns = cluster.namespace().to_string();
    Some((cluster, ns))
}

fn stack(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
           "metadata": {"name": name, "namespace": ns, "labels": {"team": name}},
           "spec": {"provider": "docker", "name": name, "kubernetesVersion": "1.27",
                    "versions": ["v1"]}})
}

fn addon(ns: &str, cluster: &str) -> Value {
    json!({"apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
           "metadata": {"name": format!("cluster-addon-{cluster}"), "namespace": ns},
           "spec": {"clusterStack": "docker-ferrol-1-27-v1",
                    "clusterRef": {"kind": "Cluster", "name": cluster, "namespace": ns}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_takes_names_no_headers_and_o_name() {
    let test = "get_takes_names_no_headers_and_o_name";
    let Some((cluster, ns)) = start(test).await else {
        return;
    };
    let stacks: Api<ClusterStack> = Api::namespaced(cluster.client(), &ns);
    for name in ["ferrol", "scs"] {
        create(&stacks, stack(&ns, name), json!({})).await;
    }

    // One object by name: the header and its row.
    let out = capstan(&cluster, &["get", "stacks", "scs", "-n", &ns]);
    assert!(out.status.success());
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("NAME "), "{lines:?}");
    assert!(lines[1].starts_with("scs "), "{lines:?}");
    // A name not found is an error, kubectl's way.
    let out = capstan(&cluster, &["get", "stacks", "scs", "nope", "-n", &ns]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("scs "));
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!("Error: ClusterStack \"nope\" not found in namespace {ns}")
    );

    // --no-headers: the rows alone, aligned.
    let out = capstan(&cluster, &["get", "stacks", "-n", &ns, "--no-headers"]);
    assert!(out.status.success());
    let rows = text(&out.stdout);
    let first: Vec<&str> = rows
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(first, ["ferrol", "scs"], "{rows}");

    // -o name: KIND.GROUP/NAME, as kubectl prints it.
    let out = capstan(&cluster, &["get", "stacks", "-n", &ns, "-o", "name"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        "clusterstack.clusterstack.x-k8s.io/ferrol\nclusterstack.clusterstack.x-k8s.io/scs\n"
    );
    let out = capstan(
        &cluster,
        &["get", "stacks", "-n", &ns, "-o", "name", "-l", "team=scs"],
    );
    assert_eq!(text(&out.stdout), "clusterstack.clusterstack.x-k8s.io/scs\n");

    // A bad label selector: the API server's words, once, without kube's debug dump.
    let out = capstan(&cluster, &["get", "stacks", "-n", &ns, "-l", "team=a b"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(!err.contains("Status {") && !err.contains("ApiError"), "{err}");
    assert!(
        err.starts_with(&format!(
            "Error: listing ClusterStacks in namespace {ns} with labels \"team=a b\" on "
        )),
        "{err}"
    );
    assert!(err.trim_end().ends_with("(400 BadRequest)"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // version -o json: camelCase keys; --json still works and says it is deprecated.
    let out = run(&["version", "-o", "json"]);
    let json: Value = serde_json::from_slice(&out.stdout).expect("version JSON");
    assert_eq!(json["helmCompat"], "v4.2.3");
    assert_eq!(json["apiVersion"], "clusterstack.x-k8s.io/v1alpha1");
    assert!(json.get("helm_compat").is_none());
    let out = run(&["version", "--json"]);
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).expect("JSON"), json);
    assert!(text(&out.stderr).contains("--json is deprecated, use -o json"));

    // get --help names every kind it lists.
    let out = run(&["get", "--help"]);
    assert!(
        text(&out.stdout).contains("ClusterStackRollouts"),
        "{}",
        text(&out.stdout)
    );
}

/// A `capstan get … -w` running in the background; its stdout lines arrive on `lines`.
struct Watch {
    child: Child,
    lines: Receiver<String>,
}

impl Watch {
    fn start(cluster: &TestCluster, args: &[&str]) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args(args)
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .spawn()
            .expect("capstan get -w");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    /// The next line for which `wanted` holds (others are skipped), within 30 s.
    fn until(&self, what: &str, wanted: impl Fn(&[&str]) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no line {what} within 30 s"));
            eprintln!("watch: {line}");
            let cells: Vec<&str> = line.split_whitespace().collect();
            if wanted(&cells) {
                return line;
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_releases_watch_follows_addons_and_deletions() {
    let test = "get_releases_watch_follows_addons_and_deletions";
    let Some((cluster, ns)) = start(test).await else {
        return;
    };
    let client = cluster.client();
    let releases: Api<ClusterStackRelease> = Api::namespaced(client.clone(), &ns);
    let addons: Api<ClusterAddon> = Api::namespaced(client.clone(), &ns);
    let v1 = "docker-ferrol-1-27-v1";
    create(
        &releases,
        json!({"apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStackRelease",
               "metadata": {"name": v1, "namespace": ns}, "spec": {}}),
        json!({"ready": true, "kubernetesVersion": "v1.27.3"}),
    )
    .await;
    create(&addons, addon(&ns, "a"), json!({"appliedClusterStack": v1})).await;

    // Columns: EVENT NAME K8S READY OBJECTS CLUSTERS AGE MESSAGE.
    let events = Watch::start(
        &cluster,
        &["get", "releases", "-n", &ns, "-w", "--output-watch-events"],
    );
    let plain = Watch::start(&cluster, &["get", "releases", "-n", &ns, "-w"]);
    events.until("of the header", |c| c.first() == Some(&"EVENT"));
    events.until("ADDED with one Cluster", |c| {
        c[..2] == ["ADDED", v1] && c[5] == "1"
    });
    plain.until("with one Cluster", |c| c[0] == v1 && c[4] == "1");

    // A second Cluster on v1: CLUSTERS 2, though the release itself did not change.
    create(&addons, addon(&ns, "b"), json!({"appliedClusterStack": v1})).await;
    events.until("MODIFIED with two Clusters", |c| {
        c[..2] == ["MODIFIED", v1] && c[5] == "2"
    });
    plain.until("with two Clusters", |c| c[0] == v1 && c[4] == "2");
    // One moves away: 1 again.
    addons
        .patch_status(
            "cluster-addon-a",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"appliedClusterStack": "docker-ferrol-1-27-v2"}})),
        )
        .await
        .expect("status patched");
    events.until("MODIFIED back to one Cluster", |c| {
        c[..2] == ["MODIFIED", v1] && c[5] == "1"
    });
    plain.until("back to one Cluster", |c| c[0] == v1 && c[4] == "1");

    // The release deleted: DELETED, and the plain watch prints its row once more.
    releases
        .delete(v1, &DeleteParams::default())
        .await
        .expect("release deleted");
    events.until("DELETED", |c| c[..2] == ["DELETED", v1]);
    plain.until("after the deletion", |c| c[0] == v1 && c[4] == "1");
}
