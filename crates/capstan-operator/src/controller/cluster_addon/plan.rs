//! What a ClusterAddon pass does next, as pure functions tested as tables without a cluster:
//! the gates before a render ([`cluster_api_gate`], [`cluster_gone`], [`class_of`],
//! [`control_plane_gate`], [`workload_gate`]: each says go on, or how the pass halts), and the
//! stage machine, decided from the recorded status alone ([`plan`], [`AddonStages`]: its
//! actions are steps of the release runner's one plan). The reads are `observe.rs`'s, the I/O
//! `act.rs`'s.
//!
//! Compatibility: the phases and `stagesFor` are stored as the strings earlier versions wrote
//! (`Pending`, `waitingForPreCondition`, …; `"<hook> <class>"`), and read back from them
//! ([`Recorded`]); a text this version does not know stops the stages (never read as
//! `Pending`: a `delete` stage would run again).

use std::ops::ControlFlow;

use kube::api::DynamicObject;

use super::super::Cause;
use super::super::pipeline::{APPLIED, RENDERED};
use super::names::{CLUSTER_READY, WORKLOAD_REACHABLE};
use crate::addon::user_values::{GatherError, Layer};
use crate::addon::workload::Gate;
use crate::api::{ClusterAddonStatus, Recorded, StagePhase, StageStatus, StagesFor, conditions};
use crate::clusters::ClusterUse;
use capstan_stack::addon_config::{AddonConfig, Hook, Stage};
use capstan_stack::name::ReleaseTag;

/// How a pass halts at a gate, before anything is rendered.
#[derive(Debug)]
pub enum Halt {
    /// The Cluster is gone: the ClusterAddon deletes itself (no garbage collector took it
    /// along), and the pass ends.
    DeleteSelf,
    /// Condition `step` false with `reason`, looked at again soon (a gate that opens by
    /// itself).
    Wait {
        step: &'static str,
        reason: &'static str,
        message: String,
    },
    /// Condition `step` false with `reason`, looked at again only on a change.
    Stop {
        step: &'static str,
        reason: &'static str,
        message: String,
    },
    /// The pass fails: condition `step` false with `reason` and the cause.
    Fail {
        step: &'static str,
        reason: &'static str,
        cause: Cause,
    },
}

/// The gate of Cluster API itself: a version capstan speaks is served (`not_served` says why
/// not, [`crate::capi_api::not_served`]). Without one the pass fails — an Event, the error
/// metric and the backoff — and nothing reads the Cluster, whose absence would mean "gone".
pub fn cluster_api_gate(not_served: Option<String>) -> ControlFlow<Halt> {
    match not_served {
        None => ControlFlow::Continue(()),
        Some(why) => ControlFlow::Break(Halt::Fail {
            step: CLUSTER_READY,
            reason: crate::capi_api::NOT_SERVED_REASON,
            cause: Cause::ClusterApiNotServed(why),
        }),
    }
}

/// The gate of the Cluster itself: present, or gone (the ClusterAddon goes too).
pub fn cluster_gate(found: Option<DynamicObject>) -> ControlFlow<Halt, DynamicObject> {
    match found {
        Some(cluster) => ControlFlow::Continue(cluster),
        None => ControlFlow::Break(Halt::DeleteSelf),
    }
}

/// Which release: the Cluster's class, its namespace and its release tag. A Cluster without
/// a class waits; a class that is no stack's waits for a change.
pub fn class_gate(usage: &ClusterUse) -> ControlFlow<Halt, (String, String, ReleaseTag)> {
    let Some(class) = usage.class.clone() else {
        let message = format!("Cluster {} has no spec.topology.class", usage.name);
        return ControlFlow::Break(Halt::Wait {
            step: CLUSTER_READY,
            reason: "NoTopology",
            message,
        });
    };
    match ReleaseTag::parse_cluster_class(&class) {
        Ok(tag) => ControlFlow::Continue((class, usage.class_namespace.clone(), tag)),
        Err(e) => ControlFlow::Break(Halt::Stop {
            step: CLUSTER_READY,
            reason: "NotAStackClass",
            message: format!("class {class} is not a cluster stack class: {e}"),
        }),
    }
}

/// The control plane's gate: the Cluster's control plane is initialized
/// (`status.controlPlaneReady` on v1beta1, `status.initialization.controlPlaneInitialized` on
/// v1beta2).
pub fn control_plane_gate(cluster: &DynamicObject) -> ControlFlow<Halt> {
    if crate::clusters::control_plane_initialized(cluster) {
        return ControlFlow::Continue(());
    }
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    let field = crate::clusters::initialized_field(cluster);
    ControlFlow::Break(Halt::Wait {
        step: CLUSTER_READY,
        reason: "ControlPlaneNotReady",
        message: format!("waiting for Cluster {name}: {field} is not true"),
    })
}

