//! The plan's rules as a table: one row per rule, named after it; each row plays a small
//! fleet through [`Sim`] and checks what the rule promises.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::plan::{Action, max_in_flight};
use super::sim::{Sim, V1, V2, V3, cluster, target};
use super::waves::tests::{select, spec, wave};
use crate::api::conditions;
use crate::api::rollout::{
    Approval, CONDITION_HALTED, ClusterPhase, FailureAction, RolloutPhase, Wave, WavePhase,
};

fn canary_then_rest() -> Vec<Wave> {
    vec![wave("canary", select(&[("ring", "canary")])), wave("rest", None)]
}

/// c1 in canary; r1, r2 in rest; all on V1.
fn fleet() -> Vec<crate::rollout::ClusterInfo> {
    vec![
        cluster("c1", V1, &[("ring", "canary")]),
        cluster("r1", V1, &[]),
        cluster("r2", V1, &[]),
    ]
}

fn phase_of(sim: &Sim, name: &str) -> Option<ClusterPhase> {
    let key = format!("tenant-a/{name}");
    sim.status
        .clusters
        .iter()
        .find(|c| c.name == key)
        .map(|c| c.phase)
}

fn switches(plan: &super::plan::Plan) -> Vec<String> {
    plan.actions
        .iter()
        .filter(|a| matches!(a, Action::Switch { .. }))
        .map(|a| a.cluster().trim_start_matches("tenant-a/").to_string())
        .collect()
}

/// canary_then_rest with a health timeout of 1m whose canary c1 never becomes healthy:
/// after `sim.step(); sim.advance(60)` the next plan finds it failed.
fn failing_canary(max_failures: u32, action: FailureAction) -> Sim {
    let mut s = spec(canary_then_rest());
    s.health.timeout = Some("1m".into());
    s.failure_policy.max_failures = max_failures;
    s.failure_policy.action = action;
    let mut sim = Sim::new(s, fleet());
    sim.step();
    sim.advance(60);
    sim
}

fn waves_run_in_order() {
    let mut sim = Sim::new(spec(canary_then_rest()), fleet());
    assert_eq!(switches(&sim.step()), ["c1"], "canary first");
    assert_eq!(sim.status.current_wave.as_deref(), Some("canary"));
    sim.heal("c1");
    assert_eq!(switches(&sim.step()), ["r1"], "then rest");
    assert_eq!(sim.status.waves[0].phase, WavePhase::Complete);
}

fn only_clusters_of_the_stack_are_switched() {
    let mut clusters = fleet();
    clusters.push(cluster("other", "docker-ferrol-1-28-v1", &[]));
    let mut spec = spec(vec![wave("all", None)]);
    spec.waves[0].max_in_flight = Some(IntOrString::Int(10));
    let mut sim = Sim::new(spec, clusters);
    assert_eq!(switches(&sim.step()), ["c1", "r1", "r2"]);
    assert_eq!(sim.class_of("other").as_deref(), Some("docker-ferrol-1-28-v1"));
}

fn switch_sets_class_and_version_when_it_differs() {
    let mut sim = Sim::new(spec(vec![wave("all", None)]), vec![cluster("c1", V1, &[])]);
    let plan = sim.step();
    assert_eq!(
        plan.actions,
        [Action::Switch {
            cluster: "tenant-a/c1".into(),
            class: V2.into(),
            version: Some("v1.27.2".into())
        }]
    );
    let entry = &sim.status.clusters[0];
    assert_eq!(
        (entry.from.as_deref(), entry.from_version.as_deref()),
        (Some(V1), Some("v1.27.1"))
    );
    let mut same_version = cluster("c2", V1, &[]);
    same_version.version = Some("v1.27.2".into());
    let mut sim = Sim::new(spec(vec![wave("all", None)]), vec![same_version]);
    assert!(matches!(
        &sim.step().actions[..],
        [Action::Switch { version: None, .. }]
    ));
}

fn max_in_flight_is_never_exceeded() {
    let mut spec = spec(vec![wave("all", None)]);
    spec.waves[0].max_in_flight = Some(IntOrString::Int(2));
    let mut sim = Sim::new(spec, fleet());
    assert_eq!(switches(&sim.step()).len(), 2);
    assert!(switches(&sim.step()).is_empty(), "2 in flight: no third");
    sim.heal("c1");
    assert_eq!(switches(&sim.step()), ["r2"], "one healthy: one more");
}

