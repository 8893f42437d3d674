//! What wakes a ClusterAddon besides its own object, its Cluster and drift: its user values
//! changing (the ClusterStack's `addonValues`, labelled ConfigMaps and Secrets of its
//! namespace).

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};

use crate::api::{ClusterAddon, ClusterStack};
use crate::watch::{Scope, changed, objects, spec_or_deletion, watch_all};

/// Label of a ConfigMap or Secret holding a Cluster's user values (`addon-values-from`): a
/// change to one so labelled re-renders the ClusterAddons of its namespace at once (unlabelled
/// ones are read again on the next pass).
pub const USER_VALUES_LABEL: &str = "clusterstack.x-k8s.io/addon-values";

/// The ClusterAddons to look at again when user values change: those using a ClusterStack
/// whose spec (`addonValues`) changed, and those in the namespace of a labelled ConfigMap or
/// Secret that changed. A wake-up with nothing changed renders nothing (the inputs hash).
pub fn user_value_changes(
    client: &Client,
    scope: &Scope,
    addons: &reflector::Store<ClusterAddon>,
) -> impl futures::Stream<Item = ObjectRef<ClusterAddon>> + Send + 'static {
    // The store may hold other shards' ClusterAddons (see [`FleetWatches`]): only this
    // scope's are woken.
    let (of_stack, scope_of_stack) = (addons.clone(), scope.clone());
    // Every shard reads every ClusterStack (a Cluster's class may come from another shard's).
    let stacks = changed(
        watch_all(
            scope.apis::<ClusterStack>(client),
            objects(watcher::Config::default()),
        ),
        spec_or_deletion::<ClusterStack>,
        false,
    )
    .map_ok(move |stack| addons_of_stack(&scope_of_stack.admitted(&of_stack), &stack))
    .boxed();
    let labelled = watcher::Config::default().labels(USER_VALUES_LABEL);
    let in_namespace = |store: reflector::Store<ClusterAddon>| {
        let scope = scope.clone();
        move |namespace: Option<String>| {
            addons_in(&scope.admitted(&store), namespace.as_deref().unwrap_or_default())
        }
    };
    let config_maps = watch_all(scope.apis::<ConfigMap>(client), objects(labelled.clone()))
        .applied_objects()
        .map_ok({
            let wake = in_namespace(addons.clone());
            move |map| wake(map.metadata.namespace)
        })
        .boxed();
    let secrets = watch_all(scope.apis::<Secret>(client), objects(labelled))
        .applied_objects()
        .map_ok({
            let wake = in_namespace(addons.clone());
            move |secret| wake(secret.metadata.namespace)
        })
        .boxed();
    futures::stream::select_all([stacks, config_maps, secrets]).flat_map(|batch| {
        futures::stream::iter(match batch {
            Ok(refs) => refs,
            // The watch retries with backoff; the pass interval covers the gap.
            Err(error) => {
                tracing::warn!(%error, "watching user values");
                Vec::new()
            }
        })
    })
}

/// The ClusterAddons whose release (`spec.clusterStack`) is one of `stack`'s.
fn addons_of_stack(addons: &[Arc<ClusterAddon>], stack: &ClusterStack) -> Vec<ObjectRef<ClusterAddon>> {
    let spec = &stack.spec;
    let prefix = format!(
        "{}-{}-{}-",
        spec.provider,
        spec.name,
        spec.kubernetes_version.replace('.', "-")
    );
    addons
        .iter()
        .filter(|a| {
            a.spec
                .cluster_stack
                .as_deref()
                .is_some_and(|c| c.starts_with(&prefix))
        })
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

/// The ClusterAddons in `namespace`.
fn addons_in(addons: &[Arc<ClusterAddon>], namespace: &str) -> Vec<ObjectRef<ClusterAddon>> {
    addons
        .iter()
        .filter(|a| a.metadata.namespace.as_deref() == Some(namespace))
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}
