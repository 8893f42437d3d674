//! What a release pass does next, for both kinds (ClusterStackRelease, ClusterAddon), decided
//! from one [`Snapshot`] of what is recorded and observed: a pure function over enums, so the
//! table of states is tested without a cluster. The runner ([`super::run`]) gathers the
//! snapshot and acts on the [`Step`] alone.

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

/// What one pass observed before it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// The newest stored render has the current inputs.
    pub stored: bool,
    /// The recorded status says the current inputs were applied in full (for this target).
    pub applied: bool,
    pub drift: Drift,
    /// The drift watches are on and cover every inventory of the render: they saw each
    /// change since the last full pass.
    pub watched: bool,
}

impl Snapshot {
    pub fn phase(&self) -> Phase {
        match (self.stored, self.applied) {
            (_, true) => Phase::Applied,
            (true, false) => Phase::Rendered,
            (false, false) => Phase::Pending,
        }
    }
}

/// What the runner does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Render the charts and store the render (no stored render has the inputs); then the
    /// runner observes again.
    Render,
    /// Apply the stored render: in full as new inputs, or again to correct drift
    /// (`drift_pass`: unchanged objects are not sent). Takes the drift watches' wake-up.
    Apply { drift_pass: bool },
    /// A drift check is due and the watches saw every change: record the check, send
    /// nothing.
    Checked,
    /// Nothing: look again after this long.
    Wait(Duration),
}

/// Whether an apply may take the kinds the drift watches followed as live as the inventory
/// records them (not listing them): with the watches on, outside a drift pass, and no watch
/// woke the object.
pub fn trusts_watches(watches_on: bool, drift_pass: bool, woken: bool) -> bool {
    watches_on && !drift_pass && !woken
}

pub fn plan(snapshot: &Snapshot) -> Step {
    if !snapshot.stored {
        return Step::Render;
    }
    if !snapshot.applied {
        return Step::Apply { drift_pass: false };
    }
    match snapshot.drift {
        Drift::Suspect => Step::Apply { drift_pass: true },
        Drift::NotDue(wait) => Step::Wait(wait),
        Drift::Due if snapshot.watched => Step::Checked,
        Drift::Due => Step::Apply { drift_pass: true },
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
        let full = Step::Apply { drift_pass: false };
        let drift_pass = Step::Apply { drift_pass: true };
        let cases = [
            // Nothing stored for the inputs: render first, whatever else holds.
            (snapshot(false, false, Drift::Due, false), Step::Render),
            (snapshot(false, false, Drift::Suspect, true), Step::Render),
            // Applied, but the stored render went (its Secret deleted, say): rendered again.
            (snapshot(false, true, Drift::NotDue(LATER), true), Step::Render),
            // Rendered, not applied (new inputs, or a restart after the render): in full,
            // whatever the clock or the watches say.
            (snapshot(true, false, Drift::Due, false), full),
            (snapshot(true, false, Drift::NotDue(LATER), true), full),
            (snapshot(true, false, Drift::Suspect, true), full),
            // Applied: a watch saw a change — a drift pass at once, covered or not.
            (snapshot(true, true, Drift::Suspect, false), drift_pass),
            (snapshot(true, true, Drift::Suspect, true), drift_pass),
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
                        Step::Apply { drift_pass } => {
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