fn max_in_flight_percent_is_of_the_wave_and_at_least_one() {
    let of = |text: &str, total| max_in_flight(Some(&IntOrString::String(text.into())), total);
    assert_eq!(of("25%", 10), 2);
    assert_eq!(of("10%", 3), 1);
    assert_eq!(of("100%", 7), 7);
    assert_eq!(max_in_flight(None, 5), 1);
    assert_eq!(max_in_flight(Some(&IntOrString::Int(0)), 5), 1);
}

fn next_wave_waits_until_every_cluster_is_healthy() {
    let mut sim = Sim::new(spec(canary_then_rest()), fleet());
    sim.step();
    for _ in 0..3 {
        assert!(switches(&sim.step()).is_empty());
        sim.advance(60);
    }
    assert_eq!(phase_of(&sim, "r1"), Some(ClusterPhase::Pending));
}

fn soak_delays_the_next_wave() {
    let mut waves = canary_then_rest();
    waves[0].soak = Some("10m".into());
    let mut sim = Sim::new(spec(waves), fleet());
    sim.step();
    sim.heal("c1");
    let plan = sim.step();
    assert!(switches(&plan).is_empty());
    assert_eq!(sim.status.phase, RolloutPhase::Soaking);
    assert_eq!(plan.requeue_after, Some(std::time::Duration::from_secs(600)));
    sim.advance(599);
    assert!(switches(&sim.step()).is_empty(), "still soaking");
    sim.advance(1);
    assert_eq!(switches(&sim.step()), ["r1"]);
}

/// The soak is a lower bound on the time between the wave being done and the next wave's
/// first switch, although the status keeps times to the second: done at 0.9 s with a soak
/// of 2 s, nothing is switched at 2.0 s nor 2.8 s (a clock read to the second says 2 s
/// then), and the next wave starts at 3.0 s (`soakUntil`, rounded up to the second).
fn soak_is_never_shorter_than_written() {
    let mut waves = canary_then_rest();
    waves[0].soak = Some("2s".into());
    let mut sim = Sim::new(spec(waves), fleet());
    sim.step();
    sim.heal("c1");
    sim.advance_millis(900);
    let plan = sim.step();
    assert_eq!(sim.status.phase, RolloutPhase::Soaking);
    let until = sim.status.waves[0].soak_until.clone().expect("soakUntil");
    assert!(
        until.0.as_millisecond() >= sim.time().0.as_millisecond() + 2000,
        "soakUntil {until:?} is less than 2 s after {:?}",
        sim.time()
    );
    let requeue = plan.requeue_after.expect("requeued for the soak's end");
    assert!(requeue >= std::time::Duration::from_millis(2000), "{requeue:?}");
    sim.advance_millis(1100);
    assert!(
        switches(&sim.step()).is_empty(),
        "rest started 1.1 s into a 2 s soak"
    );
    sim.advance_millis(800);
    assert!(
        switches(&sim.step()).is_empty(),
        "rest started 1.9 s into a 2 s soak"
    );
    sim.advance_millis(200);
    assert_eq!(switches(&sim.step()), ["r1"]);
}

fn manual_wave_waits_for_approval() {
    let mut waves = canary_then_rest();
    waves[0].approval = Approval::Manual;
    let mut sim = Sim::new(spec(waves), fleet());
    sim.approve = Some("canary".into()); // present before the target was chosen: stale
    assert!(switches(&sim.step()).is_empty());
    assert_eq!(sim.status.phase, RolloutPhase::WaitingForApproval);
    sim.approve = Some("rest@1".into());
    assert!(switches(&sim.step()).is_empty(), "an approval of another wave");
    sim.approve = Some("canary@2".into());
    assert_eq!(switches(&sim.step()), ["c1"]);
    assert!(sim.status.waves[0].approved_at.is_some());
}

fn paused_switches_nothing() {
    let mut s = spec(canary_then_rest());
    s.paused = true;
    let mut sim = Sim::new(s, fleet());
    assert!(sim.step().actions.is_empty());
    assert_eq!(sim.status.phase, RolloutPhase::Paused);
    sim.spec.paused = false;
    assert_eq!(switches(&sim.step()), ["c1"]);
}

