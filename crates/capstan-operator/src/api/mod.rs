//! The `clusterstack.x-k8s.io/v1alpha1` API: [`ClusterStack`], [`ClusterStackRelease`] and
//! [`ClusterAddon`], with their CRDs generated from these types ([`crds`], printed by
//! `capstan crds`), and capstan's own `capstan.dev/v1alpha1` API: [`rollout`]'s
//! `ClusterStackRollout`.
//!
//! Compatible with the SovereignCloudStack cluster-stack-operator (CSO): every object its
//! published CRDs accept, capstan's accept unchanged and store the same (same field names,
//! types, defaults and constraints; capstan's additions are optional). The differences are
//! where CSO's schema is looser than its meaning: none yet at the schema level, except that a
//! ClusterStackRelease without `spec` is stored with `spec: {}`, so every release reads as a
//! typed object.
//!
//! One file per kind; [`conditions`] holds the condition type and its helpers, [`resource`]
//! the per-object status entry that releases and addons share, [`recorded`] a status
//! value stored as text and read back typed.

pub mod cluster_addon;
pub mod cluster_stack;
pub mod cluster_stack_release;
pub mod conditions;
pub mod recorded;
pub mod resource;
pub mod rollout;

pub use cluster_addon::{
    ClusterAddon, ClusterAddonSpec, ClusterAddonStatus, StagePhase, StageStatus, StagesFor,
};
pub use cluster_stack::{
    Channel, ClusterStack, ClusterStackSpec, ClusterStackStatus, DependencyRule, GitHubSource, GitSource,
    LocalSource, OciSource, OidcIdentityMatch, ReleaseSummary, SecretReference, StackSource, VerifySpec,
};
pub use cluster_stack_release::{
    ClusterStackRelease, ClusterStackReleaseSpec, ClusterStackReleaseStatus, SignedDependency,
};
pub use conditions::{Condition, ConditionStatus};
pub use recorded::Recorded;
pub use resource::Resource;
pub use rollout::{
    Approval, ClusterPhase, ClusterRolloutStatus, ClusterStackRollout, ClusterStackRolloutSpec,
    ClusterStackRolloutStatus, FailureAction, FailurePolicy, HealthCheck, HealthPolicy, ROLLOUT_GROUP,
    RolloutPhase, Wave, WavePhase, WaveStatus,
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::Value as Json;

/// The API group of all three kinds.
/// Annotation on a ClusterAddon or ClusterStackRelease: `"true"` lets its applies take over
/// objects another inventory owns (see [`capstan_apply::ownership`]); without it such an
/// object is left to its owner and reported (`OwnershipConflict`).
pub const TAKE_OVER_ANNOTATION: &str = "capstan.dev/take-over";

pub const GROUP: &str = "clusterstack.x-k8s.io";
/// Their (only) version.
pub const VERSION: &str = "v1alpha1";

/// Why the CRDs could not be written as YAML (not expected: they are built from fixed types).
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("CRD {name} does not serialize: {message}")]
    Serialize { name: String, message: String },
}

/// The CRDs of the three `clusterstack.x-k8s.io` kinds (ClusterStack, ClusterStackRelease,
/// ClusterAddon), then capstan's own ClusterStackRollout.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        finish(ClusterStack::crd(), None),
        finish(ClusterStackRelease::crd(), Some(serde_json::json!({}))),
        finish(ClusterAddon::crd(), None),
        finish_own(ClusterStackRollout::crd()),
    ]
}

/// [`crds`] as one YAML stream, each document after a `---` line, keys sorted (the form
/// `kubectl` prints). The same types always give the same bytes.
pub fn crds_yaml() -> Result<String, CrdError> {
    crds_yaml_of(None)
}

