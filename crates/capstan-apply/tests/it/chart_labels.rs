//! The labels a chart sets are applied as it sets them (issue 32): capstan marks its objects
//! with `capstan.dev/…` labels only. Objects an earlier capstan applied — with
//! `app.kubernetes.io/managed-by: capstan` written over the chart's value, by the same field
//! manager — get the chart's value back on the next apply, or lose the label when the chart
//! sets none; and capstan still finds its objects (an unchanged set is not sent again).

use std::collections::BTreeMap;

use capstan_apply::inventory::{self, Entry};
use capstan_apply::ssa::{MANAGED_BY_LABEL, MANAGED_LABEL, inventory_id};
use capstan_apply::{Action, Applier, ApplyOptions, InventoryRef, ObjectKey, Retry, parse_stream};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

const NS: &str = "default";

/// What the chart renders: one ConfigMap with Helm's `managed-by`, one without any.
const CHART: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: from-helm
  labels:
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/name: web
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
data: {k: v}
";

/// Writes `name` as capstan before issue 32 applied it: its field manager, the chart's labels
/// (`chart_labels`) with `managed-by: capstan` over whatever the chart said, the inventory's
/// marks and an applied hash.
async fn apply_as_older_capstan(
    api: &Api<ConfigMap>,
    name: &str,
    chart_labels: serde_json::Value,
    inventory: Option<&str>,
) {
    let mut labels = chart_labels;
    labels["app.kubernetes.io/managed-by"] = "capstan".into();
    let mut annotations = json!({"capstan.dev/applied-hash": "0123456789abcdef"});
    if let Some(inventory) = inventory {
        labels["capstan.dev/inventory-id"] = inventory_id(inventory).into();
        annotations["capstan.dev/inventory"] = inventory.into();
    }
    let object = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": labels, "annotations": annotations},
        "data": {"k": "v"},
    });
    api.patch(
        name,
        &PatchParams::apply("capstan").force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap_or_else(|e| panic!("{name} applied as older capstan did: {e}"));
}

async fn labels(api: &Api<ConfigMap>, name: &str) -> BTreeMap<String, String> {
    let object = api.get(name).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    object.metadata.labels.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_managed_by_label_is_applied_and_older_objects_get_it_back() {
    let test = "the_charts_managed_by_label_is_applied_and_older_objects_get_it_back";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::start(&bins, "chart-labels")
        .await
        .expect("cluster starts");
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), NS);
    let applier = Applier::new(cluster.client(), "chart-labels");
    let desired = parse_stream(CHART, "chart").expect("chart objects");

    // With an inventory (the operator's way) and without one (`capstan apply`'s default).
    let inventory = format!("{NS}/addons");
    let with_inventory = ApplyOptions {
        namespace: NS.into(),
        inventory: Some(InventoryRef {
            namespace: NS.into(),
            name: "addons".into(),
        }),
        ..ApplyOptions::default()
    };
    let without = ApplyOptions {
        namespace: NS.into(),
        ..ApplyOptions::default()
    };
    for (options, inventory) in [(&with_inventory, Some(inventory.as_str())), (&without, None)] {
        let chart_labels = [
            ("from-helm", json!({"app.kubernetes.io/name": "web"})),
            ("plain", json!({})),
        ];
        for (name, chart_labels) in chart_labels {
            apply_as_older_capstan(&api, name, chart_labels, inventory).await;
            assert_eq!(
                labels(&api, name).await.get(MANAGED_BY_LABEL).map(String::as_str),
                Some("capstan")
            );
        }
        // Older capstan recorded them in the inventory too.
        if let Some(inv) = &options.inventory {
            let entries: Vec<Entry> = ["from-helm", "plain"]
                .into_iter()
                .map(|name| Entry {
                    key: ObjectKey {
                        group: String::new(),
                        version: "v1".into(),
                        kind: "ConfigMap".into(),
                        namespace: Some(NS.into()),
                        name: name.into(),
                    },
                    hash: Some("0123456789abcdef".into()),
                })
                .collect();
            inventory::write(&cluster.client(), inv, &entries, "capstan", Retry::default())
                .await
                .expect("older inventory written");
        }
        let report = applier.apply(&desired, options).await.expect("apply");
        assert!(!report.failed(), "{report:?}");
        for result in &report.results {
            assert_eq!(result.action, Action::Configured, "{}", result.key);
        }
        let helm = labels(&api, "from-helm").await;
        assert_eq!(helm.get(MANAGED_BY_LABEL).map(String::as_str), Some("Helm"));
        assert_eq!(
            helm.get("app.kubernetes.io/name").map(String::as_str),
            Some("web")
        );
        assert_eq!(helm.get(MANAGED_LABEL).map(String::as_str), Some("true"));
        let plain = labels(&api, "plain").await;
        assert_eq!(plain.get(MANAGED_BY_LABEL), None, "{plain:?}");
        assert_eq!(plain.get(MANAGED_LABEL).map(String::as_str), Some("true"));

        // capstan finds its objects by its own label: an unchanged set is not sent again.
        let again = applier.apply(&desired, options).await.expect("apply again");
        assert_eq!(again.summary.unchanged, desired.len(), "{:?}", again.summary);
        assert_eq!(again.summary.apply_requests, 0, "{:?}", again.summary);
    }
}
