//! `capstan get addon CLUSTER` (and `describe addon`): the shell that reads one ClusterAddon,
//! its Events, its value sources and its objects' live health; `describe_addon` decides what is
//! printed.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

use capstan_operator::api::{ClusterAddon, ClusterStack};

use super::args::{Format, OneArgs};
use super::describe_addon::{self, Detail, Health, Live};
use super::kinds::AddonKind;
use super::print::{resource_name, yaml};
use super::rows::{self, AddonRow, StackRow};
use super::table::colour_stdout;

/// The longest the view waits for the workload cluster.
const WORKLOAD_TIMEOUT: Duration = Duration::from_secs(15);

pub(super) async fn show_addon(
    target: &crate::cli::kube::Target,
    args: &OneArgs,
) -> anyhow::Result<ExitCode> {
    let ns = target.namespace.as_str();
    let addons: Api<ClusterAddon> = Api::namespaced(target.client.clone(), ns);
    let list = addons
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing ClusterAddons in namespace {ns} on {}", target.server))?;
    let found = list
        .items
        .iter()
        .find(|a| a.spec.cluster_ref.name.as_deref() == Some(args.cluster.as_str()))
        .or_else(|| list.items.iter().find(|a| a.name_any() == args.cluster));
    let Some(addon) = found else {
        bail!("no ClusterAddon for Cluster {} in namespace {ns}", args.cluster);
    };
    let events: Api<Event> = Api::namespaced(target.client.clone(), ns);
    let events = events
        .list(&ListParams::default().fields(&format!(
            "involvedObject.kind=ClusterAddon,involvedObject.name={}",
            addon.name_any()
        )))
        .await
        .with_context(|| {
            format!(
                "listing the Events of ClusterAddon {}",
                describe_addon::label(addon)
            )
        })?
        .items;
    let row = AddonRow::of(addon, &rows::last_drift_corrections(&events));
    let values = value_sources(&target.client, &row).await;
    let live = match tokio::time::timeout(WORKLOAD_TIMEOUT, live_health(&target.client, addon)).await {
        Ok(live) => live,
        Err(_) => Err(format!(
            "the workload cluster gave no answer within {}s",
            WORKLOAD_TIMEOUT.as_secs()
        )),
    };
    match args.output {
        Some(Format::Name) => println!("{}", resource_name::<AddonKind>(&addon.name_any())),
        Some(Format::Json | Format::Yaml) => {
            let json = serde_json::json!({
                "kind": "AddonDetail",
                "summary": row,
                "objects": describe_addon::object_rows(addon, &live),
                "health": live.as_ref().err(),
                "stages": addon.status.as_ref().map(|s| s.stages.clone()).unwrap_or_default(),
                "values": values,
            });
            if args.output == Some(Format::Json) {
                println!("{}", serde_json::to_string_pretty(&json)?);
            } else {
                print!("{}", yaml(&json)?);
            }
        }
        _ => print!(
            "{}",
            describe_addon::render(
                addon,
                &Detail {
                    row: &row,
                    live: &live,
                    values: &values,
                    events: &events,
                    now: Timestamp::now(),
                    colour: colour_stdout(),
                },
            )
        ),
    }
    if args.fail_not_ready && !row.ready.is_ready() {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The sources of the addon's user values: the Cluster's annotations and the ClusterStack of
/// its release (a Cluster or stack that cannot be read adds nothing).
async fn value_sources(client: &Client, row: &AddonRow) -> Vec<String> {
    let ns = row.namespace.as_str();
    let cluster = capstan_operator::cli::clusters::get(client, ns, &row.cluster)
        .await
        .ok()
        .flatten();
    let stacks: Api<ClusterStack> = Api::namespaced(client.clone(), ns);
    let stack_with_values = match stacks.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .iter()
            .find(|s| Some(StackRow::of(s).stack) == row.stack && s.spec.addon_values.is_some())
            .map(|s| format!("{ns}/{}", s.name_any())),
        Err(_) => None,
    };
    let annotations = cluster.map(|c| c.annotations().clone()).unwrap_or_default();
    describe_addon::value_sources(stack_with_values.as_deref(), ns, &row.cluster, &annotations)
}

/// The health of every object of the addon's status, read from its workload cluster.
async fn live_health(management: &Client, addon: &ClusterAddon) -> Live {
    use capstan_apply::health::{Readiness, readiness};
    use capstan_operator::cli::workload;
    let ns = addon.namespace().unwrap_or_default();
    let cluster = addon.spec.cluster_ref.name.clone().unwrap_or_default();
    let secret = workload::read_secret(management, &ns, &cluster)
        .await
        .map_err(|e| e.to_string())?;
    let workload = workload::connect(&secret).await.map_err(|e| e.to_string())?;
    let discovery = capstan_apply::discovery::Discovery::new(workload.client.clone());
    let mut found = BTreeMap::new();
    let resources = addon
        .status
        .as_ref()
        .map(|s| s.resources.as_slice())
        .unwrap_or_default();
    for r in resources {
        let key = (
            r.group.clone(),
            r.kind.clone(),
            r.namespace.clone(),
            r.name.clone(),
        );
        let health = match discovery.resolve(&r.group, &r.version, &r.kind).await {
            Err(e) => Health::Unknown(e.to_string()),
            Ok(info) => {
                let api = discovery.api(&info, Some(r.namespace.as_str()).filter(|n| !n.is_empty()));
                match api.get_opt(&r.name).await {
                    Err(e) => Health::Unknown(e.to_string()),
                    Ok(None) => Health::Missing,
                    Ok(Some(object)) => match serde_json::to_value(&object) {
                        Err(e) => Health::Unknown(e.to_string()),
                        Ok(json) => match readiness(&r.group, &r.kind, &json) {
                            Readiness::Ready => Health::Healthy,
                            Readiness::Pending(why) => Health::Progressing(why),
                            Readiness::Failed(why) => Health::Degraded(why),
                        },
                    },
                }
            }
        };
        found.insert(key, health);
    }
    Ok(found)
}
