//! The controllers: one file per kind, on top of `stack/`, `source/` and `apply/`, plus what
//! they share (errors, backoff, owner references, a stack's source with its credentials).

pub mod cluster;
pub mod cluster_addon;
pub mod cluster_stack;
pub mod cluster_stack_release;
pub mod error;
pub mod pipeline;
pub mod progress;
pub mod provider;
pub mod report;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;

use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::api::Api;
use kube::{Resource, ResourceExt};

use super::api::{ClusterStack, StackSource};
use super::context::Context;
use super::sources::Resolved;
use capstan_stack::name::{KubernetesVersion, StackName};
pub use error::{Cause, Error, Invalid, SourceConfigError, TERMINAL_RETRY};

/// One reconcile of `object` through kube's finalizer helper: `apply` while it lives,
/// `cleanup` once it is being deleted. Counts the reconcile in the metrics of `controller` and
/// reports a new error as a Warning event (a success clears it and the backoff of `key`).
pub async fn with_finalizer<K, A, AF, C, CF>(
    object: Arc<K>,
    ctx: &Context,
    names: (&str, &str),
    key: String,
    apply: A,
    cleanup: C,
) -> Result<kube::runtime::controller::Action, Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    A: FnOnce(Arc<K>) -> AF,
    AF: Future<Output = Result<kube::runtime::controller::Action, Error>>,
    C: FnOnce(Arc<K>) -> CF,
    CF: Future<Output = Result<kube::runtime::controller::Action, Error>>,
{
    use kube::runtime::finalizer::{Event, finalizer};
    let (finalizer_name, controller) = names;
    let started = std::time::Instant::now();
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &object.namespace().unwrap_or_default());
    let result = finalizer(&api, finalizer_name, object.clone(), |event| async move {
        match event {
            Event::Apply(object) => apply(object).await,
            Event::Cleanup(object) => cleanup(object).await,
        }
    })
    .await
    .or_else(finalizer_outcome);
    ctx.metrics.reconciled(
        controller,
        started.elapsed(),
        result.as_ref().err().map(Error::metric_label),
    );
    let reference = object_ref(object.as_ref());
    match &result {
        Ok(_) => {
            ctx.succeeded(&key);
            ctx.error_event(&key, &reference, "ReconcileFailed", None).await;
        }
        Err(e) => {
            ctx.error_event(&key, &reference, "ReconcileFailed", Some(&e.to_string()))
                .await
        }
    }
    result
}

/// The outcome of a reconcile through kube's finalizer helper: the step's own error, or the
/// helper's. An object that vanished while its finalizer was being removed is done.
pub fn finalizer_outcome(
    error: kube::runtime::finalizer::Error<Error>,
) -> Result<kube::runtime::controller::Action, Error> {
    use kube::runtime::finalizer::Error as Helper;
    match error {
        Helper::CleanupFailed(Error::Waiting { retry, .. }) => {
            Ok(kube::runtime::controller::Action::requeue(retry))
        }
        Helper::ApplyFailed(e) | Helper::CleanupFailed(e) => Err(e),
        Helper::RemoveFinalizer(e) if error::is_not_found(&e) => {
            Ok(kube::runtime::controller::Action::await_change())
        }
        other => Err(Error::Finalizer(Box::new(other))),
    }
}

/// First retry delay after a failure; doubles per failure in a row.
const BACKOFF_FIRST: Duration = Duration::from_secs(2);
/// Longest retry delay.
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// The requeue after a failed reconcile of `key`: a terminal error waits for a change (or
/// [`TERMINAL_RETRY`]); any other is retried with capped exponential backoff.
pub fn error_policy(ctx: &Context, key: &str, error: &Error) -> kube::runtime::controller::Action {
    tracing::warn!(object = %key, %error, terminal = error.is_terminal(), "reconcile failed");
    if error.is_terminal() {
        return kube::runtime::controller::Action::requeue(TERMINAL_RETRY);
    }
    kube::runtime::controller::Action::requeue(backoff(ctx, key))
}

/// The delay before retrying `key` after one more failure.
pub fn backoff(ctx: &Context, key: &str) -> Duration {
    let failures = ctx.failed(key);
    BACKOFF_FIRST
        .saturating_mul(1u32 << failures.saturating_sub(1).min(16))
        .min(BACKOFF_MAX)
}

