//! The names a ClusterAddon pass writes: its conditions and the reasons of its stages, its
//! inventories on the workload cluster, and the owner of its renders in the store.

use kube::ResourceExt;

use super::super::owner_reference;
use crate::api::ClusterAddon;
use crate::store::Owner;
use capstan_apply::InventoryRef;
use capstan_stack::render::ADDON_NAMESPACE;

pub const CLUSTER_READY: &str = "ClusterReady";
/// Condition, once the addons were applied: whether the workload API server answers (false
/// from the first failed probe — after a drift watch there failed, or a failed pass — until
/// it answers again). Not a step of `Ready`, which says the addons are applied.
pub const WORKLOAD_REACHABLE: &str = "WorkloadReachable";
/// The inventory of a single-chart addon on the workload cluster.
pub fn inventory(addon: &ClusterAddon) -> InventoryRef {
    InventoryRef {
        namespace: ADDON_NAMESPACE.into(),
        name: format!("capstan.caddon.{}", addon.name_any()),
    }
}

/// The inventories of `addon` on its workload cluster: the one chart's, the recorded stages',
/// and those of `listed` (the inventory names in [`ADDON_NAMESPACE`]) of its stages of
/// earlier hooks, each once.
pub fn inventories_of(addon: &ClusterAddon, listed: &[String]) -> Vec<InventoryRef> {
    let single = inventory(addon);
    let stage_prefix = format!("{}.", single.name);
    let recorded = addon.status.iter().flat_map(|s| &s.stages);
    let mut names: Vec<String> = std::iter::once(single.name.clone())
        .chain(recorded.map(|s| stage_inventory(addon, &s.name).name))
        .chain(listed.iter().filter(|n| n.starts_with(&stage_prefix)).cloned())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| InventoryRef {
            namespace: ADDON_NAMESPACE.into(),
            name,
        })
        .collect()
}

/// The inventory of one stage's objects on the workload cluster.
pub fn stage_inventory(addon: &ClusterAddon, stage: &str) -> InventoryRef {
    InventoryRef {
        namespace: ADDON_NAMESPACE.into(),
        name: format!("capstan.caddon.{}.{stage}", addon.name_any()),
    }
}

/// Reason of `Applied` (and so `Ready`) while the stages of a hook run.
pub const STAGE_IN_PROGRESS: &str = "StageInProgress";
/// Reason of `Applied` while the recorded stages hold a value this version does not know.
pub const UNKNOWN_STAGE_STATE: &str = "UnknownStageState";
/// Reason of `Applied` while a stage waits for its pre- or post-condition.
pub const WAITING_FOR_CONDITION: &str = "WaitingForCondition";

pub fn store_owner(addon: &ClusterAddon) -> Owner {
    Owner {
        namespace: addon.namespace().unwrap_or_default(),
        short_kind: "caddon",
        name: addon.name_any(),
        reference: owner_reference(addon),
    }
}

#[cfg(test)]
mod inventories_tests {
    use super::inventories_of;
    use crate::api::{ClusterAddon, ClusterAddonSpec, ClusterAddonStatus, StageStatus};

    #[test]
    fn cleanup_covers_every_inventory_of_the_addon_and_no_other() {
        let mut addon = ClusterAddon::new("cluster-addon-web", ClusterAddonSpec::default());
        let names = |addon: &ClusterAddon, listed: &[&str]| -> Vec<String> {
            let listed: Vec<String> = listed.iter().map(|n| n.to_string()).collect();
            inventories_of(addon, &listed)
                .into_iter()
                .map(|i| i.name)
                .collect()
        };
        // Nothing recorded or listed: the one chart's.
        assert_eq!(names(&addon, &[]), ["capstan.caddon.cluster-addon-web"]);
        addon.status = Some(ClusterAddonStatus {
            stages: vec![StageStatus {
                name: "ngnix".into(),
                ..StageStatus::default()
            }],
            ..ClusterAddonStatus::default()
        });
        let listed = [
            // A stage of the creation hook, no longer in the status.
            "capstan.caddon.cluster-addon-web.metrics-server",
            "capstan.caddon.cluster-addon-web.ngnix",
            // Another addon's, and one whose name only starts alike.
            "capstan.caddon.cluster-addon-db",
            "capstan.caddon.cluster-addon-webshop",
            "capstan.cluster-class",
        ];
        assert_eq!(
            names(&addon, &listed),
            [
                "capstan.caddon.cluster-addon-web",
                "capstan.caddon.cluster-addon-web.metrics-server",
                "capstan.caddon.cluster-addon-web.ngnix",
            ]
        );
    }
}
