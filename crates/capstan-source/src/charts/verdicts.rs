//! What a resolver's signature checks found, as values a caller can act on (the operator
//! writes them into conditions and status): each checked dependency signed by whom, or refused
//! for which reason. The errors a resolution returns stay text (the chart crate's resolver
//! interface); these are recorded beside them.

use std::sync::{Arc, Mutex};

/// One chart dependency whose signature was checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The chart that depends on it.
    pub chart: String,
    /// The dependency's name.
    pub dependency: String,
    /// The version resolved.
    pub version: String,
    /// The repository, as Chart.yaml writes it.
    pub repository: String,
    pub outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Signed(Signer),
    /// `reason` a short stable name (`WrongKey`, `NoProvenance`, …), `message` the whole text.
    Refused {
        reason: &'static str,
        message: String,
    },
}

/// Who signed a dependency, and how.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Signer {
    /// `provenance` (a Helm `.prov`) or `cosign`.
    pub method: String,
    /// The OpenPGP key's fingerprint with its user ID, the cosign key's `sha256:` fingerprint,
    /// or a keyless signer's `SUBJECT (issuer ISSUER)`.
    pub signer: String,
}

/// The verdicts of one resolver, in the order they were reached (shared by its clones).
#[derive(Clone, Debug, Default)]
pub(super) struct Verdicts(Arc<Mutex<Vec<Verdict>>>);

impl Verdicts {
    pub(super) fn record(&self, verdict: Verdict) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(verdict);
    }

    pub(super) fn all(&self) -> Vec<Verdict> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Verdict {
    /// The first refusal among `verdicts`.
    pub fn first_refused(verdicts: &[Verdict]) -> Option<&Verdict> {
        verdicts
            .iter()
            .find(|v| matches!(v.outcome, Outcome::Refused { .. }))
    }
}
