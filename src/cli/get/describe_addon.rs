//! What `capstan get addon CLUSTER` and `capstan describe addon CLUSTER` print of one
//! ClusterAddon, decided from what the shell read: the summary, the conditions, the per-object
//! table (GROUP KIND NAMESPACE NAME SYNC HEALTH MESSAGE — sync from the status, health from the
//! live objects when the workload cluster answered), the stages, the inputs and the last
//! Events.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use capstan_operator::api::ClusterAddon;

use super::rows::{AddonRow, event_time, or_none};
use super::table::{Table, age, one_line, paint};

/// The last Events shown.
pub const EVENTS_SHOWN: usize = 10;

/// An applied object's health, read from the workload cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Healthy,
    /// Not ready yet, with what is missing.
    Progressing(String),
    /// Will not become ready.
    Degraded(String),
    /// Not on the cluster.
    Missing,
    /// Could not be read, with why.
    Unknown(String),
}

impl Health {
    fn word(&self) -> &'static str {
        match self {
            Health::Healthy => "Healthy",
            Health::Progressing(_) => "Progressing",
            Health::Degraded(_) => "Degraded",
            Health::Missing => "Missing",
            Health::Unknown(_) => "Unknown",
        }
    }

    fn detail(&self) -> &str {
        match self {
            Health::Progressing(d) | Health::Degraded(d) | Health::Unknown(d) => d,
            Health::Healthy | Health::Missing => "",
        }
    }
}

/// An object's key in the health map: group, kind, namespace, name.
pub type ObjectKey = (String, String, String, String);

/// What the workload cluster said of the applied objects: each one's health, or why the
/// cluster could not be asked.
pub type Live = Result<BTreeMap<ObjectKey, Health>, String>;

/// Everything the view shows besides the addon itself.
pub struct Detail<'a> {
    pub row: &'a AddonRow,
    pub live: &'a Live,
    /// The sources of the user values layered over the release's, in the order they apply.
    pub values: &'a [String],
    pub events: &'a [Event],
    pub now: Timestamp,
    pub colour: bool,
}

/// One applied object: its sync state (from the status) and health (from the cluster).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ObjectRow {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// `Synced` or `OutOfSync` (the last apply failed or has not happened).
    pub sync: &'static str,
    /// `Healthy`, `Progressing`, `Degraded`, `Missing` or `Unknown`.
    pub health: &'static str,
    /// The apply's error, else what the health check found.
    pub message: String,
}

/// The objects of the addon's status, in its order.
pub fn object_rows(addon: &ClusterAddon, live: &Live) -> Vec<ObjectRow> {
    let resources = addon
        .status
        .as_ref()
        .map(|s| s.resources.as_slice())
        .unwrap_or_default();
    resources
        .iter()
        .map(|r| {
            let key = (
                r.group.clone(),
                r.kind.clone(),
                r.namespace.clone(),
                r.name.clone(),
            );
            let health = match live {
                Ok(found) => found
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| Health::Unknown("not read".into())),
                Err(_) => Health::Unknown(String::new()),
            };
            let message = if r.error.is_empty() {
                health.detail()
            } else {
                &r.error
            };
            ObjectRow {
                group: r.group.clone(),
                kind: r.kind.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                sync: if r.is_synced() { "Synced" } else { "OutOfSync" },
                health: health.word(),
                message: one_line(message, None),
            }
        })
        .collect()
}

