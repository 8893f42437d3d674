//! Drift and the command line against a real kube-apiserver: `capstan apply` / `capstan diff`
//! as a user runs them (kubeconfig file, exit codes, output), objects changed and deleted out
//! of band reported by `diff` and restored by `apply` without re-sending unmodified ones,
//! readiness waits, dry runs, and clear errors for bad input, an unreachable server and a
//! rejected token. One API server for the whole file.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::apply_common::*;
use capstan_apply::{Action, Applier, ApplyOptions, SyncStatus};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};

const NS: &str = "drift";

fn manifests() -> String {
    let mut text = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n");
    for i in 0..6 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  index: \"{i}\"\n  mode: desired\n"
        ));
    }
    text.push_str(
        "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - {port: 80, protocol: TCP}\n",
    );
    text
}

fn run(cmd: &str, file: &Path, kubeconfig: &Path, extra: &[&str]) -> Output {
    capstan()
        .arg(cmd)
        .arg("-f")
        .arg(file)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["-n", NS, "--inventory", "drift-test"])
        .args(extra)
        .output()
        .expect("run capstan")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_cli_waits_and_errors() {
    let test = "drift_cli_waits_and_errors";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::start(&bins, "apply-drift")
        .await
        .expect("cluster starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("app.yaml");
    std::fs::write(&file, manifests()).expect("write manifests");
    let kc = cluster.kubeconfig_path();

    // First apply through the CLI: one line per object and a summary.
    let out = run("apply", &file, kc, &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("ConfigMap/drift/cm-0 created\n"), "{stdout}");
    assert!(stdout.contains("Namespace/drift created\n"), "{stdout}");
    assert!(
        stdout.ends_with("8 created, 0 configured, 0 unchanged, 0 pruned, 0 failed\n"),
        "{stdout}"
    );

    // Nothing drifted: diff is empty and exits 0.
    let out = run("diff", &file, kc, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "");

    // Out of band: cm-1 edited, cm-2 deleted, cm-4 labelled by someone else (not drift: the
    // label is theirs).
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), NS);
    let edit = serde_json::json!({"data": {"mode": "edited"}});
    api.patch("cm-1", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .expect("edit cm-1");
    api.delete("cm-2", &DeleteParams::default())
        .await
        .expect("delete cm-2");
    let label = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm-4", "labels": {"team": "other"}}});
    api.patch("cm-4", &PatchParams::apply("other-team"), &Patch::Apply(&label))
        .await
        .expect("label cm-4");

    let out = run("diff", &file, kc, &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("--- live/ConfigMap/drift/cm-1\n+++ desired/ConfigMap/drift/cm-1\n"),
        "{stdout}"
    );
    assert!(stdout.contains("-  mode: edited\n+  mode: desired\n"), "{stdout}");
    assert!(stdout.contains("+++ desired/ConfigMap/drift/cm-2\n"), "{stdout}");
    assert!(!stdout.contains("cm-4") && !stdout.contains("cm-3"), "{stdout}");
    assert!(!stdout.contains('\x1b'), "no color when stdout is not a terminal");
    let colored = run("diff", &file, kc, &["--color", "always"]);
    assert!(text(&colored.stdout).contains("\x1b[31m-  mode: edited\x1b[0m"));

    // Re-apply only what drifted (decided by server dry run): two requests, the rest untouched.
    let applier = Applier::new(cluster.client(), cluster.server_url());
    let desired = objects(&manifests());
    let opts = ApplyOptions {
        only_drifted: true,
        ..options(NS, Some("drift-test"))
    };
    let rv_before = api.get("cm-0").await.expect("cm-0").metadata.resource_version;
    let report = applier.apply(&desired, &opts).await.expect("apply drifted");
    assert_all_synced(&report, "only drifted");
    let got = outcome(&report);
    assert_eq!(
        got["ConfigMap/cm-1"],
        (SyncStatus::Synced, Action::Configured),
        "{}",
        lines(&report)
    );
    assert_eq!(
        got["ConfigMap/cm-2"],
        (SyncStatus::Synced, Action::Created),
        "{}",
        lines(&report)
    );
    for name in ["cm-0", "cm-3", "cm-4", "cm-5"] {
        assert_eq!(
            got[&format!("ConfigMap/{name}")].1,
            Action::Unchanged,
            "{}",
            lines(&report)
        );
    }
    assert_eq!(report.summary.apply_requests, 2, "{}", lines(&report));
    assert_eq!(
        api.get("cm-0").await.expect("cm-0").metadata.resource_version,
        rv_before
    );
    let cm1 = api.get("cm-1").await.expect("cm-1").data.unwrap_or_default();
    assert_eq!(cm1.get("mode").map(String::as_str), Some("desired"));
    let cm4 = api
        .get("cm-4")
        .await
        .expect("cm-4")
        .metadata
        .labels
        .unwrap_or_default();
    assert_eq!(
        cm4.get("team").map(String::as_str),
        Some("other"),
        "others' fields stay"
    );

    // The default (hash) path restores a changed object and sends nothing else.
    api.patch("cm-3", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .expect("edit cm-3");
    let report = applier
        .apply(&desired, &options(NS, Some("drift-test")))
        .await
        .expect("apply");
    assert_eq!(
        outcome(&report)["ConfigMap/cm-3"].1,
        Action::Configured,
        "{}",
        lines(&report)
    );
    assert_eq!(report.summary.apply_requests, 1, "{}", lines(&report));
    assert_eq!(report.summary.unchanged, 7);
    let out = run("diff", &file, kc, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    // -o json: the per-object results.
    let out = run("apply", &file, kc, &["-o", "json"]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let results = json["results"].as_array().expect("results");
    assert_eq!(results.len(), 8);
    assert_eq!(results[1]["kind"], "ConfigMap");
    assert_eq!(results[1]["status"], "Synced");
    assert_eq!(results[1]["action"], "unchanged");
    assert!(results[1]["lastAppliedHash"].is_string());

    dry_run_changes_nothing(&cluster, dir.path()).await;
    waits(&applier).await;
    ready_condition(&applier, &cluster).await;
    errors(&cluster, dir.path(), &file).await;
}

async fn dry_run_changes_nothing(cluster: &TestCluster, dir: &Path) {
    let file = dir.join("new.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\ndata: {a: b}\n",
    )
    .expect("write");
    let out = run("apply", &file, cluster.kubeconfig_path(), &["--dry-run"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("ConfigMap/drift/dry created (server dry run)"),
        "{stdout}"
    );
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), NS);
    assert!(api.get_opt("dry").await.expect("get").is_none());
}

/// `--wait`: a ConfigMap is ready at once; a Deployment never rolls out here (no controller
/// manager runs) and fails when the wait runs out.
async fn waits(applier: &Applier) {
    let text = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: ready-at-once}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: never-ready}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: x, image: example.invalid/x}]
