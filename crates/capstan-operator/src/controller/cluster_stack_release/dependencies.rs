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

use kube::runtime::controller::Action;

use super::super::pipeline::dependencies::{
    SOURCE_VERIFIED, compile_under, has_policy, passed_message, record_refusal, signed_dependencies,
};
use super::super::pipeline::dependency_policy::{self, DependencyPolicy};
use super::super::pipeline::{RENDERED, ReleaseFiles};
use super::super::progress::Because;
use super::super::{Cause, Error};
use super::verify;
use crate::api::ClusterStack;

type Progress<'a> = super::super::progress::Progress<'a, crate::api::ClusterStackRelease>;

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
            let action = record_refusal(progress, reason, error.to_string()).await?;
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