/// The whole view.
pub fn render(addon: &ClusterAddon, detail: &Detail) -> String {
    let row = detail.row;
    let status = addon.status.clone().unwrap_or_default();
    let mut out = String::new();
    let field = |out: &mut String, name: &str, value: &str| {
        out.push_str(&format!("{:<13}{}\n", format!("{name}:"), or_none(value)));
    };
    let when = |time: Option<&str>| -> String {
        time.and_then(|t| t.parse::<Timestamp>().ok().map(|p| (t, p)))
            .map(|(t, p)| format!("{} ago ({t})", age(detail.now.as_second() - p.as_second())))
            .unwrap_or_default()
    };
    field(&mut out, "Name", &row.name);
    field(&mut out, "Namespace", &row.namespace);
    field(&mut out, "Cluster", &row.cluster);
    field(&mut out, "Stack", row.stack.as_deref().unwrap_or_default());
    field(
        &mut out,
        "Wanted",
        row.release.wanted.as_deref().unwrap_or_default(),
    );
    field(
        &mut out,
        "Applied",
        row.release.applied.as_deref().unwrap_or_default(),
    );
    field(&mut out, "Hook", row.hook.as_deref().unwrap_or_default());
    let ready = if row.ready.reason.is_empty() {
        paint(&row.ready.status, detail.colour)
    } else {
        format!(
            "{} ({})",
            paint(&row.ready.status, detail.colour),
            row.ready.reason
        )
    };
    field(&mut out, "Ready", &ready);
    field(&mut out, "Message", &one_line(&row.ready.message, None));
    field(
        &mut out,
        "Objects",
        &format!("{} of {} synced", row.objects.synced, row.objects.total),
    );
    field(&mut out, "Last pass", &when(row.last_pass.as_deref()));
    field(
        &mut out,
        "Last drift",
        &when(row.last_drift_correction.as_deref()),
    );
    field(&mut out, "Created", &when(row.created.as_deref()));

    out.push_str("\nConditions:\n");
    if status.conditions.is_empty() {
        out.push_str("  none\n");
    } else {
        let mut table = Table::new(vec!["TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"]);
        for c in &status.conditions {
            table.push(vec![
                c.type_.clone(),
                c.status.as_str().into(),
                c.reason.clone(),
                age(detail.now.as_second() - c.last_transition_time.0.as_second()),
                one_line(&c.message, None),
            ]);
        }
        indent(&mut out, &table.render(detail.colour));
    }

    out.push_str("\nObjects:\n");
    if let Err(why) = detail.live {
        out.push_str(&format!("  health unknown: {}\n", one_line(why, None)));
    }
    if status.resources.is_empty() {
        out.push_str("  none applied\n");
    } else {
        let mut table = Table::new(vec![
            "GROUP",
            "KIND",
            "NAMESPACE",
            "NAME",
            "SYNC",
            "HEALTH",
            "MESSAGE",
        ]);
        for o in object_rows(addon, detail.live) {
            table.push(vec![
                o.group,
                o.kind,
                o.namespace,
                o.name,
                o.sync.into(),
                o.health.into(),
                o.message,
            ]);
        }
        indent(&mut out, &table.render(false));
    }

    if !status.stages.is_empty() {
        match &status.stages_for {
            Some(what) => out.push_str(&format!("\nStages ({what}):\n")),
            None => out.push_str("\nStages:\n"),
        }
        let mut table = Table::new(vec!["#", "STAGE", "ACTION", "PHASE"]);
        for (i, s) in status.stages.iter().enumerate() {
            table.push(vec![
                (i + 1).to_string(),
                s.name.clone(),
                s.action.to_string(),
                s.phase.to_string(),
            ]);
        }
        indent(&mut out, &table.render(false));
    }

    out.push_str("\nInputs:\n");
    out.push_str(&format!(
        "  Release:     {}\n",
        or_none(row.release.wanted.as_deref().unwrap_or_default())
    ));
    if let Some(hash) = &status.applied_inputs {
        let revision = status
            .applied_revision
            .map(|r| format!(", render revision {r}"))
            .unwrap_or_default();
        out.push_str(&format!("  Applied:     inputs {hash}{revision}\n"));
    }
    if detail.values.is_empty() {
        out.push_str("  Values:      the release's own\n");
    } else {
        out.push_str("  Values:      the release's, then (later wins):\n");
        for (i, source) in detail.values.iter().enumerate() {
            out.push_str(&format!("    {}. {source}\n", i + 1));
        }
    }

    out.push_str("\nEvents:\n");
    let mut events: Vec<&Event> = detail.events.iter().collect();
    events.sort_by_key(|e| event_time(e));
    let skip = events.len().saturating_sub(EVENTS_SHOWN);
    if events.is_empty() {
        out.push_str("  none\n");
    } else {
        let mut table = Table::new(vec!["LAST SEEN", "TYPE", "REASON", "COUNT", "MESSAGE"]);
        for e in events.into_iter().skip(skip) {
            table.push(vec![
                event_time(e)
                    .map(|t| age(detail.now.as_second() - t.as_second()))
                    .unwrap_or_default(),
                e.type_.clone().unwrap_or_default(),
                e.reason.clone().unwrap_or_default(),
                e.series
                    .as_ref()
                    .and_then(|s| s.count)
                    .or(e.count)
                    .unwrap_or(1)
                    .to_string(),
                one_line(e.message.as_deref().unwrap_or_default(), None),
            ]);
        }
        indent(&mut out, &table.render(false));
    }
    out
}

