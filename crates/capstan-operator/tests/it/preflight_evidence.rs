//! Pre-flight evidence read from a real kube-apiserver (v1.20: it still serves
//! `extensions/v1beta1` Ingresses and reports their requests with `removed_release="1.22"`)
//! and from a real release's charts: the API server's record, stored Helm release Secrets, and
//! the target release rendered for a Cluster.

use std::io::Write;

use base64::Engine;
use capstan_operator::testing::preflight::render::target_renders;
use capstan_operator::testing::preflight::{
    Evidence, REQUESTED_APIS_CHECK, TARGET_RENDERS_CHECK, helm, workload,
};
use capstan_operator::testing::rollout::preflight::REMOVED_APIS_CHECK;
use capstan_stack::name::KubernetesVersion;
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, PostParams};
use serde_json::json;

fn k8s(text: &str) -> KubernetesVersion {
    KubernetesVersion::parse(text).expect("version")
}

/// The check `check` of a step to `to` with `evidence`: (ok, reason).
fn verdict(evidence: &Evidence, to: &str, check: &str) -> (bool, String) {
    let results = evidence.verdicts(k8s(to));
    let found = results
        .iter()
        .find(|r| r.check == check)
        .unwrap_or_else(|| panic!("{check} in {results:?}"));
    (found.ok, found.reason.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_api_requested_on_the_api_server_blocks_a_step_to_the_minor_that_removed_it() {
    let test = "a_removed_api_requested_on_the_api_server_blocks_a_step_to_the_minor_that_removed_it";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, test)
        .await
        .expect("cluster starts");
    let client = cluster.client();
    let request = http::Request::get("/apis/extensions/v1beta1/ingresses")
        .body(Vec::new())
        .expect("request");
    client
        .request_text(request)
        .await
        .expect("v1.20 serves extensions/v1beta1 Ingresses");

    let requested = workload::requested_apis(&client, "the test's API server")
        .await
        .expect("/metrics read");
    let evidence = Evidence {
        requested: Some(Ok(requested)),
        in_use: Some(Ok(vec![])),
        ..Evidence::default()
    };
    let (ok, reason) = verdict(&evidence, "1.21", REQUESTED_APIS_CHECK);
    assert!(ok, "{reason}");
    assert!(reason.contains("starts at its last restart"), "{reason}");
    let (ok, reason) = verdict(&evidence, "1.22", REQUESTED_APIS_CHECK);
    assert!(!ok);
    assert!(
        reason.contains(
            "extensions/v1beta1 ingresses requested since the API server started (removed in 1.22)"
        ),
        "{reason}"
    );
    assert!(!verdict(&evidence, "1.27", REQUESTED_APIS_CHECK).0);
}

/// What Helm stores in a release Secret's `release` key: base64 of gzip of the record.
fn helm_record(name: &str, namespace: &str, revision: u64, manifest: &str) -> String {
    let record = json!({"name": name, "namespace": namespace, "version": revision,
                        "info": {"status": "deployed"}, "manifest": manifest});
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(record.to_string().as_bytes()).expect("gzip");
    base64::engine::general_purpose::STANDARD.encode(gz.finish().expect("gzip"))
}

async fn store_helm_release(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    revision: u64,
    manifest: &str,
) {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("sh.helm.release.v1.{name}.v{revision}"), "namespace": namespace,
                     "labels": {"owner": "helm", "name": name, "version": revision.to_string()}},
        "type": helm::RELEASE_SECRET_TYPE,
        "data": {"release": base64::engine::general_purpose::STANDARD
            .encode(helm_record(name, namespace, revision, manifest))},
    }))
    .expect("Secret");
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .expect("release Secret stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_helm_release_with_a_removed_api_blocks() {
    let test = "a_stored_helm_release_with_a_removed_api_blocks";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, test)
        .await
        .expect("cluster starts");
    let client = cluster.client();
    let namespace = "preflight-helm";
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("Namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let cronjob = "---\n# Source: backup/templates/cronjob.yaml\napiVersion: batch/v1beta1\nkind: CronJob\nmetadata:\n  name: backup\n";
    let fixed = "---\napiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: backup\n";
    // `backup` still uses batch/v1beta1; `web` did in revision 1 and does not any more.
    store_helm_release(&client, namespace, "backup", 1, cronjob).await;
    store_helm_release(&client, namespace, "web", 1, cronjob).await;
    store_helm_release(&client, namespace, "web", 2, fixed).await;

    let in_use = helm::stored_release_apis(&client).await.expect("releases read");
    let evidence = Evidence {
        requested: Some(Ok(vec![])),
        in_use: Some(Ok(in_use)),
        ..Evidence::default()
    };
    assert!(verdict(&evidence, "1.24", REMOVED_APIS_CHECK).0);
    let (ok, reason) = verdict(&evidence, "1.25", REMOVED_APIS_CHECK);
    assert!(!ok);
    assert_eq!(
        reason,
        "uses APIs Kubernetes 1.25 no longer serves: batch/v1beta1 CronJob in Helm release preflight-helm/backup revision 1 (removed in 1.25; use batch/v1)"
    );
}

