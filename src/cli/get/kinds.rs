//! The kinds `capstan get` lists, and where a list reads from: each kind says how its objects
//! become rows and a table (the rows themselves are decided in `rows`).

use std::collections::BTreeMap;

use anyhow::Context;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ListParams};
use serde::Serialize;

use capstan_operator::api::rollout::ClusterStackRollout;
use capstan_operator::api::{ClusterAddon, ClusterStack, ClusterStackRelease};

use super::follow;
use super::rows::{
    self, AddonRow, Layout, ReleaseRow, RolloutRow, StackRow, addons_table, releases_table, rollouts_table,
    stacks_table,
};
use super::select;
use super::table::Table;

/// Where a list reads from.
pub(super) struct Scope<'a> {
    pub(super) client: &'a Client,
    pub(super) namespace: Option<&'a str>,
    pub(super) params: ListParams,
    /// ClusterAddons selected by their Clusters' labels (`-l` of `get addons`).
    pub(super) by_cluster: Option<select::ByCluster>,
}

impl Scope<'_> {
    pub(super) fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match self.namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }
}

/// One kind `capstan get` lists: how its objects become rows and a table.
pub(super) trait Kind {
    type Object: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static;
    type Row: Serialize + Clone;
    /// Plural of the kind in messages and `kind` of the JSON list (`AddonList`).
    const PLURAL: &'static str;
    const LIST_KIND: &'static str;
    /// What besides the objects the rows need, read once.
    type Extra: Send;
    async fn extra(scope: &Scope<'_>) -> anyhow::Result<Self::Extra>;
    /// For `-w`: `extra` anew each time it changes; `None` when the rows need nothing that
    /// changes apart from the objects (or it is not followed).
    fn follow_extra(_scope: &Scope<'_>) -> Option<BoxStream<'static, Self::Extra>> {
        None
    }
    fn row(object: &Self::Object, extra: &Self::Extra) -> Self::Row;
    fn sort_key(row: &Self::Row) -> (String, String);
    fn ready(row: &Self::Row) -> bool;
    fn table(rows: &[Self::Row], layout: Layout, now: Timestamp) -> Table;
    /// Whether `-l` selects by the objects' Clusters ([`select::ByCluster`]), not by
    /// their own labels on the API server.
    const BY_CLUSTER: bool = false;
    /// Whether `object` is among those `-l` selected by their Clusters.
    fn selected(_object: &Self::Object, _by_cluster: &select::ByCluster) -> bool {
        true
    }
}

pub(super) struct StackKind;
pub(super) struct ReleaseKind;
pub(super) struct AddonKind;
pub(super) struct RolloutKind;

impl Kind for RolloutKind {
    type Object = ClusterStackRollout;
    type Row = RolloutRow;
    const PLURAL: &'static str = "ClusterStackRollouts";
    const LIST_KIND: &'static str = "RolloutList";
    type Extra = ();
    async fn extra(_: &Scope<'_>) -> anyhow::Result<()> {
        Ok(())
    }
    fn row(object: &ClusterStackRollout, _: &()) -> RolloutRow {
        RolloutRow::of(object)
    }
    fn sort_key(row: &RolloutRow) -> (String, String) {
        (row.namespace.clone(), row.name.clone())
    }
    fn ready(row: &RolloutRow) -> bool {
        row.is_settled()
    }
    fn table(rows: &[RolloutRow], layout: Layout, now: Timestamp) -> Table {
        rollouts_table(rows, layout, now)
    }
}

impl Kind for StackKind {
    type Object = ClusterStack;
    type Row = StackRow;
    const PLURAL: &'static str = "ClusterStacks";
    const LIST_KIND: &'static str = "StackList";
    type Extra = ();
    async fn extra(_: &Scope<'_>) -> anyhow::Result<()> {
        Ok(())
    }
    fn row(object: &ClusterStack, _: &()) -> StackRow {
        StackRow::of(object)
    }
    fn sort_key(row: &StackRow) -> (String, String) {
        (row.namespace.clone(), row.name.clone())
    }
    fn ready(row: &StackRow) -> bool {
        row.ready.is_ready()
    }
    fn table(rows: &[StackRow], layout: Layout, now: Timestamp) -> Table {
        stacks_table(rows, layout, now)
    }
}

impl Kind for ReleaseKind {
    type Object = ClusterStackRelease;
    type Row = ReleaseRow;
    const PLURAL: &'static str = "ClusterStackReleases";
    const LIST_KIND: &'static str = "ReleaseList";
    /// The ClusterAddons, to count the Clusters on each release.
    type Extra = Vec<ClusterAddon>;
    async fn extra(scope: &Scope<'_>) -> anyhow::Result<Vec<ClusterAddon>> {
        let addons = scope.api::<ClusterAddon>();
        Ok(addons
            .list(&ListParams::default())
            .await
            .context("listing ClusterAddons")?
            .items)
    }
    /// The CLUSTERS column follows the ClusterAddons.
    fn follow_extra(scope: &Scope<'_>) -> Option<BoxStream<'static, Vec<ClusterAddon>>> {
        Some(follow::follow_all(scope.api::<ClusterAddon>(), "ClusterAddons"))
    }
    fn row(object: &ClusterStackRelease, addons: &Vec<ClusterAddon>) -> ReleaseRow {
        ReleaseRow::of(object, addons)
    }
    fn sort_key(row: &ReleaseRow) -> (String, String) {
        (row.namespace.clone(), row.name.clone())
    }
    fn ready(row: &ReleaseRow) -> bool {
        row.ready.is_ready()
    }
    fn table(rows: &[ReleaseRow], layout: Layout, now: Timestamp) -> Table {
        releases_table(rows, layout, now)
    }
}

impl Kind for AddonKind {
    type Object = ClusterAddon;
    type Row = AddonRow;
    const PLURAL: &'static str = "ClusterAddons";
    const LIST_KIND: &'static str = "AddonList";
    /// The newest drift correction of each addon.
    type Extra = BTreeMap<(String, String), String>;
    async fn extra(scope: &Scope<'_>) -> anyhow::Result<Self::Extra> {
        let events = scope.api::<Event>();
        let params = ListParams::default().fields(&format!(
            "involvedObject.kind=ClusterAddon,reason={}",
            rows::DRIFT_CORRECTED
        ));
        let events = events.list(&params).await.context("listing Events")?;
        Ok(rows::last_drift_corrections(&events.items))
    }
    fn row(object: &ClusterAddon, drift: &Self::Extra) -> AddonRow {
        AddonRow::of(object, drift)
    }
    fn sort_key(row: &AddonRow) -> (String, String) {
        (row.namespace.clone(), row.cluster.clone())
    }
    fn ready(row: &AddonRow) -> bool {
        row.ready.is_ready()
    }
    fn table(rows: &[AddonRow], layout: Layout, now: Timestamp) -> Table {
        addons_table(rows, layout, now)
    }
    const BY_CLUSTER: bool = true;
    fn selected(addon: &ClusterAddon, by_cluster: &select::ByCluster) -> bool {
        by_cluster.selects(addon)
    }
}