fn indent(out: &mut String, text: &str) {
    for line in text.lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
}

/// The sources of a Cluster's user values, in the order they apply (see
/// `capstan_operator::cli::user_values`): the ClusterStack's `spec.addonValues` (given as
/// the stack's `namespace/name` when it has any), the ConfigMap or Secret the Cluster's
/// `addon-values-from` annotation names, the Cluster's `addon-values` annotation.
pub fn value_sources(
    stack_with_values: Option<&str>,
    cluster_namespace: &str,
    cluster_name: &str,
    annotations: &BTreeMap<String, String>,
) -> Vec<String> {
    use capstan_operator::cli::user_values::{VALUES_ANNOTATION, VALUES_FROM_ANNOTATION, parse_ref};
    let mut out = Vec::new();
    if let Some(stack) = stack_with_values {
        out.push(format!("ClusterStack {stack} spec.addonValues"));
    }
    if let Some(text) = annotations.get(VALUES_FROM_ANNOTATION) {
        out.push(match parse_ref(text) {
            Ok(r) => format!(
                "{:?} {cluster_namespace}/{} key {} (Cluster annotation {VALUES_FROM_ANNOTATION})",
                r.kind, r.name, r.key
            ),
            Err(e) => format!("Cluster annotation {VALUES_FROM_ANNOTATION}: {e}"),
        });
    }
    if annotations.contains_key(VALUES_ANNOTATION) {
        out.push(format!(
            "Cluster {cluster_namespace}/{cluster_name} annotation {VALUES_ANNOTATION}"
        ));
    }
    out
}

