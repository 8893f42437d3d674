//! Issue 48 on the real API server: a ClusterStackRollout across stacks (`from: auto`) moves a
//! Cluster two Kubernetes minors behind one minor per step. The releases of three minors are
//! built in the test from `stacks/example` (its `csctl.yaml` at 1.27, 1.28 and 1.29); the
//! Cluster API simulator (`rollout_sim`) plays Cluster API and the addon controller. Without
//! the ClusterStack of the minor in between the Cluster is Blocked with that reason and the
//! rollout halts (`onBlocked: Halt`); once the stack is there and the rollout resumed, the
//! Cluster is switched to 1.28, judged healthy there, and only then switched to 1.29.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::operator_common::{Env, REPO, eventually};
use crate::rollout_sim::{self, Simulator};
use capstan_operator::api::ClusterStack;
use capstan_operator::api::rollout::{ClusterPhase, ClusterStackRollout, RolloutPhase};

const ROLLOUT: &str = "to-1-29";

/// Release `docker-example-1-<minor>-v1` of `stacks/example` at Kubernetes `v1.<minor>.4`,
/// built into `dir`. The addon controller does not run here, so its charts' `kubeVersion`
/// is left as it is.
fn release_of_minor(dir: &Path, minor: u32) -> PathBuf {
    let source = dir.join(format!("example-1-{minor}"));
    crate::git_source::copy_dir(
        &Path::new(capstan_testenv::REPO_ROOT).join("stacks/example"),
        &source,
    );
    let csctl = source.join("csctl.yaml");
    let text = std::fs::read_to_string(&csctl).expect("csctl.yaml");
    assert!(text.contains("kubernetesVersion: v1.30.4"), "{text}");
    std::fs::write(
        &csctl,
        text.replacen(
            "kubernetesVersion: v1.30.4",
            &format!("kubernetesVersion: v1.{minor}.4"),
            1,
        ),
    )
    .expect("write csctl.yaml");
    let out = dir.join(format!("docker-example-1-{minor}-v1"));
    let version = capstan_stack::Version::parse("v1").expect("version");
    capstan_stack::build::build(&source, &version, &out).expect("release builds");
    out
}

async fn create_stack(env: &Env, minor: u32) {
    let stack: ClusterStack = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": format!("example-1-{minor}"), "namespace": env.ns},
        "spec": {
            "provider": "docker", "name": "example", "kubernetesVersion": format!("1.{minor}"),
            "channel": "stable", "autoSubscribe": true, "versions": [], "interval": "5s",
            "source": {"github": {"owner": "scs", "repo": "cluster-stacks"}},
        }
    }))
    .expect("ClusterStack");
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .expect("ClusterStack created");
}

async fn wait_ready(env: &Env, operator: &capstan_testenv::ChildGuard, want: &[&str]) {
    eventually(
        &format!("{want:?} ready"),
        Duration::from_secs(120),
        operator,
        || async {
            let ready = env.ready_releases().await;
            want.iter().all(|r| ready.iter().any(|n| n == r)).then_some(())
        },
    )
    .await;
}