fn health_timeout_fails_a_cluster() {
    let mut s = spec(canary_then_rest());
    s.health.timeout = Some("5m".into());
    s.failure_policy.max_failures = 5;
    let mut sim = Sim::new(s, fleet());
    let plan = sim.step();
    assert_eq!(plan.requeue_after, Some(std::time::Duration::from_secs(300)));
    sim.advance(299);
    sim.step();
    assert_eq!(phase_of(&sim, "c1"), Some(ClusterPhase::Updating));
    sim.advance(1);
    let plan = sim.step();
    assert_eq!(phase_of(&sim, "c1"), Some(ClusterPhase::Failed));
    assert!(
        plan.events
            .iter()
            .any(|e| e.reason == "ClusterFailed" && e.warning)
    );
}

/// The health timeout counts from the switch although the status keeps whole seconds:
/// switched at 0.9 s with a timeout of 1m, the Cluster has not failed at 60.5 s (59.6 s after
/// its switch; a clock read to the second says 60 s then) and has at 61 s.
fn health_timeout_is_never_shorter_than_written() {
    let mut s = spec(canary_then_rest());
    s.health.timeout = Some("1m".into());
    s.failure_policy.max_failures = 5;
    let mut sim = Sim::new(s, fleet());
    sim.advance_millis(900);
    assert_eq!(switches(&sim.step()), ["c1"]);
    sim.advance_millis(59_600);
    let plan = sim.step();
    assert_eq!(
        phase_of(&sim, "c1"),
        Some(ClusterPhase::Updating),
        "failed 59.6 s after its switch"
    );
    let requeue = plan.requeue_after.expect("requeued for the timeout");
    assert!(requeue >= std::time::Duration::from_millis(400), "{requeue:?}");
    sim.advance_millis(500);
    sim.step();
    assert_eq!(phase_of(&sim, "c1"), Some(ClusterPhase::Failed));
}

fn failures_within_max_failures_let_the_rollout_go_on() {
    let mut sim = failing_canary(1, FailureAction::Halt);
    assert_eq!(
        switches(&sim.step()),
        ["r1"],
        "canary done with its failure tolerated"
    );
    assert_ne!(sim.status.phase, RolloutPhase::Halted);
}

fn failures_beyond_max_failures_halt_with_condition_and_event() {
    let mut sim = failing_canary(0, FailureAction::Halt);
    let plan = sim.step();
    assert!(plan.actions.is_empty());
    assert_eq!(sim.status.phase, RolloutPhase::Halted);
    assert!(conditions::is_true(&sim.status.conditions, CONDITION_HALTED));
    let halted = plan
        .events
        .iter()
        .find(|e| e.reason == "Halted")
        .expect("Halted event");
    assert!(
        halted.warning && halted.message.contains("tenant-a/c1"),
        "{halted:?}"
    );
    assert_eq!(sim.status.waves[0].phase, WavePhase::Halted);
}

fn halted_never_switches_until_resumed() {
    let mut sim = failing_canary(0, FailureAction::Halt);
    sim.step();
    for _ in 0..3 {
        sim.advance(3600);
        assert!(sim.step().actions.is_empty());
    }
    sim.resume = Some("2026-11-26T21:00:00Z".into());
    let plan = sim.step();
    assert_eq!(switches(&plan), ["r1"], "resumed toward the same target");
    assert_eq!(phase_of(&sim, "c1"), Some(ClusterPhase::Failed), "not retried");
    assert!(!conditions::is_true(&sim.status.conditions, CONDITION_HALTED));
    sim.heal("r1");
    sim.step();
    assert_eq!(
        sim.status.phase,
        RolloutPhase::Progressing,
        "the old failure no longer counts"
    );
}

fn rollback_switches_failed_clusters_back() {
    let mut sim = failing_canary(0, FailureAction::Rollback);
    let plan = sim.step();
    assert_eq!(
        plan.actions,
        [Action::RollBack {
            cluster: "tenant-a/c1".into(),
            class: V1.into(),
            version: Some("v1.27.1".into())
        }]
    );
    assert_eq!(phase_of(&sim, "c1"), Some(ClusterPhase::RolledBack));
    assert_eq!(sim.class_of("c1").as_deref(), Some(V1));
    assert!(sim.step().actions.is_empty(), "rolled back once");
}

