//! The provider's part of a release: when a ClusterStackRelease's `spec.providerRef` names a
//! `<X>ClusterStackReleaseTemplate`, its `spec.template` is cloned into an
//! `<X>ClusterStackRelease` named like the release and owned by it, and the release waits for
//! that object's `status.ready` (the provider uploads node images and the like). A
//! `providerRef` that names the `<X>ClusterStackRelease` itself (as the cluster-stack operator
//! writes it) is only waited for.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::discovery::Scope;
use kube::{Client, ResourceExt};

use super::references::owner_reference;
use crate::api::ClusterStackRelease;
use crate::kube_error::{is_conflict, is_not_found};
use capstan_apply::discovery::Discovery;

/// The management cluster the provider's objects live in.
#[derive(Clone, Copy)]
pub struct Cluster<'a> {
    pub client: &'a Client,
    pub discovery: &'a Discovery,
}

/// What [`ensure`] did and found.
pub struct Ensured {
    pub state: State,
    /// The note of a `ProviderReleaseCreated` Event, when this pass cloned the template.
    pub created: Option<String>,
}

/// Where the provider's part stands.
pub enum State {
    /// Ready; names the object.
    Ready(String),
    /// Not yet; says what is awaited.
    Waiting(String),
}

/// Why the provider's part of a release could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("spec.providerRef needs apiVersion, kind and name")]
    Incomplete,
    #[error("spec.providerRef: {api_version} {kind} is not served: {source}")]
    NotServed {
        api_version: String,
        kind: String,
        #[source]
        source: Box<capstan_apply::discovery::DiscoveryError>,
    },
    #[error("spec.providerRef: {kind} {name} does not exist")]
    NoTemplate { kind: String, name: String },
    /// `what` is the request: `reading X ns/name`, `creating …`, `deleting …`.
    #[error("{what}: {source}")]
    Request {
        what: String,
        #[source]
        source: kube::Error,
    },
}

impl ProviderError {
    /// An incomplete reference needs a change of the spec.
    pub fn is_terminal(&self) -> bool {
        matches!(self, ProviderError::Incomplete)
    }
}

fn request(what: String) -> impl FnOnce(kube::Error) -> ProviderError {
    move |source| ProviderError::Request { what, source }
}

struct Target {
    api: Api<DynamicObject>,
    resource: ApiResource,
    name: String,
    namespace: String,
    kind: String,
    /// The template to clone, when the reference names one.
    template: Option<(Api<DynamicObject>, String)>,
}

async fn target(
    cluster: Cluster<'_>,
    release: &ClusterStackRelease,
    reference: &ObjectReference,
) -> Result<Target, ProviderError> {
    let namespace = release.namespace().unwrap_or_default();
    let api_version = reference.api_version.clone().unwrap_or_default();
    let kind = reference.kind.clone().unwrap_or_default();
    let name = reference.name.clone().unwrap_or_default();
    if api_version.is_empty() || kind.is_empty() || name.is_empty() {
        return Err(ProviderError::Incomplete);
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version.as_str()));
    let ref_namespace = reference.namespace.clone().unwrap_or_else(|| namespace.clone());
    let api_for = |kind: &str| {
        let kind = kind.to_string();
        let api_version = api_version.clone();
        async move {
            let info = cluster
                .discovery
                .resolve(group, version, &kind)
                .await
                .map_err(|source| ProviderError::NotServed {
                    api_version,
                    kind: kind.clone(),
                    source: Box::new(source),
                })?;
            let scope = if info.namespaced {
                Scope::Namespaced
            } else {
                Scope::Cluster
            };
            Ok::<_, ProviderError>((info.resource, scope))
        }
    };
    match kind.strip_suffix("Template") {
        Some(release_kind) => {
            let (template_resource, template_scope) = api_for(&kind).await?;
            let (resource, scope) = api_for(release_kind).await?;
            let template_api = match template_scope {
                Scope::Namespaced => {
                    Api::namespaced_with(cluster.client.clone(), &ref_namespace, &template_resource)
                }
                Scope::Cluster => Api::all_with(cluster.client.clone(), &template_resource),
            };
            let api = match scope {
                Scope::Namespaced => Api::namespaced_with(cluster.client.clone(), &namespace, &resource),
                Scope::Cluster => Api::all_with(cluster.client.clone(), &resource),
            };
            Ok(Target {
                api,
                resource,
                name: release.name_any(),
                namespace,
                kind: release_kind.to_string(),
                template: Some((template_api, name)),
            })
        }
        None => {
            let (resource, scope) = api_for(&kind).await?;
            let api = match scope {
                Scope::Namespaced => Api::namespaced_with(cluster.client.clone(), &ref_namespace, &resource),
                Scope::Cluster => Api::all_with(cluster.client.clone(), &resource),
            };
            Ok(Target {
                api,
                resource,
                name,
                namespace: ref_namespace,
                kind,
                template: None,
            })
        }
    }
}