/// Time left until the next drift check of an object last checked at `last`, or `None` when
/// it is due (or was never checked).
pub fn drift_wait(last: Option<&Time>, ctx: &Context) -> Option<Duration> {
    let elapsed = now().0.duration_since(last?.0);
    let elapsed = Duration::try_from(elapsed).unwrap_or(Duration::ZERO);
    ctx.settings
        .drift_interval
        .checked_sub(elapsed)
        .filter(|d| !d.is_zero())
}

pub fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

/// A reference to `object` for events.
pub fn object_ref<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    object.object_ref(&())
}

/// An owner reference to `object` (as controller, so `kubectl` shows who made the owned one).
pub fn owner_reference<K: Resource<DynamicType = ()>>(object: &K) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).to_string(),
        kind: K::kind(&()).to_string(),
        name: object.name_any(),
        uid: object.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The stack a ClusterStack follows, when its fields make a stack name.
pub fn stack_name_of(stack: &ClusterStack) -> Option<StackName> {
    let kubernetes = KubernetesVersion::parse(&stack.spec.kubernetes_version).ok()?;
    StackName::new(&stack.spec.provider, &stack.spec.name, kubernetes).ok()
}

/// The source of `stack` with the token of its Secret read.
pub async fn resolve_source(stack: &ClusterStack, ctx: &Context) -> Result<Resolved, SourceConfigError> {
    let namespace = stack.namespace().unwrap_or_default();
    let Some(source) = stack
        .spec
        .source
        .as_ref()
        .or(ctx.settings.default_source.as_ref())
    else {
        return Err(SourceConfigError::NoSource {
            namespace,
            name: stack.name_any(),
        });
    };
    if let StackSource::Oci(oci) = source {
        return resolve_oci(oci, &namespace, ctx).await;
    }
    let secret_ref = match source {
        StackSource::Github(gh) => gh.secret_ref.as_ref(),
        StackSource::Git(git) => git.secret_ref.as_ref(),
        StackSource::Oci(_) | StackSource::Local(_) => None,
    };
    let token = match secret_ref {
        None => match source {
            StackSource::Github(_) => ctx.settings.github_token.clone(),
            _ => None,
        },
        Some(reference) => {
            let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
            let secret = read_secret(&secrets, &namespace, &reference.name).await?;
            let token = secret
                .data
                .as_ref()
                .and_then(|d| d.get("token").or_else(|| d.get("password")))
                .map(|b| String::from_utf8_lossy(&b.0).trim().to_string())
                .filter(|t| !t.is_empty())
                .ok_or_else(|| SourceConfigError::NoToken {
                    namespace: namespace.clone(),
                    name: reference.name.clone(),
                })?;
            Some(token)
        }
    };
    Resolved::of(source, &ctx.settings.github_url, token).map_err(SourceConfigError::OciRepository)
}

async fn read_secret(
    secrets: &Api<Secret>,
    namespace: &str,
    name: &str,
) -> Result<Secret, SourceConfigError> {
    secrets
        .get(name)
        .await
        .map_err(|source| SourceConfigError::ReadSecret {
            namespace: namespace.to_string(),
            name: name.to_string(),
            source,
        })
}

/// An OCI source with its credentials: the Secret's `username` and `password`, or its
/// `token`; without a Secret, the operator's.
async fn resolve_oci(
    oci: &crate::api::OciSource,
    namespace: &str,
    ctx: &Context,
) -> Result<Resolved, SourceConfigError> {
    use capstan_source::oci::{Credentials, OciRepo};
    let repo = OciRepo::parse(&oci.repository).map_err(SourceConfigError::OciRepository)?;
    let credentials = match &oci.secret_ref {
        None => ctx.settings.oci_credentials.clone(),
        Some(reference) => {
            let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
            let secret = read_secret(&secrets, namespace, &reference.name).await?;
            let field = |key: &str| {
                secret
                    .data
                    .as_ref()
                    .and_then(|d| d.get(key))
                    .map(|b| String::from_utf8_lossy(&b.0).trim().to_string())
                    .filter(|v| !v.is_empty())
            };
            let credentials = Credentials::from_parts(field("username"), field("password"), field("token"));
            if credentials == Credentials::Anonymous {
                return Err(SourceConfigError::NoCredentials {
                    namespace: namespace.to_string(),
                    name: reference.name.clone(),
                });
            }
            credentials
        }
    };
    Ok(Resolved::Oci {
        repo,
        credentials,
        insecure: ctx.settings.oci_insecure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::finalizer::Error as Helper;

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
}
