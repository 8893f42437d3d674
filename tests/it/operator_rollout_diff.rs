//! `capstan rollout status --diff` against the real API server: after a rollout from v1 to
//! v2, it prints the rollout's table and then `capstan releases diff` of v1 → v2 rendered for
//! one of its Clusters, the releases fetched from the ClusterStack's source (the fake GitHub).
//! The oracle is `capstan releases diff` of the release directories the fake serves, for the
//! same Cluster read from the API server.

use std::process::Command;
use std::time::Duration;

use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::json;

use crate::operator_common::{NS, capstan_binary};
use crate::operator_rollout::{ROLLOUT, V1, V2, create_rollout, fleet, simulate, wait_phase};
use capstan_operator::api::rollout::RolloutPhase;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_status_diff_prints_the_releases_diff_of_from_to_target() {
    let test = "rollout_status_diff_prints_the_releases_diff_of_from_to_target";
    let Some((env, operator)) = fleet(test, &[("diffed-1", "all")]).await else {
        return;
    };
    // The CLI reads the releases from the ClusterStack's source, so it names the fake.
    env.stacks()
        .patch(
            "ferrol",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"github": {"apiURL": env.github.base_url()}}}})),
        )
        .await
        .expect("ClusterStack names the fake GitHub");
    let _sim = simulate(&env, Duration::from_secs(1), &[]);
    create_rollout(
        &env,
        json!({"clusterStack": "ferrol", "version": "v2", "waves": [{"name": "all"}]}),
    )
    .await;
    wait_phase(&env, &operator, RolloutPhase::Complete, Duration::from_secs(60)).await;

    let cache = tempfile::tempdir().expect("cache dir");
    let output = Command::new(capstan_binary())
        .args(["rollout", "status", ROLLOUT, "-n", NS, "--diff", "--kubeconfig"])
        .arg(env.cluster.kubeconfig_path())
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .expect("capstan rollout status --diff runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The objects the upgrade changes, as the release directories' diff names them.
    let from_to = format!("\n{V1} → {V2}\n");
    let diff = &stdout[stdout
        .find(&from_to)
        .unwrap_or_else(|| panic!("no {from_to:?} in:\n{stdout}"))..];
    let class_line = format!("  changed  cluster.x-k8s.io/ClusterClass {NS}/{V2} (was {V1})\n");
    for line in [
        class_line.as_str(),
        "  removed  apps/Deployment web\n",
        "-    clusterAddonVersion: v1\n+    clusterAddonVersion: v2\n",
    ] {
        assert!(diff.contains(line), "no {line:?} in:\n{diff}");
    }
    assert!(
        stdout[..stdout.len() - diff.len()].contains("Complete"),
        "{stdout}"
    );

    // The whole diff is `capstan releases diff` of the two releases for the same Cluster.
    let cluster: DynamicObject = env.clusters().get("diffed-1").await.expect("Cluster");
    let cluster_file = cache.path().join("cluster.json");
    std::fs::write(&cluster_file, serde_json::to_vec(&cluster).expect("JSON")).expect("write Cluster");
    let releases = capstan_testenv::shared_path("cluster-stack-releases").expect("releases");
    let oracle = Command::new(capstan_binary())
        .args(["releases", "diff"])
        .arg(releases.join(V1))
        .arg(releases.join(V2))
        .arg("--cluster")
        .arg(&cluster_file)
        .args(["-n", NS])
        .output()
        .expect("capstan releases diff runs");
    assert!(
        oracle.status.success(),
        "{}",
        String::from_utf8_lossy(&oracle.stderr)
    );
    assert_eq!(diff[1..], *String::from_utf8_lossy(&oracle.stdout));
}