fn a_cluster_on_the_target_counts_healthy_without_a_switch() {
    let mut sim = Sim::new(spec(vec![wave("all", None)]), vec![cluster("c1", V2, &[])]);
    let plan = sim.step();
    assert!(plan.actions.is_empty());
    assert_eq!(phase_of(&sim, "c1"), Some(ClusterPhase::Healthy));
    assert_eq!(sim.status.phase, RolloutPhase::Complete);
}

fn a_cluster_appearing_mid_rollout_joins_its_unfinished_wave() {
    let mut sim = Sim::new(spec(canary_then_rest()), fleet());
    sim.step();
    sim.clusters.push(cluster("r3", V1, &[]));
    sim.step();
    assert_eq!(phase_of(&sim, "r3"), Some(ClusterPhase::Pending));
    assert_eq!(sim.status.waves[1].total, 3);
}

fn a_cluster_appearing_after_its_wave_waits_for_the_next_rollout() {
    let mut sim = Sim::new(spec(canary_then_rest()), fleet());
    sim.step();
    sim.heal("c1");
    sim.step();
    sim.clusters.push(cluster("c2", V1, &[("ring", "canary")]));
    let plan = sim.step();
    assert_eq!(phase_of(&sim, "c2"), None);
    assert!(!switches(&plan).contains(&"c2".to_string()));
    assert!(
        sim.status
            .message
            .as_deref()
            .is_some_and(|m| m.contains("tenant-a/c2"))
    );
}

fn a_new_release_mid_rollout_does_not_interrupt_it() {
    let mut sim = Sim::new(spec(canary_then_rest()), fleet());
    sim.step();
    sim.target = Some(target(V3));
    sim.heal("c1");
    let plan = sim.step();
    assert_eq!(sim.status.target_release.as_deref(), Some(V2));
    assert!(
        plan.actions
            .iter()
            .all(|a| matches!(a, Action::Switch { class, .. } if class == V2))
    );
    for _ in 0..4 {
        sim.heal_all();
        sim.step();
    }
    assert_eq!(
        sim.status.target_release.as_deref(),
        Some(V3),
        "taken once complete"
    );
    assert_eq!(sim.class_of("c1").as_deref(), Some(V3), "started over toward it");
}

fn resume_of_a_halted_rollout_takes_the_newest_release() {
    let mut sim = failing_canary(0, FailureAction::Halt);
    sim.step();
    sim.target = Some(target(V3));
    sim.step();
    assert_eq!(
        sim.status.target_release.as_deref(),
        Some(V2),
        "halted keeps its target"
    );
    sim.resume = Some("1".into());
    let plan = sim.step();
    assert_eq!(sim.status.target_release.as_deref(), Some(V3));
    assert_eq!(
        switches(&plan),
        ["c1"],
        "the failed Cluster goes to the fixed release"
    );
}

fn a_killed_operator_reissues_a_lost_switch_once() {
    let mut sim = Sim::new(spec(canary_then_rest()), fleet());
    let lost = sim.step_killed();
    assert_eq!(switches(&lost), ["c1"]);
    assert_eq!(sim.class_of("c1").as_deref(), Some(V1), "the patch was lost");
    assert_eq!(
        switches(&sim.step()),
        ["c1"],
        "re-issued from the recorded status"
    );
    assert!(switches(&sim.step()).is_empty(), "and not again");
    assert_eq!(sim.switch_counts().get("tenant-a/c1"), Some(&1));
    let entry = &sim.status.clusters[0];
    assert_eq!(entry.from.as_deref(), Some(V1), "from recorded before the switch");
}

fn no_release_yet_is_idle() {
    let mut sim = Sim::new(spec(canary_then_rest()), fleet());
    sim.target = None;
    assert!(sim.step().actions.is_empty());
    assert_eq!(sim.status.phase, RolloutPhase::Idle);
}

fn a_bad_duration_switches_nothing_and_says_why() {
    let mut s = spec(canary_then_rest());
    s.health.timeout = Some("soon".into());
    let mut sim = Sim::new(s, fleet());
    let plan = sim.step();
    assert!(plan.actions.is_empty());
    assert!(plan.events.iter().any(|e| e.reason == "InvalidSpec"));
    assert!(
        sim.status
            .message
            .as_deref()
            .is_some_and(|m| m.contains("spec.health.timeout"))
    );
}

