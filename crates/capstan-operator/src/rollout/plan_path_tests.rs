//! The plan across stacks (`spec.from`): paths of one minor per step, each step its own
//! switch and health gate, a Cluster without a path Blocked with the reason, a rollback of
//! one step, and an operator killed mid-path.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::plan::{Action, Plan};
use super::sim::{Sim, cluster, hop};
use super::waves::tests::{spec, wave};
use crate::api::rollout::{
    ClusterPhase, ClusterRolloutStatus, FailureAction, FromStacks, MaintenanceWindow, OnBlocked, RolloutPhase,
};

const K27: &str = "docker-ferrol-1-27-v1";
const K28: &str = "docker-ferrol-1-28-v1";
const K29: &str = "docker-ferrol-1-29-v1";

fn all_at_once() -> crate::api::rollout::ClusterStackRolloutSpec {
    let mut all = wave("all", None);
    all.max_in_flight = Some(IntOrString::Int(10));
    let mut s = spec(vec![all]);
    s.health.timeout = Some("5m".into());
    s
}

fn entry<'a>(sim: &'a Sim, name: &str) -> &'a ClusterRolloutStatus {
    let key = format!("tenant-a/{name}");
    sim.status
        .clusters
        .iter()
        .find(|c| c.name == key)
        .unwrap_or_else(|| panic!("{key} has no status: {:?}", sim.status.clusters))
}

/// The switches of a plan as `name→class@version`.
fn switches(plan: &Plan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::Switch {
                cluster,
                class,
                version,
            } => Some(format!(
                "{}→{class}@{}",
                cluster.trim_start_matches("tenant-a/"),
                version.as_deref().unwrap_or("-")
            )),
            Action::RollBack { .. } => None,
        })
        .collect()
}

fn classes(entry: &ClusterRolloutStatus) -> Vec<&str> {
    entry.path.iter().map(|s| s.class.as_str()).collect()
}

#[test]
fn a_cluster_two_minors_behind_walks_its_path_one_healthy_step_at_a_time() {
    let mut sim = Sim::across(
        all_at_once(),
        vec![cluster("old", K27, &[]), cluster("mid", K28, &[])],
    );
    let plan = sim.step();
    assert_eq!(
        switches(&plan),
        [
            "mid→docker-ferrol-1-29-v1@v1.29.1",
            "old→docker-ferrol-1-28-v1@v1.28.1"
        ]
    );
    assert_eq!(classes(entry(&sim, "old")), [K28, K29]);
    assert_eq!(classes(entry(&sim, "mid")), [K29]);
    assert_eq!(entry(&sim, "old").step, Some(0));
    assert_eq!(
        entry(&sim, "old").message.as_deref(),
        Some("switched (step 1 of 2)")
    );

    // Not healthy on its first step: its second waits, however often the plan runs.
    sim.advance(30);
    assert_eq!(switches(&sim.step()), Vec::<String>::new());
    assert_eq!(entry(&sim, "old").phase, ClusterPhase::Updating);

    // Healthy on 1.28: the step is done, and the same pass switches it to 1.29.
    sim.heal("old");
    let plan = sim.step();
    assert!(
        plan.events.iter().any(|e| e.reason == "StepHealthy"
            && e.message
                == "tenant-a/old: step 1 of 2 healthy on docker-ferrol-1-28-v1; next docker-ferrol-1-29-v1"),
        "{:?}",
        plan.events
    );
    assert_eq!(switches(&plan), ["old→docker-ferrol-1-29-v1@v1.29.1"]);
    let old = entry(&sim, "old");
    assert_eq!((old.step, old.phase), (Some(1), ClusterPhase::Updating));
    assert_eq!(old.from.as_deref(), Some(K28), "a rollback goes back one step");
    assert_eq!(old.from_version.as_deref(), Some("v1.28.1"));

    sim.heal_all();
    sim.step();
    assert_eq!(entry(&sim, "old").phase, ClusterPhase::Healthy);
    assert_eq!(sim.status.phase, RolloutPhase::Complete);
    assert_eq!(
        sim.switch_counts().values().copied().collect::<Vec<_>>(),
        [1, 2],
        "mid once, old once per step"
    );
}

