//! A rollout's pre-flight on the real API server: the workload cluster of the Cluster is the
//! test's own v1.20 API server (its `<cluster>-kubeconfig` Secret names it), where the test
//! requests `extensions/v1beta1` Ingresses — an API Kubernetes 1.22 removed, so a step to the
//! target release (Kubernetes 1.27) is blocked until someone lets the Cluster go.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::operator_common::{NS, eventually};
use crate::operator_rollout::{
    ROLLOUT, V1, V2, create_rollout, fleet, rollouts, simulate, topology, wait_phase,
};
use capstan_operator::api::rollout::{ClusterPhase, ClusterRolloutStatus, RolloutPhase};

const CLUSTER: &str = "preflight-1";
/// A Cluster outside the rollout, without a workload cluster yet (no kubeconfig Secret).
const UNREACHED: &str = "preflight-2";

/// `capstan preflight CLUSTER --to ferrol@v2 -n tenant ARGS…` with the shared release v2's
/// files: exit code and stdout.
fn preflight_cli(env: &crate::operator_common::Env, cluster: &str, args: &[&str]) -> (i32, String) {
    let release =
        capstan_testenv::shared_path(&format!("cluster-stack-releases/{V2}")).expect("shared release");
    let output = std::process::Command::new(crate::operator_common::capstan_binary())
        .args(["preflight", cluster, "--to", "ferrol@v2", "-n", NS, "--release"])
        .arg(release)
        .args(args)
        .arg("--kubeconfig")
        .arg(env.cluster.kubeconfig_path())
        .output()
        .expect("capstan preflight runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    eprintln!(
        "capstan preflight {cluster} {args:?}:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), stdout)
}

/// `capstan rollout plan -f ROLLOUT --kubeconfig MANAGEMENT ARGS…` for a rollout of `spec`,
/// reading the releases from the operator's cache: stdout (exit code 0 asserted).
fn plan_cli(env: &crate::operator_common::Env, spec: &serde_json::Value, args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("rollout.yaml");
    let rollout = json!({"apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
                         "metadata": {"name": "ferrol", "namespace": NS}, "spec": spec});
    std::fs::write(&file, rollout.to_string()).expect("write the rollout");
    let output = std::process::Command::new(crate::operator_common::capstan_binary())
        .args(["rollout", "plan", "-f"])
        .arg(&file)
        .arg("--kubeconfig")
        .arg(env.cluster.kubeconfig_path())
        .arg("--cache")
        .arg(env.cache.path())
        .args(args)
        .output()
        .expect("capstan rollout plan runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    eprintln!(
        "capstan rollout plan {args:?}:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{stdout}");
    stdout
}

/// Writes `text` as Cluster `name`'s kubeconfig Secret, as Cluster API does.
async fn put_kubeconfig(env: &crate::operator_common::Env, name: &str, text: &str) {
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-kubeconfig"), "namespace": NS},
        "stringData": {"value": text},
    }))
    .expect("Secret");
    kube::api::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client(), NS)
        .create(&Default::default(), &secret)
        .await
        .expect("kubeconfig Secret");
}

async fn delete_kubeconfig(env: &crate::operator_common::Env, name: &str) {
    kube::api::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client(), NS)
        .delete(&format!("{name}-kubeconfig"), &Default::default())
        .await
        .expect("kubeconfig Secret deleted");
}

