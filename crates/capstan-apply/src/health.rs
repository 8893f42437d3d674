//! Readiness of applied objects, per kind: Deployment/DaemonSet/StatefulSet rollout
//! complete, Job complete, CRD Established, otherwise a `Ready` condition in
//! `status.conditions` when the object has one (objects without any readiness signal are
//! ready once applied). Waiting is bounded by a deadline.

use std::time::Duration;

use serde_json::Value;

/// What the object's status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Not yet, with what is missing.
    Pending(String),
    /// Will not become ready (a failed Job).
    Failed(String),
}

/// Readiness of `obj` of kind `group`/`kind`.
pub fn readiness(group: &str, kind: &str, obj: &Value) -> Readiness {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let int = |v: &Value, path: &str| v.pointer(path).and_then(Value::as_i64).unwrap_or(0);
    let generation_seen = || {
        let generation = int(obj, "/metadata/generation");
        let observed = int(status, "/observedGeneration");
        observed >= generation
    };
    match (group, kind) {
        ("apps", "Deployment") | ("apps", "StatefulSet") => {
            if !generation_seen() {
                return Readiness::Pending("controller has not observed the latest generation".into());
            }
            let want = obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
            let updated = int(status, "/updatedReplicas");
            let ready_field = if kind == "Deployment" {
                "/availableReplicas"
            } else {
                "/readyReplicas"
            };
            let ready = int(status, ready_field);
            if updated < want || ready < want {
                return Readiness::Pending(format!("{updated} of {want} updated, {ready} ready"));
            }
            if kind == "StatefulSet" {
                let cur = status.get("currentRevision");
                let upd = status.get("updateRevision");
                if upd.is_some() && cur != upd {
                    return Readiness::Pending("rollout to the update revision in progress".into());
                }
            }
            Readiness::Ready
        }
        ("apps", "DaemonSet") => {
            if !generation_seen() {
                return Readiness::Pending("controller has not observed the latest generation".into());
            }
            let want = int(status, "/desiredNumberScheduled");
            let updated = int(status, "/updatedNumberScheduled");
            let available = int(status, "/numberAvailable");
            if updated < want || available < want {
                Readiness::Pending(format!("{updated} of {want} updated, {available} available"))
            } else {
                Readiness::Ready
            }
        }
        ("batch", "Job") => {
            if condition(status, "Failed") == Some(true) {
                Readiness::Failed(condition_message(status, "Failed"))
            } else if condition(status, "Complete") == Some(true) {
                Readiness::Ready
            } else {
                Readiness::Pending("job not complete".into())
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => match condition(status, "Established") {
            Some(true) => Readiness::Ready,
            _ => Readiness::Pending("not Established".into()),
        },
        _ => match condition(status, "Ready") {
            Some(false) => Readiness::Pending(condition_message(status, "Ready")),
            _ => Readiness::Ready,
        },
    }
}

/// `Some(status == "True")` of the condition of type `kind`, `None` when absent.
fn condition(status: &Value, kind: &str) -> Option<bool> {
    find_condition(status, kind).map(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

fn find_condition<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

fn condition_message(status: &Value, kind: &str) -> String {
    let c = find_condition(status, kind);
    let field = |f: &str| {
        c.and_then(|c| c.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    match (field("reason"), field("message")) {
        ("", "") => format!("{kind} condition not True"),
        (r, "") => format!("{kind}: {r}"),
        ("", m) => format!("{kind}: {m}"),
        (r, m) => format!("{kind}: {r}: {m}"),
    }
}

/// How often a waiting apply polls an object.
pub const POLL: Duration = Duration::from_millis(250);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deployment_rollout() {
        let mut d = json!({"metadata": {"generation": 2}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 2}});
        assert!(matches!(
            readiness("apps", "Deployment", &d),
            Readiness::Pending(_)
        ));
        d["status"]["observedGeneration"] = 2.into();
        assert_eq!(readiness("apps", "Deployment", &d), Readiness::Ready);
        d["status"]["availableReplicas"] = 1.into();
        assert_eq!(
            readiness("apps", "Deployment", &d),
            Readiness::Pending("2 of 2 updated, 1 ready".into())
        );
    }

    #[test]
    fn job_and_conditions() {
        let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
        assert_eq!(
            readiness("batch", "Job", &failed),
            Readiness::Failed("Failed: BackoffLimitExceeded".into())
        );
        let done = json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(readiness("batch", "Job", &done), Readiness::Ready);
        let not_ready =
            json!({"status": {"conditions": [{"type": "Ready", "status": "False", "message": "waiting"}]}});
        assert_eq!(
            readiness("x.io", "Thing", &not_ready),
            Readiness::Pending("Ready: waiting".into())
        );
        assert_eq!(readiness("", "ConfigMap", &json!({})), Readiness::Ready);
        let crd = json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}});
        assert_eq!(
            readiness("apiextensions.k8s.io", "CustomResourceDefinition", &crd),
            Readiness::Ready
        );
    }
}
