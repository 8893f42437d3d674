//! What no pass reads of an object's metadata, dropped before a store keeps it.

use kube::api::ObjectMeta;

/// The annotation `kubectl apply` keeps the whole last-applied object in: no pass reads it.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what no pass reads from an object's metadata: `managedFields` and the last-applied
/// annotation (often the largest parts of an object).
pub fn strip_meta(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}