/// The workload cluster's gate: connected, or waiting at its closed gate — a failed pass
/// instead when addons were `applied` there and its API server does not answer (`Ready`
/// still says they are applied; `WorkloadReachable` says where it failed).
pub fn workload_gate<T>(connected: Result<T, Gate>, cluster: &str, applied: bool) -> ControlFlow<Halt, T> {
    match connected {
        Ok(target) => ControlFlow::Continue(target),
        Err(gate) if gate.unreachable_after_apply(applied) => ControlFlow::Break(Halt::Fail {
            step: WORKLOAD_REACHABLE,
            reason: "WorkloadUnreachable",
            cause: Cause::Unreachable {
                cluster: cluster.to_string(),
                gate,
            },
        }),
        Err(gate) => ControlFlow::Break(Halt::Wait {
            step: CLUSTER_READY,
            reason: "WorkloadNotReady",
            message: gate.to_string(),
        }),
    }
}

/// The gate of the objects the Cluster references (read, or the pass waits for them).
pub fn objects_gate<T, E: std::fmt::Display>(read: Result<T, E>) -> ControlFlow<Halt, T> {
    match read {
        Ok(objects) => ControlFlow::Continue(objects),
        Err(missing) => ControlFlow::Break(Halt::Wait {
            step: RENDERED,
            reason: "ObjectsMissing",
            message: missing.to_string(),
        }),
    }
}

/// The gate of the user's values: gathered, missing (the pass waits) or invalid (it fails).
pub fn user_values_gate(gathered: Result<Vec<Layer>, GatherError>) -> ControlFlow<Halt, Vec<Layer>> {
    match gathered {
        Ok(layers) => ControlFlow::Continue(layers),
        Err(GatherError::Missing(message)) => ControlFlow::Break(Halt::Wait {
            step: RENDERED,
            reason: "UserValuesMissing",
            message,
        }),
        Err(GatherError::Invalid(message)) => ControlFlow::Break(Halt::Fail {
            step: RENDERED,
            reason: "InvalidUserValues",
            cause: Cause::UserValues(message),
        }),
    }
}

/// The `Applied` condition's message when it turns false at once because the Cluster's
/// class changed since the addons were applied (only while it says applied: later steps set
/// their own progress).
pub fn upgrade_note(status: &ClusterAddonStatus, class: &str) -> Option<String> {
    class_change(status.applied_cluster_stack.as_deref(), class)
        .filter(|_| conditions::is_true(&status.conditions, APPLIED))
}

/// When the Cluster's class is not the one whose addons were applied last: the message of
/// the `Applied` condition while the new release's addons are brought in.
pub fn class_change(applied: Option<&str>, class: &str) -> Option<String> {
    match applied {
        Some(applied) if applied != class => Some(format!(
            "the Cluster's class changed from {applied} to {class}: applying the addons of {class}"
        )),
        _ => None,
    }
}

/// What a stage does next from its phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageStep {
    /// Evaluate the pre-condition; met → `ApplyingOrDeleting`, else `WaitingForPreCondition`.
    CheckPre,
    /// Apply or delete the stage's objects, then → `WaitingForPostCondition`.
    Run,
    /// Evaluate the post-condition; met → `Done`, else stay.
    CheckPost,
}

/// What the release runner applies when no stage action is next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applying {
    /// No `clusteraddon.yaml`: the one chart, as the release runner's plan decides.
    Chart,
    /// The stages ran for this class: the `apply` stages of `hook`, as the release runner's
    /// plan decides (drift, or new inputs).
    Stages { hook: Option<Hook> },
}

/// A stage action: a step of the release runner's plan ([`super::super::release_runner::plan::Step::Stage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageAction {
    /// Record a fresh stage list for `stages_for` (every stage `Pending`).
    Start {
        stages_for: StagesFor,
        stages: Vec<StageStatus>,
    },
    /// Advance stage `index` of `hook`.
    Run {
        hook: Hook,
        index: usize,
        step: StageStep,
    },
    /// Every stage of `hook` is done: record the class as applied.
    Done { hook: Hook, count: usize },
    /// A recorded field of the stages holds a value this version does not know: nothing
    /// runs (the condition names `field` and its `value`).
    Unrecognized { field: String, value: String },
}

/// The next step of a ClusterAddon pass, once the release is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// No stage action: apply (as the release runner's plan decides).
    Apply(Applying),
    /// A stage action.
    Act(StageAction),
}

