//! Property tests of the plan over random fleets, waves and event orders: Clusters become
//! healthy, fail (time passes beyond the health timeout), appear; the plan runs, or the
//! operator dies after writing the status (its actions lost, or only some applied), or
//! restarts from the status as read back from the API server; users approve, pause, resume;
//! a newer release appears; pre-flights block and pass, users force Clusters past them; a
//! maintenance window opens and closes. After every plan: never two waves at once, never more
//! in flight than allowed, never a switch of a halted or paused rollout, never a Cluster
//! switched twice to the same class, never a wave skipped, never a switch outside a window,
//! never a switch of a Cluster its pre-flight blocks (unless forced), never a Blocked Cluster
//! counted as failed.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;

use super::plan::{Action, max_in_flight};
use super::sim::{Sim, V1, V2, V3, cluster, target};
use super::waves::ClusterInfo;
use super::waves::tests::{select, spec, wave};
use crate::api::rollout::{
    Approval, ClusterPhase, ClusterStackRolloutStatus, FailureAction, MaintenanceWindow, OnBlocked,
    PreflightResult, RolloutPhase, Wave, WavePhase,
};

const RINGS: [&str; 3] = ["canary", "beta", "prod"];

#[derive(Clone, Debug)]
enum Event {
    Plan,
    /// The operator dies after writing the status: no action takes effect.
    PlanKilled,
    /// The operator dies after applying only the first `n` actions.
    PlanPartly(usize),
    /// The operator restarts: the status is what the API server stores (JSON round trip).
    Restart,
    Heal(usize),
    Advance(i64),
    Appear(usize),
    Approve(usize),
    Pause(bool),
    Resume,
    NewRelease,
    /// Cluster `i`'s pre-flight blocks (true) or passes (false).
    Preflight(usize, bool),
    /// The force annotation names Cluster `i`.
    Force(usize),
    /// The operator's status write is lost after its actions took effect (it reads a stale
    /// status next time).
    PlanStatusLost,
    /// The ClusterStack of Kubernetes 1.28 comes (with a ready release) or goes (across only).
    Stack28(bool),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => Just(Event::Plan),
        1 => Just(Event::PlanKilled),
        1 => (0usize..3).prop_map(Event::PlanPartly),
        1 => Just(Event::Restart),
        5 => (0usize..16).prop_map(Event::Heal),
        2 => prop_oneof![Just(30i64), Just(61), Just(200)].prop_map(Event::Advance),
        1 => (0usize..3).prop_map(Event::Appear),
        1 => (0usize..4).prop_map(Event::Approve),
        1 => any::<bool>().prop_map(Event::Pause),
        1 => Just(Event::Resume),
        1 => Just(Event::NewRelease),
        2 => (0usize..16, any::<bool>()).prop_map(|(i, b)| Event::Preflight(i, b)),
        1 => (0usize..16).prop_map(Event::Force),
        1 => Just(Event::PlanStatusLost),
        1 => any::<bool>().prop_map(Event::Stack28),
    ]
}

fn a_wave() -> impl Strategy<Value = Wave> {
    (
        prop::option::of(0usize..3),
        prop_oneof![
            (0i32..4).prop_map(IntOrString::Int),
            prop_oneof![Just("20%"), Just("50%"), Just("100%")].prop_map(|p| IntOrString::String(p.into())),
        ],
        prop_oneof![Just(None), Just(Some("60s".to_string()))],
        prop_oneof![3 => Just(Approval::Auto), 1 => Just(Approval::Manual)],
    )
        .prop_map(|(ring, limit, soak, approval)| Wave {
            max_in_flight: Some(limit),
            soak,
            approval,
            ..wave("", ring.and_then(|r| select(&[("ring", RINGS[r])])))
        })
}

fn a_cluster(i: usize) -> impl Strategy<Value = ClusterInfo> {
    (
        0usize..3,
        prop_oneof![8 => Just(V1), 1 => Just(V2), 1 => Just("docker-ferrol-1-28-v1")],
    )
        .prop_map(move |(ring, class)| cluster(&format!("c{i:02}"), class, &[("ring", RINGS[ring])]))
}

fn fleet() -> impl Strategy<Value = Vec<ClusterInfo>> {
    (1usize..12).prop_flat_map(|n| (0..n).map(a_cluster).collect::<Vec<_>>())
}