/// The addon's name and namespace, for messages.
pub fn label(addon: &ClusterAddon) -> String {
    format!("{}/{}", addon.namespace().unwrap_or_default(), addon.name_any())
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_operator::api::{ClusterAddonSpec, ClusterAddonStatus, Resource, StageStatus};
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn addon() -> ClusterAddon {
        let mut a = ClusterAddon::new(
            "cluster-addon-c1",
            ClusterAddonSpec {
                cluster_stack: Some("docker-ferrol-1-27-v2".into()),
                cluster_ref: ObjectReference {
                    name: Some("c1".into()),
                    ..ObjectReference::default()
                },
                ..ClusterAddonSpec::default()
            },
        );
        a.metadata.namespace = Some("tenant".into());
        a.metadata.creation_timestamp = Some(Time("2026-11-26T11:00:00Z".parse().expect("time")));
        a.status = Some(ClusterAddonStatus {
            resources: vec![
                Resource {
                    group: "apps".into(),
                    version: "v1".into(),
                    kind: "Deployment".into(),
                    namespace: "kube-system".into(),
                    name: "cni".into(),
                    status: Resource::SYNCED.into(),
                    error: String::new(),
                    ..Resource::default()
                },
                Resource {
                    version: "v1".into(),
                    kind: "ConfigMap".into(),
                    namespace: "kube-system".into(),
                    name: "bad".into(),
                    status: Resource::NOT_SYNCED.into(),
                    error: "admission webhook denied".into(),
                    ..Resource::default()
                },
            ],
            stages: vec![StageStatus {
                name: "cni".into(),
                action: "apply".into(),
                phase: "waitingForPostCondition".into(),
                ..StageStatus::default()
            }],
            stages_for: Some("AfterControlPlaneInitialized docker-ferrol-1-27-v2".into()),
            ..Default::default()
        });
        a
    }

    #[test]
    fn objects_show_sync_from_the_status_and_health_from_the_cluster() {
        let a = addon();
        let row = AddonRow::of(&a, &BTreeMap::new());
        let mut health = BTreeMap::new();
        health.insert(
            (
                "apps".into(),
                "Deployment".into(),
                "kube-system".into(),
                "cni".into(),
            ),
            Health::Progressing("1 of 2 replicas updated".into()),
        );
        health.insert(
            (
                String::new(),
                "ConfigMap".into(),
                "kube-system".into(),
                "bad".into(),
            ),
            Health::Missing,
        );
        let live = Ok(health);
        let values = vec!["ClusterStack tenant/ferrol spec.addonValues".to_string()];
        let text = render(
            &a,
            &Detail {
                row: &row,
                live: &live,
                values: &values,
                events: &[],
                now: "2026-11-26T12:00:00Z".parse().expect("now"),
                colour: false,
            },
        );
        let objects = "\
Objects:
  GROUP   KIND         NAMESPACE     NAME   SYNC        HEALTH        MESSAGE
  apps    Deployment   kube-system   cni    Synced      Progressing   1 of 2 replicas updated
  -       ConfigMap    kube-system   bad    OutOfSync   Missing       admission webhook denied
";
        assert!(text.contains(objects), "{text}");
        assert!(
            text.contains(
                "Stages (AfterControlPlaneInitialized docker-ferrol-1-27-v2):\n  #   STAGE   ACTION   PHASE\n  1   cni     apply    waitingForPostCondition\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  Values:      the release's, then (later wins):\n    1. ClusterStack tenant/ferrol spec.addonValues\n"),
            "{text}"
        );
        assert!(
            text.contains("Created:     60m ago (2026-11-26T11:00:00Z)\n"),
            "{text}"
        );
        assert!(text.contains("Events:\n  none\n"), "{text}");
    }

    #[test]
    fn an_unreachable_cluster_leaves_health_unknown_and_says_why() {
        let a = addon();
        let row = AddonRow::of(&a, &BTreeMap::new());
        let live: Live = Err("the workload API server https://127.0.0.1:1 is not ready".into());
        let text = render(
            &a,
            &Detail {
                row: &row,
                live: &live,
                values: &[],
                events: &[],
                now: "2026-11-26T12:00:00Z".parse().expect("now"),
                colour: false,
            },
        );
        assert!(
            text.contains(
                "Objects:\n  health unknown: the workload API server https://127.0.0.1:1 is not ready\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  apps    Deployment   kube-system   cni    Synced      Unknown   -\n"),
            "{text}"
        );
    }

    #[test]
    fn value_sources_in_their_order() {
        let mut annotations = BTreeMap::new();
        annotations.insert(
            "clusterstack.x-k8s.io/addon-values".to_string(),
            "a: 1".to_string(),
        );
        annotations.insert(
            "clusterstack.x-k8s.io/addon-values-from".to_string(),
            "Secret/vals".to_string(),
        );
        assert_eq!(
            value_sources(Some("tenant/ferrol"), "tenant", "c1", &annotations),
            [
                "ClusterStack tenant/ferrol spec.addonValues",
                "Secret tenant/vals key values.yaml (Cluster annotation clusterstack.x-k8s.io/addon-values-from)",
                "Cluster tenant/c1 annotation clusterstack.x-k8s.io/addon-values",
            ]
        );
        assert!(value_sources(None, "tenant", "c1", &BTreeMap::new()).is_empty());
    }
}
