//! What an apply report means for a controller: the per-object status entries, the counts for
//! the metrics, a `DriftCorrected` event when a drift pass changed objects, and the failure
//! text for the `Applied` condition. Shared by the release and addon controllers.

use k8s_openapi::api::core::v1::ObjectReference;

use crate::api::Resource as StatusResource;
use crate::api::TAKE_OVER_ANNOTATION;
use crate::context::Context;
use crate::metrics::ObjectOutcome;
use capstan_apply::{Action, ApplyReport, SyncStatus};

/// Condition (and Event reason): objects of the apply that another inventory owns were left
/// to it, not taken over (see [`capstan_apply::ownership`]).
pub const OWNERSHIP_CONFLICT: &str = "OwnershipConflict";

/// The text of an [`OWNERSHIP_CONFLICT`] condition or Event: the objects and their owners,
/// and how to take them over.
pub fn conflict_note(conflicts: &[String]) -> String {
    format!(
        "{} object(s) owned by another inventory, left to it: {}; to take them over, annotate this object {TAKE_OVER_ANNOTATION}=true",
        conflicts.len(),
        conflicts.join(", ")
    )
}

/// The [`OWNERSHIP_CONFLICT`] condition after a pass whose applies left `conflicts` to their
/// owners: true naming them; false once there are none, where the condition was `shown`;
/// none at all for an object that never had a conflict.
pub fn conflict_condition(conflicts: &[String], shown: bool) -> Option<(bool, &'static str, String)> {
    if !conflicts.is_empty() {
        return Some((true, "OwnedByAnotherInventory", conflict_note(conflicts)));
    }
    shown.then(|| {
        (
            false,
            "NoConflict",
            "every object is this object's own".to_string(),
        )
    })
}

/// An apply report, read.
pub struct Outcome {
    /// One entry per object still wanted (pruned ones are left out).
    pub resources: Vec<StatusResource>,
    pub applied: u64,
    pub pruned: u64,
    /// Why the apply failed, when it did: every failed object with the server's words.
    pub failure: Option<String>,
    /// The objects left to the inventory that owns them, each with its owner.
    pub conflicts: Vec<String>,
    /// Per kind, where the history of the objects it wrote starts (see
    /// [`crate::drift::written`]): where the drift watches start.
    pub written: crate::drift::Written,
}

impl Outcome {
    /// `N object(s) applied[, M pruned]`.
    pub fn summary(&self) -> String {
        let pruned = if self.pruned > 0 {
            format!(", {} pruned", self.pruned)
        } else {
            String::new()
        };
        format!("{} object(s) applied{pruned}", self.applied)
    }
}

/// Reads `report`, counts it in the metrics of `controller`, and — for a drift pass that had
/// to change objects — counts the corrections and publishes an event on `object`.
pub async fn record(
    ctx: &Context,
    controller: &str,
    object: &ObjectReference,
    report: &ApplyReport,
    drift_pass: bool,
) -> Outcome {
    let (mut applied, mut failed, mut pruned) = (0, 0, 0);
    let mut resources = Vec::new();
    let mut corrected = Vec::new();
    let mut conflicts = Vec::new();
    for result in &report.results {
        match result.status {
            SyncStatus::Pruned if result.action == Action::Pruned => pruned += 1,
            SyncStatus::Pruned => {}
            SyncStatus::Synced => {
                applied += 1;
                if drift_pass && matches!(result.action, Action::Created | Action::Configured) {
                    corrected.push(result.key.to_string());
                }
            }
            SyncStatus::Failed | SyncStatus::PruneFailed => failed += 1,
            SyncStatus::Conflict => conflicts.push(format!("{} ({})", result.key, result.message)),
        }
        if result.status == SyncStatus::Pruned {
            continue;
        }
        resources.push(StatusResource {
            group: result.key.group.clone(),
            version: result.key.version.clone(),
            kind: result.key.kind.clone(),
            namespace: result.key.namespace.clone().unwrap_or_default(),
            name: result.key.name.clone(),
            status: if result.status == SyncStatus::Synced {
                StatusResource::SYNCED.into()
            } else {
                StatusResource::NOT_SYNCED.into()
            },
            error: if result.is_failure() || result.status == SyncStatus::Conflict {
                result.message.clone()
            } else {
                String::new()
            },
            stage: String::new(),
        });
    }
    ctx.metrics.objects(controller, ObjectOutcome::Applied, applied);
    ctx.metrics.objects(controller, ObjectOutcome::Failed, failed);
    ctx.metrics.objects(controller, ObjectOutcome::Pruned, pruned);
    if !corrected.is_empty() {
        ctx.metrics.drift_corrected(controller, corrected.len() as u64);
        let note = format!(
            "restored {} drifted object(s): {}",
            corrected.len(),
            corrected.join(", ")
        );
        ctx.event(object, true, "DriftCorrected", "Apply", note).await;
    }
    if !conflicts.is_empty() {
        ctx.event(
            object,
            true,
            OWNERSHIP_CONFLICT,
            "Apply",
            conflict_note(&conflicts),
        )
        .await;
    }
    let failure = report.failed().then(|| {
        let mut problems: Vec<String> = report
            .results
            .iter()
            .filter(|r| r.is_failure())
            .map(|r| format!("{}: {}", r.key, r.message))
            .collect();
        problems.extend(report.inventory_error.clone());
        format!(
            "{failed} of {} object(s) failed: {}",
            report.results.len(),
            problems.join("; ")
        )
    });
    Outcome {
        resources,
        applied,
        pruned,
        failure,
        conflicts,
        written: crate::drift::written(&report.results),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conflict_condition_appears_with_a_conflict_and_clears_once_shown() {
        let one = vec![
            "ConfigMap/kube-system/x (owned by inventory kube-system/capstan.caddon.a; not taken over)"
                .to_string(),
        ];
        type Row<'a> = (&'a [String], bool, Option<(bool, &'a str)>);
        let table: &[Row] = &[
            (&one, false, Some((true, "OwnedByAnotherInventory"))),
            (&one, true, Some((true, "OwnedByAnotherInventory"))),
            (&[], true, Some((false, "NoConflict"))),
            (&[], false, None),
        ];
        for (i, (conflicts, shown, want)) in table.iter().enumerate() {
            let got = conflict_condition(conflicts, *shown);
            assert_eq!(
                got.as_ref().map(|(on, reason, _)| (*on, *reason)),
                *want,
                "row {i}"
            );
            if let Some((true, _, message)) = got {
                assert!(message.contains("kube-system/capstan.caddon.a"), "{message}");
                assert!(message.contains(TAKE_OVER_ANNOTATION), "{message}");
            }
        }
    }
}
