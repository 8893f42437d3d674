//! What the ClusterStackRelease and ClusterAddon controllers (and the rollout's pre-flight)
//! share about the chart dependencies of a release: whether a policy asks for their signers at
//! all, the compile under that policy, what a pass records of the verdicts, and the refusal
//! (`SourceVerified=False`, a Warning event, the pass ends). The release's own check, which
//! also keeps `status.dependencies`, is the ClusterStackRelease controller's.

use std::ops::ControlFlow;
use std::sync::Arc;

use kube::runtime::controller::Action;

use super::super::progress::{Because, Progress, Tracked};
use super::super::{Cause, Error, drift_requeue, object_ref};
use super::dependency_policy::{self, DependencyPolicy};
use super::{RENDERED, ReleaseFiles};
use crate::api::{ClusterStack, SignedDependency};
use crate::context::Context;
use capstan_source::charts::{Outcome, Verdict};
use capstan_stack::render::CompiledRelease;

/// Condition: the release's signatures (its own, and its charts' dependencies') passed its
/// stack's policy.
pub const SOURCE_VERIFIED: &str = "SourceVerified";

/// Whether the dependencies of `stack`'s releases are checked at all.
pub fn has_policy(stack: &ClusterStack, ctx: &Context) -> bool {
    let operator = &ctx.settings.chart_repositories;
    !stack.spec.dependency_policy.is_empty()
        || operator.keyring.is_some()
        || !operator.cosign.is_empty()
        || !operator.repository_policies.is_empty()
}

/// The status entries of the signed dependencies among `verdicts`.
pub fn signed_dependencies(verdicts: &[Verdict]) -> Vec<SignedDependency> {
    verdicts
        .iter()
        .filter_map(|v| match &v.outcome {
            Outcome::Signed(signer) => Some(SignedDependency {
                chart: v.chart.clone(),
                name: v.dependency.clone(),
                version: v.version.clone(),
                repository: v.repository.clone(),
                method: signer.method.clone(),
                signer: signer.signer.clone(),
            }),
            Outcome::Refused { .. } => None,
        })
        .collect()
}

/// The `SourceVerified` message of dependencies that passed.
pub fn passed_message(signed: &[SignedDependency]) -> String {
    if signed.is_empty() {
        return "no chart dependency of the release is covered by a signature policy".into();
    }
    let each: Vec<String> = signed
        .iter()
        .map(|d| format!("{} {} ({} by {})", d.name, d.version, d.method, d.signer))
        .collect();
    format!("chart dependencies verified: {}", each.join(", "))
}

/// The release `files` compiled under `policy` with the operator's repositories.
pub async fn compile_under(
    ctx: &Context,
    files: &ReleaseFiles,
    policy: &DependencyPolicy,
) -> Result<crate::compiled::Compiled, Cause> {
    let repositories = &ctx.settings.chart_repositories;
    super::compile(&ctx.sources, repositories, &ctx.metrics, files, policy).await
}

/// The release `files` of `stack` compiled for a ClusterAddon (or any object whose pass
/// renders it), under the stack's dependency policy: a refused dependency gives the object
/// `SourceVerified=False` and a Warning event and ends the pass; another compile failure fails
/// `Rendered` (`CompileFailed`). A pass under a policy sets `SourceVerified=True`.
pub async fn compile_for<K: Tracked>(
    progress: &mut Progress<'_, K>,
    stack: &ClusterStack,
    files: &ReleaseFiles,
) -> Result<ControlFlow<Action, Arc<CompiledRelease>>, Error> {
    let ctx = progress.ctx;
    let checked = has_policy(stack, ctx);
    let policy = match checked {
        true => dependency_policy::of(stack, ctx)
            .await
            .because("VerifyPolicyInvalid"),
        false => Ok(DependencyPolicy::default()),
    };
    let policy = progress.check(SOURCE_VERIFIED, policy).await?;
    let compiled = match compile_under(ctx, files, &policy).await {
        Ok(compiled) => compiled,
        Err(Cause::DependencyRefused { reason, error }) => {
            let action = record_refusal(progress, reason, error.to_string()).await?;
            return Ok(ControlFlow::Break(action));
        }
        Err(cause) => return Err(progress.fail(RENDERED, "CompileFailed", cause).await),
    };
    if checked {
        let passed = passed_message(&signed_dependencies(&compiled.signed));
        progress.condition(SOURCE_VERIFIED, true, "Verified", passed);
    } else {
        K::conditions_mut(&mut progress.status).retain(|c| c.type_ != SOURCE_VERIFIED);
    }
    Ok(ControlFlow::Continue(compiled.release))
}

/// Records `SourceVerified=False` with `reason` on the object of `progress` (a release, or a
/// ClusterAddon whose release's dependencies were refused) and a Warning event when the
/// verdict is new; the pass ends, and the object is looked at again after the drift interval.
/// The caller counts the metric.
pub async fn record_refusal<K: Tracked>(
    progress: &mut Progress<'_, K>,
    reason: &'static str,
    message: String,
) -> Result<Action, Error> {
    let ctx = progress.ctx;
    let fresh = progress
        .object
        .status_of()
        .cloned()
        .and_then(|mut status| {
            crate::api::conditions::find(K::conditions_mut(&mut status), SOURCE_VERIFIED).cloned()
        })
        .is_none_or(|c| c.reason != reason || c.message != message);
    progress.condition(SOURCE_VERIFIED, false, reason, message.clone());
    progress.save().await?;
    if fresh {
        ctx.event(&object_ref(progress.object), true, reason, "Verify", message)
            .await;
    }
    Ok(Action::requeue(drift_requeue(&ctx.settings)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_source::charts::Signer;

    #[test]
    fn signed_verdicts_become_status_entries_and_the_message() {
        let verdict = |dependency: &str, outcome: Outcome| Verdict {
            chart: "example-cluster-class".into(),
            dependency: dependency.into(),
            version: "0.1.0".into(),
            repository: "https://charts.example/signed".into(),
            outcome,
        };
        let signed = |method: &str, signer: &str| {
            Outcome::Signed(Signer {
                method: method.into(),
                signer: signer.into(),
            })
        };
        let verdicts = [
            verdict("demo", signed("provenance", "2F9C (Signer <s@x>)")),
            verdict(
                "bad",
                Outcome::Refused {
                    reason: "WrongKey",
                    message: "no".into(),
                },
            ),
            verdict("oci", signed("cosign", "sha256:ab")),
        ];
        let entries = signed_dependencies(&verdicts);
        assert_eq!(
            entries,
            [
                SignedDependency {
                    chart: "example-cluster-class".into(),
                    name: "demo".into(),
                    version: "0.1.0".into(),
                    repository: "https://charts.example/signed".into(),
                    method: "provenance".into(),
                    signer: "2F9C (Signer <s@x>)".into(),
                },
                SignedDependency {
                    chart: "example-cluster-class".into(),
                    name: "oci".into(),
                    version: "0.1.0".into(),
                    repository: "https://charts.example/signed".into(),
                    method: "cosign".into(),
                    signer: "sha256:ab".into(),
                },
            ]
        );
        assert_eq!(
            passed_message(&entries),
            "chart dependencies verified: demo 0.1.0 (provenance by 2F9C (Signer <s@x>)), oci 0.1.0 (cosign by sha256:ab)"
        );
        assert_eq!(
            passed_message(&[]),
            "no chart dependency of the release is covered by a signature policy"
        );
    }
}
