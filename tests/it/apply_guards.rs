//! Issue 21 against a real kube-apiserver: an empty input (a failed render piped into
//! `capstan apply --prune`) never prunes, a prune that would empty the inventory needs
//! `--allow-empty`, prune counts are what was deleted, objects the server normalises
//! (`stringData`, `creationTimestamp: null`, `schedulerName: null`, quantities) are not
//! re-sent on a re-apply, and `capstan diff` masks Secret values. One API server.
//!
//! Each step sets up its own state and records a failure instead of stopping, so one run
//! against code without a fix shows every step that fails.

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::apply_common::*;
use capstan_apply::{Action, Applier, SyncStatus};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::Api;
use kube::api::{DeleteParams, PostParams};

const NS: &str = "guards";
const INVENTORY: &str = "guards-inv";

fn config_maps(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\ndata:\n  k: v\n"))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// `capstan apply -f - … EXTRA` with `stdin` as its input.
fn apply_stdin(kubeconfig: &Path, stdin: &[u8], extra: &[&str]) -> Output {
    let mut child = capstan()
        .args(["apply", "-f", "-", "--kubeconfig"])
        .arg(kubeconfig)
        .args(["-n", NS, "--inventory", INVENTORY])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run capstan apply");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("capstan apply")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}stderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// Records a failed check.
struct Checks(Vec<String>);

impl Checks {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }
}

async fn names(api: &Api<ConfigMap>) -> Vec<String> {
    let mut names: Vec<String> = api
        .list(&Default::default())
        .await
        .expect("list ConfigMaps")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n.starts_with("cm-"))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_input_normalised_objects_and_masked_secrets() {
    let Some(bins) = Binaries::find_or_skip("empty_input_normalised_objects_and_masked_secrets") else {
        return;
    };
    let cluster = TestCluster::start(&bins, "apply-guards")
        .await
        .expect("cluster starts");
    let kc = cluster.kubeconfig_path();
    let ns_api: Api<Namespace> = Api::all(cluster.client());
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).expect("ns");
    ns_api
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), NS);
    let three = config_maps(&["cm-a", "cm-b", "cm-c"]);
    let mut checks = Checks(Vec::new());

    // Set up: three ConfigMaps in the inventory.
    let out = apply_stdin(kc, three.as_bytes(), &["--prune"]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(names(&cms).await, ["cm-a", "cm-b", "cm-c"]);

    // A failed render piped into apply --prune: the pipe carries nothing; nothing is deleted.
    let render = capstan()
        .args(["render", "rel", "/nonexistent/chart", "-n", NS])
        .output()
        .expect("run capstan render");
    assert!(
        !render.status.success() && render.stdout.is_empty(),
        "{}",
        show(&render)
    );
    let out = apply_stdin(kc, &render.stdout, &["--prune"]);
    let stderr = text(&out.stderr);
    checks.check(!out.status.success(), || {
        format!("empty input accepted: {}", show(&out))
    });
    checks.check(stderr.contains("no objects in the input"), || {
        format!("empty input: no reason given: {}", show(&out))
    });
    checks.check(!text(&out.stdout).contains("pruned"), || {
        format!("empty input pruned: {}", show(&out))
    });
    let left = names(&cms).await;
    checks.check(left == ["cm-a", "cm-b", "cm-c"], || {
        format!("the empty input deleted objects: {left:?}")
    });

    // An input that keeps nothing of the inventory: refused, says how many it would delete.
    apply_stdin(kc, three.as_bytes(), &["--prune"]);
    let out = apply_stdin(kc, config_maps(&["cm-z"]).as_bytes(), &["--prune"]);
    checks.check(
        !out.status.success()
            && text(&out.stderr).contains(&format!(
                "--prune would delete all 3 object(s) of inventory {NS}/{INVENTORY}"
            )),
        || format!("a prune of everything was not refused: {}", show(&out)),
    );
    let left = names(&cms).await;
    checks.check(left == ["cm-a", "cm-b", "cm-c"], || {
        format!("the refused prune deleted objects: {left:?}")
    });

    // Said explicitly: the empty set prunes; the counts are what was deleted (one of the
    // three was gone already).
    apply_stdin(kc, three.as_bytes(), &["--prune"]);
    let _ = cms.delete("cm-b", &DeleteParams::default()).await;
    let out = apply_stdin(kc, b"", &["--prune", "--allow-empty"]);
    let stdout = text(&out.stdout);
    checks.check(out.status.success(), || {
        format!("--allow-empty refused: {}", show(&out))
    });
    checks.check(
        stdout.contains("ConfigMap/guards/cm-b already gone\n")
            && stdout
                .ends_with("0 created, 0 configured, 0 unchanged, 2 pruned, 0 failed (1 already gone)\n"),
        || format!("prune counts: {}", show(&out)),
    );
    let left = names(&cms).await;
    checks.check(left.is_empty(), || format!("--allow-empty kept {left:?}"));

    normalised_objects_are_not_resent(&cluster, &mut checks).await;
    diff_masks_secrets(&cluster, &mut checks).await;
    empty_kubeconfig_says_it_once(&mut checks);

    assert!(
        checks.0.is_empty(),
        "{} failed:\n\n{}",
        checks.0.len(),
        checks.0.join("\n\n")
    );
}

/// Objects as charts write them, with fields the server normalises.
const NORMALISED: &str = r#"apiVersion: v1
kind: Secret
metadata:
  name: creds
  creationTimestamp: null
stringData:
  user: admin
  password: hunter2
data:
  extra: YWJj
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  creationTimestamp: null
data:
  a: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: metrics
  creationTimestamp: null
