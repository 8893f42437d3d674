//! The controllers: one file per kind, on top of `stack/`, `source/` and `apply/`, plus what
//! they share (errors, backoff, owner references, a stack's source with its credentials in
//! [`credentials`]).

pub mod clock;
pub mod cluster;
pub mod cluster_addon;
pub mod cluster_stack;
pub mod cluster_stack_release;
mod credentials;
pub mod error;
pub mod failures;
pub mod pipeline;
pub mod progress;
pub mod provider;
pub mod references;
pub mod release_runner;
pub mod report;
pub mod rollout;
pub mod wake_ups;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use super::api::ClusterStack;
use super::context::Context;
use super::settings::Settings;
use capstan_stack::name::{KubernetesVersion, StackName};
pub use clock::now;
use credentials::read_secret;
pub use credentials::resolve_source;
pub use error::{Cause, Error, SourceConfigError, TERMINAL_RETRY};
use failures::Failures;
pub use references::{object_ref, owner_reference};

/// What every controller's reconciles are given: the shared [`Context`] and the controller's
/// own failures; each controller's state struct adds what only it keeps.
///
/// Every controller module has the same shape, written out (no macros): its state struct
/// implementing this trait, `reconcile` and `error_policy` (the kinds with a finalizer
/// implement [`Finalized`] and reconcile through [`reconcile`]), and `controller(&Wiring)`
/// starting it.
pub trait Reconciler: Send + Sync + 'static {
    fn shared(&self) -> &Context;
    fn failures(&self) -> &Failures;
}

/// A kind of the operator's API reconciled through a finalizer: `apply` while an object
/// lives, `cleanup` once it is being deleted, given its controller's state.
pub trait Finalized: progress::Tracked + Send + Sync + 'static {
    const FINALIZER: &'static str;
    type Controller: Reconciler;
    fn apply(&self, controller: &Self::Controller) -> impl Future<Output = Result<Action, Error>> + Send;
    fn cleanup(&self, controller: &Self::Controller) -> impl Future<Output = Result<Action, Error>> + Send;
}

/// One reconcile of `object` through kube's finalizer helper. Counts the reconcile in the
/// metrics of its controller and reports a new error as a Warning event (a success clears it
/// and the object's backoff).
pub async fn reconcile<K: Finalized>(
    object: Arc<K>,
    controller: Arc<K::Controller>,
) -> Result<Action, Error> {
    use kube::runtime::finalizer::{Event, finalizer};
    let controller: &K::Controller = &controller;
    let ctx = controller.shared();
    let started = std::time::Instant::now();
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &object.namespace().unwrap_or_default());
    let result = finalizer(&api, K::FINALIZER, object.clone(), |event| async move {
        match event {
            Event::Apply(object) => object.apply(controller).await,
            Event::Cleanup(object) => object.cleanup(controller).await,
        }
    })
    .await
    .or_else(finalizer_outcome);
    tracing::debug!(object = %key_of(object.as_ref()), elapsed = ?started.elapsed(), action = ?result.as_ref().ok(), "pass ended");
    ctx.metrics.reconciled(
        K::CONTROLLER,
        started.elapsed(),
        result.as_ref().err().map(Error::metric_label),
    );
    reconciled(controller, object.as_ref(), result.as_ref().err()).await;
    result
}

/// After a reconcile of `object`: a success forgets its failures; an error not reported last
/// for it becomes a Warning event.
pub async fn reconciled<K: Resource<DynamicType = ()>>(
    controller: &impl Reconciler,
    object: &K,
    error: Option<&Error>,
) {
    let key = key_of(object);
    let failures = controller.failures();
    if error.is_none() {
        failures.succeeded(&key);
    }
    let text = error.map(Error::to_string);
    if let (true, Some(text)) = (failures.is_new_error(&key, text.as_deref()), text) {
        controller
            .shared()
            .event(&object_ref(object), true, "ReconcileFailed", "Reconcile", text)
            .await;
    }
}

/// The key of `object` in backoffs, error events and logs: `Kind/namespace/name`.
pub fn key_of<K: Resource<DynamicType = ()>>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}

/// The requeue after a failed reconcile of `object` (see [`requeue_after_error`]).
pub fn error_policy<K: Resource<DynamicType = ()>, C: Reconciler>(
    object: Arc<K>,
    error: &Error,
    controller: Arc<C>,
) -> Action {
    requeue_after_error(controller.failures(), &key_of(object.as_ref()), error)
}

/// How soon a pass whose finalizer patch met a newer object than its store's runs again.
const STALE_FINALIZER_RETRY: Duration = Duration::from_secs(1);