#[test]
fn a_missing_intermediate_stack_blocks_with_the_reason_and_never_skips_a_minor() {
    let mut s = all_at_once();
    s.preflight.on_blocked = OnBlocked::Skip;
    // No ClusterStack of 1.28 in the namespace; "new" is on an older release of the target's.
    let mut sim = Sim::across(s, vec![cluster("old", K27, &[]), cluster("new", K29, &[])]);
    sim.stacks = vec![hop(27, Some(1)), hop(29, Some(2))];
    sim.target = Some(super::sim::target("docker-ferrol-1-29-v2"));
    let plan = sim.step();
    assert_eq!(switches(&plan), ["new→docker-ferrol-1-29-v2@v1.29.2"]);
    let old = entry(&sim, "old");
    assert_eq!(old.phase, ClusterPhase::Blocked);
    assert!(old.path.is_empty());
    assert_eq!(
        old.message.as_deref(),
        Some(
            "no path to docker-ferrol-1-29-v2: no ClusterStack for Kubernetes 1.28 (provider docker, name ferrol): a Cluster never skips a minor"
        )
    );
    assert!(plan.events.iter().any(|e| e.reason == "NoPath" && e.warning));
    // Blocked is not a failure, and the wave does not wait for it.
    sim.heal_all();
    sim.step();
    assert_eq!(sim.status.phase, RolloutPhase::Complete);
    assert_eq!(sim.status.waves[0].failed, 0);
    assert!(sim.switched().iter().all(|c| c != "tenant-a/old"));

    // A 1.28 stack without a ready release: blocked still, with that reason.
    sim.stacks.push(hop(28, None));
    sim.target = Some(super::sim::target("docker-ferrol-1-29-v3"));
    sim.step();
    assert_eq!(
        entry(&sim, "old").message.as_deref(),
        Some(
            "no path to docker-ferrol-1-29-v3: ClusterStack docker-ferrol-1-28 (Kubernetes 1.28) has no ready release"
        )
    );
}

#[test]
fn a_cluster_without_a_path_halts_the_rollout_with_on_blocked_halt_until_the_stack_comes() {
    let mut sim = Sim::across(
        all_at_once(),
        vec![cluster("old", K27, &[]), cluster("mid", K28, &[])],
    );
    sim.stacks = vec![hop(27, Some(1)), hop(29, Some(1))];
    let plan = sim.step();
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(sim.status.phase, RolloutPhase::Halted);
    assert!(
        sim.status
            .message
            .as_deref()
            .is_some_and(|m| m.contains("tenant-a/old")),
        "{:?}",
        sim.status.message
    );
    // The 1.28 stack and its release appear; the user resumes: old gets its path.
    sim.stacks.push(hop(28, Some(1)));
    sim.resume = Some("1".into());
    let plan = sim.step();
    assert_eq!(
        switches(&plan),
        [
            "mid→docker-ferrol-1-29-v1@v1.29.1",
            "old→docker-ferrol-1-28-v1@v1.28.1"
        ]
    );
    assert_eq!(classes(entry(&sim, "old")), [K28, K29]);
}

#[test]
fn from_names_its_stacks_and_auto_says_when_it_finds_none() {
    let mut sim = Sim::across(
        all_at_once(),
        vec![cluster("old", K27, &[]), cluster("mid", K28, &[])],
    );
    sim.spec.from = Some(FromStacks::Stacks(vec![
        "ferrol-1-28".into(),
        "ferrol-1-20".into(),
    ]));
    let plan = sim.step();
    assert_eq!(switches(&plan), ["mid→docker-ferrol-1-29-v1@v1.29.1"]);
    assert!(sim.status.clusters.iter().all(|c| c.name != "tenant-a/old"));
    let message = plan.status.message.unwrap_or_default();
    assert!(
        message.ends_with("; spec.from: no ClusterStack ferrol-1-20 in the namespace"),
        "{message}"
    );

    let mut sim = Sim::across(all_at_once(), vec![cluster("new", K29, &[])]);
    sim.stacks = vec![hop(29, Some(1))];
    let plan = sim.step();
    let message = plan.status.message.unwrap_or_default();
    assert!(
        message.ends_with(
            "; spec.from: auto finds no ClusterStack of provider docker, name ferrol below Kubernetes 1.29 in the namespace"
        ),
        "{message}"
    );
}