spec:
  replicas: 1
  strategy: {}
  selector:
    matchLabels: {app: metrics}
  template:
    metadata:
      creationTimestamp: null
      labels: {app: metrics}
    spec:
      schedulerName: null
      securityContext: {}
      containers:
      - name: metrics
        image: registry.invalid/metrics:v1
        resources:
          requests: {cpu: "0.1", memory: 1024Mi}
          limits: {cpu: "1.0"}
        ports:
        - containerPort: 4443
status: {}
"#;

/// A re-apply of an unchanged set sends nothing for objects the server normalised, and
/// their resourceVersions stay (on v1.20 a re-send writes).
async fn normalised_objects_are_not_resent(cluster: &TestCluster, checks: &mut Checks) {
    let ns = "normalised";
    let applier = Applier::new(cluster.client(), cluster.server_url());
    let mut desired = vec![namespace(ns)];
    desired.extend(objects(NORMALISED));
    let opts = options(ns, Some("normalised"));
    let first = applier.apply(&desired, &opts).await.expect("first apply");
    assert_all_synced(&first, "normalised: first apply");
    let secret: Api<Secret> = Api::namespaced(cluster.client(), ns);
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), ns);
    let versions = async || {
        (
            secret
                .get("creds")
                .await
                .expect("secret")
                .metadata
                .resource_version,
            deployments
                .get("metrics")
                .await
                .expect("deployment")
                .metadata
                .resource_version,
        )
    };
    let before = versions().await;
    let second = applier.apply(&desired, &opts).await.expect("second apply");
    let after = versions().await;
    checks.check(
        second.summary.apply_requests == 0
            && second
                .results
                .iter()
                .all(|r| r.status == SyncStatus::Synced && r.action == Action::Unchanged),
        || {
            format!(
                "normalised objects re-sent ({} requests):\n{}",
                second.summary.apply_requests,
                lines(&second)
            )
        },
    );
    checks.check(before == after, || {
        format!("resourceVersions moved: {before:?} -> {after:?}")
    });

    // `capstan diff` agrees: nothing to show.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("normalised.yaml");
    std::fs::write(&file, NORMALISED).expect("write");
    let out = capstan()
        .args(["diff", "-f"])
        .arg(&file)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .args(["-n", ns, "--inventory", "normalised"])
        .output()
        .expect("run capstan diff");
    checks.check(out.status.code() == Some(0) && out.stdout.is_empty(), || {
        format!("diff of the unchanged set: {}", show(&out))
    });

    // A real change is still seen and sent.
    let changed = NORMALISED.replace("password: hunter2", "password: hunter3");
    let mut desired = vec![namespace(ns)];
    desired.extend(objects(&changed));
    let third = applier.apply(&desired, &opts).await.expect("third apply");
    let got = outcome(&third);
    checks.check(
        got.get("Secret/creds") == Some(&(SyncStatus::Synced, Action::Configured))
            && third.summary.apply_requests == 1,
        || format!("a changed stringData value:\n{}", lines(&third)),
    );
}

/// `capstan diff` never prints a Secret's values.
async fn diff_masks_secrets(cluster: &TestCluster, checks: &mut Checks) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("secret.yaml");
    let secret = |password: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: masked\nstringData:\n  password: {password}\n  user: admin\n"
        )
    };
    let diff = |file: &Path| {
        capstan()
            .args(["diff", "-f"])
            .arg(file)
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .args(["-n", NS])
            .output()
            .expect("run capstan diff")
    };
    // New: every value masked.
    std::fs::write(&file, secret("s3cr3t-one")).expect("write");
    let out = diff(&file);
    let stdout = text(&out.stdout);
    checks.check(
        out.status.code() == Some(1)
            && !stdout.contains("s3cr3t")
            && !stdout.contains("admin")
            && !stdout.contains("czNjcjN0")
            && stdout.contains("+  password: '***'\n"),
        || format!("diff of a new Secret: {}", show(&out)),
    );
    // Changed: which key changed, never a value.
    let out = capstan()
        .args(["apply", "-f"])
        .arg(&file)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .args(["-n", NS])
        .output()
        .expect("apply");
    assert!(out.status.success(), "{}", show(&out));
    std::fs::write(&file, secret("s3cr3t-two")).expect("write");
    let out = diff(&file);
    let stdout = text(&out.stdout);
    checks.check(
        out.status.code() == Some(1)
            && !stdout.contains("czNjcjN0")
            && !stdout.contains("YWRtaW4=")
            && stdout.contains("-  password: '*** (before)'\n")
            && stdout.contains("+  password: '*** (after)'\n")
            && stdout.contains("   user: '***'\n"),
        || format!("diff of a changed Secret: {}", show(&out)),
    );
}

/// An empty `KUBECONFIG` file: the cause is printed once.
fn empty_kubeconfig_says_it_once(checks: &mut Checks) {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty-kubeconfig");
    std::fs::write(&empty, "").expect("write");
    let file = dir.path().join("cm.yaml");
    std::fs::write(&file, config_maps(&["cm-x"])).expect("write");
    let out = capstan()
        .args(["apply", "-f"])
        .arg(&file)
        .env("KUBECONFIG", &empty)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("run capstan apply");
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let mut parts: Vec<&str> = stderr
        .trim()
        .split(": ")
        .map(|p| p.trim_matches(|c| c == '(' || c == ')'))
        .collect();
    let all = parts.len();
    parts.sort();
    parts.dedup();
    checks.check(
        !out.status.success() && lines.len() == 1 && parts.len() == all,
        || format!("empty KUBECONFIG: {}", show(&out)),
    );
}
