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
use capstan_stack::capi::CapiVersion;

const ROLLOUT: &str = "to-1-29";

/// Release `docker-example-1-<minor>-v1` of `stacks/example` at Kubernetes `v1.<minor>.4`,
/// built into `dir`. The addon controller does not run here, so its charts' `kubeVersion`
/// is left as it is.
fn release_of_minor(dir: &Path, minor: u32) -> PathBuf {
    release_of_minor_with(dir, minor, |_| {})
}

/// [`release_of_minor`] with the stack's source tree changed by `edit` first.
fn release_of_minor_with(dir: &Path, minor: u32, edit: impl Fn(&Path)) -> PathBuf {
    let source = dir.join(format!("example-1-{minor}"));
    crate::git_source::copy_dir(
        &Path::new(capstan_testenv::REPO_ROOT).join("stacks/example"),
        &source,
    );
    edit(&source);
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
    walks_two_minors(test, CapiVersion::V1Beta1).await;
}

/// The same on Cluster API v1.14's CRDs serving only v1beta2: each step switches `classRef`.
/// The stack's ClusterClass chart renders v1beta1, which such a server cannot take, so the
/// test plays the ClusterStackRelease controller: the releases the stacks made are reported
/// ready at their Kubernetes version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_two_minors_behind_walks_its_path_on_v1beta2() {
    let test = "a_cluster_two_minors_behind_walks_its_path_on_v1beta2";
    // This process (the simulator, the helpers) speaks v1beta2 too.
    capstan_operator::testing::capi_api::set(capstan_operator::testing::capi_api::Choice::Chosen(
        CapiVersion::V1Beta2,
    ));
    walks_two_minors(test, CapiVersion::V1Beta2).await;
}

/// Reports release `docker-example-1-<minor>-v1` ready at `v1.<minor>.4` once it exists (on
/// v1beta2, where the ClusterStackRelease controller does not run), then waits until they
/// all are.
async fn make_ready(env: &Env, operator: &capstan_testenv::ChildGuard, minors: &[u32]) {
    let want: Vec<String> = minors
        .iter()
        .map(|m| format!("docker-example-1-{m}-v1"))
        .collect();
    if env.capi == CapiVersion::V1Beta2 {
        for (name, minor) in want.iter().zip(minors) {
            eventually(
                &format!("{name} made"),
                Duration::from_secs(60),
                operator,
                || async { env.release_names().await.contains(name).then_some(()) },
            )
            .await;
            env.releases()
                .patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(
                        json!({"status": {"ready": true, "kubernetesVersion": format!("v1.{minor}.4")}}),
                    ),
                )
                .await
                .expect("release reported ready");
        }
    }
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    wait_ready(env, operator, &want).await;
}

async fn walks_two_minors(test: &str, capi: CapiVersion) {
    let env = match capi {
        CapiVersion::V1Beta1 => crate::operator_common::start_shared(test, &[]).await,
        CapiVersion::V1Beta2 => crate::operator_common::start_own(test, &[], capi).await,
    };
    let Some(env) = env else {
        return;
    };
    let built = tempfile::tempdir().expect("temp dir");
    for minor in [27, 28, 29] {
        let release = release_of_minor(built.path(), minor);
        env.github
            .add_release_dir(REPO, &release)
            .expect("release published");
    }
    let controllers = match capi {
        CapiVersion::V1Beta1 => "*,-clusteraddon",
        CapiVersion::V1Beta2 => "*,-clusteraddon,-clusterstackrelease",
    };
    let operator = env.operator(0, &["--controllers", controllers]);
    // No ClusterStack of 1.28 yet.
    create_stack(&env, 27).await;
    create_stack(&env, 29).await;
    make_ready(&env, &operator, &[27, 29]).await;
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
    make_ready(&env, &operator, &[28]).await;
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
    // The Cluster's class (`classRef` on v1beta2) and version are the target's.
    assert_eq!(
        crate::operator_rollout::topology(&env, "old").await,
        ("docker-example-1-29-v1".to_string(), "v1.29.4".to_string())
    );
}