fn a_wave_without_clusters_is_done_at_once() {
    let mut waves = vec![wave("empty", select(&[("ring", "none")]))];
    waves[0].approval = Approval::Manual;
    waves[0].soak = Some("1h".into());
    waves.push(wave("rest", None));
    let mut sim = Sim::new(spec(waves), fleet());
    assert_eq!(switches(&sim.step()), ["c1"]);
    assert_eq!(sim.status.waves[0].phase, WavePhase::Complete);
}

fn a_deleted_cluster_leaves_the_rollout_and_frees_its_slot() {
    let mut sim = Sim::new(spec(vec![wave("all", None)]), fleet());
    sim.step();
    sim.clusters.retain(|c| c.name != "c1");
    assert_eq!(switches(&sim.step()), ["r1"]);
    assert_eq!(phase_of(&sim, "c1"), None);
}

#[test]
fn plan_rules() {
    let rules: &[(&str, fn())] = &[
        ("waves_run_in_order", waves_run_in_order),
        (
            "only_clusters_of_the_stack_are_switched",
            only_clusters_of_the_stack_are_switched,
        ),
        (
            "switch_sets_class_and_version_when_it_differs",
            switch_sets_class_and_version_when_it_differs,
        ),
        ("max_in_flight_is_never_exceeded", max_in_flight_is_never_exceeded),
        (
            "max_in_flight_percent_is_of_the_wave_and_at_least_one",
            max_in_flight_percent_is_of_the_wave_and_at_least_one,
        ),
        (
            "next_wave_waits_until_every_cluster_is_healthy",
            next_wave_waits_until_every_cluster_is_healthy,
        ),
        ("soak_delays_the_next_wave", soak_delays_the_next_wave),
        (
            "soak_is_never_shorter_than_written",
            soak_is_never_shorter_than_written,
        ),
        ("manual_wave_waits_for_approval", manual_wave_waits_for_approval),
        ("paused_switches_nothing", paused_switches_nothing),
        ("health_timeout_fails_a_cluster", health_timeout_fails_a_cluster),
        (
            "health_timeout_is_never_shorter_than_written",
            health_timeout_is_never_shorter_than_written,
        ),
        (
            "failures_within_max_failures_let_the_rollout_go_on",
            failures_within_max_failures_let_the_rollout_go_on,
        ),
        (
            "failures_beyond_max_failures_halt_with_condition_and_event",
            failures_beyond_max_failures_halt_with_condition_and_event,
        ),
        (
            "halted_never_switches_until_resumed",
            halted_never_switches_until_resumed,
        ),
        (
            "rollback_switches_failed_clusters_back",
            rollback_switches_failed_clusters_back,
        ),
        (
            "a_cluster_on_the_target_counts_healthy_without_a_switch",
            a_cluster_on_the_target_counts_healthy_without_a_switch,
        ),
        (
            "a_cluster_appearing_mid_rollout_joins_its_unfinished_wave",
            a_cluster_appearing_mid_rollout_joins_its_unfinished_wave,
        ),
        (
            "a_cluster_appearing_after_its_wave_waits_for_the_next_rollout",
            a_cluster_appearing_after_its_wave_waits_for_the_next_rollout,
        ),
        (
            "a_new_release_mid_rollout_does_not_interrupt_it",
            a_new_release_mid_rollout_does_not_interrupt_it,
        ),
        (
            "resume_of_a_halted_rollout_takes_the_newest_release",
            resume_of_a_halted_rollout_takes_the_newest_release,
        ),
        (
            "a_killed_operator_reissues_a_lost_switch_once",
            a_killed_operator_reissues_a_lost_switch_once,
        ),
        ("no_release_yet_is_idle", no_release_yet_is_idle),
        (
            "a_bad_duration_switches_nothing_and_says_why",
            a_bad_duration_switches_nothing_and_says_why,
        ),
        (
            "a_wave_without_clusters_is_done_at_once",
            a_wave_without_clusters_is_done_at_once,
        ),
        (
            "a_deleted_cluster_leaves_the_rollout_and_frees_its_slot",
            a_deleted_cluster_leaves_the_rollout_and_frees_its_slot,
        ),
    ];
    let failed: Vec<&str> = rules
        .iter()
        .filter(|(_, rule)| std::panic::catch_unwind(rule).is_err())
        .map(|(name, _)| *name)
        .collect();
    assert!(failed.is_empty(), "rules broken: {failed:?}");
}
