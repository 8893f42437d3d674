//! The management cluster's stores on a real API server (audited): before its watch has
//! synced a read falls back to a GET; once synced it is answered from the store, which holds
//! the object as it is now (a change is seen by the next read) and stripped.

use std::time::{Duration, Instant};

use base64::Engine;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

use capstan_operator::testing::management::{LAST_APPLIED_ANNOTATION, Management};
use capstan_operator::testing::watch::{CLUSTER_NAME_LABEL, objects, watch_all};
use capstan_testenv::audit::AuditLog;
use capstan_testenv::{Binaries, TestCluster};

const NS: &str = "default";

/// The GETs of Secret `name` the API server answered.
fn secret_gets(audit: &AuditLog, name: &str) -> usize {
    let path = format!("/api/v1/namespaces/{NS}/secrets/{name}");
    audit
        .requests()
        .iter()
        .filter(|r| r.starts_with("get ") && r.contains(&path))
        .count()
}

/// Waits (at most 30 s) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn kubeconfig(text: &str) -> serde_json::Value {
    json!(base64::engine::general_purpose::STANDARD.encode(text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_reads_come_from_the_store_once_it_has_synced() {
    let test = "kubeconfig_reads_come_from_the_store_once_it_has_synced";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let audit = AuditLog::new().expect("audit log");
    let cluster = TestCluster::start_with_args(&bins, "management-cache", &audit.apiserver_args())
        .await
        .expect("test cluster");
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), NS);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "web-kubeconfig", "namespace": NS,
                     "labels": {CLUSTER_NAME_LABEL: "web"},
                     "annotations": {LAST_APPLIED_ANNOTATION: "{\"big\": true}"}},
        "data": {"value": kubeconfig("first"), "extra": kubeconfig("not read")},
    }))
    .expect("Secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("Secret created");
    let management = Management::new(cluster.client(), vec![NS.to_string()]);
    let value = |secret: &Secret| {
        let bytes = secret.data.as_ref().and_then(|d| d.get("value"));
        bytes.map(|b| String::from_utf8_lossy(&b.0).to_string())
    };

    // No watch feeds the store yet: the API server answers.
    let read = management
        .kubeconfig_secret(NS, "web-kubeconfig")
        .await
        .expect("read")
        .expect("found");
    assert_eq!(value(&read).as_deref(), Some("first"));
    assert_eq!(
        secret_gets(&audit, "web-kubeconfig"),
        1,
        "the unsynced read is a GET"
    );

    // The operator's Secret watch fills the store on the way to its controller.
    let config = watcher::Config::default().labels(CLUSTER_NAME_LABEL);
    let events = management.reflect_secrets(watch_all(vec![secrets.clone()], objects(config)));
    let drained = tokio::spawn(events.for_each(|_| futures::future::ready(())));
    // Synced: a read sends nothing. (A read polled once while the store was not synced may
    // have sent its GET: the count starts once the log has settled.)
    until("a read from the synced store", || {
        management
            .kubeconfig_secret(NS, "web-kubeconfig")
            .now_or_never_ok()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let gets_before = secret_gets(&audit, "web-kubeconfig");
    let stored = management
        .kubeconfig_secret(NS, "web-kubeconfig")
        .await
        .expect("read")
        .expect("found");
    assert_eq!(value(&stored).as_deref(), Some("first"));
    // Stripped: no managedFields, no last-applied annotation, only the kubeconfig.
    assert_eq!(stored.metadata.managed_fields, None);
    assert_eq!(stored.metadata.annotations, None);
    let keys: Vec<&String> = stored.data.iter().flatten().map(|(k, _)| k).collect();
    assert_eq!(keys, ["value"]);

    // A change is what the next read sees, still without a GET.
    secrets
        .patch(
            "web-kubeconfig",
            &PatchParams::default(),
            &Patch::Merge(&json!({"data": {"value": kubeconfig("second")}})),
        )
        .await
        .expect("Secret changed");
    let mut seen = None;
    let start = Instant::now();
    while seen.as_deref() != Some("second") && start.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let read = management.kubeconfig_secret(NS, "web-kubeconfig").await;
        seen = read.expect("read").as_ref().and_then(value);
    }
    assert_eq!(seen.as_deref(), Some("second"), "the change reached the store");
    // Let the audit log catch up with any request the reads sent.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        secret_gets(&audit, "web-kubeconfig"),
        gets_before,
        "reads from the synced store sent GETs"
    );

    // A Secret the store does not hold (e.g. outside the watch) is read from the API server.
    let missing = management
        .kubeconfig_secret(NS, "db-kubeconfig")
        .await
        .expect("read");
    assert!(missing.is_none());
    drained.abort();
}

/// Whether a read is answered at once (from the store) and finds the object.
trait NowOrNeverOk {
    fn now_or_never_ok(self) -> bool;
}

impl<F: std::future::Future<Output = Result<Option<Secret>, kube::Error>>> NowOrNeverOk for F {
    fn now_or_never_ok(self) -> bool {
        use futures::FutureExt;
        matches!(self.now_or_never(), Some(Ok(Some(_))))
    }
}