/// The operator's pre-flight renders each step's release for the Cluster at the step's
/// Kubernetes version, as Helm would install its addon charts there: the 1.28 release's
/// `cluster-info` chart says `kubeVersion: ">=1.29.0-0"`, so a Cluster whose path goes through
/// 1.28 is Blocked on its first step (TargetRenders, the chart's own words), while a Cluster
/// already on 1.28 goes on to 1.29 (`onBlocked: Skip`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_addon_chart_that_refuses_the_steps_kubernetes_version_blocks_that_cluster_only() {
    let test = "an_addon_chart_that_refuses_the_steps_kubernetes_version_blocks_that_cluster_only";
    let Some(env) = crate::operator_common::start_shared(test, &[]).await else {
        return;
    };
    let built = tempfile::tempdir().expect("temp dir");
    for minor in [27, 28, 29] {
        let release = release_of_minor_with(built.path(), minor, |source| {
            if minor == 28 {
                let chart = source.join("cluster-addon/cluster-info/Chart.yaml");
                let text = std::fs::read_to_string(&chart).expect("Chart.yaml");
                assert!(text.contains("kubeVersion: \">=1.25.0-0\""), "{text}");
                std::fs::write(&chart, text.replace(">=1.25.0-0", ">=1.29.0-0")).expect("Chart.yaml");
            }
        });
        env.github
            .add_release_dir(REPO, &release)
            .expect("release published");
    }
    let operator = env.operator(0, &["--controllers", "*,-clusteraddon"]);
    for minor in [27, 28, 29] {
        create_stack(&env, minor).await;
    }
    wait_ready(
        &env,
        &operator,
        &[
            "docker-example-1-27-v1",
            "docker-example-1-28-v1",
            "docker-example-1-29-v1",
        ],
    )
    .await;
    for (name, class, version) in [
        ("behind", "docker-example-1-27-v1", "v1.27.4"),
        ("near", "docker-example-1-28-v1", "v1.28.4"),
    ] {
        rollout_sim::create_cluster(
            &env.client(),
            &env.ns,
            name,
            class,
            version,
            json!({"ring": "all"}),
        )
        .await;
    }
    let sim = Simulator {
        namespace: env.ns.clone(),
        upgrade: Duration::from_secs(1),
        wave_label: "ring".into(),
        failing: Default::default(),
    }
    .run(env.client());
    let addons: Api<capstan_operator::api::ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    for name in ["behind", "near"] {
        let addon = capstan_operator::api::cluster_addon::addon_name(name);
        eventually(
            &format!("the operator sees Cluster {name}"),
            Duration::from_secs(60),
            &operator,
            || async { addons.get_opt(&addon).await.ok().flatten().map(|_| ()) },
        )
        .await;
    }

    let rollouts: Api<ClusterStackRollout> = Api::namespaced(env.client(), &env.ns);
    let rollout: ClusterStackRollout = serde_json::from_value(json!({
        "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
        "metadata": {"name": ROLLOUT, "namespace": env.ns},
        "spec": {"clusterStack": "example-1-29", "from": "auto",
                 "waves": [{"name": "all", "maxInFlight": 2}],
                 "preflight": {"onBlocked": "Skip"}, "health": {"timeout": "2m"}},
    }))
    .expect("ClusterStackRollout");
    rollouts
        .create(&PostParams::default(), &rollout)
        .await
        .expect("rollout created");
    eventually(
        "the rollout Complete",
        Duration::from_secs(120),
        &operator,
        || async { (status_of(&rollouts).await?.phase == RolloutPhase::Complete).then_some(()) },
    )
    .await;

    let status = status_of(&rollouts).await.expect("status");
    let entry = |name: &str| {
        let key = format!("{}/{name}", env.ns);
        status
            .clusters
            .iter()
            .find(|c| c.name == key)
            .unwrap_or_else(|| panic!("{key} in {status:?}"))
            .clone()
    };
    let (behind, near) = (entry("behind"), entry("near"));
    assert_eq!(near.phase, ClusterPhase::Healthy, "{near:?}");
    assert_eq!(behind.phase, ClusterPhase::Blocked, "{behind:?}");
    let renders = behind
        .preflight
        .iter()
        .find(|r| r.check == "TargetRenders")
        .unwrap_or_else(|| panic!("TargetRenders in {behind:?}"));
    assert!(!renders.ok, "{renders:?}");
    assert!(
        renders
            .reason
            .starts_with("docker-example-1-28-v1 does not render for this Cluster")
            && renders.reason.contains(">=1.29.0-0"),
        "{renders:?}"
    );
    assert_eq!(behind.step.unwrap_or(0), 0, "{behind:?}");
    sim.snapshot(|record| {
        assert!(
            record.switches_of("behind").is_empty(),
            "a blocked Cluster was switched"
        );
        let to: Vec<&str> = record.switches_of("near").iter().map(|s| s.to.as_str()).collect();
        assert_eq!(to, ["docker-example-1-29-v1"]);
    });
}
