//! What a ClusterAddon pass reads, and nothing it writes: its Cluster, the workload cluster
//! (through the cache of connections), the objects the Cluster references and the hash of
//! what a render depends on. The gates' decisions on what it read are `plan.rs`'s.

use std::sync::Arc;

use kube::ResourceExt;
use kube::api::DynamicObject;

use super::super::Cause;
use super::super::pipeline;
use super::super::progress::{Because, Failure};
use crate::addon::user_values::Layer;
use crate::addon::workload::{Gate, Workload};
use crate::api::ClusterAddon;
use crate::context::Context;
use capstan_apply::discovery::DiscoveryError;
use capstan_stack::render::CompiledRelease;

/// A workload cluster ready for use, from the workload-cluster cache: its client, version and
/// an [`capstan_apply::Applier`] with its discovery cache, kept across passes.
pub type Connected = Arc<Workload>;

/// The addon's Cluster (`None`: gone), from the management cluster's store.
pub async fn cluster(ctx: &Context, addon: &ClusterAddon) -> Result<Option<DynamicObject>, kube::Error> {
    let namespace = addon.namespace().unwrap_or_default();
    let name = addon.spec.cluster_ref.name.clone().unwrap_or_default();
    ctx.management.cluster(&namespace, &name).await
}

/// The workload cluster of `cluster` in `namespace`, ready (the one place a ClusterAddon pass
/// acquires it): no request to it while its kubeconfig Secret is unchanged and it is healthy.
pub async fn connect(ctx: &Context, namespace: &str, cluster: &str) -> Result<Connected, Gate> {
    ctx.workloads.get(&ctx.management, namespace, cluster).await
}

/// The Cluster and the objects it references, as JSON text per object.
#[derive(Clone)]
pub struct LiveObjects {
    cluster: DynamicObject,
    control_plane: Option<DynamicObject>,
    infra_cluster: Option<DynamicObject>,
}

/// Why the objects a Cluster references cannot be read yet (the pass waits).
#[derive(Debug, thiserror::Error)]
pub enum Missing {
    #[error("waiting for {0}, which the Cluster references")]
    Absent(String),
    #[error("{what}: {source}")]
    Unreadable {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{what}: {source}")]
    Undiscoverable {
        what: String,
        #[source]
        source: DiscoveryError,
    },
}

pub async fn live_objects(ctx: &Context, cluster: &DynamicObject) -> Result<LiveObjects, Missing> {
    let referenced = |field: &str| cluster.data.pointer(&format!("/spec/{field}")).cloned();
    let namespace = cluster.namespace().unwrap_or_default();
    Ok(LiveObjects {
        cluster: cluster.clone(),
        control_plane: read_referenced(ctx, &namespace, referenced("controlPlaneRef")).await?,
        infra_cluster: read_referenced(ctx, &namespace, referenced("infrastructureRef")).await?,
    })
}

/// The object a Cluster's `reference` names.
async fn read_referenced(
    ctx: &Context,
    namespace: &str,
    reference: Option<serde_json::Value>,
) -> Result<Option<DynamicObject>, Missing> {
    let Some(reference) = reference else {
        return Ok(None);
    };
    let text = |k: &str| {
        reference
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let (mut api_version, kind, name) = (text("apiVersion"), text("kind"), text("name"));
    let ns = reference
        .get("namespace")
        .and_then(|v| v.as_str())
        .unwrap_or(namespace)
        .to_string();
    let what = format!("{kind} {ns}/{name}");
    let unreadable = |source| Missing::Unreadable {
        what: what.clone(),
        source,
    };
    let discovery = ctx.applier.discovery();
    // v1beta2 names the group only: the version the server prefers for it.
    if api_version.is_empty() {
        api_version = discovery
            .preferred_api_version(&text("apiGroup"), &kind)
            .await
            .map_err(|source| Missing::Undiscoverable {
                what: what.clone(),
                source,
            })?;
    }
    let info = discovery
        .resolve_api_version(&api_version, &kind)
        .await
        .map_err(|source| Missing::Undiscoverable {
            what: what.clone(),
            source,
        })?;
    match ctx
        .management
        .referenced(&info, &ns, &name)
        .await
        .map_err(unreadable)?
    {
        Some(object) => Ok(Some(object)),
        None => Err(Missing::Absent(what)),
    }
}

/// The values of the addon charts (by part): computed from the live objects, the user's
/// layered over them (blocking: JSON text read as YAML, templates run).
pub fn layered_values(
    compiled: &CompiledRelease,
    inputs: &RenderInputs,
) -> Result<Vec<(String, Option<capstan_stack::values::ComputedValues>)>, Cause> {
    let computed = compiled.addon_values(&inputs.objects.parse(compiled.values_template_api())?)?;
    // The user's values join the computed ones here; the hash covers the layered text.
    let user = inputs
        .user_values
        .iter()
        .map(Layer::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(Cause::UserValues)?;
    Ok(capstan_stack::user_values::layer_parts(computed, &user))
}

/// The hash of everything a render of the addons depends on: the release digest, the
/// workload cluster's version and the layered values, on a blocking thread (cheap: the
/// charts are rendered only when no stored render has the hash).
pub async fn inputs_hash(
    compiled: &Arc<CompiledRelease>,
    inputs: &RenderInputs,
    target: &Workload,
) -> Result<String, Failure> {
    let (compiled, inputs, version) = (compiled.clone(), inputs.clone(), target.version.clone());
    pipeline::blocking("computing the addons' values", move || {
        let values = layered_values(&compiled, &inputs)?;
        let texts = values
            .iter()
            .flat_map(|(part, computed)| [part.as_str(), computed.as_ref().map_or("", |c| c.text.as_str())]);
        let fields = [inputs.digest.as_str(), version.as_str()]
            .into_iter()
            .chain(texts);
        Ok(pipeline::inputs_hash("cluster-addon", fields))
    })
    .await
    .because("RenderFailed")
}

/// What a render of the addons is made from, besides the release.
#[derive(Clone)]
pub struct RenderInputs {
    pub objects: LiveObjects,
    /// The user's values, in the order they are layered.
    pub user_values: Vec<Layer>,
    /// The release's digest.
    pub digest: String,
}

/// The `Rendered` message's note of where user values came from (empty without any).
pub fn user_values_note(layers: &[Layer]) -> String {
    if layers.is_empty() {
        return String::new();
    }
    let sources: Vec<&str> = layers.iter().map(|l| l.source.as_str()).collect();
    format!(", with user values from {}", sources.join(", "))
}

impl LiveObjects {
    /// The objects as values see them: the Cluster in the shape the release's templates
    /// are written for (`templates`; a v1beta2 Cluster converted for v1beta1 templates).
    fn parse(
        &self,
        templates: capstan_stack::capi::CapiVersion,
    ) -> Result<capstan_stack::values::ClusterObjects, Cause> {
        Ok(crate::clusters::template_objects(
            &self.cluster,
            self.control_plane.as_ref(),
            self.infra_cluster.as_ref(),
            templates,
        )?)
    }
}
