//! What a release pass does next, for both kinds (ClusterStackRelease, ClusterAddon), decided
//! from one [`Snapshot`] of what is recorded and observed: a pure function over enums, so the
//! table of states is tested without a cluster. The runner ([`super::run`]) gathers the
//! snapshot and acts on the [`Step`] alone. A kind that applies in stages (a ClusterAddon
//! with a `clusteraddon.yaml`) puts what its stage machine needs into the snapshot
//! ([`Stages`]); its stage actions are steps of this plan like the others.
//!
//! Nothing applies a release without this plan: an apply takes an [`Apply`], which only
//! [`plan`] makes.

use std::convert::Infallible;
use std::fmt::Debug;
use std::time::Duration;

/// Where a release stands for the current render inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// No render has these inputs.
    Pending,
    /// A stored render has them; it was not applied in full.
    Rendered,
    /// The render of these inputs was applied in full.
    Applied,
}

/// The drift clock of an applied release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drift {
    /// A drift watch saw an object of the release change: check now.
    Suspect,
    /// The drift interval since the last full pass is over (or nothing was checked).
    Due,
    /// The next check is this far away.
    NotDue(Duration),
}

impl Drift {
    /// The clock from what the watches said (`suspect`) and the time left until the interval
    /// is over (`None`: over).
    pub fn of(suspect: bool, due_in: Option<Duration>) -> Drift {
        match (suspect, due_in) {
            (true, _) => Drift::Suspect,
            (false, Some(wait)) => Drift::NotDue(wait),
            (false, None) => Drift::Due,
        }
    }
}

/// The stage machine of a kind: what it needs from the recorded status and the release,
/// and the stage action it decides next (pure).
pub trait Stages {
    type Action: Debug + Clone + PartialEq;
    /// The stage action next, or `None`: no stage runs, the kind's inventories are applied as
    /// the rest of the plan decides.
    fn next(&self) -> Option<Self::Action>;
}

/// The stages of a kind that applies in one go (a ClusterStackRelease): none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoStages;

impl Stages for NoStages {
    type Action = Infallible;

    fn next(&self) -> Option<Infallible> {
        None
    }
}

/// What one pass observed before it decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot<S = NoStages> {
    /// The newest stored render has the current inputs.
    pub stored: bool,
    /// The recorded status says the current inputs were applied in full (for this target).
    pub applied: bool,
    pub drift: Drift,
    /// The drift watches are on and cover every inventory of the render: they saw each
    /// change since the last full pass.
    pub watched: bool,
    /// Where the kind's stages stand.
    pub stages: S,
}

impl<S> Snapshot<S> {
    pub fn phase(&self) -> Phase {
        match (self.stored, self.applied) {
            (_, true) => Phase::Applied,
            (true, false) => Phase::Rendered,
            (false, false) => Phase::Pending,
        }
    }
}

/// An apply the plan decided, in full or as a drift pass: the one way to apply a release
/// ([`crate::controller::pipeline::apply`] takes it), made only by [`plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Apply {
    drift_pass: bool,
}

impl Apply {
    /// Whether the apply corrects drift (unchanged objects are not sent).
    pub fn drift_pass(self) -> bool {
        self.drift_pass
    }
}

/// What the runner does next; `A` is the kind's stage action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<A = Infallible> {
    /// Render the charts and store the render (no stored render has the inputs); then the
    /// runner observes again.
    Render,
    /// Apply the stored render: in full as new inputs, or again to correct drift
    /// ([`Apply::drift_pass`]). Takes the drift watches' wake-up.
    Apply(Apply),
    /// A drift check is due and the watches saw every change: record the check, send
    /// nothing.
    Checked,
    /// Nothing: look again after this long.
    Wait(Duration),
    /// The kind's stage action `action` (start the stages, a stage's pre-condition, apply or
    /// delete, post-condition, the stages done, an unrecognised recorded phase); `apply` is
    /// the licence of a stage's apply (never a drift pass). Then the runner observes again,
    /// unless the action ends the pass.
    Stage { action: A, apply: Apply },
}

/// Whether an apply may take the kinds the drift watches followed as live as the inventory
/// records them (not listing them): with the watches on, outside a drift pass, and no watch
/// woke the object.
pub fn trusts_watches(watches_on: bool, drift_pass: bool, woken: bool) -> bool {
    watches_on && !drift_pass && !woken
}

