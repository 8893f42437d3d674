//! What an apply report means for a controller: the per-object status entries, the counts for
//! the metrics, a `DriftCorrected` event when a drift pass changed objects, and the failure
//! text for the `Applied` condition. Shared by the release and addon controllers.

use k8s_openapi::api::core::v1::ObjectReference;

use crate::api::Resource as StatusResource;
use crate::context::Context;
use crate::metrics::ObjectOutcome;
use capstan_apply::{Action, ApplyReport, SyncStatus};

/// An apply report, read.
pub struct Outcome {
    /// One entry per object still wanted (pruned ones are left out).
    pub resources: Vec<StatusResource>,
    pub applied: u64,
    pub pruned: u64,
    /// Why the apply failed, when it did: every failed object with the server's words.
    pub failure: Option<String>,
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
            error: if result.is_failure() {
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
        written: crate::drift::written(&report.results),
    }
}