#[derive(Debug)]
struct Case {
    waves: Vec<Wave>,
    clusters: Vec<ClusterInfo>,
    max_failures: u32,
    rollback: bool,
    /// Windows of five minutes every ten, or none.
    windows: bool,
    skip_blocked: bool,
    /// A rollout across stacks (`from: auto`) to 1.29: the Clusters on 1.27 take two steps,
    /// those on 1.28 one.
    across: bool,
    events: Vec<Event>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(a_wave(), 1..4),
        fleet(),
        0u32..2,
        any::<bool>(),
        (any::<bool>(), any::<bool>(), any::<bool>()),
        prop::collection::vec(event(), 1..80),
    )
        .prop_map(
            |(mut waves, clusters, max_failures, rollback, (windows, skip_blocked, across), events)| {
                for (i, w) in waves.iter_mut().enumerate() {
                    w.name = format!("w{i}");
                }
                Case {
                    waves,
                    clusters,
                    max_failures,
                    rollback,
                    windows,
                    skip_blocked,
                    across,
                    events,
                }
            },
        )
}

/// What every plan must keep, checked against the status before and after it and the actions
/// it returned (`Err` says which promise broke).
fn check(
    sim: &Sim,
    before: &ClusterStackRolloutStatus,
    plan: &super::plan::Plan,
    resumed: bool,
) -> Result<(), String> {
    let after = &plan.status;
    let switches: Vec<&str> = plan
        .actions
        .iter()
        .filter(|a| matches!(a, Action::Switch { .. }))
        .map(Action::cluster)
        .collect();
    let wave_of = |status: &ClusterStackRolloutStatus, key: &str| {
        status
            .clusters
            .iter()
            .find(|c| c.name == key)
            .map(|c| c.wave.clone())
    };
    let index_of = |name: &str| sim.spec.waves.iter().position(|w| w.name == name);

    // never a switch of a halted or paused rollout
    if !switches.is_empty() {
        if sim.spec.paused {
            return Err(format!("paused, yet switched {switches:?}"));
        }
        if after.phase == RolloutPhase::Halted {
            return Err(format!("halted, yet switched {switches:?}"));
        }
        if before.phase == RolloutPhase::Halted && !resumed {
            return Err(format!(
                "halted before and not resumed, yet switched {switches:?}"
            ));
        }
    }
    // more failures than tolerated halt the rollout, and a halted rollout switches nothing
    let failures = after
        .clusters
        .iter()
        .filter(|c| matches!(c.phase, ClusterPhase::Failed | ClusterPhase::RolledBack) && !c.acknowledged)
        .count();
    if failures > sim.spec.failure_policy.max_failures as usize && after.phase != RolloutPhase::Halted {
        return Err(format!(
            "{failures} failures, yet the rollout is {:?}",
            after.phase
        ));
    }
    // never two waves at once
    let updating: BTreeSet<String> = after
        .clusters
        .iter()
        .filter(|c| c.phase == ClusterPhase::Updating)
        .map(|c| c.wave.clone())
        .collect();
    if updating.len() > 1 {
        return Err(format!("Clusters updating in waves {updating:?} at once"));
    }
    // never a wave skipped
    for key in &switches {
        let wave = wave_of(after, key).ok_or(format!("{key} switched without a status entry"))?;
        let index = index_of(&wave).ok_or(format!("{key} in unknown wave {wave}"))?;
        if let Some(open) = after.waves[..index]
            .iter()
            .find(|w| w.phase != WavePhase::Complete)
        {
            return Err(format!(
                "{key} of wave {wave} switched while wave {} is {:?}",
                open.name, open.phase
            ));
        }
    }
    // never more in flight than allowed (when the plan switched new Clusters)
    let new: Vec<&&str> = switches
        .iter()
        .filter(|key| {
            before
                .clusters
                .iter()
                .find(|c| c.name == **key)
                .is_none_or(|c| matches!(c.phase, ClusterPhase::Pending | ClusterPhase::Blocked))
                || before.target_release != after.target_release
        })
        .collect();
    // never a switch outside a window, never one of a Cluster its pre-flight blocks
    if !new.is_empty() {
        let parsed =
            super::windows::parse_all(&sim.spec.windows, "spec.windows").map_err(|e| format!("{e:?}"))?;
        if !super::windows::state(&parsed, sim.time().0).is_open() {
            return Err(format!("switched {new:?} outside every window"));
        }
    }
    for key in &new {
        let blocks = sim
            .preflight
            .get(**key)
            .is_some_and(|r| super::preflight::blocks(r));
        let forced = after
            .clusters
            .iter()
            .any(|c| c.name == ***key && c.forced.is_some());
        if blocks && !forced {
            return Err(format!("switched {key} while its pre-flight blocks it"));
        }
    }
    // a Blocked Cluster was never switched (nothing to roll back, no failure to count)
    if let Some(c) = after
        .clusters
        .iter()
        .find(|c| c.phase == ClusterPhase::Blocked && (c.from.is_some() || c.to.is_some()))
    {
        return Err(format!("{} is Blocked after a switch", c.name));
    }
    if let Some(key) = new.first() {
        let wave = wave_of(after, key).unwrap_or_default();
        let spec_wave = index_of(&wave).map(|i| &sim.spec.waves[i]).ok_or("no wave")?;
        let members = after.clusters.iter().filter(|c| c.wave == wave).count();
        let in_flight = after
            .clusters
            .iter()
            .filter(|c| c.wave == wave && c.phase == ClusterPhase::Updating)
            .count();
        let limit = max_in_flight(spec_wave.max_in_flight.as_ref(), members);
        if in_flight > limit {
            return Err(format!("{in_flight} in flight in wave {wave}, at most {limit}"));
        }
    }
    Ok(())
}

