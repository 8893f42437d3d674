//! Who signed the charts a release's charts depend on, checked before anything is rendered
//! when a policy asks (the stack's `spec.dependencyPolicy`, or the operator's
//! `--dependency-policy`, `--keyring`, `--verify-key`): the release is compiled — its
//! dependencies resolved and checked — under the policy. A refused dependency gives
//! `SourceVerified=False` with the refusal's reason and a message naming the chart, the
//! dependency and its repository, a Warning event, and the pass ends (nothing of the release is
//! applied; what was applied before stays). A pass records each dependency's signer in
//! `status.dependencies`; the compile is kept by digest and policy, so later passes check
//! nothing again.

use std::ops::ControlFlow;
use std::sync::Arc;

use kube::runtime::controller::Action;

use super::super::pipeline::dependency_policy::{self, DependencyPolicy};
use super::super::pipeline::{self, ReleaseFiles};
use super::super::progress::{Because, Tracked};
use super::super::{Cause, Error};
use super::RENDERED;
use super::verify::{self, SOURCE_VERIFIED};
use crate::api::{ClusterStack, SignedDependency};
use crate::context::Context;
use capstan_source::charts::{Outcome, Verdict};
use capstan_stack::render::CompiledRelease;

type Progress<'a> = super::super::progress::Progress<'a, crate::api::ClusterStackRelease>;

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

/// Checks the dependencies of release `files` of `stack`: `Continue` with the stack's policy
/// (what the render compiles under) when they passed or no policy asks, `Break` when one was
/// refused (recorded).
pub async fn check(
    progress: &mut Progress<'_>,
    stack: &ClusterStack,
    files: &ReleaseFiles,
) -> Result<ControlFlow<Action, DependencyPolicy>, Error> {
    let ctx = progress.ctx;
    if !has_policy(stack, ctx) {
        progress.status.dependencies.clear();
        return Ok(ControlFlow::Continue(DependencyPolicy::default()));
    }
    let policy = dependency_policy::of(stack, ctx)
        .await
        .because("VerifyPolicyInvalid");
    let policy = progress.check(SOURCE_VERIFIED, policy).await?;
    let compiled = match compile_under(ctx, files, &policy).await {
        Ok(compiled) => compiled,
        Err(Cause::DependencyRefused { reason, error }) => {
            progress.status.dependencies.clear();
            let action = verify::record_refusal(progress, reason, error.to_string()).await?;
            return Ok(ControlFlow::Break(action));
        }
        Err(cause) => return Err(progress.fail(RENDERED, "CompileFailed", cause).await),
    };
    let signed = signed_dependencies(&compiled.signed);
    let passed = passed_message(&signed);
    progress.status.dependencies = signed;
    // After the release's own verdict of this pass, when its stack verifies releases too.
    let message = match crate::api::conditions::find(&progress.status.conditions, SOURCE_VERIFIED) {
        Some(release) if verify::has_policy(stack, ctx) => format!("{}; {passed}", release.message),
        _ => passed,
    };
    progress.condition(SOURCE_VERIFIED, true, "Verified", message);
    Ok(ControlFlow::Continue(policy))
}

/// The release `files` compiled under `policy` with the operator's repositories.
async fn compile_under(
    ctx: &crate::context::Context,
    files: &ReleaseFiles,
    policy: &DependencyPolicy,
) -> Result<crate::compiled::Compiled, Cause> {
    let repositories = &ctx.settings.chart_repositories;
    pipeline::compile(&ctx.sources, repositories, &ctx.metrics, files, policy).await
}

/// The release `files` of `stack` compiled for a ClusterAddon (or any object whose pass
/// renders it), under the stack's dependency policy: a refused dependency gives the object
/// `SourceVerified=False` and a Warning event and ends the pass; another compile failure fails
/// `Rendered` (`CompileFailed`). A pass under a policy sets `SourceVerified=True`.
pub async fn compile_for<K: Tracked>(
    progress: &mut super::super::progress::Progress<'_, K>,
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
            let action = verify::record_refusal(progress, reason, error.to_string()).await?;
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
