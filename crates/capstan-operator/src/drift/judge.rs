//! Whether a watch event is drift, from the object's metadata alone (pure).

use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;

use capstan_apply::FIELD_MANAGER;

/// Whether a watch event is drift: a deletion, or a change whose newest field-manager entry
/// (status updates aside) is not capstan's. The initial listing is not. (A deletion by
/// capstan's own pruning is told apart by the watch, see [`DriftWatches::prune_notice`].)
pub fn drifted(event: &Event<PartialObjectMeta<DynamicObject>>) -> bool {
    match event {
        Event::Delete(_) => true,
        Event::Apply(meta) => last_writer(meta).is_some_and(|manager| manager != FIELD_MANAGER),
        Event::Init | Event::InitApply(_) | Event::InitDone => false,
    }
}

/// The manager of the newest `managedFields` entry that is not a status update (ties: any
/// manager other than capstan wins, so a same-second edit is not missed).
fn last_writer(meta: &PartialObjectMeta<DynamicObject>) -> Option<&str> {
    let entries = meta.metadata.managed_fields.as_ref()?;
    let mut newest: Option<(&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time, &str)> = None;
    for entry in entries {
        if entry.subresource.as_deref() == Some("status") || only_status(entry) {
            continue;
        }
        let (Some(time), Some(manager)) = (entry.time.as_ref(), entry.manager.as_deref()) else {
            continue;
        };
        newest = match newest {
            Some((t, m)) if t.0 > time.0 || (t.0 == time.0 && m != FIELD_MANAGER) => Some((t, m)),
            _ => Some((time, manager)),
        };
    }
    newest.map(|(_, m)| m)
}

/// Whether an entry owns nothing but status: API servers before 1.22 record status updates
/// without `subresource` (an APIService's availability, say), which must not read as drift.
fn only_status(entry: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry) -> bool {
    entry
        .fields_v1
        .as_ref()
        .and_then(|fields| fields.0.as_object())
        .is_some_and(|fields| !fields.is_empty() && fields.keys().all(|k| k == "f:status"))
}