/// What every plan across stacks must keep, against the Clusters' classes before it: never a
/// skipped minor (nor a downgrade), never two steps of one Cluster at once (one switch per
/// Cluster, to its path's current step), never a switch of a Cluster without a path.
fn check_steps(
    across: bool,
    classes: &BTreeMap<String, Option<String>>,
    plan: &super::plan::Plan,
) -> Result<(), String> {
    let minor = |class: &str| {
        capstan_stack::name::ReleaseTag::parse_cluster_class(class)
            .map(|tag| tag.stack().kubernetes().minor)
            .map_err(|e| format!("{class}: {e}"))
    };
    let mut switched = BTreeSet::new();
    for action in &plan.actions {
        let Action::Switch { cluster, class, .. } = action else {
            continue;
        };
        if !switched.insert(cluster.clone()) {
            return Err(format!("{cluster} switched twice in one plan"));
        }
        let from = classes
            .get(cluster)
            .cloned()
            .flatten()
            .ok_or(format!("{cluster} switched without a class"))?;
        let (from_minor, to_minor) = (minor(&from)?, minor(class)?);
        if to_minor > from_minor + 1 || to_minor < from_minor {
            return Err(format!(
                "{cluster} switched from {from} to {class}: a skipped minor"
            ));
        }
        let entry = plan
            .status
            .clusters
            .iter()
            .find(|c| &c.name == cluster)
            .ok_or(format!("{cluster} switched without a status entry"))?;
        if across && entry.path.is_empty() {
            return Err(format!("{cluster} switched without a path"));
        }
        if let Some(step) = entry.path.get(entry.step.unwrap_or(0) as usize)
            && &step.class != class
        {
            return Err(format!(
                "{cluster} switched to {class}, its step {:?} is {}",
                entry.step, step.class
            ));
        }
    }
    Ok(())
}

/// Applied switches per (Cluster, class): more than one means a Cluster was switched twice.
/// A rollback in between starts the count again: a rolled back Cluster that a later rollout
/// (a resume toward a newer release) moves takes its path's first step anew.
fn double_switch(applied: &[Action]) -> Option<String> {
    let mut seen = BTreeMap::new();
    for a in applied {
        match a {
            Action::Switch { cluster, class, .. } => {
                let n = seen.entry((cluster.clone(), class.clone())).or_insert(0);
                *n += 1;
                if *n > 1 {
                    return Some(format!("{cluster} switched to {class} twice"));
                }
            }
            Action::RollBack { cluster, .. } => seen.retain(|(c, _), _| c != cluster),
        }
    }
    None
}

