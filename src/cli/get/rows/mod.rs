//! What `capstan get` shows of each object, decided from the typed objects alone: one row per
//! ClusterStack, ClusterStackRelease or ClusterAddon, the table it is printed as, and the row
//! as `-o json|yaml` prints it. These rows are the stable output: their JSON field names are
//! documented in the README ("Watching a fleet") and change only by adding fields.
//!
//! Each kind has a row type, a constructor from its typed object and a table function here,
//! and an implementation of `kinds::Kind`; this module holds what the rows share.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use capstan_operator::api::Resource;
use capstan_operator::api::conditions::{self, Condition};
use capstan_stack::name::ReleaseTag;

use super::table::{NONE, Table, age, one_line};

mod addon;
mod release;
mod rollout;
mod stack;

pub use addon::{AddonRow, DRIFT_CORRECTED, addons_table, event_time, last_drift_corrections};
pub use release::{ReleaseRow, releases_table};
pub use rollout::{RolloutRow, rollouts_table};
pub use stack::{StackRow, stacks_table};

/// The longest message a table prints (`-o wide` prints all of it).
const MESSAGE_WIDTH: usize = 80;

/// How the table is laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// A NAMESPACE column (`-A`).
    pub namespaces: bool,
    /// `-o wide`: more columns, whole messages.
    pub wide: bool,
}

impl Layout {
    fn message(&self, text: &str) -> String {
        one_line(text, (!self.wide).then_some(MESSAGE_WIDTH))
    }
}

/// The `Ready` condition's state: its status, reason and message; without a condition, the
/// status' `ready` flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Readiness {
    fn of(conditions: &[Condition], ready: bool) -> Readiness {
        match conditions::find(conditions, conditions::READY) {
            Some(c) => Readiness {
                status: c.status.as_str().into(),
                reason: c.reason.clone(),
                message: c.message.clone(),
            },
            None => Readiness {
                status: if ready { "True" } else { "Unknown" }.into(),
                reason: String::new(),
                message: String::new(),
            },
        }
    }

    pub fn is_ready(&self) -> bool {
        self.status == "True"
    }

    /// The message, else the reason (a condition may carry only one of them).
    fn text(&self) -> &str {
        if self.message.is_empty() {
            &self.reason
        } else {
            &self.message
        }
    }
}

/// Objects of a status whose last apply succeeded, of all listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ObjectCount {
    pub synced: usize,
    pub total: usize,
}

impl ObjectCount {
    fn of(resources: &[Resource]) -> ObjectCount {
        ObjectCount {
            synced: resources.iter().filter(|r| r.is_synced()).count(),
            total: resources.len(),
        }
    }

    fn cell(&self) -> String {
        format!("{}/{}", self.synced, self.total)
    }
}

fn rfc3339(time: &Option<Time>) -> Option<String> {
    time.as_ref().map(|t| t.0.to_string())
}

fn age_cell(now: Timestamp, time: Option<&str>) -> String {
    time.and_then(|t| t.parse::<Timestamp>().ok())
        .map(|t| age(now.as_second() - t.as_second()))
        .unwrap_or_default()
}

/// A release name (tag, dash form, or ClusterClass name, dot form) read as a release.
fn release_tag(name: &str) -> Option<ReleaseTag> {
    ReleaseTag::parse(name)
        .or_else(|_| ReleaseTag::parse_cluster_class(name))
        .ok()
}

/// A table of `layout`: NAMESPACE first with `-A`, the `wide` headers only with `-o wide`,
/// MESSAGE last.
fn frame(layout: Layout, main: &[&'static str], wide: &[&'static str]) -> Table {
    let mut headers = Vec::new();
    if layout.namespaces {
        headers.push("NAMESPACE");
    }
    headers.extend(main);
    if layout.wide {
        headers.extend(wide);
    }
    headers.push("MESSAGE");
    Table::new(headers)
}

