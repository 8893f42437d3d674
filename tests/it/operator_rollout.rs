//! ClusterStackRollouts on the real API server: `capstan operator --controllers
//! '*,-clusteraddon'` runs the rollout controller, the Cluster API simulator
//! (`rollout_sim`) plays Cluster API and the addon controller, and the test steers the
//! rollout with the `capstan rollout` CLI. Fleets of a few Clusters, simulated upgrades of a
//! second or two, soaks of two seconds.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::operator_common::{Env, NS, capstan_binary, eventually};
use crate::rollout_sim::{self, Running, Simulator};
use capstan_operator::api::rollout::{ClusterStackRollout, RolloutPhase};

pub(crate) const V1: &str = "docker-ferrol-1-27-v1";
pub(crate) const V2: &str = "docker-ferrol-1-27-v2";
const OLD_KUBERNETES: &str = "v1.27.2";
pub(crate) const KUBERNETES: &str = "v1.27.3";
pub(crate) const ROLLOUT: &str = "ferrol";

/// The API server, the stack with v1 and v2 ready, the operator without the ClusterAddon
/// controller, and `clusters` (name, wave label) on v1 at [`OLD_KUBERNETES`].
pub(crate) async fn fleet(
    test: &str,
    clusters: &[(&str, &str)],
) -> Option<(Env, capstan_testenv::ChildGuard)> {
    fleet_on(test, clusters, capstan_stack::capi::CapiVersion::V1Beta1).await
}

/// [`fleet`] on `capi`'s CRDs. On v1.14's v1beta2-only CRDs the shared releases' ClusterClass
/// (v1beta1) cannot be applied, so the test plays the release controller there: the releases
/// the stack made are reported ready at their Kubernetes version.
pub(crate) async fn fleet_on(
    test: &str,
    clusters: &[(&str, &str)],
    capi: capstan_stack::capi::CapiVersion,
) -> Option<(Env, capstan_testenv::ChildGuard)> {
    let env = crate::operator_common::start_own(test, &[V1, V2], capi).await?;
    let v1beta1 = capi == capstan_stack::capi::CapiVersion::V1Beta1;
    let controllers = if v1beta1 {
        "*,-clusteraddon"
    } else {
        "*,-clusteraddon,-clusterstackrelease"
    };
    let operator = env.operator(0, &["--controllers", controllers]);
    env.create_stack(&["v1", "v2"], "5s").await;
    let want = vec![V1.to_string(), V2.to_string()];
    if !v1beta1 {
        eventually("v1 and v2 made", Duration::from_secs(60), &operator, || async {
            (env.release_names().await == want).then_some(())
        })
        .await;
        for name in &want {
            env.releases()
                .patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"ready": true, "kubernetesVersion": KUBERNETES}})),
                )
                .await
                .expect("release reported ready");
        }
    }
    eventually("v1 and v2 ready", Duration::from_secs(120), &operator, || async {
        (env.ready_releases().await == want).then_some(())
    })
    .await;
    for (name, ring) in clusters {
        rollout_sim::create_cluster(&env.client(), NS, name, V1, OLD_KUBERNETES, json!({"ring": ring})).await;
    }
    Some((env, operator))
}

pub(crate) fn simulate(env: &Env, upgrade: Duration, failing: &[&str]) -> Running {
    Simulator {
        namespace: NS.into(),
        upgrade,
        wave_label: "ring".into(),
        failing: failing.iter().map(|s| s.to_string()).collect(),
    }
    .run(env.client())
}

pub(crate) async fn create_rollout(env: &Env, spec: serde_json::Value) {
    let rollout: ClusterStackRollout = serde_json::from_value(json!({
        "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
        "metadata": {"name": ROLLOUT, "namespace": NS},
        "spec": spec,
    }))
    .expect("ClusterStackRollout");
    rollouts(env)
        .create(&PostParams::default(), &rollout)
        .await
        .expect("ClusterStackRollout created");
}

pub(crate) fn rollouts(env: &Env) -> Api<ClusterStackRollout> {
    Api::namespaced(env.client(), NS)
}