async fn cluster_status(env: &crate::operator_common::Env) -> Option<ClusterRolloutStatus> {
    let rollout = rollouts(env).get(ROLLOUT).await.ok()?;
    let key = format!("{NS}/{CLUSTER}");
    rollout.status?.clusters.into_iter().find(|c| c.name == key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_api_requested_on_the_workload_cluster_blocks_the_switch_until_forced() {
    let test = "a_removed_api_requested_on_the_workload_cluster_blocks_the_switch_until_forced";
    let Some((env, operator)) = fleet(test, &[(CLUSTER, "all"), (UNREACHED, "none")]).await else {
        return;
    };
    env.write_kubeconfig(CLUSTER, &env.cluster).await;
    let request = http::Request::get("/apis/extensions/v1beta1/ingresses")
        .body(Vec::new())
        .expect("request");
    env.client()
        .request_text(request)
        .await
        .expect("v1.20 serves extensions/v1beta1 Ingresses");
    let sim = simulate(&env, Duration::from_secs(1), &[]);
    let spec = json!({"clusterStack": "ferrol", "version": "v2",
           "waves": [{"name": "all", "clusterSelector": {"matchLabels": {"ring": "all"}}}],
           "preflight": {"checks": [{
               "name": "marker",
               "objects": [{"key": "marker", "apiVersion": "v1", "kind": "ConfigMap",
                            "name": "upgrade-ready", "namespace": "default"}],
               "conditions": "marker.data.ready == 'yes'"}]}});
    create_rollout(&env, spec.clone()).await;

    // onBlocked: Halt (the default).
    wait_phase(&env, &operator, RolloutPhase::Halted, Duration::from_secs(90)).await;
    let status = cluster_status(&env).await.expect("the Cluster in the status");
    assert_eq!(status.phase, ClusterPhase::Blocked, "{status:?}");
    let requested = status
        .preflight
        .iter()
        .find(|r| r.check == "RequestedAPIs")
        .unwrap_or_else(|| panic!("the API server's record in {status:?}"));
    assert!(!requested.ok, "{status:?}");
    assert!(
        requested.reason.contains(
            "extensions/v1beta1 ingresses requested since the API server started (removed in 1.22)"
        ),
        "{requested:?}"
    );
    // The target renders for it, nothing stored uses a removed API and its control plane runs
    // the stack's minor; the user's check reads a ConfigMap that does not exist.
    let others: Vec<(&str, bool)> = status
        .preflight
        .iter()
        .map(|r| (r.check.as_str(), r.ok))
        .collect();
    assert_eq!(
        others,
        [
            ("RequestedAPIs", false),
            ("RemovedAPIs", true),
            ("TargetRenders", true),
            ("VersionSkew", true),
            ("Check marker", false)
        ],
        "{status:?}"
    );
    assert_eq!(
        topology(&env, CLUSTER).await.0,
        V1,
        "a blocked Cluster is never switched"
    );

    // `capstan preflight` says the same, per check, and exits 1.
    let (code, table) = preflight_cli(&env, CLUSTER, &[]);
    assert_eq!(code, 1, "{table}");
    assert!(
        table.starts_with(&format!(
            "Cluster {NS}/{CLUSTER} to {V2} (Kubernetes v1.27.3): BLOCKED\n"
        )),
        "{table}"
    );
    assert!(
        table.contains(
            "RequestedAPIs  blocks   uses APIs Kubernetes 1.27 no longer serves: extensions/v1beta1 ingresses"
        ),
        "{table}"
    );
    assert!(
        table.contains(&format!(
            "TargetRenders  ok       {V2} renders for this Cluster at 1.27"
        )),
        "{table}"
    );
    assert!(
        table.contains("Note: the API server's record of deprecated requests starts at its last restart"),
        "{table}"
    );
    let (code, json) = preflight_cli(&env, CLUSTER, &["-o", "json"]);
    assert_eq!(code, 1);
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(json["blocked"], true);
    assert_eq!(json["preflight"][0]["check"], "RequestedAPIs");
    assert_eq!(json["preflight"][0]["ok"], false);
    // A Cluster with no workload API server yet: nothing in use there, and the target renders.
    let (code, table) = preflight_cli(&env, UNREACHED, &[]);
    assert_eq!(code, 0, "{table}");
    assert!(
        table.contains("RequestedAPIs  ok       no workload API server yet"),
        "{table}"
    );

    // `capstan rollout plan --kubeconfig` runs the same pre-flight per Cluster of the plan.
    let plan = plan_cli(&env, &spec, &[]);
    assert!(
        plan.contains(&format!(
            "{NS}/{CLUSTER}  BLOCKED by RequestedAPIs: uses APIs Kubernetes 1.27 no longer serves: extensions/v1beta1 ingresses"
        )),
        "{plan}"
    );
    assert!(
        plan.contains(&format!("{NS}/{CLUSTER}  {V2} (v1.27.3)")),
        "{plan}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&plan_cli(&env, &spec, &["-o", "json"])).expect("JSON");
    assert_eq!(
        json["clusters"][0]["cluster"],
        format!("{NS}/{CLUSTER}"),
        "{json}"
    );
    assert_eq!(json["clusters"][0]["path"][0]["release"], V2, "{json}");
    let checks: Vec<(String, bool)> = json["clusters"][0]["preflight"]
        .as_array()
        .unwrap_or_else(|| panic!("pre-flight results in {json}"))
        .iter()
        .map(|r| {
            (
                r["check"].as_str().unwrap_or_default().to_string(),
                r["ok"] == true,
            )
        })
        .collect();
    assert_eq!(
        checks,
        [
            ("RequestedAPIs".to_string(), false),
            ("RemovedAPIs".to_string(), true),
            ("TargetRenders".to_string(), true)
        ],
        "{json}"
    );
    assert!(
        json["clusters"][0]["preflight"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("extensions/v1beta1 ingresses")),
        "{json}"
    );
    // A Cluster whose workload API server cannot be reached is a result, not a failure of
    // the plan: its kubeconfig names a port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = closed.local_addr().expect("address").port();
    drop(closed);
    let unreachable = std::fs::read_to_string(env.cluster.kubeconfig_path())
        .expect("kubeconfig")
        .replace(env.cluster.server_url(), &format!("https://127.0.0.1:{port}"));
    put_kubeconfig(&env, UNREACHED, &unreachable).await;
    let everyone = json!({"clusterStack": "ferrol", "version": "v2", "waves": [{"name": "all"}]});
    let json: serde_json::Value =
        serde_json::from_str(&plan_cli(&env, &everyone, &["-o", "json"])).expect("JSON");
    let unreached = json["clusters"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["cluster"] == format!("{NS}/{UNREACHED}")))
        .unwrap_or_else(|| panic!("{UNREACHED} in {json}"));
    assert_eq!(unreached["preflight"][0]["check"], "RequestedAPIs", "{json}");
    assert_eq!(unreached["preflight"][0]["ok"], false, "{json}");
    assert!(
        unreached["preflight"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("the workload cluster cannot be read")),
        "{json}"
    );
    delete_kubeconfig(&env, UNREACHED).await;

    // Let it go: force (who) and resume the halted rollout.
    let annotations = json!({"metadata": {"annotations": {
        "capstan.dev/force": format!("{NS}/{CLUSTER}@tester"),
        "capstan.dev/resume": "once"}}});
    rollouts(&env)
        .patch(ROLLOUT, &PatchParams::default(), &Patch::Merge(&annotations))
        .await
        .expect("annotated");
    wait_phase(&env, &operator, RolloutPhase::Complete, Duration::from_secs(90)).await;
    assert_eq!(topology(&env, CLUSTER).await.0, V2);
    let status = cluster_status(&env).await.expect("the Cluster in the status");
    let forced = status
        .forced
        .clone()
        .unwrap_or_else(|| panic!("forced in {status:?}"));
    assert_eq!(forced.by, "tester");
    sim.snapshot(|record| assert_eq!(record.switches_of(CLUSTER).len(), 1));
    // The evidence stays with the Cluster.
    eventually(
        "the status keeps the evidence",
        Duration::from_secs(5),
        &operator,
        || async {
            let status = cluster_status(&env).await?;
            status
                .preflight
                .iter()
                .any(|r| r.check == "RequestedAPIs" && !r.ok)
                .then_some(())
        },
    )
    .await;
}

/// What Helm stores in a release Secret's `release` key: base64 of gzip of the record.
fn helm_record(name: &str, namespace: &str, revision: u64, manifest: &str) -> String {
    use base64::Engine;
    use std::io::Write;
    let record = json!({"name": name, "namespace": namespace, "version": revision,
                        "info": {"status": "deployed"}, "manifest": manifest});
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(record.to_string().as_bytes()).expect("gzip");
    base64::engine::general_purpose::STANDARD.encode(gz.finish().expect("gzip"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_helm_release_with_a_removed_api_blocks_and_skip_goes_on_without_it() {
    use base64::Engine;
    let test = "a_stored_helm_release_with_a_removed_api_blocks_and_skip_goes_on_without_it";
    let Some((env, operator)) = fleet(test, &[(CLUSTER, "all"), (UNREACHED, "all")]).await else {
        return;
    };
    env.write_kubeconfig(CLUSTER, &env.cluster).await;
    let manifest = "---\n# Source: backup/templates/cronjob.yaml\napiVersion: batch/v1beta1\nkind: CronJob\nmetadata:\n  name: backup\n";
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": {"name": "sh.helm.release.v1.backup.v1", "namespace": "default",
                     "labels": {"owner": "helm", "name": "backup", "version": "1"}},
        "type": "helm.sh/release.v1",
        "data": {"release": base64::engine::general_purpose::STANDARD
            .encode(helm_record("backup", "default", 1, manifest))},
    }))
    .expect("Secret");
    kube::api::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client(), "default")
        .create(&Default::default(), &secret)
        .await
        .expect("release Secret stored");
    let sim = simulate(&env, Duration::from_secs(1), &[]);
    create_rollout(
        &env,
        json!({"clusterStack": "ferrol", "version": "v2", "waves": [{"name": "all", "maxInFlight": 2}],
               "preflight": {"onBlocked": "Skip"}}),
    )
    .await;

    // Skip: the other Cluster (no workload cluster yet) is switched, the rollout completes.
    wait_phase(&env, &operator, RolloutPhase::Complete, Duration::from_secs(90)).await;
    assert_eq!(topology(&env, UNREACHED).await.0, V2);
    assert_eq!(
        topology(&env, CLUSTER).await.0,
        V1,
        "a blocked Cluster is never switched"
    );
    let status = cluster_status(&env).await.expect("the Cluster in the status");
    assert_eq!(status.phase, ClusterPhase::Blocked, "{status:?}");
    let removed = status
        .preflight
        .iter()
        .find(|r| r.check == "RemovedAPIs")
        .unwrap_or_else(|| panic!("RemovedAPIs in {status:?}"));
    assert!(!removed.ok, "{status:?}");
    assert_eq!(
        removed.reason,
        "uses APIs Kubernetes 1.27 no longer serves: batch/v1beta1 CronJob in Helm release default/backup revision 1 (removed in 1.25; use batch/v1)"
    );
    sim.snapshot(|record| assert!(record.switches_of(CLUSTER).is_empty()));
}

