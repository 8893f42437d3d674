//! The status of one object as a reconcile builds it: conditions set step by step, the `Ready`
//! summary and `ready` recomputed on every save, written (merge patch on the status
//! subresource) only when something changed, with an event when the object becomes ready.
//! Shared by the ClusterStackRelease and ClusterAddon controllers.

use k8s_openapi::NamespaceResourceScope;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Error, now, object_ref};
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
    type Status: Clone + PartialEq + Default + Serialize;
    fn status_of(&self) -> Option<&Self::Status>;
    fn conditions_mut(status: &mut Self::Status) -> &mut Vec<Condition>;
    fn ready(status: &Self::Status) -> bool;
    fn set_ready(status: &mut Self::Status, ready: bool);
    /// The note of the event sent when the object becomes ready.
    fn ready_note(&self, status: &Self::Status) -> String;
}

/// How soon a waiting step is looked at again.
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Progress<'a, K: Tracked> {
    pub object: &'a K,
    pub ctx: &'a Context,
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
            written: status.clone(),
            status,
        }
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
        let became_ready = ready && !K::ready(&self.written);
        let key = format!(
            "{} {}/{}",
            K::kind(&()),
            self.object.namespace().unwrap_or_default(),
            self.object.name_any()
        );
        let encode =
            |status: &K::Status| serde_json::to_value(status).map_err(|e| Error::Kube(format!("{key}: {e}")));
        let mut json = encode(&self.status)?;
        // A merge patch keeps what it does not name: fields that went away are nulled.
        if let (Some(new), serde_json::Value::Object(old)) = (json.as_object_mut(), encode(&self.written)?) {
            for field in old.keys() {
                new.entry(field.clone()).or_insert(serde_json::Value::Null);
            }
        }
        let api: Api<K> = Api::namespaced(
            self.ctx.client.clone(),
            &self.object.namespace().unwrap_or_default(),
        );
        api.patch_status(
            &self.object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({ "status": json })),
        )
        .await
        .map_err(|e| Error::Kube(format!("writing the status of {key}: {e}")))?;
        self.written = self.status.clone();
        if became_ready {
            let note = self.object.ready_note(&self.status);
            self.ctx
                .event(&object_ref(self.object), false, "Ready", "Apply", note)
                .await;
        }
        Ok(())
    }

    /// Records a failed step and returns its error.
    pub async fn fail(&mut self, step: &str, reason: &str, message: String) -> Error {
        self.condition(step, false, reason, message.clone());
        if let Err(e) = self.save().await {
            return e;
        }
        Error::Step {
            step: step.to_string(),
            message,
        }
    }

    /// A step waits for something outside (a gate, a condition): recorded, and looked at
    /// again after [`WAIT`] (not an error).
    /// A wait that begins (or whose reason or message changed) is an event.
    pub async fn wait(&mut self, step: &str, reason: &str, message: String) -> Result<Action, Error> {
        let mut written = self.written.clone();
        let fresh = conditions::find(K::conditions_mut(&mut written), step)
            .is_none_or(|c| c.status != ConditionStatus::False || c.reason != reason || c.message != message);
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
