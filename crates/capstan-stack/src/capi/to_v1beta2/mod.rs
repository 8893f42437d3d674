//! A stack's ClusterClass objects in `v1beta2`: what capstan applies on a management cluster
//! that serves Cluster API's `v1beta2` (v1.11 on; the only version from v1.16), where the
//! `v1beta1` a ClusterClass chart renders is a deprecated request, or refused.
//!
//! Converts exactly the kinds Cluster API and its kubeadm and docker providers own —
//! ClusterClass, KubeadmControlPlaneTemplate, KubeadmConfigTemplate, DockerClusterTemplate,
//! DockerMachineTemplate, DockerMachinePoolTemplate — from `v1beta1` to `v1beta2`, field by
//! field as Cluster API's own conversion does ([`cluster_class`], [`kubeadm`], [`docker`]).
//! Every other object (another provider's templates, a `v1beta2` object) is applied as
//! rendered.
//!
//! Nothing is lost without a word: a field with no `v1beta2` equivalent is refused
//! ([`Refusal::NoEquivalent`]) unless Cluster API itself drops it in favour of the Cluster's
//! own fields, which is reported as [`Dropped`]; and the converted object is checked against
//! the fields of the `v1beta2` CRDs (`v1beta2-fields.json`, Cluster API v1.14's schemas with
//! everything but the field names taken out), so a field the conversion does not know —
//! which the API server's structural schema would prune — is refused naming its path
//! ([`Refusal::Unknown`]).

mod cluster_class;
mod docker;
mod edit;
mod kinds;
mod kubeadm;
mod refusal;

pub use kinds::{CONVERTED_KINDS, converted_api_version, is_converted};
pub use refusal::{ConversionError, Dropped, Refusal};

use std::sync::LazyLock;

use serde_json::Value;

use super::CapiVersion;
use super::schema::unknown_fields;

/// The `v1beta2` field names of the converted kinds, by `group/v1beta2/Kind`.
pub const V1BETA2_FIELDS: &str = include_str!("v1beta2-fields.json");

static SCHEMAS: LazyLock<Value> =
    LazyLock::new(|| serde_json::from_str(V1BETA2_FIELDS).unwrap_or(Value::Null));

/// A converted object and what Cluster API's conversion drops from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub object: Value,
    pub dropped: Vec<Dropped>,
}

/// `object` in `v1beta2` when it is a `v1beta1` object of a converted kind
/// ([`CONVERTED_KINDS`]), `None` otherwise (apply it as it is). `namespace` is the one the
/// object is applied in: a `v1beta1` reference naming it (or none) converts, another refuses
/// (`v1beta2` references are always in the object's namespace).
pub fn convert(object: &Value, namespace: &str) -> Result<Option<Converted>, ConversionError> {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    if !is_converted(api_version, kind) {
        return Ok(None);
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut ctx = edit::Ctx {
        object: format!("{kind} {name}"),
        namespace: namespace.to_string(),
        dropped: Vec::new(),
    };
    let mut out = object.clone();
    let target = converted_api_version(api_version, kind);
    if let Some(map) = out.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(target.clone()));
        if let Some(spec) = ctx.object_field(map, "spec", "")? {
            match kind {
                "ClusterClass" => cluster_class::spec(&mut ctx, spec)?,
                "KubeadmControlPlaneTemplate" => kubeadm::control_plane_template(&mut ctx, spec)?,
                "KubeadmConfigTemplate" => kubeadm::config_template(&mut ctx, spec)?,
                "DockerClusterTemplate" => docker::cluster_template(&mut ctx, spec)?,
                _ => {}
            }
        }
    }
    let schema = SCHEMAS.get(format!("{target}/{kind}")).unwrap_or(&Value::Null);
    drop_empty_structs(&mut out, schema);
    check_fields(&ctx, &out, &target, kind)?;
    Ok(Some(Converted {
        object: out,
        dropped: ctx.dropped,
    }))
}

/// An object that cannot be applied in the Cluster API version spoken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassVersionError {
    /// A `v1beta1` object whose conversion to `v1beta2` is refused.
    #[error("converting to v1beta2: {0}")]
    Refused(#[from] ConversionError),
    /// A `v1beta2` object of a converted kind where only `v1beta1` is served.
    #[error(
        "{kind} {name} is {api_version}, but this management cluster serves Cluster API v1beta1 only (cluster.x-k8s.io/v1beta1: Cluster API v1.10 or older): render it in v1beta1, or upgrade Cluster API"
    )]
    NotServed {
        kind: String,
        name: String,
        api_version: String,
    },
}

/// What to apply of `object` where the process speaks `speaks`: `v1beta2` → a `v1beta1`
/// object of a converted kind converted ([`convert`]); `v1beta1` → a `v1beta2` object of a
/// converted kind refused (nothing serves it). `None`: apply it as rendered.
pub fn for_cluster_api(
    object: &Value,
    speaks: CapiVersion,
    namespace: &str,
) -> Result<Option<Converted>, ClassVersionError> {
    match speaks {
        CapiVersion::V1Beta2 => Ok(convert(object, namespace)?),
        CapiVersion::V1Beta1 => {
            let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
            let v1beta2 = api_version
                .strip_suffix("/v1beta2")
                .is_some_and(|group| CONVERTED_KINDS.contains(&(group, kind)));
            if !v1beta2 {
                return Ok(None);
            }
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            Err(ClassVersionError::NotServed {
                kind: kind.to_string(),
                name: name.to_string(),
                api_version: api_version.to_string(),
            })
        }
    }
}

/// Removes the empty mappings `v1beta2` does not allow (`minProperties: 1`), bottom up: in
/// Cluster API's Go types they are structs that are left out when empty (`omitzero`), so its
/// conversion never sends them — `clusterConfiguration.apiServer: {}` after its
/// `timeoutForControlPlane` moved away, a `metadata: {}`. Nothing below
/// `x-kubernetes-preserve-unknown-fields` (a variable's default) is touched.
fn drop_empty_structs(value: &mut Value, schema: &Value) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties");
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let mut emptied = Vec::new();
            for (key, child) in map.iter_mut() {
                let Some(child_schema) = properties.and_then(|p| p.get(key)).or(additional) else {
                    continue;
                };
                drop_empty_structs(child, child_schema);
                let requires_some = child_schema
                    .get("minProperties")
                    .and_then(Value::as_u64)
                    .is_some_and(|n| n > 0);
                if requires_some && child.as_object().is_some_and(|m| m.is_empty()) {
                    emptied.push(key.clone());
                }
            }
            for key in emptied {
                map.remove(&key);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    drop_empty_structs(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

/// Refuses the first field of `object` the `v1beta2` schema of `kind` does not declare.
fn check_fields(
    ctx: &edit::Ctx,
    object: &Value,
    api_version: &str,
    kind: &str,
) -> Result<(), ConversionError> {
    let schema = SCHEMAS
        .get(format!("{api_version}/{kind}"))
        .unwrap_or(&Value::Null);
    match unknown_fields(object, schema).into_iter().next() {
        Some(field) => Err(ctx.error(
            &field,
            Refusal::Unknown {
                kind: kind.to_string(),
            },
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