/// Where Cluster API serves only v1beta2 the workers are read at v1beta2 (issue 47): a
/// MachineDeployment whose spec is at the target but two of whose machines still run
/// Kubernetes 1.24 (`status.versions`, three minors behind 1.27, which allows two) blocks the
/// step on its version skew, and the Cluster is never switched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_too_far_behind_block_the_step_on_v1beta2() {
    let test = "workers_too_far_behind_block_the_step_on_v1beta2";
    // This process (the simulator, the helpers) speaks v1beta2 too.
    capstan_operator::testing::capi_api::set(capstan_operator::testing::capi_api::Choice::Chosen(
        capstan_stack::capi::CapiVersion::V1Beta2,
    ));
    let Some((env, operator)) = crate::operator_rollout::fleet_on(
        test,
        &[(CLUSTER, "all")],
        capstan_stack::capi::CapiVersion::V1Beta2,
    )
    .await
    else {
        return;
    };
    let deployments = env.dynamic_in(NS, "cluster.x-k8s.io", "v1beta2", "MachineDeployment");
    let reference = |group: &str, kind: &str| json!({"apiGroup": group, "kind": kind, "name": "md-0"});
    let made: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
        "metadata": {"name": "md-0", "namespace": NS,
                     "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
        "spec": {"clusterName": CLUSTER, "selector": {"matchLabels": {"pool": "md-0"}},
                 "template": {"metadata": {"labels": {"pool": "md-0"}},
                              "spec": {"clusterName": CLUSTER, "version": "v1.27.2",
                                       "bootstrap": {"configRef": reference("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate")},
                                       "infrastructureRef": reference("infrastructure.cluster.x-k8s.io", "DockerMachineTemplate")}}},
    }))
    .expect("MachineDeployment");
    deployments
        .create(&kube::api::PostParams::default(), &made)
        .await
        .expect("MachineDeployment created");
    deployments
        .patch_status(
            "md-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"versions": [
                {"version": "v1.24.9", "replicas": 2}, {"version": "v1.27.2", "replicas": 1}]}})),
        )
        .await
        .expect("MachineDeployment status");
    let sim = simulate(&env, Duration::from_secs(1), &[]);
    create_rollout(
        &env,
        json!({"clusterStack": "ferrol", "version": "v2",
               "waves": [{"name": "all", "clusterSelector": {"matchLabels": {"ring": "all"}}}]}),
    )
    .await;
    wait_phase(&env, &operator, RolloutPhase::Halted, Duration::from_secs(90)).await;
    let status = cluster_status(&env).await.expect("the Cluster in the status");
    assert_eq!(status.phase, ClusterPhase::Blocked, "{status:?}");
    let skew = status
        .preflight
        .iter()
        .find(|r| r.check == "VersionSkew")
        .unwrap_or_else(|| panic!("the version skew in {status:?}"));
    assert!(!skew.ok, "{status:?}");
    assert_eq!(
        skew.reason, "MachineDeployment md-0 (2 machines) runs 1.24, 3 minors behind 1.27 (at most 2)",
        "{status:?}"
    );
    assert_eq!(
        topology(&env, CLUSTER).await.0,
        V1,
        "a blocked Cluster is never switched"
    );
    sim.snapshot(|record| assert!(record.switches_of(CLUSTER).is_empty()));
}
