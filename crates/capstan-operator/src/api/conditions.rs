//! Status conditions, Kubernetes style: `type`, `status`, `reason`, `message`,
//! `lastTransitionTime`, `observedGeneration`, and one summary condition, [`READY`].
//!
//! The schema also takes `severity`, the Cluster API field the cluster-stack-operator writes, so
//! its objects stay valid; capstan itself never sets it. `reason` and `message` are optional for
//! the same reason.
//!
//! [`set_condition`] changes `lastTransitionTime` only when the status changes, so the time says
//! when the condition last flipped, not when it was last looked at.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The summary condition every kind carries: true when the object is fully reconciled.
pub const READY: &str = "Ready";

/// Reason of a `Ready` condition that is true.
pub const REASON_SUCCEEDED: &str = "Succeeded";

/// Reason of a summary when a condition it depends on was not reported yet.
pub const REASON_PENDING: &str = "Pending";

/// One observation of an object's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Kind of observation, in CamelCase (`Ready`, `Downloaded`, `Applied`, …).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[schemars(schema_with = "super::string_schema")]
    pub status: ConditionStatus,
    /// When `status` last changed.
    #[schemars(schema_with = "super::date_time_schema")]
    pub last_transition_time: Time,
    /// Why the condition is in its state, one CamelCase word.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Details for people, with the underlying error text when there is one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Cluster API severity (`Error`, `Warning`, `Info`) of a false condition. Kept for objects
    /// written by the cluster-stack-operator; capstan does not set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// The `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The status of a [`Condition`]. Any other text read from the server counts as `Unknown`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConditionStatus {
    True,
    False,
    #[default]
    #[serde(other)]
    Unknown,
}

impl ConditionStatus {
    /// `True` for `true`, `False` for `false`.
    pub fn from_bool(value: bool) -> ConditionStatus {
        if value {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl std::fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Condition {
    /// A condition observed at `now` for `generation`.
    pub fn new(
        type_: impl Into<String>,
        status: ConditionStatus,
        reason: impl Into<String>,
        message: impl Into<String>,
        generation: Option<i64>,
        now: Time,
    ) -> Condition {
        Condition {
            type_: type_.into(),
            status,
            last_transition_time: now,
            reason: reason.into(),
            message: message.into(),
            severity: None,
            observed_generation: generation,
        }
    }

    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

/// What [`set_condition`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Nothing differed.
    Unchanged,
    /// Same status; reason, message, severity or generation changed. The transition time stays.
    Updated,
    /// The condition is new or its status changed; its transition time is the new one.
    Transitioned,
}

impl Change {
    /// Whether anything changed (worth a status write and an Event).
    pub fn changed(self) -> bool {
        self != Change::Unchanged
    }
}

/// The condition of type `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The conditions of `new` (other than `Ready`) that are not `True` and whose status or
/// reason differs from `old` (or that are new): the state changes worth an Event.
pub fn entered<'a>(old: &[Condition], new: &'a [Condition]) -> Vec<&'a Condition> {
    new.iter()
        .filter(|c| c.type_ != READY && c.status != ConditionStatus::True)
        .filter(|c| find(old, &c.type_).is_none_or(|o| o.status != c.status || o.reason != c.reason))
        .collect()
}

/// Whether the condition of type `type_` is present and `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(Condition::is_true)
}

/// Sets `new` in `conditions`, replacing the condition of the same type. Keeps the old
/// `lastTransitionTime` when the status did not change; a CSO-written `severity` is dropped
/// with any change. New types are appended, so the order of the list is stable.
pub fn set_condition(conditions: &mut Vec<Condition>, new: Condition) -> Change {
    let Some(old) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        conditions.push(new);
        return Change::Transitioned;
    };
    if old.status != new.status {
        *old = new;
        return Change::Transitioned;
    }
    let same = old.reason == new.reason
        && old.message == new.message
        && old.severity == new.severity
        && old.observed_generation == new.observed_generation;
    if same {
        return Change::Unchanged;
    }
    let since = old.last_transition_time.clone();
    *old = Condition {
        last_transition_time: since,
        ..new
    };
    Change::Updated
}