/// What the stage machine needs from a pass: the recorded stages (`applied_cluster_stack`,
/// `stages_for`, `stages` of the status), the release's `clusteraddon.yaml` and the
/// Cluster's class.
#[derive(Debug, Clone)]
pub struct AddonStages<'a> {
    recorded: ClusterAddonStatus,
    config: Option<&'a AddonConfig>,
    class: &'a str,
}

impl<'a> AddonStages<'a> {
    pub fn new(
        status: &ClusterAddonStatus,
        config: Option<&'a AddonConfig>,
        class: &'a str,
    ) -> AddonStages<'a> {
        let recorded = ClusterAddonStatus {
            applied_cluster_stack: status.applied_cluster_stack.clone(),
            stages_for: status.stages_for.clone(),
            stages: status.stages.clone(),
            ..ClusterAddonStatus::default()
        };
        AddonStages {
            recorded,
            config,
            class,
        }
    }

    /// What the runner applies when no stage action is next (`None` while one is).
    pub fn applying(&self) -> Option<Applying> {
        match plan(&self.recorded, self.config, self.class) {
            Step::Apply(applying) => Some(applying),
            Step::Act(_) => None,
        }
    }
}

impl super::super::release_runner::plan::Stages for AddonStages<'_> {
    type Action = StageAction;

    fn next(&self) -> Option<StageAction> {
        match plan(&self.recorded, self.config, self.class) {
            Step::Apply(_) => None,
            Step::Act(action) => Some(action),
        }
    }
}

/// Whether the recorded `status` says the render of `inputs` was applied in full for `class`
/// (else the runner applies it as new: an upgrade, or new values).
pub fn applied(status: &ClusterAddonStatus, class: &str, inputs: &str) -> bool {
    let upgrade = status
        .applied_cluster_stack
        .as_deref()
        .is_some_and(|a| a != class);
    status.applied_inputs.as_deref() == Some(inputs) && !upgrade
}

/// Decides the next step from the recorded `status`, the release's `config` and the
/// Cluster's `class`.
pub fn plan(status: &ClusterAddonStatus, config: Option<&AddonConfig>, class: &str) -> Step {
    let applied = status.applied_cluster_stack.as_deref();
    let upgrade = applied.is_some_and(|a| a != class);
    let Some(config) = config else {
        return Step::Apply(Applying::Chart);
    };
    if let Some(unknown) = unrecognized(status) {
        return Step::Act(unknown);
    }
    let recorded = status.stages_for.as_ref().and_then(Recorded::known).cloned();
    let hook = match applied {
        None => Hook::AfterControlPlaneInitialized,
        Some(_) if upgrade => Hook::BeforeClusterUpgrade,
        Some(_) => {
            return Step::Apply(Applying::Stages {
                hook: recorded.map(|r| r.hook),
            });
        }
    };
    let stages = stages_of(config, hook);
    let wanted = StagesFor {
        hook,
        class: class.to_string(),
    };
    if recorded.as_ref() != Some(&wanted) || status.stages.len() != stages.len() {
        return Step::Act(StageAction::Start {
            stages_for: wanted,
            stages: stages.iter().map(pending).collect(),
        });
    }
    for (index, (stage, recorded)) in stages.iter().zip(&status.stages).enumerate() {
        let Recorded::Known(phase) = recorded.phase else {
            // `unrecognized` stopped the plan before.
            continue;
        };
        let step = match phase {
            StagePhase::Done => continue,
            StagePhase::Pending | StagePhase::WaitingForPreCondition => {
                if stage.wait_for_pre_condition.is_some() {
                    StageStep::CheckPre
                } else {
                    StageStep::Run
                }
            }
            StagePhase::ApplyingOrDeleting => StageStep::Run,
            StagePhase::WaitingForPostCondition => StageStep::CheckPost,
        };
        return Step::Act(StageAction::Run { hook, index, step });
    }
    Step::Act(StageAction::Done {
        hook,
        count: stages.len(),
    })
}

/// The first recorded field of the stages (`stagesFor`, a stage's `action` or `phase`) whose
/// text this version does not know, as the action that stops the pass.
fn unrecognized(status: &ClusterAddonStatus) -> Option<StageAction> {
    let unknown = |field: String, value: &str| StageAction::Unrecognized {
        field,
        value: value.to_string(),
    };
    if let Some(Recorded::Unknown(value)) = &status.stages_for {
        return Some(unknown("stagesFor".into(), value));
    }
    status.stages.iter().enumerate().find_map(|(index, stage)| {
        if let Recorded::Unknown(value) = &stage.action {
            return Some(unknown(format!("stages[{index}].action"), value));
        }
        if let Recorded::Unknown(value) = &stage.phase {
            return Some(unknown(format!("stages[{index}].phase"), value));
        }
        None
    })
}