";
    let opts = ApplyOptions {
        wait: Some(Duration::from_secs(2)),
        ..options(NS, None)
    };
    let report = applier.apply(&objects(text), &opts).await.expect("apply");
    let by_name: BTreeMap<&str, _> = report.results.iter().map(|r| (r.key.name.as_str(), r)).collect();
    assert_eq!(by_name["ready-at-once"].status, SyncStatus::Synced);
    let deploy = by_name["never-ready"];
    assert_eq!(deploy.status, SyncStatus::Failed, "{}", deploy.line());
    assert!(
        deploy.message.starts_with("not ready within 2s: "),
        "{}",
        deploy.message
    );
}

/// `--wait` on a custom resource follows its `Ready` condition.
async fn ready_condition(applier: &Applier, cluster: &TestCluster) {
    let text = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gauges.test.capstan.dev}
spec:
  group: test.capstan.dev
  scope: Namespaced
  names: {plural: gauges, singular: gauge, kind: Gauge}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: test.capstan.dev/v1
kind: Gauge
metadata: {name: level}
spec: {target: 3}
";
    let desired = objects(text);
    let report = applier.apply(&desired, &options(NS, None)).await.expect("apply");
    assert_all_synced(&report, "gauge");
    let gvk = kube::api::GroupVersionKind::gvk("test.capstan.dev", "v1", "Gauge");
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        cluster.client(),
        NS,
        &kube::api::ApiResource::from_gvk_with_plural(&gvk, "gauges"),
    );
    let set_ready = |status: &'static str| {
        let api = api.clone();
        async move {
            let patch = serde_json::json!({"status": {"conditions": [
                {"type": "Ready", "status": status, "reason": "Filling", "message": "2 of 3"}]}});
            api.patch_status("level", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .expect("patch status");
        }
    };
    let waiting = ApplyOptions {
        wait: Some(Duration::from_secs(1)),
        ..options(NS, None)
    };
    set_ready("False").await;
    let report = applier.apply(&desired, &waiting).await.expect("apply and wait");
    let gauge = report
        .results
        .iter()
        .find(|r| r.key.kind == "Gauge")
        .expect("gauge result");
    assert_eq!(gauge.status, SyncStatus::Failed, "{}", gauge.line());
    assert_eq!(gauge.message, "not ready within 1s: Ready: Filling: 2 of 3");
    set_ready("True").await;
    let report = applier.apply(&desired, &waiting).await.expect("apply and wait");
    assert_all_synced(&report, "gauge ready");
}

async fn errors(cluster: &TestCluster, dir: &Path, good: &Path) {
    // A document without `kind`: named by file and index; nothing is applied.
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n",
    )
    .expect("write");
    let out = run("apply", &bad, cluster.kubeconfig_path(), &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains(&format!("{} (document 2): missing kind", bad.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    // A token the server does not know.
    let kubeconfig = std::fs::read_to_string(cluster.kubeconfig_path()).expect("kubeconfig");
    let mut doc: serde_json::Value = serde_json::from_str(&kubeconfig).expect("JSON kubeconfig");
    doc["users"][0]["user"]["token"] = "expired-or-invalid".into();
    let bad_token = dir.join("bad-token.kubeconfig");
    std::fs::write(&bad_token, doc.to_string()).expect("write");
    let out = run("apply", good, &bad_token, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains(&format!(
            "the Kubernetes API server {} rejected the credentials",
            cluster.server_url()
        )),
        "{stderr}"
    );

    // A server that is not there (a port nothing listens on).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let url = format!("https://127.0.0.1:{port}");
    doc["clusters"][0]["cluster"]["server"] = url.clone().into();
    let unreachable = dir.join("unreachable.kubeconfig");
    std::fs::write(&unreachable, doc.to_string()).expect("write");
    let out = run("diff", good, &unreachable, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "diff errors exit 2: {stderr}");
    assert!(
        stderr.contains(&format!("cannot reach the Kubernetes API server {url}")),
        "{stderr}"
    );
}
