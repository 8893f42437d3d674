//! A ClusterStack's source with its credentials: the token, or the OCI username and password,
//! read from the Secret the stack names (else the operator's own), for the fetches of every
//! controller that reads a release.

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Api;

use super::SourceConfigError;
use crate::api::{ClusterStack, StackSource};
use crate::context::Context;
use crate::sources::Resolved;

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

pub async fn read_secret(
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