/// What a stage's phase becomes after `step` when its condition `met` (ignored by `Run`).
pub fn advance(step: StageStep, met: bool) -> StagePhase {
    match (step, met) {
        (StageStep::CheckPre, true) => StagePhase::ApplyingOrDeleting,
        (StageStep::CheckPre, false) => StagePhase::WaitingForPreCondition,
        (StageStep::Run, _) => StagePhase::WaitingForPostCondition,
        (StageStep::CheckPost, true) => StagePhase::Done,
        (StageStep::CheckPost, false) => StagePhase::WaitingForPostCondition,
    }
}

/// The stages `config` declares for `hook` (none when it declares none).
pub fn stages_of(config: &AddonConfig, hook: Hook) -> &[Stage] {
    config
        .hooks
        .iter()
        .find(|(h, _)| *h == hook)
        .map_or(&[], |(_, stages)| stages.as_slice())
}

fn pending(stage: &Stage) -> StageStatus {
    StageStatus {
        name: stage.name.clone(),
        action: Recorded::Known(stage.action),
        phase: Recorded::Known(StagePhase::Pending),
        resources_omitted: 0,
    }
}

/// Where the stages stand while stage `index` is in its recorded phase, for the `Applied`
/// condition (and so `Ready`): `stage NAME (I/N): PHASE`.
pub fn stage_message(stages: &[StageStatus], index: usize) -> String {
    match stages.get(index) {
        Some(stage) => format!(
            "stage {} ({}/{}): {}",
            stage.name,
            index + 1,
            stages.len(),
            stage.phase
        ),
        None => format!("stage {} of {}", index + 1, stages.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_stack::addon_config::{Action, WaitCondition};
    use proptest::prelude::*;

    const V1: &str = "docker-ferrol-1-27-v1";
    const V2: &str = "docker-ferrol-1-27-v2";

    fn condition() -> Option<WaitCondition> {
        Some(WaitCondition {
            objects: Vec::new(),
            conditions: "true".into(),
        })
    }

    fn stage(name: &str, pre: bool, post: bool) -> Stage {
        Stage {
            name: name.into(),
            action: Action::Apply,
            wait_for_pre_condition: pre.then(condition).flatten(),
            wait_for_post_condition: post.then(condition).flatten(),
        }
    }

    /// Two stages on creation (the first with both conditions), one on upgrade.
    fn config() -> AddonConfig {
        AddonConfig {
            hooks: vec![
                (
                    Hook::AfterControlPlaneInitialized,
                    vec![stage("a", true, true), stage("b", false, false)],
                ),
                (Hook::BeforeClusterUpgrade, vec![stage("c", false, true)]),
            ],
        }
    }

    fn status(applied: Option<&str>, stages_for: Option<&str>, phases: &[&str]) -> ClusterAddonStatus {
        ClusterAddonStatus {
            applied_cluster_stack: applied.map(str::to_string),
            applied_inputs: applied.map(|_| "inputs".to_string()),
            stages_for: stages_for.map(Recorded::read),
            stages: phases
                .iter()
                .zip(["a", "b", "c"])
                .map(|(phase, name)| StageStatus {
                    name: name.into(),
                    action: Recorded::Known(Action::Apply),
                    phase: Recorded::read(phase),
                    resources_omitted: 0,
                })
                .collect(),
            ..ClusterAddonStatus::default()
        }
    }

    #[test]
    fn phases_read_and_write_the_stored_strings() {
        for phase in StagePhase::ALL {
            assert_eq!(Recorded::read(phase.as_str()), Recorded::Known(phase));
        }
        let phase = |text: &str| Recorded::<StagePhase>::read(text);
        assert_eq!(
            phase("waitingForPostCondition"),
            Recorded::Known(StagePhase::WaitingForPostCondition)
        );
        assert_eq!(phase("done"), Recorded::Known(StagePhase::Done));
        // Text no version wrote is kept as found, never read as `Pending`.
        assert_eq!(phase(""), Recorded::Unknown(String::new()));
        assert_eq!(phase("bogus"), Recorded::Unknown("bogus".into()));
        assert_eq!(phase("bogus").to_string(), "bogus");
        assert_eq!(
            Recorded::<Action>::read("delete"),
            Recorded::Known(Action::Delete)
        );
        assert_eq!(
            Recorded::<Action>::read("Delete"),
            Recorded::Unknown("Delete".into())
        );
        let recorded = format!("{} {V1}", Hook::BeforeClusterUpgrade);
        let Recorded::Known(parsed) = Recorded::<StagesFor>::read(&recorded) else {
            panic!("{recorded} is the stored form");
        };
        assert_eq!(parsed.hook, Hook::BeforeClusterUpgrade);
        assert_eq!(parsed.class, V1);
        assert_eq!(Recorded::Known(parsed).to_string(), recorded);
        for text in ["NoSuchHook x", "AfterControlPlaneInitialized"] {
            assert_eq!(Recorded::<StagesFor>::read(text), Recorded::Unknown(text.into()));
        }
        // Through the status's JSON: the text as stored, an absent phase unknown.
        let stage: StageStatus =
            serde_json::from_value(serde_json::json!({"name": "a", "action": "delete"})).expect("stage");
        assert_eq!(stage.phase, Recorded::Unknown(String::new()));
        let stage = StageStatus {
            phase: Recorded::Unknown("later".into()),
            ..stage
        };
        assert_eq!(
            serde_json::to_value(&stage).expect("JSON"),
            serde_json::json!({"name": "a", "action": "delete", "phase": "later"})
        );
    }

    #[test]
    fn the_stage_message_names_the_stage_its_place_and_phase() {
        let stages = status(None, None, &["done", "waitingForPreCondition", "bogus"]).stages;
        let cases = [
            (0, "stage a (1/3): done"),
            (1, "stage b (2/3): waitingForPreCondition"),
            (2, "stage c (3/3): bogus"),
            (3, "stage 4 of 3"),
        ];
        for (index, want) in cases {
            assert_eq!(stage_message(&stages, index), want);
        }
    }

    #[test]
    fn the_table_of_states() {
        let created = format!("AfterControlPlaneInitialized {V1}");
        let upgrading = format!("BeforeClusterUpgrade {V2}");
        let config = config();
        let stage = |hook, index, step| Step::Act(StageAction::Run { hook, index, step });
        let after = Hook::AfterControlPlaneInitialized;
        let cases: Vec<(ClusterAddonStatus, Option<&AddonConfig>, &str, Step)> = vec![
            // No clusteraddon.yaml: the one chart, whatever is recorded.
            (status(None, None, &[]), None, V1, Step::Apply(Applying::Chart)),
            (
                status(Some(V1), None, &[]),
                None,
                V1,
                Step::Apply(Applying::Chart),
            ),
            (
                status(Some(V1), None, &[]),
                None,
                V2,
                Step::Apply(Applying::Chart),
            ),
            // Nothing recorded: the creation hook's stages start.
            (
                status(None, None, &[]),
                Some(&config),
                V1,
                start(
                    after,
                    V1.into(),
                    vec![pending(&stage_named("a")), pending(&stage_named("b"))],
                ),
            ),
            // A recorded list that does not match the hook's stages starts over (no index panics).
            (
                status(None, Some(&created), &["done"]),
                Some(&config),
                V1,
                start(
                    after,
                    V1.into(),
                    vec![pending(&stage_named("a")), pending(&stage_named("b"))],
                ),
            ),
            // Each phase of the first stage.
            (
                status(None, Some(&created), &["Pending", "Pending"]),
                Some(&config),
                V1,
                stage(after, 0, StageStep::CheckPre),
            ),
            (
                status(None, Some(&created), &["waitingForPreCondition", "Pending"]),
                Some(&config),
                V1,
                stage(after, 0, StageStep::CheckPre),
            ),
            (
                status(None, Some(&created), &["applyingOrDeleting", "Pending"]),
                Some(&config),
                V1,
                stage(after, 0, StageStep::Run),
            ),
            (
                status(None, Some(&created), &["waitingForPostCondition", "Pending"]),
                Some(&config),
                V1,
                stage(after, 0, StageStep::CheckPost),
            ),
            // A stage without a pre-condition runs at once; done stages are skipped.
            (
                status(None, Some(&created), &["done", "Pending"]),
                Some(&config),
                V1,
                stage(after, 1, StageStep::Run),
            ),
            (
                status(None, Some(&created), &["done", "waitingForPostCondition"]),
                Some(&config),
                V1,
                stage(after, 1, StageStep::CheckPost),
            ),
            (
                status(None, Some(&created), &["done", "done"]),
                Some(&config),
                V1,
                Step::Act(StageAction::Done {
                    hook: after,
                    count: 2,
                }),
            ),
            // Applied for this class: drift of the recorded hook.
            (
                status(Some(V1), Some(&created), &["done", "done"]),
                Some(&config),
                V1,
                Step::Apply(Applying::Stages { hook: Some(after) }),
            ),
            (
                status(Some(V1), None, &[]),
                Some(&config),
                V1,
                Step::Apply(Applying::Stages { hook: None }),
            ),
            // The class changed: the upgrade hook's stages, for the new class.
            (
                status(Some(V1), Some(&created), &["done", "done"]),
                Some(&config),
                V2,
                start(
                    Hook::BeforeClusterUpgrade,
                    V2.into(),
                    vec![pending(&stage_named("c"))],
                ),
            ),
            (
                status(Some(V1), Some(&upgrading), &["Pending"]),
                Some(&config),
                V2,
                stage(Hook::BeforeClusterUpgrade, 0, StageStep::Run),
            ),
            (
                status(Some(V1), Some(&upgrading), &["done"]),
                Some(&config),
                V2,
                Step::Act(StageAction::Done {
                    hook: Hook::BeforeClusterUpgrade,
                    count: 1,
                }),
            ),
            // Values this version does not know stop the stages, a `delete` stage's included:
            // never read as `Pending`, so nothing runs again.
            (
                status(None, Some(&created), &["done", "bogus"]),
                Some(&config),
                V1,
                unrecognized("stages[1].phase", "bogus"),
            ),
            (
                status(None, Some(&created), &["", "Pending"]),
                Some(&config),
                V1,
                unrecognized("stages[0].phase", ""),
            ),
            (
                deleting(status(None, Some(&created), &["done", "Pending"]), "remove"),
                Some(&config),
                V1,
                unrecognized("stages[1].action", "remove"),
            ),
            (
                status(Some(V1), Some(&created), &["done", "later"]),
                Some(&config),
                V1,
                unrecognized("stages[1].phase", "later"),
            ),
            (
                status(
                    None,
                    Some("Sideways docker-ferrol-1-27-v1"),
                    &["Pending", "Pending"],
                ),
                Some(&config),
                V1,
                unrecognized("stagesFor", "Sideways docker-ferrol-1-27-v1"),
            ),
            (
                status(Some(V1), Some("later"), &["done", "done"]),
                Some(&config),
                V2,
                unrecognized("stagesFor", "later"),
            ),
        ];
        for (status, config, class, want) in cases {
            assert_eq!(plan(&status, config, class), want, "{status:?} on {class}");
        }
    }

    #[test]
    fn applied_means_these_inputs_for_this_class() {
        // `status(Some(class), ..)` records inputs "inputs" applied for `class`.
        let cases = [
            (status(None, None, &[]), V1, "inputs", false),
            (status(Some(V1), None, &[]), V1, "inputs", true),
            // New values (or a new release digest): new inputs.
            (status(Some(V1), None, &[]), V1, "other", false),
            // The Cluster's class changed: an upgrade, even with the same hash.
            (status(Some(V1), None, &[]), V2, "inputs", false),
            // Inputs recorded without a class (an earlier version): the inputs decide.
            (
                ClusterAddonStatus {
                    applied_inputs: Some("inputs".into()),
                    ..ClusterAddonStatus::default()
                },
                V1,
                "inputs",
                true,
            ),
        ];
        for (status, class, inputs, want) in cases {
            assert_eq!(
                applied(&status, class, inputs),
                want,
                "{status:?} {class} {inputs}"
            );
        }
    }

    fn unrecognized(field: &str, value: &str) -> Step {
        Step::Act(StageAction::Unrecognized {
            field: field.into(),
            value: value.into(),
        })
    }

    fn start(hook: Hook, class: String, stages: Vec<StageStatus>) -> Step {
        Step::Act(StageAction::Start {
            stages_for: StagesFor { hook, class },
            stages,
        })
    }

    /// `status` with its last stage's action recorded as `action`.
    fn deleting(mut status: ClusterAddonStatus, action: &str) -> ClusterAddonStatus {
        if let Some(stage) = status.stages.last_mut() {
            stage.action = Recorded::read(action);
        }
        status
    }

    fn stage_named(name: &str) -> Stage {
        config()
            .hooks
            .into_iter()
            .flat_map(|(_, stages)| stages)
            .find(|s| s.name == name)
            .expect("stage")
    }

    #[test]
    fn advancing() {
        assert_eq!(advance(StageStep::CheckPre, true), StagePhase::ApplyingOrDeleting);
        assert_eq!(
            advance(StageStep::CheckPre, false),
            StagePhase::WaitingForPreCondition
        );
        assert_eq!(advance(StageStep::Run, true), StagePhase::WaitingForPostCondition);
        assert_eq!(advance(StageStep::CheckPost, true), StagePhase::Done);
        assert_eq!(
            advance(StageStep::CheckPost, false),
            StagePhase::WaitingForPostCondition
        );
    }

    proptest! {
        /// Driving the plan like the shell does, with conditions that hold or not at random and
        /// restarts (the plan read again from the recorded status) anywhere: no stage's phase
        /// ever moves backwards, a stage runs once, and nothing runs after every stage is done.
        #[test]
        fn phases_only_move_forward(outcomes in proptest::collection::vec(any::<bool>(), 1..64)) {
            let config = config();
            let mut status = status(None, None, &[]);
            let mut runs = [0usize; 2];
            let mut finished = false;
            for met in outcomes {
                let before: Vec<Option<StagePhase>> =
                    status.stages.iter().map(|s| s.phase.known().copied()).collect();
                match plan(&status, Some(&config), V1) {
                    Step::Act(StageAction::Start { stages_for, stages }) => {
                        prop_assert!(status.stages.is_empty(), "started twice");
                        status.stages_for = Some(Recorded::Known(stages_for));
                        status.stages = stages;
                    }
                    Step::Act(StageAction::Run { index, step, .. }) => {
                        prop_assert!(!finished, "a stage after done");
                        let met = step == StageStep::Run || met;
                        if step == StageStep::Run {
                            runs[index] += 1;
                        }
                        status.stages[index].phase = Recorded::Known(advance(step, met));
                    }
                    Step::Act(StageAction::Done { count, .. }) => {
                        prop_assert_eq!(count, 2);
                        finished = true;
                        status.applied_cluster_stack = Some(V1.into());
                    }
                    Step::Apply(Applying::Stages { .. }) => prop_assert!(finished),
                    Step::Apply(Applying::Chart) => prop_assert!(false, "a chart step with a config"),
                    Step::Act(StageAction::Unrecognized { .. }) => prop_assert!(false, "only known values are written"),
                }
                for (was, now) in before.iter().zip(&status.stages) {
                    prop_assert!(now.phase.known().copied() >= *was, "{was:?} -> {}", now.phase);
                }
            }
            prop_assert!(runs.iter().all(|&n| n <= 1), "runs {runs:?}");
        }
    }
}

#[cfg(test)]
mod class_change_tests {
    use super::class_change;

    #[test]
    fn a_new_class_is_progress() {
        assert_eq!(class_change(None, "docker-ferrol-1-27-v1"), None);
        assert_eq!(
            class_change(Some("docker-ferrol-1-27-v1"), "docker-ferrol-1-27-v1"),
            None
        );
        let message = class_change(Some("docker-ferrol-1-27-v1"), "docker-ferrol-1-27-v2").expect("a change");
        assert!(
            message.contains("from docker-ferrol-1-27-v1 to docker-ferrol-1-27-v2"),
            "{message}"
        );
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;
    use serde_json::json;

    /// A halt in short: its kind, condition, reason.
    fn short<T>(flow: ControlFlow<Halt, T>) -> Option<(&'static str, &'static str, &'static str)> {
        match flow {
            ControlFlow::Continue(_) => None,
            ControlFlow::Break(Halt::DeleteSelf) => Some(("delete self", "", "")),
            ControlFlow::Break(Halt::Wait { step, reason, .. }) => Some(("wait", step, reason)),
            ControlFlow::Break(Halt::Stop { step, reason, .. }) => Some(("stop", step, reason)),
            ControlFlow::Break(Halt::Fail { step, reason, .. }) => Some(("fail", step, reason)),
        }
    }

    fn cluster(spec: serde_json::Value, status: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Cluster",
            "metadata": {"name": "web", "namespace": "fleet"},
            "spec": spec,
            "status": status,
        }))
        .expect("a Cluster")
    }

    #[test]
    fn without_cluster_api_the_pass_fails_before_reading_the_cluster() {
        let why = "the API group cluster.x-k8s.io is not served (Cluster API is not installed)";
        let cases = [
            (None, None),
            (
                Some(why.to_string()),
                Some(("fail", CLUSTER_READY, "ClusterAPINotServed")),
            ),
        ];
        for (not_served, want) in cases {
            assert_eq!(
                short(cluster_api_gate(not_served.clone())),
                want,
                "{not_served:?}"
            );
        }
        let ControlFlow::Break(Halt::Fail { cause, .. }) = cluster_api_gate(Some(why.into())) else {
            panic!("fails");
        };
        assert_eq!(cause.to_string(), format!("Cluster API cannot be used: {why}"));
        assert!(!cause.is_terminal(), "retried with backoff");
    }

    #[test]
    fn a_gone_cluster_takes_its_cluster_addon_along() {
        assert_eq!(short(cluster_gate(None)), Some(("delete self", "", "")));
        assert_eq!(short(cluster_gate(Some(cluster(json!({}), json!({}))))), None);
    }

    #[test]
    fn the_class_gate() {
        let usage =
            |topology: serde_json::Value| ClusterUse::of(&cluster(json!({"topology": topology}), json!({})));
        let cases = [
            (json!({}), Some(("wait", CLUSTER_READY, "NoTopology"))),
            (
                json!({"class": "my-own-class"}),
                Some(("stop", CLUSTER_READY, "NotAStackClass")),
            ),
            (json!({"class": "docker-ferrol-1-27-v1"}), None),
        ];
        for (topology, want) in cases {
            assert_eq!(short(class_gate(&usage(topology.clone()))), want, "{topology}");
        }
        let ControlFlow::Continue((class, namespace, tag)) = class_gate(&usage(
            json!({"class": "docker-ferrol-1-27-v1", "classNamespace": "stacks"}),
        )) else {
            panic!("a stack class goes on");
        };
        assert_eq!(
            (class.as_str(), namespace.as_str()),
            ("docker-ferrol-1-27-v1", "stacks")
        );
        assert_eq!(tag.to_string(), "docker-ferrol-1-27-v1");
    }

    #[test]
    fn the_control_plane_gate() {
        let cases = [
            (json!({"controlPlaneReady": true}), None),
            (
                json!({"controlPlaneReady": false}),
                Some(("wait", CLUSTER_READY, "ControlPlaneNotReady")),
            ),
            (json!({}), Some(("wait", CLUSTER_READY, "ControlPlaneNotReady"))),
            (
                json!({"controlPlaneReady": "true"}),
                Some(("wait", CLUSTER_READY, "ControlPlaneNotReady")),
            ),
        ];
        for (status, want) in cases {
            assert_eq!(
                short(control_plane_gate(&cluster(json!({}), status.clone()))),
                want,
                "{status}"
            );
        }
    }

    #[test]
    fn the_workload_gate_fails_only_when_applied_addons_cannot_be_reached() {
        let not_ready = || Gate::NotReady {
            server: "https://web:6443".into(),
            problem: "connection refused".into(),
        };
        let no_secret = || Gate::NoKubeconfig {
            namespace: "fleet".into(),
            name: "web-kubeconfig".into(),
        };
        let cases = [
            (Ok(()), false, None),
            (Ok(()), true, None),
            (
                Err(not_ready()),
                false,
                Some(("wait", CLUSTER_READY, "WorkloadNotReady")),
            ),
            (
                Err(not_ready()),
                true,
                Some(("fail", WORKLOAD_REACHABLE, "WorkloadUnreachable")),
            ),
            (
                Err(no_secret()),
                true,
                Some(("wait", CLUSTER_READY, "WorkloadNotReady")),
            ),
        ];
        for (connected, applied, want) in cases {
            assert_eq!(
                short(workload_gate(connected, "web", applied)),
                want,
                "applied {applied}"
            );
        }
    }

    #[test]
    fn the_value_gates() {
        assert_eq!(
            short(objects_gate::<(), _>(Err("no ControlPlane"))),
            Some(("wait", RENDERED, "ObjectsMissing"))
        );
        assert_eq!(short(objects_gate::<(), &str>(Ok(()))), None);
        let missing = GatherError::Missing("ConfigMap fleet/values".into());
        let invalid = GatherError::Invalid("not a map".into());
        assert_eq!(
            short(user_values_gate(Err(missing))),
            Some(("wait", RENDERED, "UserValuesMissing"))
        );
        assert_eq!(
            short(user_values_gate(Err(invalid))),
            Some(("fail", RENDERED, "InvalidUserValues"))
        );
        assert_eq!(short(user_values_gate(Ok(Vec::new()))), None);
    }

    #[test]
    fn an_upgrade_turns_applied_false_only_while_it_says_applied() {
        let status = |applied: Option<&str>, applied_true: bool| {
            let mut status = ClusterAddonStatus {
                applied_cluster_stack: applied.map(str::to_string),
                ..ClusterAddonStatus::default()
            };
            let state = crate::api::conditions::ConditionStatus::from_bool(applied_true);
            let condition = crate::api::conditions::Condition::new(
                APPLIED,
                state,
                "Applied",
                "",
                None,
                crate::controller::now(),
            );
            crate::api::conditions::set_condition(&mut status.conditions, condition);
            status
        };
        let (v1, v2) = ("docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2");
        assert!(upgrade_note(&status(Some(v1), true), v2).is_some());
        assert_eq!(upgrade_note(&status(Some(v1), false), v2), None);
        assert_eq!(upgrade_note(&status(Some(v1), true), v1), None);
        assert_eq!(upgrade_note(&status(None, true), v2), None);
    }
}
