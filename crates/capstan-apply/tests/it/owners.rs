//! Two inventories that apply the same object (issue 45 §5), on a real API server: the
//! second, not told to take over, leaves the first's object alone — it is a conflict naming
//! the first inventory, not sent, not recorded in the second inventory — and applies the rest;
//! an object the second had recorded that the first took over since is left alone too (and
//! leaves the second inventory, unpruned). Told to take over, the second takes it.

use capstan_apply::inventory::{self, InventoryRef};
use capstan_apply::ssa::INVENTORY_ANNOTATION;
use capstan_apply::{Applier, ApplyOptions, Retry, SyncStatus, parse_stream};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;

fn objects(names: &[&str], value: &str) -> Vec<capstan_apply::DesiredObject> {
    let text: Vec<String> = names
        .iter()
        .map(|n| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\ndata: {{v: \"{value}\"}}\n")
        })
        .collect();
    parse_stream(&text.join("---\n"), "owners").expect("objects parse")
}

fn options(ns: &str, inventory: &str, take_over: bool) -> ApplyOptions {
    ApplyOptions {
        namespace: ns.into(),
        inventory: Some(InventoryRef {
            namespace: ns.into(),
            name: inventory.into(),
        }),
        prune: true,
        take_over,
        ..ApplyOptions::default()
    }
}

async fn owner(api: &Api<ConfigMap>, name: &str) -> String {
    let object = api.get(name).await.expect("object");
    object
        .metadata
        .annotations
        .and_then(|mut a| a.remove(INVENTORY_ANNOTATION))
        .unwrap_or_default()
}

async fn recorded(cluster: &TestCluster, ns: &str, inventory: &str) -> Vec<String> {
    let inv = InventoryRef {
        namespace: ns.into(),
        name: inventory.into(),
    };
    let entries = inventory::read(&cluster.client(), &inv, Retry::default())
        .await
        .expect("inventory read")
        .unwrap_or_default();
    entries.into_iter().map(|e| e.key.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_another_inventory_owns_is_left_to_it_unless_taken_over() {
    let test = "an_object_another_inventory_owns_is_left_to_it_unless_taken_over";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, test)
        .await
        .expect("cluster starts");
    let ns = cluster.namespace().to_string();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let applier = Applier::new(cluster.client(), test);
    let (first, second) = (format!("{ns}/first"), format!("{ns}/second"));

    let report = applier
        .apply(&objects(&["shared"], "1"), &options(&ns, "first", false))
        .await
        .expect("first apply");
    assert!(!report.failed(), "{report:?}");

    // The second owner: the shared object is the first's; its own is applied.
    let wanted = objects(&["shared", "own"], "2");
    let report = applier
        .apply(&wanted, &options(&ns, "second", false))
        .await
        .expect("second apply");
    let shared = report
        .results
        .iter()
        .find(|r| r.key.name == "shared")
        .expect("shared");
    assert_eq!(shared.status, SyncStatus::Conflict, "{report:?}");
    assert!(shared.message.contains(&first), "{}", shared.message);
    assert!(!report.failed(), "a conflict is no failure: {report:?}");
    assert_eq!(
        (report.summary.created, report.summary.conflicts),
        (1, 1),
        "{:?}",
        report.summary
    );
    assert_eq!(owner(&api, "shared").await, first);
    let data = api.get("shared").await.expect("shared").data.unwrap_or_default();
    assert_eq!(data.get("v").map(String::as_str), Some("1"), "not written");
    assert_eq!(recorded(&cluster, &ns, "second").await, ["own"]);
    // Again: the same, and nothing sent.
    let report = applier
        .apply(&wanted, &options(&ns, "second", false))
        .await
        .expect("second apply again");
    assert_eq!(report.summary.conflicts, 1, "{:?}", report.summary);
    assert_eq!(report.summary.apply_requests, 0, "{:?}", report.summary);

    // Taking over, asked for.
    let report = applier
        .apply(&wanted, &options(&ns, "second", true))
        .await
        .expect("take-over apply");
    assert!(!report.failed(), "{report:?}");
    let shared = report
        .results
        .iter()
        .find(|r| r.key.name == "shared")
        .expect("shared");
    assert_eq!(shared.status, SyncStatus::Synced, "{report:?}");
    assert_eq!(owner(&api, "shared").await, second);
    assert_eq!(recorded(&cluster, &ns, "second").await, ["own", "shared"]);

    // The first, which still records it: left to the second, dropped from the first
    // inventory, not pruned.
    let report = applier
        .apply(&objects(&["shared"], "1"), &options(&ns, "first", false))
        .await
        .expect("first apply again");
    let shared = report
        .results
        .iter()
        .find(|r| r.key.name == "shared")
        .expect("shared");
    assert_eq!(shared.status, SyncStatus::Conflict, "{report:?}");
    assert!(shared.message.contains(&second), "{}", shared.message);
    assert_eq!(report.prune_skipped.len(), 1, "{report:?}");
    assert_eq!(owner(&api, "shared").await, second);
    assert!(recorded(&cluster, &ns, "first").await.is_empty());
}