/// The example stack built as a release into `dir`, its cluster-info chart's `kubeVersion`
/// set to `kube_version`.
fn example_release(dir: &std::path::Path, kube_version: &str) -> capstan_stack::release::Release {
    let source = dir.join("example");
    copy_dir(
        &std::path::Path::new(capstan_testenv::REPO_ROOT).join("stacks/example"),
        &source,
    );
    let chart = source.join("cluster-addon/cluster-info/Chart.yaml");
    let text = std::fs::read_to_string(&chart).expect("Chart.yaml");
    assert!(text.contains("kubeVersion: \">=1.25.0-0\""), "{text}");
    std::fs::write(&chart, text.replace(">=1.25.0-0", kube_version)).expect("Chart.yaml written");
    let version = capstan_stack::Version::parse("v1").expect("version");
    capstan_stack::build::build(&source, &version, &dir.join("release")).expect("example release builds")
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).expect("copy");
        }
    }
}

#[test]
fn an_addon_chart_whose_kube_version_refuses_the_target_fails_the_render_check() {
    let cluster = capstan_stack::values::parse_object(
        &json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                "metadata": {"name": "prod-1", "namespace": "tenant"},
                "spec": {"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443},
                         "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]},
                                            "services": {"cidrBlocks": ["10.96.0.0/12"]}},
                         "topology": {"class": "docker-example-1-29-v1", "version": "v1.29.4",
                                      "controlPlane": {"replicas": 1}}}})
        .to_string(),
        std::path::Path::new("Cluster"),
    )
    .expect("Cluster");
    let objects = capstan_stack::values::ClusterObjects {
        cluster,
        control_plane: None,
        infra_cluster: None,
    };
    let mut rows = Vec::new();
    for (constraint, ok) in [(">=1.25.0-0", true), ("<1.30.0-0", false)] {
        let dir = tempfile::tempdir().expect("temp dir");
        let release = example_release(dir.path(), constraint);
        let target = KubernetesVersion::parse_release(&release.metadata().kubernetes).expect("its version");
        let compiled = capstan_stack::render::CompiledRelease::new(&release).expect("compiles");
        let rendered = target_renders(&compiled, &objects, &[]);
        let verdict = rendered.verdict(target);
        assert_eq!(verdict.check, TARGET_RENDERS_CHECK);
        assert_eq!(verdict.ok, ok, "kubeVersion {constraint}: {}", verdict.reason);
        rows.push(verdict.reason);
    }
    assert!(
        rows[0].ends_with("renders for this Cluster at 1.30"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].contains("does not render for this Cluster") && rows[1].contains("kubeVersion"),
        "{}",
        rows[1]
    );
}