fn run(case: Case) -> Result<(), TestCaseError> {
    let mut s = spec(case.waves);
    s.health.timeout = Some("2m".into());
    s.failure_policy.max_failures = case.max_failures;
    if case.rollback {
        s.failure_policy.action = FailureAction::Rollback;
    }
    if case.windows {
        s.windows = vec![MaintenanceWindow {
            schedule: "*/10 * * * *".into(),
            duration: "5m".into(),
            time_zone: "UTC".into(),
        }];
    }
    if case.skip_blocked {
        s.preflight.on_blocked = OnBlocked::Skip;
    }
    let across = case.across;
    let mut sim = if across {
        Sim::across(s, case.clusters)
    } else {
        Sim::new(s, case.clusters)
    };
    let mut tokens = 0;
    let mut appeared = 0;
    for event in case.events {
        let before = sim.status.clone();
        let classes: BTreeMap<String, Option<String>> =
            sim.clusters.iter().map(|c| (c.key(), c.class.clone())).collect();
        let planned = match event {
            Event::Plan => Some(sim.step()),
            Event::PlanStatusLost => {
                let plan = sim.step();
                sim.status = before.clone();
                Some(plan)
            }
            Event::Stack28(present) => {
                if across {
                    sim.stacks.retain(|h| h.name != "ferrol-1-28");
                    if present {
                        sim.stacks.push(super::sim::hop(28, Some(1)));
                    }
                }
                None
            }
            Event::PlanKilled => Some(sim.step_killed()),
            Event::PlanPartly(n) => {
                let plan = sim.step_killed();
                for action in plan.actions.iter().take(n) {
                    sim.apply(action);
                }
                Some(plan)
            }
            Event::Restart => {
                let json =
                    serde_json::to_value(&sim.status).map_err(|e| TestCaseError::fail(e.to_string()))?;
                sim.status = serde_json::from_value(json).map_err(|e| TestCaseError::fail(e.to_string()))?;
                None
            }
            Event::Heal(i) => {
                if let Some(c) = sim.clusters.get(i).map(|c| c.name.clone()) {
                    sim.heal(&c);
                }
                None
            }
            Event::Advance(seconds) => {
                sim.advance(seconds);
                None
            }
            Event::Appear(ring) => {
                appeared += 1;
                sim.clusters
                    .push(cluster(&format!("new{appeared}"), V1, &[("ring", RINGS[ring])]));
                None
            }
            Event::Approve(w) => {
                tokens += 1;
                sim.approve = Some(format!("w{w}@{tokens}"));
                None
            }
            Event::Pause(paused) => {
                sim.spec.paused = paused;
                None
            }
            Event::Resume => {
                tokens += 1;
                sim.resume = Some(tokens.to_string());
                None
            }
            Event::NewRelease => {
                sim.target = Some(target(if across { "docker-ferrol-1-29-v2" } else { V3 }));
                None
            }
            Event::Preflight(i, blocked) => {
                if let Some(key) = sim.clusters.get(i).map(ClusterInfo::key) {
                    let result = PreflightResult {
                        check: "RemovedAPIs".into(),
                        ok: !blocked,
                        reason: if blocked { "in use".into() } else { String::new() },
                    };
                    sim.preflight.insert(key, vec![result]);
                }
                None
            }
            Event::Force(i) => {
                sim.force = sim.clusters.get(i).map(|c| format!("{}@tester", c.key()));
                None
            }
        };
        if let Some(plan) = planned {
            let resumed = sim.resume.is_some() && sim.resume != before.resume_token;
            check(&sim, &before, &plan, resumed)
                .and_then(|()| check_steps(across, &classes, &plan))
                .map_err(|e| TestCaseError::fail(format!("{e}\nafter {event:?}")))?;
        }
        if let Some(e) = double_switch(&sim.applied) {
            return Err(TestCaseError::fail(e));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn rollouts_keep_their_promises_in_any_event_order(case in case()) {
        run(case)?;
    }
}

/// The properties can fail: a plan that switches a second wave early is caught.
#[test]
fn the_checks_catch_a_skipped_wave() {
    let mut sim = Sim::new(
        spec(vec![wave("w0", select(&[("ring", "canary")])), wave("w1", None)]),
        vec![cluster("a", V1, &[("ring", "canary")]), cluster("b", V1, &[])],
    );
    let before = sim.status.clone();
    let mut plan = sim.decide();
    plan.actions.push(Action::Switch {
        cluster: "tenant-a/b".into(),
        class: V2.into(),
        version: None,
    });
    sim.status = plan.status.clone();
    assert!(check(&sim, &before, &plan, false).is_err());
}