async fn phase(env: &Env) -> Option<RolloutPhase> {
    rollouts(env).get(ROLLOUT).await.ok()?.status.map(|s| s.phase)
}

pub(crate) async fn wait_phase(
    env: &Env,
    operator: &capstan_testenv::ChildGuard,
    want: RolloutPhase,
    limit: Duration,
) {
    eventually(&format!("rollout {want:?}"), limit, operator, || async {
        (phase(env).await.as_ref() == Some(&want)).then_some(())
    })
    .await;
}

/// `capstan rollout ARGS… ferrol -n tenant`: exit code and stdout.
pub(crate) fn cli(env: &Env, args: &[&str]) -> (i32, String) {
    let output = Command::new(capstan_binary())
        .arg("rollout")
        .args(args)
        .args([ROLLOUT, "-n", NS, "--kubeconfig"])
        .arg(env.cluster.kubeconfig_path())
        .output()
        .expect("capstan rollout runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    eprintln!(
        "capstan rollout {args:?}:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), stdout)
}

/// `(reason, note)` of the Events about the rollout.
async fn events(env: &Env) -> Vec<(String, String)> {
    crate::operator_common::events_about(env.client(), NS, "ClusterStackRollout", ROLLOUT)
        .await
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect()
}

pub(crate) async fn topology(env: &Env, name: &str) -> (String, String) {
    let cluster: DynamicObject = env.clusters().get(name).await.expect("Cluster");
    let fields =
        capstan_stack::capi::ClusterFields::from_object(&serde_json::to_value(&cluster).expect("JSON"))
            .expect("Cluster fields");
    (
        fields.class.map(|c| c.name).unwrap_or_default(),
        fields.kubernetes_version.unwrap_or_default(),
    )
}

fn assert_switched_once(sim: &Running, clusters: &[&str]) {
    sim.snapshot(|record| {
        assert!(
            record.double_switches().is_empty(),
            "switched twice: {:?}",
            record.double_switches()
        );
        for cluster in clusters {
            let switches = record.switches_of(cluster);
            assert_eq!(switches.len(), 1, "{cluster}: {switches:?}");
            assert_eq!(switches[0].to, V2, "{cluster}");
            assert_eq!(switches[0].version.as_deref(), Some(KUBERNETES), "{cluster}");
        }
    });
}

/// The soak contract between wave `first` and the wave `next` after it: no Cluster of `next`
/// is switched before every Cluster of `first` has been healthy for `soak`.
///
/// Measured by the simulator, both sides err toward passing, so a failure is the operator's:
/// a Cluster's healthy time is taken before its ClusterAddon reports the release (which the
/// operator's health needs), a switch's time when the watch delivers it (after the patch).
/// In the status, `first`'s `soakUntil` (whole seconds) lies at least `soak` after the moment
/// the operator saw the wave done, and `next` started (`startedAt`, rounded down) no earlier.
async fn assert_soaked(env: &Env, sim: &Running, (first, next): (&str, &str), soak: Duration) {
    sim.snapshot(|record| {
        let healthy = record.last_healthy(first).expect("first wave healthy");
        let started = record.first_switch(next).expect("next wave started");
        assert!(
            started >= healthy + soak,
            "wave {next} started {:?} after wave {first} was healthy, soak {soak:?}; {record:?}",
            started.saturating_duration_since(healthy)
        );
    });
    let status = rollouts(env)
        .get(ROLLOUT)
        .await
        .expect("rollout")
        .status
        .expect("status");
    let wave = |name: &str| {
        status
            .waves
            .iter()
            .find(|w| w.name == name)
            .unwrap_or_else(|| panic!("wave {name} in {:?}", status.waves))
    };
    let soak_until = wave(first).soak_until.clone().expect("soakUntil").0;
    let started_at = wave(next).started_at.clone().expect("startedAt").0;
    assert!(
        started_at >= soak_until,
        "wave {next} started at {started_at}, before wave {first}'s soak ended at {soak_until}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waves_run_in_order_within_their_limits_after_approval_and_soak() {
    let test = "waves_run_in_order_within_their_limits_after_approval_and_soak";
    let clusters = [
        ("canary-1", "canary"),
        ("rest-1", "rest"),
        ("rest-2", "rest"),
        ("rest-3", "rest"),
        ("rest-4", "rest"),
        ("rest-5", "rest"),
    ];
    let Some((env, operator)) = fleet(test, &clusters).await else {
        return;
    };
    let sim = simulate(&env, Duration::from_secs(1), &[]);
    let soak = Duration::from_secs(2);
    create_rollout(
        &env,
        json!({
            "clusterStack": "ferrol", "version": "v2",
            "waves": [
                {"name": "canary", "clusterSelector": {"matchLabels": {"ring": "canary"}},
                 "maxInFlight": 1, "soak": "2s", "approval": "Manual"},
                {"name": "rest", "maxInFlight": "40%"},
            ],
            "health": {"timeout": "1m"},
        }),
    )
    .await;

    // A Manual wave waits for its approval: nothing is switched meanwhile.
    wait_phase(
        &env,
        &operator,
        RolloutPhase::WaitingForApproval,
        Duration::from_secs(30),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        sim.snapshot(|r| r.switches.is_empty()),
        "switched before the approval"
    );
    assert_eq!(cli(&env, &["status"]).0, 2, "a rollout under way exits 2");
    let reasons: BTreeSet<String> = events(&env).await.into_iter().map(|(r, _)| r).collect();
    assert!(reasons.contains("WaitingForApproval"), "{reasons:?}");

    assert_eq!(cli(&env, &["approve"]).0, 0);
    wait_phase(&env, &operator, RolloutPhase::Complete, Duration::from_secs(90)).await;

    let names: Vec<&str> = clusters.iter().map(|(n, _)| *n).collect();
    assert_switched_once(&sim, &names);
    sim.snapshot(|record| {
        // maxInFlight 1 and 40 % of 5 = 2.
        assert_eq!(
            record.max_in_flight.get("canary"),
            Some(&1),
            "{:?}",
            record.max_in_flight
        );
        let rest = record.max_in_flight.get("rest").copied().unwrap_or_default();
        assert!(rest <= 2, "rest wave: {rest} in flight at once, limit 2");
    });
    assert_soaked(&env, &sim, ("canary", "rest"), soak).await;
    for (name, _) in clusters {
        assert_eq!(
            topology(&env, name).await,
            (V2.to_string(), KUBERNETES.to_string())
        );
    }
    let (code, table) = cli(&env, &["status"]);
    assert_eq!(code, 0, "a complete rollout exits 0");
    assert!(
        table.contains("Complete") && table.contains("canary-1"),
        "{table}"
    );
    let reasons: BTreeSet<String> = events(&env).await.into_iter().map(|(r, _)| r).collect();
    for reason in ["WaveStarted", "ClusterSwitched", "ClusterHealthy", "Complete"] {
        assert!(reasons.contains(reason), "no {reason} Event: {reasons:?}");
    }
    drop(operator);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_rollout_switches_nothing_until_resumed() {
    let test = "a_paused_rollout_switches_nothing_until_resumed";
    let clusters = [("a-1", "all"), ("a-2", "all"), ("a-3", "all")];
    let Some((env, operator)) = fleet(test, &clusters).await else {
        return;
    };
    let sim = simulate(&env, Duration::from_secs(1), &[]);
    create_rollout(
        &env,
        json!({"clusterStack": "ferrol", "version": "latest", "paused": true,
               "waves": [{"name": "all", "maxInFlight": 1}]}),
    )
    .await;
    wait_phase(&env, &operator, RolloutPhase::Paused, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        sim.snapshot(|r| r.switches.is_empty()),
        "a paused rollout switched"
    );

    assert_eq!(cli(&env, &["resume"]).0, 0);
    // One Cluster in flight, then pause again: no Cluster is switched after the pause lands.
    eventually("a first switch", Duration::from_secs(30), &operator, || async {
        sim.snapshot(|r| (!r.switches.is_empty()).then_some(()))
    })
    .await;
    assert_eq!(cli(&env, &["pause"]).0, 0);
    wait_phase(&env, &operator, RolloutPhase::Paused, Duration::from_secs(30)).await;
    let switched = sim.snapshot(|r| r.switches.len());
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        sim.snapshot(|r| r.switches.len()),
        switched,
        "switched while paused"
    );

    assert_eq!(cli(&env, &["resume"]).0, 0);
    wait_phase(&env, &operator, RolloutPhase::Complete, Duration::from_secs(60)).await;
    let names: Vec<&str> = clusters.iter().map(|(n, _)| *n).collect();
    assert_switched_once(&sim, &names);
    assert_eq!(sim.snapshot(|r| r.max_in_flight.get("all").copied()), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_past_max_failures_halts_and_rolls_the_cluster_back() {
    let test = "a_failure_past_max_failures_halts_and_rolls_the_cluster_back";
    halts_and_rolls_back(test, capstan_stack::capi::CapiVersion::V1Beta1).await;
}

/// The same on Cluster API v1.14's CRDs serving only v1beta2: the switch and the rollback
/// patch `classRef`, the health rule reads `Available`, `TopologyReconciled`, `RollingOut`
/// and `status.controlPlane.versions`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_past_max_failures_halts_and_rolls_the_cluster_back_on_v1beta2() {
    let test = "a_failure_past_max_failures_halts_and_rolls_the_cluster_back_on_v1beta2";
    // This process (the simulator, the helpers) speaks v1beta2 too.
    capstan_operator::testing::capi_api::set(capstan_operator::testing::capi_api::Choice::Chosen(
        capstan_stack::capi::CapiVersion::V1Beta2,
    ));
    halts_and_rolls_back(test, capstan_stack::capi::CapiVersion::V1Beta2).await;
}

async fn halts_and_rolls_back(test: &str, capi: capstan_stack::capi::CapiVersion) {
    let clusters = [
        ("first-1", "first"),
        ("first-2", "first"),
        ("later-1", "later"),
        ("later-2", "later"),
    ];
    let Some((env, operator)) = fleet_on(test, &clusters, capi).await else {
        return;
    };
    let sim = simulate(&env, Duration::from_secs(1), &["first-2"]);
    create_rollout(
        &env,
        json!({"clusterStack": "ferrol", "version": "v2",
               "waves": [{"name": "first", "clusterSelector": {"matchLabels": {"ring": "first"}}, "maxInFlight": 2},
                         {"name": "later"}],
               "health": {"timeout": "3s"},
               "failurePolicy": {"maxFailures": 0, "action": "Rollback"}}),
    )
    .await;
    wait_phase(&env, &operator, RolloutPhase::Halted, Duration::from_secs(60)).await;

    // Halted names the Cluster, in its condition and an Event; the failed Cluster is back on
    // its class and version; the next wave never started.
    let rollout = rollouts(&env).get(ROLLOUT).await.expect("rollout");
    let status = rollout.status.expect("status");
    let halted =
        capstan_operator::api::conditions::find(&status.conditions, "Halted").expect("Halted condition");
    assert!(halted.is_true(), "{halted:?}");
    assert!(halted.message.contains("first-2"), "{halted:?}");
    // Events are published after the status is written: the Halted one may be a moment late.
    eventually(
        "a Halted Event naming first-2",
        Duration::from_secs(10),
        &operator,
        || async {
            let notes = events(&env).await;
            notes
                .iter()
                .any(|(reason, note)| reason == "Halted" && note.contains("first-2"))
                .then_some(())
        },
    )
    .await;
    eventually(
        "first-2 rolled back",
        Duration::from_secs(30),
        &operator,
        || async {
            (topology(&env, "first-2").await == (V1.to_string(), OLD_KUBERNETES.to_string())).then_some(())
        },
    )
    .await;
    assert!(
        events(&env)
            .await
            .iter()
            .any(|(reason, _)| reason == "RolledBack")
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    sim.snapshot(|record| {
        assert!(
            record.first_switch("later").is_none(),
            "a halted rollout started the next wave"
        );
    });
    assert_eq!(topology(&env, "later-1").await.0, V1);
    assert_eq!(cli(&env, &["status"]).0, 1, "a halted rollout exits 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_operator_resumes_without_a_double_switch_or_a_skipped_wave() {
    let test = "a_killed_operator_resumes_without_a_double_switch_or_a_skipped_wave";
    let (kills, mut rng) = crate::operator_common::kill_plan(test);
    let clusters = [
        ("one-1", "one"),
        ("one-2", "one"),
        ("two-1", "two"),
        ("two-2", "two"),
        ("two-3", "two"),
        ("two-4", "two"),
    ];
    let Some((env, mut operator)) = fleet(test, &clusters).await else {
        return;
    };
    let sim = simulate(&env, Duration::from_millis(1500), &[]);
    let soak = Duration::from_secs(2);
    create_rollout(
        &env,
        json!({"clusterStack": "ferrol", "version": "v2",
               "waves": [{"name": "one", "clusterSelector": {"matchLabels": {"ring": "one"}}, "maxInFlight": 1, "soak": "2s"},
                         {"name": "two", "maxInFlight": 2}]}),
    )
    .await;
    let started = Instant::now();
    for kill in 0..kills {
        let wait = 300 + rng.below(2500);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        if phase(&env).await == Some(RolloutPhase::Complete) {
            break;
        }
        operator.kill();
        eprintln!("{test}: kill {kill} after {wait} ms ({:?} in)", started.elapsed());
        operator = env.operator(kill + 1, &["--controllers", "*,-clusteraddon"]);
    }
    wait_phase(&env, &operator, RolloutPhase::Complete, Duration::from_secs(120)).await;
    let names: Vec<&str> = clusters.iter().map(|(n, _)| *n).collect();
    assert_switched_once(&sim, &names);
    sim.snapshot(|record| {
        assert_eq!(
            record.max_in_flight.get("one"),
            Some(&1),
            "{:?}",
            record.max_in_flight
        );
        assert!(record.max_in_flight.get("two").copied().unwrap_or_default() <= 2);
    });
    assert_soaked(&env, &sim, ("one", "two"), soak).await;
}

/// The ClusterStack's retention keeps what a rollout's rollback needs: a halted rollout
/// (`Halt`, so its failed Cluster stays on v2) recorded v1 as the class its Cluster came
/// from; once the stack no longer lists v1 and no Cluster uses it, v1 stays while the rollout
/// exists, and goes when the rollout is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_only_a_halted_rollouts_rollback_needs_is_kept() {
    let test = "a_release_only_a_halted_rollouts_rollback_needs_is_kept";
    let Some((env, operator)) = fleet(test, &[("only-1", "all")]).await else {
        return;
    };
    let _sim = simulate(&env, Duration::from_secs(1), &["only-1"]);
    create_rollout(
        &env,
        json!({"clusterStack": "ferrol", "version": "v2",
               "waves": [{"name": "all"}],
               "health": {"timeout": "3s"},
               "failurePolicy": {"maxFailures": 0, "action": "Halt"}}),
    )
    .await;
    wait_phase(&env, &operator, RolloutPhase::Halted, Duration::from_secs(60)).await;
    assert_eq!(
        topology(&env, "only-1").await.0,
        V2,
        "Halt leaves the Cluster on v2"
    );

    // v1: not listed, not the latest, not the newest ready, used by no Cluster.
    env.stacks()
        .patch(
            "ferrol",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"versions": ["v2"]}})),
        )
        .await
        .expect("ClusterStack lists only v2");
    let present = |release: Option<capstan_operator::api::ClusterStackRelease>| {
        release.is_some_and(|r| r.metadata.deletion_timestamp.is_none())
    };
    // Two of the stack's 5 s passes at least.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let v1 = env.releases().get_opt(V1).await.expect("read v1");
    assert!(
        present(v1),
        "v1 deleted although the halted rollout would roll back to it"
    );

    rollouts(&env)
        .delete(ROLLOUT, &Default::default())
        .await
        .expect("rollout deleted");
    eventually(
        "v1 deleted without the rollout",
        Duration::from_secs(60),
        &operator,
        || async { (!present(env.releases().get_opt(V1).await.expect("read v1"))).then_some(()) },
    )
    .await;
}
