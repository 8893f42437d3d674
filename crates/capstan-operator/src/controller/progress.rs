//! The status of one object as a reconcile builds it: conditions set step by step, the `Ready`
//! summary and `ready` recomputed on every save, written (merge patch on the status
//! subresource) only when something changed, with the events the change makes (by default
//! one when the object becomes ready). Shared by every controller of the operator's API.

use k8s_openapi::NamespaceResourceScope;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use super::{Cause, Error, now, object_ref};
use crate::api::Resource as StatusResource;
use crate::api::conditions::{self, Condition, ConditionStatus};
use crate::context::Context;

/// An object of the operator's API with a status of conditions and a `ready` flag.
pub trait Tracked:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + std::fmt::Debug
{
    /// The controller's name in metrics.
    const CONTROLLER: &'static str;
    type Status: Clone + PartialEq + Default + Serialize;
    /// Status fields another writer owns: a save never names them, so a pass that read the
    /// object before that writer's write cannot put the old values back.
    const FOREIGN_STATUS_FIELDS: &'static [&'static str] = &[];
    fn status_of(&self) -> Option<&Self::Status>;
    fn conditions_mut(status: &mut Self::Status) -> &mut Vec<Condition>;
    fn ready(status: &Self::Status) -> bool;
    fn set_ready(status: &mut Self::Status, ready: bool);
    /// The note of the event sent when the object becomes ready.
    fn ready_note(&self, status: &Self::Status) -> String;
    /// Records the per-object status of an apply, of stage `stage` when the kind applies in
    /// stages (kinds that apply nothing keep none).
    fn set_resources(_status: &mut Self::Status, _stage: Option<&str>, _resources: Vec<StatusResource>) {}
    /// The events a written change of the status from `before` to `after` makes: by
    /// default one when the object becomes ready.
    fn status_events(&self, before: &Self::Status, after: &Self::Status) -> Vec<StatusEvent> {
        if Self::ready(after) && !Self::ready(before) {
            vec![StatusEvent {
                warning: false,
                reason: "Ready".into(),
                action: "Apply",
                note: self.ready_note(after),
            }]
        } else {
            Vec::new()
        }
    }
}

/// [`Tracked`] for `$kind` of the module's `CONTROLLER`, whose status `$status` has
/// `conditions`, `ready` and `resources`; the module's `ready_note(object, status)` says
/// what became ready.
macro_rules! tracked_kind {
    ($kind:ty, $status:ty) => {
        impl super::progress::Tracked for $kind {
            const CONTROLLER: &'static str = CONTROLLER;
            type Status = $status;
            super::progress::tracked_status!($status);

            fn ready_note(&self, status: &$status) -> String {
                ready_note(self, status)
            }
        }
    };
}
pub(crate) use tracked_kind;

/// The [`Tracked`] methods of a kind whose status has `conditions`, `ready` and
/// `resources`.
macro_rules! tracked_status {
    ($status:ty) => {
        fn status_of(&self) -> Option<&$status> {
            self.status.as_ref()
        }

        fn conditions_mut(status: &mut $status) -> &mut Vec<$crate::api::conditions::Condition> {
            &mut status.conditions
        }

        fn ready(status: &$status) -> bool {
            status.ready
        }

        fn set_ready(status: &mut $status, ready: bool) {
            status.ready = ready;
        }

        fn set_resources(status: &mut $status, _stage: Option<&str>, resources: Vec<$crate::api::Resource>) {
            status.resources = resources;
        }
    };
}
pub(crate) use tracked_status;

/// An event a status change makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEvent {
    pub warning: bool,
    pub reason: String,
    pub action: &'static str,
    pub note: String,
}

/// A step that failed: the condition's reason and the cause.
#[derive(Debug)]
pub struct Failure {
    pub reason: &'static str,
    pub cause: Box<Cause>,
}

impl Failure {
    pub fn new(reason: &'static str, cause: impl Into<Cause>) -> Failure {
        Failure {
            reason,
            cause: Box::new(cause.into()),
        }
    }
}

/// A result whose error is a [`Failure`] with `reason`.
pub trait Because<T> {
    fn because(self, reason: &'static str) -> Result<T, Failure>;
}

impl<T, E: Into<Cause>> Because<T> for Result<T, E> {
    fn because(self, reason: &'static str) -> Result<T, Failure> {
        self.map_err(|cause| Failure::new(reason, cause))
    }
}

/// The merge patch of the status subresource that writes `status` (as JSON) over `written`,
/// the status this writer last read or wrote: the fields the writer owns, with those that
/// went away nulled (a merge patch keeps what it does not name), and none of `foreign`.
///
/// Why fields and not a `resourceVersion` precondition: the other writer (the Runtime SDK
/// hooks) owns fields of its own, so nothing a pass writes can conflict with it; while a
/// pass reads from the watch cache, which often lags its own last write, so a precondition
/// would fail and cost a read and a re-run on many passes.
pub fn status_patch(status: Json, written: &Json, foreign: &[&str]) -> Json {
    let mut status = status;
    if let Some(fields) = status.as_object_mut() {
        if let Json::Object(old) = written {
            for field in old.keys() {
                fields.entry(field.clone()).or_insert(Json::Null);
            }
        }
        fields.retain(|field, _| !foreign.contains(&field.as_str()));
    }
    serde_json::json!({ "status": status })
}

/// How soon a waiting step is looked at again.
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Progress<'a, K: Tracked> {
    pub object: &'a K,
    pub ctx: &'a Context,
    /// The stage whose objects the next apply records (a ClusterAddon's stages), else `None`.
    pub stage: Option<String>,
    /// The conditions `Ready` summarises, in order.
    steps: &'static [&'static str],
    pub status: K::Status,
    written: K::Status,
}