/// The outcome of a reconcile through kube's finalizer helper: the step's own error, or the
/// helper's. An object that vanished while its finalizer was being removed is done. A
/// finalizer patch refused as invalid (422) or conflicting (409) tested the finalizer list of
/// the store's copy, a moment behind the object — a pass woken again before the store had its
/// own first patch (16 ClusterAddons of 3,000 in the fleet benchmark), or an object being
/// deleted: not a failure to report, the pass looks again at once with the newer copy.
pub fn finalizer_outcome(
    error: kube::runtime::finalizer::Error<Error>,
) -> Result<kube::runtime::controller::Action, Error> {
    use crate::kube_error::{is_conflict, is_invalid};
    use kube::runtime::finalizer::Error as Helper;
    let stale = |e: &kube::Error| is_conflict(e) || is_invalid(e);
    match error {
        Helper::CleanupFailed(Error::Waiting { retry, .. }) => {
            Ok(kube::runtime::controller::Action::requeue(retry))
        }
        Helper::ApplyFailed(e) | Helper::CleanupFailed(e) => Err(e),
        Helper::RemoveFinalizer(e) if crate::kube_error::is_not_found(&e) => {
            Ok(kube::runtime::controller::Action::await_change())
        }
        Helper::AddFinalizer(e) | Helper::RemoveFinalizer(e) if stale(&e) => {
            tracing::debug!(error = %e, "finalizer patch against a newer object: looking again");
            Ok(kube::runtime::controller::Action::requeue(crate::jitter::jitter(
                STALE_FINALIZER_RETRY,
            )))
        }
        other => Err(Error::Finalizer(Box::new(other))),
    }
}

/// First retry delay after a failure; doubles per failure in a row.
const BACKOFF_FIRST: Duration = Duration::from_secs(2);
/// Longest retry delay.
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// The requeue after a failed reconcile of `key`: a terminal error waits for a change (or
/// [`TERMINAL_RETRY`]); any other is retried with capped exponential backoff. Both jittered.
pub fn requeue_after_error(failures: &Failures, key: &str, error: &Error) -> Action {
    let terminal = error.is_terminal();
    tracing::warn!(object = %key, %error, terminal, kind = error.metric_label(), "reconcile failed");
    // A terminal error does not climb the backoff ladder: the next retryable one starts low.
    let failures = if terminal { 0 } else { failures.failed(key) };
    Action::requeue(crate::jitter::jitter(retry_delay(terminal, failures)))
}

/// The delay before the next attempt after `failures` retryable failures in a row, or after
/// a terminal error.
pub fn retry_delay(terminal: bool, failures: u32) -> Duration {
    if terminal {
        return TERMINAL_RETRY;
    }
    BACKOFF_FIRST
        .saturating_mul(1u32 << failures.saturating_sub(1).min(16))
        .min(BACKOFF_MAX)
}

/// The delay until the next drift pass after a full one: the drift interval, jittered so
/// objects applied together do not come due together.
pub fn drift_requeue(settings: &Settings) -> Duration {
    crate::jitter::jitter(settings.drift_interval)
}

/// Time left until the next drift check of an object last checked at `last`, or `None` when
/// it is due (or was never checked).
pub fn drift_wait(last: Option<&Time>, settings: &Settings) -> Option<Duration> {
    let elapsed = now().0.duration_since(last?.0);
    let elapsed = Duration::try_from(elapsed).unwrap_or(Duration::ZERO);
    settings
        .drift_interval
        .checked_sub(elapsed)
        .filter(|d| !d.is_zero())
}

/// The stack a ClusterStack follows, when its fields make a stack name.
pub fn stack_name_of(stack: &ClusterStack) -> Option<StackName> {
    let kubernetes = KubernetesVersion::parse(&stack.spec.kubernetes_version).ok()?;
    StackName::new(&stack.spec.provider, &stack.spec.name, kubernetes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::finalizer::Error as Helper;

    #[test]
    fn retryable_errors_back_off_and_terminal_ones_wait_long() {
        let cases = [
            (false, 1, 2),
            (false, 2, 4),
            (false, 3, 8),
            (false, 8, 256),
            (false, 9, 300),
            (false, 40, 300),
            (true, 0, 600),
            (true, 1, 600),
        ];
        for (terminal, failures, seconds) in cases {
            assert_eq!(
                retry_delay(terminal, failures),
                Duration::from_secs(seconds),
                "terminal {terminal}, {failures} failure(s)"
            );
        }
    }

    #[test]
    fn a_waiting_cleanup_keeps_the_finalizer_and_requeues() {
        let retry = Duration::from_secs(7);
        let waiting = Error::Waiting {
            reason: "in use".into(),
            retry,
        };
        assert_eq!(
            finalizer_outcome(Helper::CleanupFailed(waiting)).expect("not a failure"),
            kube::runtime::controller::Action::requeue(retry)
        );
        let failed = Error::step("Applied", "ApplyFailed", Cause::Objects("boom".into()));
        assert!(finalizer_outcome(Helper::CleanupFailed(failed)).is_err());
    }

    #[test]
    fn a_finalizer_patch_against_a_newer_object_looks_again_without_failing() {
        let api = |code: u16| {
            kube::Error::Api(
                kube::core::Status::failure("the server rejected our request", "Invalid")
                    .with_code(code)
                    .boxed(),
            )
        };
        // (error, whether the pass looks again without an error)
        let cases = [
            (Helper::AddFinalizer(api(422)), true),
            (Helper::AddFinalizer(api(409)), true),
            (Helper::RemoveFinalizer(api(422)), true),
            (Helper::RemoveFinalizer(api(404)), true),
            (Helper::AddFinalizer(api(500)), false),
            (Helper::AddFinalizer(api(403)), false),
            (Helper::RemoveFinalizer(api(503)), false),
        ];
        for (error, again) in cases {
            let what = format!("{error:?}");
            let outcome = finalizer_outcome(error);
            assert_eq!(outcome.is_ok(), again, "{what}: {outcome:?}");
            if let Ok(action) = outcome
                && !what.contains("404")
            {
                assert_ne!(
                    action,
                    kube::runtime::controller::Action::await_change(),
                    "{what}"
                );
            }
        }
    }
}