/// Creates the provider's release object when missing and reports whether it is ready.
pub async fn ensure(
    cluster: Cluster<'_>,
    release: &ClusterStackRelease,
    reference: &ObjectReference,
) -> Result<Ensured, ProviderError> {
    let target = target(cluster, release, reference).await?;
    let what = format!("{} {}/{}", target.kind, target.namespace, target.name);
    let existing = target
        .api
        .get_opt(&target.name)
        .await
        .map_err(request(format!("reading {what}")))?;
    let mut created = None;
    let waiting = |why: String| {
        Ok(Ensured {
            state: State::Waiting(why),
            created: None,
        })
    };
    let object = match (existing, &target.template) {
        (Some(object), _) => object,
        (None, None) => return waiting(format!("waiting for {what} to exist")),
        (None, Some((templates, template_name))) => {
            let kind = reference.kind.clone().unwrap_or_default();
            let template = templates
                .get_opt(template_name)
                .await
                .map_err(request(format!("reading {kind} {template_name}")))?
                .ok_or_else(|| ProviderError::NoTemplate {
                    kind,
                    name: template_name.clone(),
                })?;
            let spec = template
                .data
                .pointer("/spec/template/spec")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({}));
            let mut clone = DynamicObject::new(&target.name, &target.resource).within(&target.namespace);
            clone.metadata.owner_references = Some(vec![owner_reference(release)]);
            if let Some(meta) = template.data.pointer("/spec/template/metadata") {
                clone.metadata.labels = serde_json::from_value(meta["labels"].clone()).ok();
                clone.metadata.annotations = serde_json::from_value(meta["annotations"].clone()).ok();
            }
            clone.data = serde_json::json!({ "spec": spec });
            match target.api.create(&PostParams::default(), &clone).await {
                Ok(object) => {
                    created = Some(format!("created {what} from {template_name}"));
                    object
                }
                Err(e) if is_conflict(&e) => {
                    return waiting(format!("waiting for {what}"));
                }
                Err(e) => return Err(request(format!("creating {what}"))(e)),
            }
        }
    };
    let ready = object.data.pointer("/status/ready").and_then(|v| v.as_bool()) == Some(true);
    let state = if ready {
        State::Ready(what)
    } else {
        State::Waiting(format!("waiting for {what} to report status.ready"))
    };
    Ok(Ensured { state, created })
}

/// Deletes the provider's release object a release cloned (never one it only waited for).
pub async fn remove(
    cluster: Cluster<'_>,
    release: &ClusterStackRelease,
    reference: &ObjectReference,
) -> Result<(), ProviderError> {
    let target = target(cluster, release, reference).await?;
    if target.template.is_none() {
        return Ok(());
    }
    match target.api.delete(&target.name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(request(format!(
            "deleting {} {}/{}",
            target.kind, target.namespace, target.name
        ))(e)),
    }
}
