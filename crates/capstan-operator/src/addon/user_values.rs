//! Values a user gives for a Cluster's addon charts, and where they come from. In the order
//! they are layered over the values the release computes for the Cluster (later wins, as with
//! repeated `helm template -f`; see [`capstan_stack::user_values`]):
//!
//! 1. the ClusterStack's `spec.addonValues` (every Cluster that uses the stack);
//! 2. the ConfigMap or Secret the Cluster's `clusterstack.x-k8s.io/addon-values-from`
//!    annotation names (`ConfigMap/<name>` or `Secret/<name>`, optionally `/<key>`; default key
//!    `values.yaml`), in the Cluster's namespace;
//! 3. the Cluster's `clusterstack.x-k8s.io/addon-values` annotation (YAML text).
//!
//! Each must be a YAML map. The webhook refuses invalid ones on the ClusterStack and the
//! Cluster; a referenced ConfigMap or Secret is checked when the addons are rendered.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, DynamicObject};

use crate::api::ClusterStack;
use capstan_stack::user_values::UserValues;

/// Annotation of a Cluster: Helm values (YAML) for its addons.
pub const VALUES_ANNOTATION: &str = "clusterstack.x-k8s.io/addon-values";
/// Annotation of a Cluster: `ConfigMap/<name>[/<key>]` or `Secret/<name>[/<key>]` holding
/// Helm values for its addons.
pub const VALUES_FROM_ANNOTATION: &str = "clusterstack.x-k8s.io/addon-values-from";
/// The key read from a referenced ConfigMap or Secret when the reference names none.
pub const DEFAULT_KEY: &str = "values.yaml";

/// One layer of user values as text, with where it came from (what is hashed and rendered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// E.g. `ClusterStack tenant/ferrol spec.addonValues`.
    pub source: String,
    pub text: String,
}

impl Layer {
    /// The layer read as Helm values, or why it is not a YAML map.
    pub fn parse(&self) -> Result<UserValues, String> {
        UserValues::parse(&self.source, &self.text).map_err(|e| e.to_string())
    }
}

/// The kind of object a values reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    ConfigMap,
    Secret,
}

/// A Cluster's `addon-values-from` annotation, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesRef {
    pub kind: RefKind,
    pub name: String,
    pub key: String,
}

/// Reads `ConfigMap/<name>[/<key>]` or `Secret/<name>[/<key>]`.
pub fn parse_ref(text: &str) -> Result<ValuesRef, String> {
    let expected = "expected ConfigMap/<name>[/<key>] or Secret/<name>[/<key>]";
    let mut parts = text.trim().split('/');
    let kind = match parts.next() {
        Some("ConfigMap") => RefKind::ConfigMap,
        Some("Secret") => RefKind::Secret,
        _ => return Err(format!("{text:?}: {expected}")),
    };
    let name = parts.next().filter(|n| !n.is_empty());
    let key = parts.next();
    let (Some(name), None) = (name, parts.next()) else {
        return Err(format!("{text:?}: {expected}"));
    };
    let key = match key {
        None => DEFAULT_KEY,
        Some("") => return Err(format!("{text:?}: the key after the name is empty")),
        Some(key) => key,
    };
    Ok(ValuesRef {
        kind,
        name: name.to_string(),
        key: key.to_string(),
    })
}

/// A Cluster's annotation, if set.
fn annotation<'a>(cluster: &'a DynamicObject, key: &str) -> Option<&'a str> {
    cluster
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

