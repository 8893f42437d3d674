//! What a ClusterAddon pass does next, decided from its recorded status alone: a pure
//! function over typed phases, so the table of states is tested without a cluster. The I/O
//! (conditions, apply, delete, saving the status) is the shell in `cluster_addon.rs`.
//!
//! Compatibility: the phases and `stagesFor` are stored as the strings earlier versions wrote
//! (`Pending`, `waitingForPreCondition`, …; `"<hook> <class>"`), and read back from them
//! ([`Recorded`]); a text this version does not know stops the stages (never read as
//! `Pending`: a `delete` stage would run again).

use capstan_stack::addon_config::{AddonConfig, Hook, Stage};

use crate::api::{ClusterAddonStatus, Recorded, StagePhase, StageStatus, StagesFor};

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

/// The next step of a ClusterAddon pass, once the release is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// No `clusteraddon.yaml`: the one chart, as the release runner's plan decides.
    ApplyChart,
    /// The stages ran for this class: the `apply` stages of `hook`, as the release runner's
    /// plan decides (drift, or new inputs).
    DriftStages { hook: Option<Hook> },
    /// Record a fresh stage list for `stages_for` (every stage `Pending`).
    StartStages {
        stages_for: StagesFor,
        stages: Vec<StageStatus>,
    },
    /// Advance stage `index` of `hook`.
    Stage {
        hook: Hook,
        index: usize,
        step: StageStep,
    },
    /// Every stage of `hook` is done: record the class as applied.
    StagesDone { hook: Hook, count: usize },
    /// A recorded field of the stages holds a value this version does not know: nothing
    /// runs (the condition names `field` and its `value`).
    Unrecognized { field: String, value: String },
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
        return Step::ApplyChart;
    };
    if let Some(unknown) = unrecognized(status) {
        return unknown;
    }
    let recorded = status.stages_for.as_ref().and_then(Recorded::known).cloned();
    let hook = match applied {
        None => Hook::AfterControlPlaneInitialized,
        Some(_) if upgrade => Hook::BeforeClusterUpgrade,
        Some(_) => {
            return Step::DriftStages {
                hook: recorded.map(|r| r.hook),
            };
        }
    };
    let stages = stages_of(config, hook);
    let wanted = StagesFor {
        hook,
        class: class.to_string(),
    };
    if recorded.as_ref() != Some(&wanted) || status.stages.len() != stages.len() {
        return Step::StartStages {
            stages_for: wanted,
            stages: stages.iter().map(pending).collect(),
        };
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
        return Step::Stage { hook, index, step };
    }
    Step::StagesDone {
        hook,
        count: stages.len(),
    }
}

/// The first recorded field of the stages (`stagesFor`, a stage's `action` or `phase`) whose
/// text this version does not know, as the step that stops the pass.
fn unrecognized(status: &ClusterAddonStatus) -> Option<Step> {
    let unknown = |field: String, value: &str| Step::Unrecognized {
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
        let stage = |hook, index, step| Step::Stage { hook, index, step };
        let after = Hook::AfterControlPlaneInitialized;
        let cases: Vec<(ClusterAddonStatus, Option<&AddonConfig>, &str, Step)> = vec![
            // No clusteraddon.yaml: the one chart, whatever is recorded.
            (status(None, None, &[]), None, V1, Step::ApplyChart),
            (status(Some(V1), None, &[]), None, V1, Step::ApplyChart),
            (status(Some(V1), None, &[]), None, V2, Step::ApplyChart),
            // Nothing recorded: the creation hook's stages start.
            (
                status(None, None, &[]),
                Some(&config),
                V1,
                Step::StartStages {
                    stages_for: StagesFor {
                        hook: after,
                        class: V1.into(),
                    },
                    stages: vec![pending(&stage_named("a")), pending(&stage_named("b"))],
                },
            ),
            // A recorded list that does not match the hook's stages starts over (no index panics).
            (
                status(None, Some(&created), &["done"]),
                Some(&config),
                V1,
                Step::StartStages {
                    stages_for: StagesFor {
                        hook: after,
                        class: V1.into(),
                    },
                    stages: vec![pending(&stage_named("a")), pending(&stage_named("b"))],
                },
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
                Step::StagesDone {
                    hook: after,
                    count: 2,
                },
            ),
            // Applied for this class: drift of the recorded hook.
            (
                status(Some(V1), Some(&created), &["done", "done"]),
                Some(&config),
                V1,
                Step::DriftStages { hook: Some(after) },
            ),
            (
                status(Some(V1), None, &[]),
                Some(&config),
                V1,
                Step::DriftStages { hook: None },
            ),
            // The class changed: the upgrade hook's stages, for the new class.
            (
                status(Some(V1), Some(&created), &["done", "done"]),
                Some(&config),
                V2,
                Step::StartStages {
                    stages_for: StagesFor {
                        hook: Hook::BeforeClusterUpgrade,
                        class: V2.into(),
                    },
                    stages: vec![pending(&stage_named("c"))],
                },
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
                Step::StagesDone {
                    hook: Hook::BeforeClusterUpgrade,
                    count: 1,
                },
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
        Step::Unrecognized {
            field: field.into(),
            value: value.into(),
        }
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
                    Step::StartStages { stages_for, stages } => {
                        prop_assert!(status.stages.is_empty(), "started twice");
                        status.stages_for = Some(Recorded::Known(stages_for));
                        status.stages = stages;
                    }
                    Step::Stage { index, step, .. } => {
                        prop_assert!(!finished, "a stage after done");
                        let met = step == StageStep::Run || met;
                        if step == StageStep::Run {
                            runs[index] += 1;
                        }
                        status.stages[index].phase = Recorded::Known(advance(step, met));
                    }
                    Step::StagesDone { count, .. } => {
                        prop_assert_eq!(count, 2);
                        finished = true;
                        status.applied_cluster_stack = Some(V1.into());
                    }
                    Step::DriftStages { .. } => prop_assert!(finished),
                    Step::ApplyChart => prop_assert!(false, "a chart step with a config"),
                    Step::Unrecognized { .. } => prop_assert!(false, "only known values are written"),
                }
                for (was, now) in before.iter().zip(&status.stages) {
                    prop_assert!(now.phase.known().copied() >= *was, "{was:?} -> {}", now.phase);
                }
            }
            prop_assert!(runs.iter().all(|&n| n <= 1), "runs {runs:?}");
        }
    }
}
