//! What a ClusterStackRelease pass does once the release is downloaded, decided from what is
//! recorded (the stored render's inputs, `status.appliedInputs`) and the drift clock alone: a
//! pure function over enums, so the table of states is tested without a cluster. The I/O
//! (render, store, apply, status) is the shell in `cluster_stack_release.rs`.

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
    /// A watched object of the release changed: check now.
    Suspect,
    /// The drift interval since the last full apply is over (or nothing was applied).
    Due,
    /// The next check is this far away.
    NotDue(Duration),
}

/// What was recorded before this pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// The newest stored render has the current inputs.
    pub stored: bool,
    /// `status.appliedInputs` are the current inputs.
    pub applied: bool,
}

impl Recorded {
    pub fn phase(self) -> Phase {
        match self {
            Recorded { applied: true, .. } => Phase::Applied,
            Recorded { stored: true, .. } => Phase::Rendered,
            _ => Phase::Pending,
        }
    }
}

/// How the stored render is applied this pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Apply {
    /// Everything, as new inputs.
    Full,
    /// Everything again, to correct drift (unchanged objects are not sent).
    DriftCheck,
    /// Nothing: look again after this long.
    Wait(Duration),
}

/// The decision of one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Render the ClusterClass chart (no stored render has the inputs).
    pub render: bool,
    pub apply: Apply,
}

pub fn plan(recorded: Recorded, drift: Drift) -> Plan {
    let apply = match (recorded.applied, drift) {
        (false, _) => Apply::Full,
        (true, Drift::NotDue(wait)) => Apply::Wait(wait),
        (true, Drift::Suspect | Drift::Due) => Apply::DriftCheck,
    };
    Plan {
        render: !recorded.stored,
        apply,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LATER: Duration = Duration::from_secs(60);

    #[test]
    fn the_table_of_states() {
        let recorded = |stored, applied| Recorded { stored, applied };
        let plan_of = |render, apply| Plan { render, apply };
        let cases = [
            // Nothing recorded: render and apply, whatever the clock says.
            (recorded(false, false), Drift::Due, plan_of(true, Apply::Full)),
            (
                recorded(false, false),
                Drift::NotDue(LATER),
                plan_of(true, Apply::Full),
            ),
            (recorded(false, false), Drift::Suspect, plan_of(true, Apply::Full)),
            // Rendered before (a restart after the render): no second render.
            (recorded(true, false), Drift::Due, plan_of(false, Apply::Full)),
            (
                recorded(true, false),
                Drift::NotDue(LATER),
                plan_of(false, Apply::Full),
            ),
            (recorded(true, false), Drift::Suspect, plan_of(false, Apply::Full)),
            // Applied: a drift check when due or suspected, else the wait.
            (
                recorded(true, true),
                Drift::Due,
                plan_of(false, Apply::DriftCheck),
            ),
            (
                recorded(true, true),
                Drift::Suspect,
                plan_of(false, Apply::DriftCheck),
            ),
            (
                recorded(true, true),
                Drift::NotDue(LATER),
                plan_of(false, Apply::Wait(LATER)),
            ),
            // Applied, but the stored render went (e.g. its Secret was deleted): rendered
            // again, never applied as new inputs.
            (
                recorded(false, true),
                Drift::NotDue(LATER),
                plan_of(true, Apply::Wait(LATER)),
            ),
            (
                recorded(false, true),
                Drift::Due,
                plan_of(true, Apply::DriftCheck),
            ),
        ];
        for (recorded, drift, want) in cases {
            assert_eq!(plan(recorded, drift), want, "{recorded:?} {drift:?}");
        }
        assert_eq!(recorded(false, false).phase(), Phase::Pending);
        assert_eq!(recorded(true, false).phase(), Phase::Rendered);
        assert_eq!(recorded(true, true).phase(), Phase::Applied);
        assert_eq!(recorded(false, true).phase(), Phase::Applied);
    }

    /// One event of a pass: the clock, and whether the render and the apply succeed.
    fn pass() -> impl Strategy<Value = (Drift, bool, bool, bool)> {
        let drift = prop_oneof![Just(Drift::Suspect), Just(Drift::Due), Just(Drift::NotDue(LATER))];
        (drift, any::<bool>(), any::<bool>(), any::<bool>())
    }

    proptest! {
        /// Driving the plan like the shell does, with renders and applies that fail at random
        /// and the store's newest revision lost at random: the phase never moves backwards
        /// once a render is stored, the inputs are rendered at most once while the store
        /// keeps them, and a full apply happens only until one succeeds.
        #[test]
        fn the_phase_never_moves_backwards(passes in proptest::collection::vec(pass(), 1..64)) {
            let mut recorded = Recorded { stored: false, applied: false };
            let (mut renders, mut full_after_applied) = (0, 0);
            for (drift, render_ok, apply_ok, store_lost) in passes {
                let before = recorded.phase();
                let decided = plan(recorded, drift);
                if decided.render {
                    prop_assert!(!recorded.stored, "rendered again with a stored render");
                    if !render_ok {
                        continue;
                    }
                    renders += 1;
                    recorded.stored = true;
                }
                match decided.apply {
                    Apply::Full => {
                        if recorded.applied {
                            full_after_applied += 1;
                        }
                        recorded.applied |= apply_ok;
                    }
                    Apply::DriftCheck => prop_assert!(recorded.applied),
                    Apply::Wait(wait) => prop_assert_eq!(wait, LATER),
                }
                prop_assert!(recorded.phase() >= before, "{before:?} -> {:?}", recorded.phase());
                if store_lost {
                    // The store lost the revision: the next pass renders again, once.
                    recorded.stored = false;
                    renders = 0;
                }
                prop_assert!(renders <= 1, "the same inputs rendered {renders} times");
            }
            prop_assert_eq!(full_after_applied, 0);
        }
    }
}
