//! The inventory: which objects an owner (a release on a cluster) has applied, kept in a
//! ConfigMap named after the inventory in its namespace, and pruning: deleting objects that
//! left the desired set, in reverse install order, only when they still carry the
//! inventory's annotation (never what someone else created or took over), CRDs only when
//! asked.
//!
//! Crash safety: before objects are applied the inventory is widened to old ∪ new, so an
//! interrupted apply leaves nothing untracked; after pruning it is narrowed to the new set
//! plus whatever could not be pruned (tried again next time).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams};
use serde::{Deserialize, Serialize};

use super::ssa::{MANAGED_BY, MANAGED_BY_LABEL, Retry, with_retry};
use super::status::ObjectKey;

/// The data key of the inventory ConfigMap holding the object list (JSON).
const OBJECTS_KEY: &str = "objects";
/// Label marking a ConfigMap as a capstan inventory.
pub const INVENTORY_LABEL: &str = "capstan.dev/inventory-object";

/// Names an inventory: the ConfigMap `name` in `namespace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryRef {
    pub namespace: String,
    pub name: String,
}

impl InventoryRef {
    /// `namespace/name`, the value of the inventory annotation on owned objects.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// One recorded object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    #[serde(flatten)]
    pub key: ObjectKey,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("reading inventory {id}: {message}")]
    Read { id: String, message: String },
    #[error("inventory {id} is corrupt ({message}); delete it or repair data.{OBJECTS_KEY}")]
    Corrupt { id: String, message: String },
    #[error("writing inventory {id}: {message}")]
    Write { id: String, message: String },
}

/// The recorded objects; `None` when the inventory does not exist yet.
pub async fn read(
    client: &Client,
    inv: &InventoryRef,
    retry: Retry,
) -> Result<Option<Vec<Entry>>, InventoryError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &inv.namespace);
    let (cm, _) = with_retry(retry, || api.get_opt(&inv.name)).await;
    let cm = cm.map_err(|e| InventoryError::Read {
        id: inv.id(),
        message: e.to_string(),
    })?;
    let Some(cm) = cm else { return Ok(None) };
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get(OBJECTS_KEY))
        .map(String::as_str)
        .unwrap_or("[]");
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| InventoryError::Corrupt {
            id: inv.id(),
            message: e.to_string(),
        })
}

/// The names of the inventories (ConfigMaps with [`INVENTORY_LABEL`]) in `namespace`.
pub async fn list(client: &Client, namespace: &str, retry: Retry) -> Result<Vec<String>, InventoryError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().labels(&format!("{INVENTORY_LABEL}=true"));
    let (listed, _) = with_retry(retry, || api.list_metadata(&params)).await;
    let listed = listed.map_err(|e| InventoryError::Read {
        id: format!("{namespace}/*"),
        message: e.to_string(),
    })?;
    Ok(listed
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect())
}

/// Records `entries` (sorted, deduplicated by key) as the inventory.
pub async fn write(
    client: &Client,
    inv: &InventoryRef,
    entries: &[Entry],
    field_manager: &str,
    retry: Retry,
) -> Result<(), InventoryError> {
    let mut by_key: BTreeMap<&ObjectKey, &Entry> = BTreeMap::new();
    for e in entries {
        by_key.insert(&e.key, e);
    }
    let sorted: Vec<&Entry> = by_key.into_values().collect();
    let text = serde_json::to_string(&sorted).map_err(|e| InventoryError::Write {
        id: inv.id(),
        message: e.to_string(),
    })?;
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(inv.name.clone()),
            namespace: Some(inv.namespace.clone()),
            labels: Some(BTreeMap::from([
                (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
                (INVENTORY_LABEL.to_string(), "true".to_string()),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(OBJECTS_KEY.to_string(), text)])),
        ..ConfigMap::default()
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &inv.namespace);
    let params = PatchParams::apply(field_manager).force();
    let patch = Patch::Apply(&cm);
    let (written, _) = with_retry(retry, || api.patch(&inv.name, &params, &patch)).await;
    written.map(drop).map_err(|e| InventoryError::Write {
        id: inv.id(),
        message: e.to_string(),
    })
}

/// `old ∪ new` by key (the new entry wins).
pub fn union(old: &[Entry], new: &[Entry]) -> Vec<Entry> {
    let mut by_key: BTreeMap<ObjectKey, Entry> = BTreeMap::new();
    for e in old.iter().chain(new) {
        by_key.insert(e.key.clone(), e.clone());
    }
    by_key.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: &str, name: &str, hash: &str) -> Entry {
        Entry {
            key: ObjectKey {
                group: String::new(),
                version: "v1".into(),
                kind: kind.into(),
                namespace: Some("ns".into()),
                name: name.into(),
            },
            hash: Some(hash.into()),
        }
    }

    #[test]
    fn union_keeps_every_key_and_prefers_new() {
        let old = [entry("ConfigMap", "a", "1"), entry("Secret", "a", "1")];
        let new = [entry("ConfigMap", "a", "2"), entry("ConfigMap", "b", "2")];
        let u = union(&old, &new);
        assert_eq!(u.len(), 3);
        assert!(u.contains(&entry("ConfigMap", "a", "2")));
        assert!(u.contains(&entry("Secret", "a", "1")));
    }
}