/// [`crds_yaml`] of one API group only (`None`: all), for the chart's one file per group.
pub fn crds_yaml_of(group: Option<&str>) -> Result<String, CrdError> {
    let mut out = String::new();
    for crd in crds()
        .into_iter()
        .filter(|crd| group.is_none_or(|g| crd.spec.group == g))
    {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let error = |message: String| CrdError::Serialize {
            name: name.clone(),
            message,
        };
        let json = serde_json::to_string(&crd).map_err(|e| error(e.to_string()))?;
        let value = capstan_encoding::json::unmarshal(&json).map_err(|e| error(e.to_string()))?;
        let yaml = capstan_encoding::yaml_emit::marshal(&value).map_err(|e| error(e.to_string()))?;
        out.push_str("---\n");
        out.push_str(&yaml);
    }
    Ok(out)
}

/// Adjusts a derived CRD to what CSO's CRDs accept and store:
/// - no `nullable` (CSO's fields are not nullable: a `null` is dropped, not stored);
/// - `spec` is not required and neither `spec` nor `status` has a default at the top
///   (`spec_default` sets one for `spec`).
fn finish(crd: CustomResourceDefinition, spec_default: Option<Json>) -> CustomResourceDefinition {
    edit_schemas(crd, |json| {
        remove_key(json, "nullable");
        if let Some(required) = json.get_mut("required").and_then(Json::as_array_mut) {
            required.retain(|r| r != "spec");
        }
        if json
            .get("required")
            .and_then(Json::as_array)
            .is_some_and(Vec::is_empty)
            && let Some(obj) = json.as_object_mut()
        {
            obj.remove("required");
        }
        for part in ["spec", "status"] {
            if let Some(props) = json
                .pointer_mut(&format!("/properties/{part}"))
                .and_then(Json::as_object_mut)
            {
                props.remove("default");
            }
        }
        if let Some(default) = &spec_default
            && let Some(props) = json.pointer_mut("/properties/spec").and_then(Json::as_object_mut)
        {
            props.insert("default".into(), default.clone());
        }
    })
}

/// Adjusts a derived CRD of capstan's own group: no `nullable`, as in [`finish`] (an absent
/// optional field is omitted, never `null`); `spec` stays required.
fn finish_own(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    edit_schemas(crd, |json| remove_key(json, "nullable"))
}

/// Applies `edit` to the OpenAPI schema of every version of `crd`, as JSON.
fn edit_schemas(mut crd: CustomResourceDefinition, edit: impl Fn(&mut Json)) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        let Ok(mut json) = serde_json::to_value(&*schema) else {
            continue;
        };
        edit(&mut json);
        if let Ok(fixed) = serde_json::from_value(json) {
            *schema = fixed;
        }
    }
    crd
}

fn remove_key(json: &mut Json, key: &str) {
    match json {
        Json::Object(map) => {
            map.remove(key);
            for value in map.values_mut() {
                remove_key(value, key);
            }
        }
        Json::Array(items) => {
            for item in items {
                remove_key(item, key);
            }
        }
        _ => {}
    }
}

/// Schema of a core/v1 `ObjectReference` field: replaced as a whole by server-side apply
/// (`x-kubernetes-map-type: atomic`), as Kubernetes treats object references.
pub(crate) fn object_reference_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "description": "API version of the referred object."},
            "fieldPath": {"type": "string", "description": "A field of the referred object, when the reference is to a part of it."},
            "kind": {"type": "string", "description": "Kind of the referred object."},
            "name": {"type": "string", "description": "Name of the referred object."},
            "namespace": {"type": "string", "description": "Namespace of the referred object."},
            "resourceVersion": {"type": "string", "description": "Resource version of the referred object the reference was made to."},
            "uid": {"type": "string", "description": "UID of the referred object."}
        },
        "x-kubernetes-map-type": "atomic"
    })
}

/// Schema of a timestamp (RFC 3339).
pub(crate) fn date_time_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "date-time"})
}

/// Schema of an optional timestamp (RFC 3339).
pub(crate) fn optional_date_time_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "date-time"})
}

/// Schema of a value written as free text, whatever its Rust type.
pub(crate) fn string_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string"})
}
