//! What every controller shares: the client, the settings, the sources (with the compiled
//! releases), the render store, metrics, the management cluster's applier and stores, the
//! workload cluster cache and the event recorder. What one controller keeps for itself (its
//! drift wake-ups and watches, polls, failures) is its own (`controller::*::*Controller`).

use std::sync::Arc;

use crate::events::{Event, EventType, Recorder, Reporter};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::reflector::Store;

use capstan_apply::Applier;

use super::api::ClusterStack;
use super::metrics::Metrics;
use super::settings::Settings;
use super::sources::Sources;
use super::store::RenderStore;

/// Shared state of the controllers.
pub struct Context {
    pub client: Client,
    pub settings: Settings,
    pub sources: Sources,
    pub store: RenderStore,
    pub metrics: Arc<Metrics>,
    /// Applies to the management cluster (keeps its discovery cache).
    pub applier: Applier,
    /// The management cluster's objects a ClusterAddon pass reads, from reflector stores.
    pub management: crate::management::Management,
    /// Connected workload clusters, one per Cluster.
    pub workloads: crate::addon::cache::WorkloadClusters,
    recorder: Recorder,
    /// The ClusterStacks as the ClusterStack controller's watch sees them.
    pub stacks: Store<ClusterStack>,
}

impl Context {
    pub fn new(
        client: Client,
        settings: Settings,
        sources: Sources,
        metrics: Arc<Metrics>,
        stacks: Store<ClusterStack>,
    ) -> Context {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "capstan".into(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        Context {
            store: RenderStore::new(client.clone()),
            applier: Applier::new(client.clone(), "the management cluster"),
            management: crate::management::Management::new(client.clone(), settings.namespaces.clone()),
            workloads: crate::addon::cache::WorkloadClusters::new(settings.workload_clusters),
            client,
            settings,
            sources,
            metrics,
            recorder,
            stacks,
        }
    }

    /// Publishes a Kubernetes Event about `object`; a failure is logged, never fatal.
    pub async fn event(
        &self,
        object: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        self.event_related(object, None, warning, reason, action, note)
            .await;
    }

    /// [`Context::event`] naming a second object (`related`). Repeats of one Event (same
    /// object, related object, reason, action and message) become one series; another message
    /// or `related` object makes a separate Event ([`crate::events`]).
    pub async fn event_related(
        &self,
        object: &ObjectReference,
        related: Option<ObjectReference>,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let name = format!(
            "{}/{}/{}",
            object.kind.as_deref().unwrap_or_default(),
            object.namespace.as_deref().unwrap_or_default(),
            object.name.as_deref().unwrap_or_default()
        );
        if warning {
            tracing::warn!(object = %name, reason, "{note}");
        } else {
            tracing::info!(object = %name, reason, "{note}");
        }
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            note: Some(truncate(note, 1024)),
            action: action.into(),
            secondary: related,
        };
        if let Err(e) = self.recorder.publish(&event, object).await {
            tracing::debug!(error = %e, reason, "publishing an event failed");
        }
    }
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}