impl<'a, K: Tracked> Progress<'a, K> {
    pub fn new(object: &'a K, ctx: &'a Context, steps: &'static [&'static str]) -> Progress<'a, K> {
        let status = object.status_of().cloned().unwrap_or_default();
        Progress {
            object,
            ctx,
            steps,
            stage: None,
            written: status.clone(),
            status,
        }
    }

    /// Changes the conditions `Ready` summarises, for a step known only once the object's
    /// inputs are read (a release's `SourceVerified`, when its stack has a policy).
    pub fn set_steps(&mut self, steps: &'static [&'static str]) {
        self.steps = steps;
    }

    pub fn condition(&mut self, type_: &str, ok: bool, reason: &str, message: impl Into<String>) {
        let condition = Condition::new(
            type_,
            ConditionStatus::from_bool(ok),
            reason,
            message,
            self.object.meta().generation,
            now(),
        );
        conditions::set_condition(K::conditions_mut(&mut self.status), condition);
    }

    /// Writes the status when it changed, with the `Ready` summary and `ready` recomputed.
    pub async fn save(&mut self) -> Result<(), Error> {
        let generation = self.object.meta().generation;
        let conditions = K::conditions_mut(&mut self.status);
        conditions::set_ready_summary(conditions, self.steps, generation, now());
        let ready = conditions::is_true(conditions, conditions::READY);
        K::set_ready(&mut self.status, ready);
        if self.status == self.written {
            return Ok(());
        }
        let key = format!(
            "{} {}/{}",
            K::kind(&()),
            self.object.namespace().unwrap_or_default(),
            self.object.name_any()
        );
        let encode = |status: &K::Status| {
            serde_json::to_value(status).map_err(|source| Error::Encode {
                what: key.clone(),
                source,
            })
        };
        let json = status_patch(
            encode(&self.status)?,
            &encode(&self.written)?,
            K::FOREIGN_STATUS_FIELDS,
        );
        let api: Api<K> = Api::namespaced(
            self.ctx.client.clone(),
            &self.object.namespace().unwrap_or_default(),
        );
        api.patch_status(
            &self.object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&json),
        )
        .await
        .map_err(|e| Error::kube(format!("writing the status of {key}"), e))?;
        for event in self.object.status_events(&self.written, &self.status) {
            self.ctx
                .event(
                    &object_ref(self.object),
                    event.warning,
                    &event.reason,
                    event.action,
                    event.note,
                )
                .await;
        }
        self.written = self.status.clone();
        Ok(())
    }

    /// Records a failed step (its condition false with `reason` and the cause's text) and
    /// returns its error.
    pub async fn fail(&mut self, step: &'static str, reason: &'static str, cause: impl Into<Cause>) -> Error {
        let cause = cause.into();
        self.condition(step, false, reason, cause.to_string());
        if let Err(e) = self.save().await {
            return e;
        }
        Error::step(step, reason, cause)
    }

    /// The value of a step that succeeded, or its failure recorded (see [`Progress::fail`]).
    pub async fn check<T>(&mut self, step: &'static str, result: Result<T, Failure>) -> Result<T, Error> {
        match result {
            Ok(value) => Ok(value),
            Err(Failure { reason, cause }) => Err(self.fail(step, reason, *cause).await),
        }
    }

    /// Records the per-object status of an apply (of [`Progress::stage`]).
    pub fn set_resources(&mut self, resources: Vec<StatusResource>) {
        K::set_resources(&mut self.status, self.stage.as_deref(), resources);
    }

    /// A step waits for something outside (a gate, a condition): recorded, and looked at
    /// again after [`WAIT`] (not an error).
    /// A wait that begins (or whose reason or message changed) is an event.
    pub async fn wait(&mut self, step: &str, reason: &str, message: String) -> Result<Action, Error> {
        let mut written = self.written.clone();
        let fresh = conditions::find(K::conditions_mut(&mut written), step)
            .is_none_or(|c| c.status != ConditionStatus::False || c.reason != reason || c.message != message);
        tracing::debug!(namespace = ?self.object.namespace(), name = %self.object.name_any(), step, reason, %message, "waiting");
        self.condition(step, false, reason, message.clone());
        self.save().await?;
        if fresh {
            self.ctx
                .event(&object_ref(self.object), false, reason, "Wait", message)
                .await;
        }
        Ok(Action::requeue(WAIT))
    }
}

#[cfg(test)]
mod tests {
    use super::status_patch;
    use serde_json::json;

    #[test]
    fn the_status_patch_names_the_owned_fields_only() {
        let hook = ["upgradeHookTarget", "upgradeHookSince"];
        let cases = [
            // Every owned field, changed or not.
            (
                json!({"ready": true, "stages": []}),
                json!({"ready": false}),
                &[][..],
                json!({"status": {"ready": true, "stages": []}}),
            ),
            // A field that went away is nulled.
            (
                json!({"ready": true}),
                json!({"ready": false, "appliedInputs": "x"}),
                &[],
                json!({"status": {"ready": true, "appliedInputs": null}}),
            ),
            // Another writer's fields are never named: not the old value, not a null.
            (
                json!({"ready": true, "upgradeHookTarget": "v2"}),
                json!({"ready": false, "upgradeHookTarget": "v2", "upgradeHookSince": "t"}),
                &hook,
                json!({"status": {"ready": true}}),
            ),
        ];
        for (status, written, foreign, want) in cases {
            assert_eq!(
                status_patch(status.clone(), &written, foreign),
                want,
                "{status} over {written}"
            );
        }
    }
}