async fn status_of(
    rollouts: &Api<ClusterStackRollout>,
) -> Option<capstan_operator::api::rollout::ClusterStackRolloutStatus> {
    rollouts.get(ROLLOUT).await.ok()?.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_two_minors_behind_walks_its_path_and_a_missing_minor_blocks_it() {
    let test = "a_cluster_two_minors_behind_walks_its_path_and_a_missing_minor_blocks_it";
    let Some(env) = crate::operator_common::start_shared(test, &[]).await else {
        return;
    };
    let built = tempfile::tempdir().expect("temp dir");
    for minor in [27, 28, 29] {
        let release = release_of_minor(built.path(), minor);
        env.github
            .add_release_dir(REPO, &release)
            .expect("release published");
    }
    let operator = env.operator(0, &["--controllers", "*,-clusteraddon"]);
    // No ClusterStack of 1.28 yet.
    create_stack(&env, 27).await;
    create_stack(&env, 29).await;
    wait_ready(
        &env,
        &operator,
        &["docker-example-1-27-v1", "docker-example-1-29-v1"],
    )
    .await;
    rollout_sim::create_cluster(
        &env.client(),
        &env.ns,
        "old",
        "docker-example-1-27-v1",
        "v1.27.4",
        json!({"ring": "all"}),
    )
    .await;
    let sim = Simulator {
        namespace: env.ns.clone(),
        upgrade: Duration::from_secs(1),
        wave_label: "ring".into(),
        failing: Default::default(),
    }
    .run(env.client());
    // The operator has seen the Cluster (its ClusterAddon exists) before the rollout starts: a
    // rollout that finds no Cluster completes at once, and a Cluster that appears after a
    // rollout completed waits for the next one.
    let addons: Api<capstan_operator::api::ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    let addon = capstan_operator::api::cluster_addon::addon_name("old");
    eventually(
        "the operator sees Cluster old",
        Duration::from_secs(60),
        &operator,
        || async { addons.get_opt(&addon).await.ok().flatten().map(|_| ()) },
    )
    .await;

    let rollouts: Api<ClusterStackRollout> = Api::namespaced(env.client(), &env.ns);
    let rollout: ClusterStackRollout = serde_json::from_value(json!({
        "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
        "metadata": {"name": ROLLOUT, "namespace": env.ns},
        "spec": {"clusterStack": "example-1-29", "from": "auto", "waves": [{"name": "all"}],
                 "health": {"timeout": "2m"}},
    }))
    .expect("ClusterStackRollout");
    rollouts
        .create(&PostParams::default(), &rollout)
        .await
        .expect("rollout created");

    // Blocked with the reason, never switched; onBlocked: Halt halts the rollout.
    let key = format!("{}/old", env.ns);
    let message = eventually(
        "old Blocked, the rollout Halted",
        Duration::from_secs(60),
        &operator,
        || async {
            let status = status_of(&rollouts).await?;
            let old = status.clusters.iter().find(|c| c.name == key)?;
            (old.phase == ClusterPhase::Blocked && status.phase == RolloutPhase::Halted)
                .then(|| old.message.clone())
        },
    )
    .await;
    assert_eq!(
        message.as_deref(),
        Some(
            "no path to docker-example-1-29-v1: no ClusterStack for Kubernetes 1.28 (provider docker, name example): a Cluster never skips a minor"
        )
    );
    assert!(
        sim.snapshot(|r| r.switches_of("old").is_empty()),
        "a blocked Cluster was switched"
    );

    // The stack in between comes; the user resumes.
    create_stack(&env, 28).await;
    wait_ready(&env, &operator, &["docker-example-1-28-v1"]).await;
    rollouts
        .patch(
            ROLLOUT,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"capstan.dev/resume": "after-1-28"}}})),
        )
        .await
        .expect("resume annotation");
    eventually(
        "the rollout Complete",
        Duration::from_secs(120),
        &operator,
        || async { (status_of(&rollouts).await?.phase == RolloutPhase::Complete).then_some(()) },
    )
    .await;

    let status = status_of(&rollouts).await.expect("status");
    let old = status
        .clusters
        .iter()
        .find(|c| c.name == key)
        .expect("old's status");
    assert_eq!(old.phase, ClusterPhase::Healthy);
    let path: Vec<(&str, Option<&str>)> = old
        .path
        .iter()
        .map(|s| (s.class.as_str(), s.kubernetes.as_deref()))
        .collect();
    assert_eq!(
        path,
        [
            ("docker-example-1-28-v1", Some("v1.28.4")),
            ("docker-example-1-29-v1", Some("v1.29.4")),
        ]
    );
    assert_eq!(old.step, Some(1));
    sim.snapshot(|record| {
        assert!(
            record.double_switches().is_empty(),
            "{:?}",
            record.double_switches()
        );
        let switches = record.switches_of("old");
        let steps: Vec<(&str, Option<&str>)> = switches
            .iter()
            .map(|s| (s.to.as_str(), s.version.as_deref()))
            .collect();
        assert_eq!(steps, path, "each step its own switch, in order");
    });
    // Each step had its own health gate: the second switch came after the first step's
    // StepHealthy event.
    let events =
        crate::operator_common::events_about(env.client(), &env.ns, "ClusterStackRollout", ROLLOUT).await;
    let reasons: Vec<String> = events.iter().filter_map(|e| e.reason.clone()).collect();
    for reason in ["NoPath", "StepHealthy", "ClusterHealthy"] {
        assert!(reasons.iter().any(|r| r == reason), "{reason} in {reasons:?}");
    }
}