/// Removes the condition of type `type_`; whether there was one.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// Computes and sets the summary [`READY`] condition from the conditions of `types`, in order:
/// the first `False` one makes `Ready` false with its reason and message; else the first that
/// is `Unknown` or missing makes it unknown; else it is true with reason [`REASON_SUCCEEDED`].
pub fn set_ready_summary(
    conditions: &mut Vec<Condition>,
    types: &[&str],
    generation: Option<i64>,
    now: Time,
) -> Change {
    let summary = summarize(conditions, types);
    let (status, reason, message) = summary;
    set_condition(
        conditions,
        Condition::new(READY, status, reason, message, generation, now),
    )
}

fn summarize(conditions: &[Condition], types: &[&str]) -> (ConditionStatus, String, String) {
    let looked_up: Vec<(&str, Option<&Condition>)> =
        types.iter().map(|t| (*t, find(conditions, t))).collect();
    let failed = looked_up
        .iter()
        .find_map(|(_, c)| c.filter(|c| c.status == ConditionStatus::False));
    if let Some(c) = failed {
        return (ConditionStatus::False, c.reason.clone(), c.message.clone());
    }
    for (type_, c) in &looked_up {
        match c {
            None => {
                return (
                    ConditionStatus::Unknown,
                    REASON_PENDING.to_string(),
                    format!("{type_} not reported yet"),
                );
            }
            Some(c) if c.status == ConditionStatus::Unknown => {
                return (ConditionStatus::Unknown, c.reason.clone(), c.message.clone());
            }
            Some(_) => {}
        }
    }
    (ConditionStatus::True, REASON_SUCCEEDED.to_string(), String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entered_states_are_the_changed_not_true_ones() {
        let c = |type_: &str, status: ConditionStatus, reason: &str| cond(type_, status, reason, 1);
        let old = vec![
            c("SourceReady", ConditionStatus::True, "Listed"),
            c("ReleasesReady", ConditionStatus::False, "ReleasesNotReady"),
            c(READY, ConditionStatus::False, "ReleasesNotReady"),
        ];
        let table: Vec<(Vec<Condition>, Vec<&str>)> = vec![
            // Nothing changed.
            (old.clone(), vec![]),
            // A new failure.
            (
                vec![
                    c("SourceReady", ConditionStatus::False, "NoRelease"),
                    old[1].clone(),
                ],
                vec!["NoRelease"],
            ),
            // Same status, another reason.
            (
                vec![
                    old[0].clone(),
                    c("ReleasesReady", ConditionStatus::False, "VersionMissing"),
                ],
                vec!["VersionMissing"],
            ),
            // Became True: not a wait or failure; Ready is never listed.
            (
                vec![
                    old[0].clone(),
                    c("ReleasesReady", ConditionStatus::True, "Ready"),
                    c(READY, ConditionStatus::Unknown, "Pending"),
                ],
                vec![],
            ),
            // A new type.
            (
                vec![c("Other", ConditionStatus::Unknown, "Pending")],
                vec!["Pending"],
            ),
        ];
        for (i, (new, want)) in table.iter().enumerate() {
            let got: Vec<&str> = entered(&old, new).iter().map(|c| c.reason.as_str()).collect();
            assert_eq!(&got, want, "row {i}");
        }
    }

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).expect("valid test time"))
    }

    fn cond(type_: &str, status: ConditionStatus, reason: &str, now: i64) -> Condition {
        Condition::new(
            type_,
            status,
            reason,
            format!("{reason} message"),
            Some(1),
            at(now),
        )
    }

    #[test]
    fn new_condition_is_appended_and_transitions() {
        let mut list = vec![cond("Downloaded", ConditionStatus::True, "Done", 10)];
        let change = set_condition(&mut list, cond("Applied", ConditionStatus::False, "Failed", 20));
        assert_eq!(change, Change::Transitioned);
        let types: Vec<&str> = list.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Downloaded", "Applied"]);
    }

    #[test]
    fn same_status_keeps_transition_time_but_takes_new_reason() {
        let mut list = vec![cond("Applied", ConditionStatus::False, "Failed", 10)];
        let change = set_condition(&mut list, cond("Applied", ConditionStatus::False, "Conflict", 99));
        assert_eq!(change, Change::Updated);
        assert_eq!(list[0].last_transition_time, at(10));
        assert_eq!(list[0].reason, "Conflict");
        assert_eq!(list[0].message, "Conflict message");
    }

    #[test]
    fn identical_condition_is_unchanged() {
        let mut list = vec![cond("Applied", ConditionStatus::True, "Done", 10)];
        let change = set_condition(&mut list, cond("Applied", ConditionStatus::True, "Done", 50));
        assert_eq!(change, Change::Unchanged);
        assert_eq!(list[0].last_transition_time, at(10));
    }

    #[test]
    fn status_change_moves_transition_time() {
        let mut list = vec![cond("Applied", ConditionStatus::False, "Failed", 10)];
        let change = set_condition(&mut list, cond("Applied", ConditionStatus::True, "Done", 50));
        assert_eq!(change, Change::Transitioned);
        assert_eq!(list[0].last_transition_time, at(50));
        assert_eq!(list.len(), 1);
    }

    #[test]
    fn new_generation_alone_is_an_update() {
        let mut list = vec![cond("Applied", ConditionStatus::True, "Done", 10)];
        let mut next = cond("Applied", ConditionStatus::True, "Done", 50);
        next.observed_generation = Some(2);
        assert_eq!(set_condition(&mut list, next), Change::Updated);
        assert_eq!(list[0].observed_generation, Some(2));
        assert_eq!(list[0].last_transition_time, at(10));
    }

    #[test]
    fn remove_reports_whether_present() {
        let mut list = vec![cond("Applied", ConditionStatus::True, "Done", 10)];
        assert!(!remove_condition(&mut list, "Rendered"));
        assert!(remove_condition(&mut list, "Applied"));
        assert!(list.is_empty());
    }

    #[test]
    fn ready_summary_prefers_the_first_failure() {
        let mut list = vec![
            cond("Downloaded", ConditionStatus::True, "Done", 1),
            cond("Rendered", ConditionStatus::Unknown, "Rendering", 2),
            cond("Applied", ConditionStatus::False, "ApplyFailed", 3),
        ];
        set_ready_summary(&mut list, &["Downloaded", "Rendered", "Applied"], Some(4), at(9));
        let ready = find(&list, READY).expect("Ready set");
        assert_eq!(ready.status, ConditionStatus::False);
        assert_eq!(ready.reason, "ApplyFailed");
        assert_eq!(ready.message, "ApplyFailed message");
        assert_eq!(ready.observed_generation, Some(4));
    }

    #[test]
    fn ready_summary_unknown_when_a_condition_is_missing() {
        let mut list = vec![cond("Downloaded", ConditionStatus::True, "Done", 1)];
        set_ready_summary(&mut list, &["Downloaded", "Applied"], None, at(9));
        let ready = find(&list, READY).expect("Ready set");
        assert_eq!(ready.status, ConditionStatus::Unknown);
        assert_eq!(ready.reason, REASON_PENDING);
        assert_eq!(ready.message, "Applied not reported yet");
    }

    #[test]
    fn ready_summary_true_when_all_true_and_time_kept_on_repeat() {
        let mut list = vec![
            cond("Downloaded", ConditionStatus::True, "Done", 1),
            cond("Applied", ConditionStatus::True, "Done", 2),
        ];
        let first = set_ready_summary(&mut list, &["Downloaded", "Applied"], Some(1), at(5));
        let again = set_ready_summary(&mut list, &["Downloaded", "Applied"], Some(1), at(8));
        assert_eq!((first, again), (Change::Transitioned, Change::Unchanged));
        assert!(is_true(&list, READY));
        assert_eq!(
            find(&list, READY).map(|c| c.last_transition_time.clone()),
            Some(at(5))
        );
    }

    #[test]
    fn status_text_outside_the_three_values_reads_as_unknown() {
        let c: Condition = serde_json::from_value(serde_json::json!({
            "type": "Ready", "status": "Maybe", "lastTransitionTime": "2024-05-06T07:08:09Z"
        }))
        .expect("CSO-valid condition deserializes");
        assert_eq!(c.status, ConditionStatus::Unknown);
        let c: Condition = serde_json::from_value(serde_json::json!({
            "type": "Ready", "status": "True", "lastTransitionTime": "2024-05-06T07:08:09Z",
            "severity": "Info", "observedGeneration": 3
        }))
        .expect("condition deserializes");
        assert!(c.is_true());
        assert_eq!(c.severity.as_deref(), Some("Info"));
    }
}
