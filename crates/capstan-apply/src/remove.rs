//! Removing what was applied, as an owner's deletion does it: every object an inventory
//! lists that still carries its id (see [`crate::inventory`]), then the inventory's ConfigMap,
//! so nothing of the owner is left on the cluster; and objects named one by one (a stage that
//! deletes its chart's objects).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};

use super::applier::{Applier, ApplyOptions, ApplyReport, Error};
use super::discovery::DiscoveryError;
use super::guard::PruneScope;
use super::inventory::{self, InventoryRef};
use super::object::DesiredObject;
use super::ssa::{self, SendError};

impl Applier {
    /// Deletes every object of `inventory` (any of them, down to none: a deletion), then the
    /// inventory itself once none is left behind. `options` gives the field manager and
    /// retries; its inventory, pruning and scope are this call's. `None` when there was no
    /// inventory (nothing was applied, nothing is written).
    pub async fn remove(
        &self,
        inventory: &InventoryRef,
        options: &ApplyOptions,
    ) -> Result<Option<ApplyReport>, Error> {
        if inventory::read(self.client(), inventory, options.retry)
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let options = ApplyOptions {
            inventory: Some(inventory.clone()),
            prune: true,
            prune_scope: PruneScope::Any,
            ..options.clone()
        };
        let mut report = self.apply(&[], &options).await?;
        if report.failed() || !report.prune_skipped.is_empty() || options.dry_run {
            // What could not be pruned stays listed, for the next try.
            return Ok(Some(report));
        }
        let configmaps: Api<ConfigMap> = Api::namespaced(self.client().clone(), &inventory.namespace);
        let params = DeleteParams::default();
        let (deleted, _) =
            ssa::with_retry(options.retry, || configmaps.delete(&inventory.name, &params)).await;
        match deleted {
            Err(SendError::Kube(e)) if is_not_found(&e) => {}
            Err(e) => report.inventory_error = Some(format!("deleting inventory {}: {e}", inventory.id())),
            Ok(_) => {}
        }
        Ok(Some(report))
    }

    /// Deletes `objects` by kind and name (namespaced ones without a namespace in
    /// `namespace`); absent objects and kinds the server does not serve are fine.
    pub async fn delete(&self, objects: &[DesiredObject], namespace: &str) -> Result<(), Error> {
        for object in objects {
            let what = format!("{} {}", object.kind, object.name);
            let info = match self
                .discovery()
                .resolve(&object.group, &object.version, &object.kind)
                .await
            {
                Ok(info) => info,
                // The kind is not served: none of its objects exist.
                Err(DiscoveryError::UnknownKind { .. }) => continue,
                Err(DiscoveryError::Api { source, .. }) => {
                    return Err(Error::Delete {
                        what: format!("{what}: discovery"),
                        source,
                    });
                }
            };
            let api = self
                .discovery()
                .api(&info, Some(object.namespace.as_deref().unwrap_or(namespace)));
            match api.delete(&object.name, &DeleteParams::default()).await {
                Err(source) if !is_not_found(&source) => return Err(Error::Delete { what, source }),
                _ => {}
            }
        }
        Ok(())
    }
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}