fn cluster_label(cluster: &DynamicObject) -> String {
    format!(
        "Cluster {}/{}",
        cluster.metadata.namespace.as_deref().unwrap_or_default(),
        cluster.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The layers in the order they apply (see the module's documentation): the stack's field,
/// the referenced object's text (`referenced`, read by the caller), the annotation.
pub fn layers(stack: &ClusterStack, cluster: &DynamicObject, referenced: Option<Layer>) -> Vec<Layer> {
    let mut out = Vec::new();
    if let Some(text) = &stack.spec.addon_values {
        out.push(Layer {
            source: format!(
                "ClusterStack {}/{} spec.addonValues",
                stack.metadata.namespace.as_deref().unwrap_or_default(),
                stack.metadata.name.as_deref().unwrap_or_default()
            ),
            text: text.clone(),
        });
    }
    out.extend(referenced);
    if let Some(text) = annotation(cluster, VALUES_ANNOTATION) {
        out.push(Layer {
            source: format!("{} annotation {VALUES_ANNOTATION}", cluster_label(cluster)),
            text: text.to_string(),
        });
    }
    out
}

/// Why a Cluster's user values cannot be used yet or at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatherError {
    /// The referenced ConfigMap or Secret (or its key) does not exist: wait for it.
    #[error("{0}")]
    Missing(String),
    /// A reference or values that are not valid; the message names the source.
    #[error("{0}")]
    Invalid(String),
}

/// The user values for `cluster`'s addons, each layer checked to be a YAML map: the one
/// function of the ClusterAddon controller that gathers them (reading the referenced ConfigMap
/// or Secret through `client`).
pub async fn gather(
    client: &Client,
    stack: &ClusterStack,
    cluster: &DynamicObject,
) -> Result<Vec<Layer>, GatherError> {
    let referenced = match annotation(cluster, VALUES_FROM_ANNOTATION) {
        None => None,
        Some(text) => {
            let reference = parse_ref(text).map_err(|e| {
                GatherError::Invalid(format!(
                    "{} annotation {VALUES_FROM_ANNOTATION}: {e}",
                    cluster_label(cluster)
                ))
            })?;
            let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
            Some(read_reference(client, &namespace, &reference).await?)
        }
    };
    let layers = layers(stack, cluster, referenced);
    for layer in &layers {
        layer.parse().map_err(GatherError::Invalid)?;
    }
    Ok(layers)
}

/// The text under the reference's key.
async fn read_reference(
    client: &Client,
    namespace: &str,
    reference: &ValuesRef,
) -> Result<Layer, GatherError> {
    let (kind, name, key) = (reference.kind, &reference.name, &reference.key);
    let label = format!("{kind:?} {namespace}/{name}");
    let source = format!("{label} key {key}");
    let missing = |what: String| {
        GatherError::Missing(format!(
            "waiting for {what}, which the Cluster's {VALUES_FROM_ANNOTATION} annotation names"
        ))
    };
    let read_error = |e: kube::Error| GatherError::Missing(format!("reading {label}: {e}"));
    let text =
        match kind {
            RefKind::ConfigMap => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
                let Some(map) = api.get_opt(name).await.map_err(read_error)? else {
                    return Err(missing(label));
                };
                map.data.and_then(|mut d| d.remove(key))
            }
            RefKind::Secret => {
                let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
                let Some(secret) = api.get_opt(name).await.map_err(read_error)? else {
                    return Err(missing(label));
                };
                match secret.data.and_then(|mut d| d.remove(key)) {
                    None => None,
                    Some(bytes) => Some(String::from_utf8(bytes.0).map_err(|_| {
                        GatherError::Invalid(format!("{source}: the value is not UTF-8 text"))
                    })?),
                }
            }
        };
    let text = text.ok_or_else(|| missing(format!("key {key} in {label}")))?;
    Ok(Layer { source, text })
}

/// The webhook's check of a Cluster's user-value annotations: why each is invalid, naming the
/// annotation (empty when both are fine or absent).
pub fn check_annotations(cluster: &DynamicObject) -> Vec<String> {
    let mut reasons = Vec::new();
    if let Some(text) = annotation(cluster, VALUES_ANNOTATION) {
        let source = format!("metadata.annotations[{VALUES_ANNOTATION}]");
        if let Err(e) = UserValues::parse(&source, text) {
            reasons.push(e.to_string());
        }
    }
    if let Some(text) = annotation(cluster, VALUES_FROM_ANNOTATION)
        && let Err(e) = parse_ref(text)
    {
        reasons.push(format!("metadata.annotations[{VALUES_FROM_ANNOTATION}]: {e}"));
    }
    reasons
}

/// Whether the user-value annotations differ between two versions of a Cluster.
pub fn annotations_changed(old: &DynamicObject, new: &DynamicObject) -> bool {
    [VALUES_ANNOTATION, VALUES_FROM_ANNOTATION]
        .iter()
        .any(|key| annotation(old, key) != annotation(new, key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(annotations: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "c1", "namespace": "ns", "annotations": annotations},
        }))
        .expect("Cluster")
    }

    fn stack(values: Option<&str>) -> ClusterStack {
        serde_json::from_value(json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
            "metadata": {"name": "ferrol", "namespace": "ns"},
            "spec": {"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                     "addonValues": values},
        }))
        .expect("ClusterStack")
    }

    #[test]
    fn references_read_as_kind_name_and_key() {
        let ok = |kind, name: &str, key: &str| {
            Ok(ValuesRef {
                kind,
                name: name.into(),
                key: key.into(),
            })
        };
        let cases = [
            ("ConfigMap/vals", ok(RefKind::ConfigMap, "vals", DEFAULT_KEY)),
            ("Secret/vals", ok(RefKind::Secret, "vals", DEFAULT_KEY)),
            ("Secret/vals/my.yaml", ok(RefKind::Secret, "vals", "my.yaml")),
            (" ConfigMap/vals ", ok(RefKind::ConfigMap, "vals", DEFAULT_KEY)),
        ];
        for (text, want) in cases {
            assert_eq!(parse_ref(text), want, "{text}");
        }
        for bad in [
            "configmap/vals",
            "ConfigMap",
            "ConfigMap/",
            "Pod/x",
            "Secret/a/b/c",
            "Secret/a/",
        ] {
            let err = parse_ref(bad).expect_err(bad);
            assert!(err.starts_with(&format!("{bad:?}: ")), "{err}");
        }
    }

    /// The layers' sources come in the documented order, whichever are present.
    #[test]
    fn layers_come_in_documented_order() {
        let referenced = || {
            Some(Layer {
                source: "ConfigMap ns/v key values.yaml".into(),
                text: "b: 2".into(),
            })
        };
        let annotated = json!({VALUES_ANNOTATION: "c: 3"});
        /// (stack field, referenced layer, annotations, the sources expected in order)
        type Case<'a> = (Option<&'a str>, Option<Layer>, serde_json::Value, &'a [&'a str]);
        let cases: [Case; 4] = [
            (None, None, json!({}), &[]),
            (
                Some("a: 1"),
                referenced(),
                annotated.clone(),
                &[
                    "ClusterStack ns/ferrol spec.addonValues",
                    "ConfigMap ns/v key values.yaml",
                    "Cluster ns/c1 annotation clusterstack.x-k8s.io/addon-values",
                ],
            ),
            (
                None,
                None,
                annotated,
                &["Cluster ns/c1 annotation clusterstack.x-k8s.io/addon-values"],
            ),
            (
                Some("a: 1"),
                referenced(),
                json!({}),
                &[
                    "ClusterStack ns/ferrol spec.addonValues",
                    "ConfigMap ns/v key values.yaml",
                ],
            ),
        ];
        for (field, reference, annotations, want) in cases {
            let got = layers(&stack(field), &cluster(annotations), reference);
            let sources: Vec<&str> = got.iter().map(|l| l.source.as_str()).collect();
            assert_eq!(sources, want);
        }
    }

    #[test]
    fn the_webhook_names_the_invalid_annotation() {
        let fine = cluster(json!({VALUES_ANNOTATION: "a: 1", VALUES_FROM_ANNOTATION: "Secret/s"}));
        assert!(check_annotations(&fine).is_empty());
        let bad = cluster(json!({VALUES_ANNOTATION: "a: [", VALUES_FROM_ANNOTATION: "Pod/p"}));
        let reasons = check_annotations(&bad);
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons[0].starts_with(
                "metadata.annotations[clusterstack.x-k8s.io/addon-values]: not a YAML map of Helm values: "
            ),
            "{reasons:?}"
        );
        assert!(
            reasons[1]
                .starts_with("metadata.annotations[clusterstack.x-k8s.io/addon-values-from]: \"Pod/p\": "),
            "{reasons:?}"
        );
        let list = cluster(json!({VALUES_ANNOTATION: "- a"}));
        assert_eq!(check_annotations(&list).len(), 1);
        assert!(annotations_changed(&fine, &bad));
        assert!(!annotations_changed(&fine, &fine.clone()));
    }
}