/// Adds a row laid out like [`frame`]'s headers.
fn push_row(
    table: &mut Table,
    layout: Layout,
    namespace: &str,
    main: impl IntoIterator<Item = String>,
    wide: impl FnOnce() -> Vec<String>,
    message: &str,
) {
    let mut cells = Vec::new();
    if layout.namespaces {
        cells.push(namespace.to_string());
    }
    cells.extend(main);
    if layout.wide {
        cells.extend(wide());
    }
    cells.push(layout.message(message));
    table.push(cells);
}

/// An empty cell's text, for callers printing single values.
pub fn or_none(text: &str) -> &str {
    if text.is_empty() { NONE } else { text }
}

#[cfg(test)]
mod fixtures {
    //! ClusterAddons in every state the rows show, for the tests of each kind's rows.
    use super::*;
    use capstan_operator::api::conditions::{self, Condition};
    use capstan_operator::api::{ClusterAddon, Resource};
    use capstan_operator::api::{ClusterAddonSpec, ClusterAddonStatus, ConditionStatus, StageStatus};
    use k8s_openapi::api::core::v1::ObjectReference;

    pub(super) fn time(text: &str) -> Time {
        Time(text.parse().expect("timestamp"))
    }

    pub(super) const NOW: &str = "2026-11-26T12:00:00Z";

    pub(super) fn ready(status: ConditionStatus, reason: &str, message: &str) -> Condition {
        Condition::new(
            conditions::READY,
            status,
            reason,
            message,
            None,
            time("2026-11-26T11:00:00Z"),
        )
    }

    pub(super) fn resource(name: &str, synced: bool) -> Resource {
        Resource {
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "kube-system".into(),
            name: name.into(),
            status: if synced {
                Resource::SYNCED
            } else {
                Resource::NOT_SYNCED
            }
            .into(),
            ..Resource::default()
        }
    }

    pub(super) fn addon(cluster: &str, wanted: &str, status: ClusterAddonStatus) -> ClusterAddon {
        let mut a = ClusterAddon::new(
            &format!("cluster-addon-{cluster}"),
            ClusterAddonSpec {
                cluster_stack: Some(wanted.into()),
                cluster_ref: ObjectReference {
                    name: Some(cluster.into()),
                    ..ObjectReference::default()
                },
                ..ClusterAddonSpec::default()
            },
        );
        a.metadata.namespace = Some("tenant".into());
        a.metadata.creation_timestamp = Some(time("2026-11-26T11:50:00Z"));
        a.status = Some(status);
        a
    }

    pub(super) fn fixtures() -> Vec<ClusterAddon> {
        vec![
            addon(
                "ready",
                "docker-ferrol-1-27-v2",
                ClusterAddonStatus {
                    ready: true,
                    conditions: vec![ready(ConditionStatus::True, "Succeeded", "")],
                    resources: vec![resource("a", true), resource("b", true)],
                    applied_cluster_stack: Some("docker-ferrol-1-27-v2".into()),
                    ..Default::default()
                },
            ),
            addon(
                "staged",
                "docker-ferrol-1-27-v2",
                ClusterAddonStatus {
                    conditions: vec![ready(
                        ConditionStatus::False,
                        "StageWaiting",
                        "stage cni: waiting for its post-condition",
                    )],
                    stages: vec![
                        StageStatus {
                            name: "crds".into(),
                            action: "apply".into(),
                            phase: "done".into(),
                            ..StageStatus::default()
                        },
                        StageStatus {
                            name: "cni".into(),
                            action: "apply".into(),
                            phase: "waitingForPostCondition".into(),
                            ..StageStatus::default()
                        },
                    ],
                    resources: vec![resource("a", true)],
                    applied_cluster_stack: Some("docker-ferrol-1-27-v1".into()),
                    ..Default::default()
                },
            ),
            addon(
                "new",
                "docker-ferrol-1-27-v0-sha-abc",
                ClusterAddonStatus::default(),
            ),
        ]
    }
}