#[test]
fn a_failed_step_rolls_back_to_where_that_step_started() {
    let mut s = all_at_once();
    s.failure_policy.action = FailureAction::Rollback;
    let mut sim = Sim::across(s, vec![cluster("old", K27, &[])]);
    sim.step();
    sim.heal("old");
    sim.step(); // step 1 healthy on 1.28, switched to 1.29
    sim.advance(301);
    let plan = sim.step();
    assert_eq!(
        plan.actions,
        [Action::RollBack {
            cluster: "tenant-a/old".into(),
            class: K28.into(),
            version: Some("v1.28.1".into()),
        }]
    );
    assert_eq!(entry(&sim, "old").phase, ClusterPhase::RolledBack);
    assert_eq!(sim.class_of("old").as_deref(), Some(K28));
}

#[test]
fn an_operator_killed_mid_path_resumes_without_switching_twice() {
    // The status is lost after the actions (a stale read): the Cluster is on its next step's
    // class while the status says it waits for it.
    let mut sim = Sim::across(all_at_once(), vec![cluster("old", K27, &[])]);
    sim.step();
    sim.heal("old");
    let before = sim.status.clone();
    sim.step(); // switched to 1.29
    sim.status = before;
    assert_eq!(sim.class_of("old").as_deref(), Some(K29));
    for _ in 0..3 {
        assert_eq!(switches(&sim.step()), Vec::<String>::new());
    }
    assert_eq!(entry(&sim, "old").step, Some(1));
    sim.heal("old");
    sim.step();
    assert_eq!(entry(&sim, "old").phase, ClusterPhase::Healthy);
    assert_eq!(sim.switch_counts().get("tenant-a/old"), Some(&2));

    // The actions are lost after the status: the switch of the recorded step is issued again.
    let mut sim = Sim::across(all_at_once(), vec![cluster("old", K27, &[])]);
    sim.step();
    sim.heal("old");
    let lost = sim.step_killed();
    assert_eq!(switches(&lost), ["old→docker-ferrol-1-29-v1@v1.29.1"]);
    assert_eq!(switches(&sim.step()), ["old→docker-ferrol-1-29-v1@v1.29.1"]);
    assert_eq!(switches(&sim.step()), Vec::<String>::new());
}

#[test]
fn the_next_step_waits_for_a_window_while_a_step_in_flight_finishes() {
    let mut s = all_at_once();
    // Open for the first five minutes of every ten.
    s.windows = vec![MaintenanceWindow {
        schedule: "*/10 * * * *".into(),
        duration: "5m".into(),
        time_zone: "UTC".into(),
    }];
    let mut sim = Sim::across(s, vec![cluster("old", K27, &[])]);
    let plan = sim.step();
    assert_eq!(switches(&plan), ["old→docker-ferrol-1-28-v1@v1.28.1"]);
    sim.advance(360); // the window closed with the step in flight
    sim.heal("old");
    let plan = sim.step();
    assert_eq!(switches(&plan), Vec::<String>::new());
    let old = entry(&sim, "old");
    assert_eq!((old.phase, old.step), (ClusterPhase::Pending, Some(1)));
    assert_eq!(sim.status.phase, RolloutPhase::WaitingForWindow);
    sim.advance(240); // the next window
    assert_eq!(switches(&sim.step()), ["old→docker-ferrol-1-29-v1@v1.29.1"]);
}
