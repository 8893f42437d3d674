//! The controllers: one file per kind, on top of `stack/`, `source/` and `apply/`, plus what
//! they share (errors, backoff, owner references, a stack's source with its credentials).

pub mod cluster;
pub mod cluster_addon;
pub mod cluster_stack;
pub mod cluster_stack_release;
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

/// Why a reconcile failed; the text is what conditions and events show.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{step}: {message}")]
    Step { step: String, message: String },
    #[error("{0}")]
    Kube(String),
    /// A deletion that must wait (e.g. a class still in use): the finalizer stays and the
    /// object is looked at again after `retry`. Returned as an error because kube's finalizer
    /// helper removes the finalizer after any successful cleanup.
    #[error("{reason}")]
    Waiting { reason: String, retry: Duration },
}

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
    ctx.metrics
        .reconciled(controller, started.elapsed(), result.is_ok());
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
        Helper::RemoveFinalizer(kube::Error::Api(e)) if e.code == 404 => {
            Ok(kube::runtime::controller::Action::await_change())
        }
        other => Err(Error::Kube(other.to_string())),
    }
}

/// First retry delay after a failure; doubles per failure in a row.
const BACKOFF_FIRST: Duration = Duration::from_secs(2);
/// Longest retry delay.
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// The delay before retrying `key` after one more failure (jittered).
pub fn backoff(ctx: &Context, key: &str) -> Duration {
    let failures = ctx.failed(key);
    crate::jitter::jitter(
        BACKOFF_FIRST
            .saturating_mul(1u32 << failures.saturating_sub(1).min(16))
            .min(BACKOFF_MAX),
    )
}

/// The delay until the next drift pass after a full one: the drift interval, jittered so
/// objects applied together do not come due together.
pub fn drift_requeue(ctx: &Context) -> Duration {
    crate::jitter::jitter(ctx.settings.drift_interval)
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
pub async fn resolve_source(stack: &ClusterStack, ctx: &Context) -> Result<Resolved, String> {
    let namespace = stack.namespace().unwrap_or_default();
    let Some(source) = stack
        .spec
        .source
        .as_ref()
        .or(ctx.settings.default_source.as_ref())
    else {
        return Err(format!(
            "ClusterStack {namespace}/{} has no spec.source and the operator has no default source: set spec.source.github, .oci, .git or .local, or start the operator with --source oci (OCI_REGISTRY, OCI_REPOSITORY) or with GIT_ORG_NAME and GIT_REPOSITORY_NAME (--git-org-name, --git-repository-name)",
            stack.name_any()
        ));
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
            let secret = secrets
                .get(&reference.name)
                .await
                .map_err(|e| format!("reading Secret {namespace}/{}: {e}", reference.name))?;
            let token = secret
                .data
                .as_ref()
                .and_then(|d| d.get("token").or_else(|| d.get("password")))
                .map(|b| String::from_utf8_lossy(&b.0).trim().to_string())
                .filter(|t| !t.is_empty())
                .ok_or_else(|| format!("Secret {namespace}/{} has no data.token", reference.name))?;
            Some(token)
        }
    };
    Resolved::of(source, &ctx.settings.github_url, token)
}

/// An OCI source with its credentials: the Secret's `username` and `password`, or its
/// `token`; without a Secret, the operator's.
async fn resolve_oci(
    oci: &crate::api::OciSource,
    namespace: &str,
    ctx: &Context,
) -> Result<Resolved, String> {
    use capstan_source::oci::{Credentials, OciRepo};
    let repo = OciRepo::parse(&oci.repository).map_err(|e| format!("spec.source.oci.repository: {e}"))?;
    let credentials = match &oci.secret_ref {
        None => ctx.settings.oci_credentials.clone(),
        Some(reference) => {
            let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
            let secret = secrets
                .get(&reference.name)
                .await
                .map_err(|e| format!("reading Secret {namespace}/{}: {e}", reference.name))?;
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
                return Err(format!(
                    "Secret {namespace}/{} has neither data.username (with data.password) nor data.token",
                    reference.name
                ));
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
        let failed = Error::Kube("boom".into());
        assert!(finalizer_outcome(Helper::CleanupFailed(failed)).is_err());
    }
}
