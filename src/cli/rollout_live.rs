//! `capstan rollout plan --kubeconfig`: what the plan reads from the management cluster (its
//! Clusters, the namespace's ClusterStacks and ClusterStackReleases, unless files give them)
//! and the live pre-flight of each Cluster's next step against its workload cluster — the
//! reads and verdicts of `capstan preflight` (`super::preflight`), for [`CONCURRENCY`]
//! Clusters at a time, each within [`CLUSTER_TIMEOUT`]. A Cluster whose pre-flight could not
//! be run is blocked with the reason (as the operator holds a step nobody could check).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::{Client, ResourceExt};

use capstan_operator::api::rollout::PreflightResult;
use capstan_operator::api::{ClusterStack, ClusterStackRelease};
use capstan_operator::cli::rollout::ClusterInfo;
use capstan_operator::cli::rollout::ReleaseSeen;
use capstan_stack::capi::ClusterFields;

use super::preflight::{Live, Opener, read_live, report};
use super::rollout_paths::{Across, ClusterPathJson, Stacks};

/// Clusters whose workload clusters are read at once (the operator's bound too).
pub const CONCURRENCY: usize = 8;

/// The longest one Cluster's reads may take, all of them.
pub const CLUSTER_TIMEOUT: Duration = Duration::from_secs(60);

/// The check a pre-flight that could not be run at all fails.
pub const PREFLIGHT_CHECK: &str = "Preflight";

/// The management cluster, connected.
pub struct Management {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl Management {
    pub fn connect(kubeconfig: &Path, context: Option<&str>) -> anyhow::Result<Management> {
        let runtime = super::kube::runtime()?;
        let connected = runtime.block_on(super::kube::connect_to(Some(kubeconfig), context, None))?;
        let client = connected.client;
        // Clusters are read in the Cluster API version the management cluster serves.
        runtime.block_on(capstan_operator::cli::clusters::ensure_discovered(&client));
        Ok(Management { runtime, client })
    }

    /// The Clusters of every namespace (a rollout takes those of its class namespace).
    pub fn clusters(&self) -> anyhow::Result<Vec<ClusterInfo>> {
        let api: Api<DynamicObject> = Api::all_with(
            self.client.clone(),
            &capstan_operator::cli::clusters::cluster_resource(),
        );
        let listed = self
            .runtime
            .block_on(api.list(&Default::default()))
            .context("listing the management cluster's Clusters")?;
        listed
            .items
            .iter()
            .map(|cluster| {
                let object = serde_json::to_value(cluster)?;
                let fields = ClusterFields::from_object(&object).with_context(|| {
                    format!(
                        "Cluster {}/{}",
                        cluster.namespace().unwrap_or_default(),
                        cluster.name_any()
                    )
                })?;
                Ok(super::rollout_paths::cluster_info(&fields, &object))
            })
            .collect()
    }

    /// The ClusterStacks and ClusterStackReleases of `namespace`.
    pub fn stacks(&self, namespace: &str) -> anyhow::Result<Stacks> {
        let stacks = Api::<ClusterStack>::namespaced(self.client.clone(), namespace);
        let releases = Api::<ClusterStackRelease>::namespaced(self.client.clone(), namespace);
        let (stacks, releases) = self.runtime.block_on(async {
            let stacks = stacks
                .list(&Default::default())
                .await
                .with_context(|| format!("listing the ClusterStacks of {namespace}"))?;
            let releases = releases
                .list(&Default::default())
                .await
                .with_context(|| format!("listing the ClusterStackReleases of {namespace}"))?;
            anyhow::Ok((stacks.items, releases.items))
        })?;
        let named = stacks
            .iter()
            .filter_map(|s| Some((s.name_any(), capstan_operator::cli::rollout::stack_name_of(s)?)))
            .collect();
        let seen = releases.iter().map(ReleaseSeen::of).collect();
        Ok(Stacks {
            stacks: named,
            releases: seen,
            origin: format!("namespace {namespace} of the management cluster"),
        })
    }

    /// The pre-flight of each `(namespace/name, STACK@VERSION)`, by Cluster.
    pub fn preflight(
        &self,
        steps: Vec<(String, String)>,
        opener: &Opener,
    ) -> BTreeMap<String, Vec<PreflightResult>> {
        let client = &self.client;
        let read: Vec<(String, Result<Live, String>)> = self.runtime.block_on(
            futures::stream::iter(steps)
                .map(|(key, to)| async move {
                    let (namespace, name) = key.split_once('/').unwrap_or(("", &key));
                    let live = tokio::time::timeout(CLUSTER_TIMEOUT, read_live(client, namespace, name, &to))
                        .await
                        .map_err(|_| format!("no answer within {CLUSTER_TIMEOUT:?}"))
                        .and_then(|r| r.map_err(|e| super::error_chain::error_text(&e)));
                    (key, live)
                })
                .buffer_unordered(CONCURRENCY)
                .collect(),
        );
        // Rendering opens releases (perhaps fetching them): outside the runtime.
        read.into_iter()
            .map(|(key, live)| {
                let results = live
                    .and_then(|live| report(live, opener).map_err(|e| super::error_chain::error_text(&e)))
                    .map_or_else(|why| vec![could_not_run(&why)], |r| r.results);
                (key, results)
            })
            .collect()
    }
}

fn could_not_run(why: &str) -> PreflightResult {
    PreflightResult {
        check: PREFLIGHT_CHECK.to_string(),
        ok: false,
        reason: format!("could not be run: {why}"),
    }
}

/// Runs the live pre-flight of each Cluster's next step (the first of its path) and keeps the
/// results in `paths`; a Cluster without a path, or whose step has no ClusterStack, is not
/// checked.
pub fn run_preflight(
    management: &Management,
    across: &Across,
    paths: &mut [ClusterPathJson],
    opener: &Opener,
) {
    let steps: Vec<(String, String)> = paths
        .iter()
        .filter(|c| c.blocked.is_none())
        .filter_map(|c| {
            let step = c.path.first().filter(|s| c.class.as_ref() != Some(&s.class))?;
            Some((c.cluster.clone(), across.step_target(step)?))
        })
        .collect();
    let mut results = management.preflight(steps, opener);
    for entry in paths {
        entry.preflight = results.remove(&entry.cluster);
    }
}