/// The next step: render what is not stored, then the kind's stages (each in turn, whatever
/// the drift clock says), then an apply of what was not applied in full, then drift.
pub fn plan<S: Stages>(snapshot: &Snapshot<S>) -> Step<S::Action> {
    const FULL: Apply = Apply { drift_pass: false };
    const DRIFT: Apply = Apply { drift_pass: true };
    if !snapshot.stored {
        return Step::Render;
    }
    if let Some(action) = snapshot.stages.next() {
        return Step::Stage { action, apply: FULL };
    }
    if !snapshot.applied {
        return Step::Apply(FULL);
    }
    match snapshot.drift {
        Drift::Suspect => Step::Apply(DRIFT),
        Drift::NotDue(wait) => Step::Wait(wait),
        Drift::Due if snapshot.watched => Step::Checked,
        Drift::Due => Step::Apply(DRIFT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LATER: Duration = Duration::from_secs(60);

    fn snapshot(stored: bool, applied: bool, drift: Drift, watched: bool) -> Snapshot {
        Snapshot {
            stored,
            applied,
            drift,
            watched,
            stages: NoStages,
        }
    }

    /// A stage machine whose next action is given.
    #[derive(Debug, Clone, PartialEq)]
    struct Next(Option<&'static str>);

    impl Stages for Next {
        type Action = &'static str;

        fn next(&self) -> Option<&'static str> {
            self.0
        }
    }

    #[test]
    fn stage_actions_come_after_the_render_and_before_everything_else() {
        let staged = |stored, applied, drift, next| Snapshot {
            stored,
            applied,
            drift,
            watched: true,
            stages: Next(next),
        };
        let stage = Step::Stage {
            action: "stage 1: apply",
            apply: Apply { drift_pass: false },
        };
        let cases = [
            // Nothing stored: the render first (the stages apply parts of it).
            (
                staged(false, false, Drift::Due, Some("stage 1: apply")),
                Step::Render,
            ),
            // A stage action wins over the apply, the clock and the watches; its apply is
            // never a drift pass.
            (
                staged(true, false, Drift::Due, Some("stage 1: apply")),
                stage.clone(),
            ),
            (
                staged(true, true, Drift::Suspect, Some("stage 1: apply")),
                stage.clone(),
            ),
            (
                staged(true, true, Drift::NotDue(LATER), Some("stage 1: apply")),
                stage,
            ),
            // No stage action: the plan of a kind without stages.
            (
                staged(true, false, Drift::Due, None),
                Step::Apply(Apply { drift_pass: false }),
            ),
            (staged(true, true, Drift::Due, None), Step::Checked),
            (staged(true, true, Drift::NotDue(LATER), None), Step::Wait(LATER)),
        ];
        for (snapshot, want) in cases {
            assert_eq!(plan(&snapshot), want, "{snapshot:?}");
        }
    }

    #[test]
    fn the_watches_are_trusted_only_outside_drift() {
        // (watches on, drift pass, woken) → trusted
        let cases = [
            ((true, false, false), true),
            // Without watches nothing is known of the kinds.
            ((false, false, false), false),
            // A drift pass compares every object, as a woken object must.
            ((true, true, false), false),
            ((true, false, true), false),
            ((true, true, true), false),
        ];
        for ((watches_on, drift_pass, woken), want) in cases {
            assert_eq!(trusts_watches(watches_on, drift_pass, woken), want);
        }
    }

    #[test]
    fn the_drift_clock() {
        assert_eq!(Drift::of(true, Some(LATER)), Drift::Suspect);
        assert_eq!(Drift::of(true, None), Drift::Suspect);
        assert_eq!(Drift::of(false, Some(LATER)), Drift::NotDue(LATER));
        assert_eq!(Drift::of(false, None), Drift::Due);
    }

    #[test]
    fn the_table_of_states() {
        let full = Step::Apply(Apply { drift_pass: false });
        let drift_pass = Step::Apply(Apply { drift_pass: true });
        let cases = [
            // Nothing stored for the inputs: render first, whatever else holds.
            (snapshot(false, false, Drift::Due, false), Step::Render),
            (snapshot(false, false, Drift::Suspect, true), Step::Render),
            // Applied, but the stored render went (its Secret deleted, say): rendered again.
            (snapshot(false, true, Drift::NotDue(LATER), true), Step::Render),
            // Rendered, not applied (new inputs, or a restart after the render): in full,
            // whatever the clock or the watches say.
            (snapshot(true, false, Drift::Due, false), full.clone()),
            (snapshot(true, false, Drift::NotDue(LATER), true), full.clone()),
            (snapshot(true, false, Drift::Suspect, true), full),
            // Applied: a watch saw a change — a drift pass at once, covered or not.
            (snapshot(true, true, Drift::Suspect, false), drift_pass.clone()),
            (snapshot(true, true, Drift::Suspect, true), drift_pass.clone()),
            // Applied, not due: wait.
            (
                snapshot(true, true, Drift::NotDue(LATER), false),
                Step::Wait(LATER),
            ),
            (
                snapshot(true, true, Drift::NotDue(LATER), true),
                Step::Wait(LATER),
            ),
            // Due: the watches saw everything, or the objects are compared.
            (snapshot(true, true, Drift::Due, true), Step::Checked),
            (snapshot(true, true, Drift::Due, false), drift_pass),
        ];
        for (snapshot, want) in cases {
            assert_eq!(plan(&snapshot), want, "{snapshot:?}");
        }
        assert_eq!(snapshot(false, false, Drift::Due, false).phase(), Phase::Pending);
        assert_eq!(snapshot(true, false, Drift::Due, false).phase(), Phase::Rendered);
        assert_eq!(snapshot(true, true, Drift::Due, false).phase(), Phase::Applied);
        assert_eq!(snapshot(false, true, Drift::Due, false).phase(), Phase::Applied);
    }

    /// What happens around one pass: the clock, the watches, whether the render and the apply
    /// succeed, whether the store loses its newest revision, whether the inputs change.
    #[derive(Debug, Clone)]
    struct Event {
        drift: Drift,
        watched: bool,
        render_ok: bool,
        apply_ok: bool,
        store_lost: bool,
        inputs_changed: bool,
    }

    fn event() -> impl Strategy<Value = Event> {
        let drift = prop_oneof![Just(Drift::Suspect), Just(Drift::Due), Just(Drift::NotDue(LATER))];
        (
            drift,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<[bool; 2]>(),
        )
            .prop_map(
                |(drift, watched, render_ok, apply_ok, [store_lost, inputs_changed])| Event {
                    drift,
                    watched,
                    render_ok,
                    apply_ok,
                    store_lost: store_lost && !inputs_changed,
                    inputs_changed,
                },
            )
    }

    proptest! {
        /// Driving `plan` as the runner does — observe, decide, act, observe again until the
        /// pass ends — with renders and applies that fail at random, the store's newest
        /// revision lost and the inputs changed at random: the inputs are rendered at most
        /// once while the store keeps them (never a render of unchanged, stored inputs), a
        /// pass renders at most once, the phase never moves backwards while the inputs and
        /// the store stay, a full apply happens only until one succeeds, and nothing is
        /// applied (so nothing pruned) without a stored render.
        #[test]
        fn the_runner_never_renders_twice_nor_moves_backwards(events in proptest::collection::vec(event(), 1..64)) {
            let (mut stored, mut applied) = (false, false);
            let mut renders_of_inputs = 0;
            for event in events {
                if event.inputs_changed {
                    (stored, applied, renders_of_inputs) = (false, false, 0);
                }
                let before = snapshot(stored, applied, event.drift, event.watched).phase();
                let mut renders_this_pass = 0;
                loop {
                    let now = snapshot(stored, applied, event.drift, event.watched);
                    match plan(&now) {
                        Step::Render => {
                            prop_assert!(!stored, "rendered again with a stored render");
                            renders_this_pass += 1;
                            prop_assert!(renders_this_pass <= 1, "two renders in a pass");
                            if !event.render_ok {
                                break;
                            }
                            renders_of_inputs += 1;
                            stored = true;
                        }
                        Step::Apply(apply) => {
                            let drift_pass = apply.drift_pass();
                            prop_assert!(stored, "applied (and pruned) without a stored render");
                            prop_assert_eq!(drift_pass, applied, "a full apply only until one succeeds");
                            applied |= event.apply_ok;
                            break;
                        }
                        Step::Checked => {
                            prop_assert!(applied && event.watched && event.drift == Drift::Due);
                            break;
                        }
                        Step::Wait(wait) => {
                            prop_assert!(applied);
                            prop_assert_eq!(wait, LATER);
                            break;
                        }
                        Step::Stage { action, .. } => match action {},
                    }
                }
                let after = snapshot(stored, applied, event.drift, event.watched).phase();
                prop_assert!(after >= before, "{before:?} -> {after:?}");
                prop_assert!(renders_of_inputs <= 1, "the same inputs rendered {renders_of_inputs} times");
                if event.store_lost {
                    // The store lost the revision: the next pass renders again, once.
                    (stored, renders_of_inputs) = (false, 0);
                }
            }
        }
    }
}
