//! References to objects: for Events and for the objects a controller makes and owns.
//! Below the controllers' steps, so that none of them needs `controller/mod.rs` for these.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};

/// A reference to `object` for events.
pub fn object_ref<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    object.object_ref(&())
}

/// An owner reference to `object` (as controller, so `kubectl` shows who made the owned one).
pub fn owner_reference<K: Resource<DynamicType = ()>>(object: &K) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).to_string(),
        kind: K::kind(&()).to_string(),
        name: object.name_any(),
        uid: object.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}
