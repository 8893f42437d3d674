//! What an apply costs its API server, counted in the server's audit log (issue 36 §1): a
//! first apply into a fresh namespace sends one apply per object and one inventory write,
//! and lists nothing; an apply of the unchanged set writes nothing and lists each resource of
//! the inventory once; an upgrade lists the same and writes what changed, the inventory
//! widened before and narrowed after pruning; with the inventory's kinds watched by the
//! caller (the operator's drift watches) nothing is listed and only changed objects are sent.
//! Discovery and `/version` are not counted.

use capstan_apply::{Applier, ApplyOptions, DesiredObject, InventoryRef, parse_stream};
use capstan_testenv::audit::{AuditLog, verbs};
use capstan_testenv::{Binaries, TestCluster};

const NS: &str = "counted";

/// A Namespace and, in it, `configs` ConfigMaps, two Secrets and a ServiceAccount.
fn objects(configs: usize, value: &str) -> Vec<DesiredObject> {
    let mut text = format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n");
    for i in 0..configs {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: config-{i}}}\ndata: {{k: {value}}}\n"
        ));
    }
    for i in 0..2 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata: {{name: secret-{i}}}\nstringData: {{k: v}}\n"
        ));
    }
    text.push_str("---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: runner}\n");
    parse_stream(&text, "counted").expect("objects parse")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_pass_sends_only_the_requests_it_needs() {
    let test = "each_pass_sends_only_the_requests_it_needs";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let audit = AuditLog::new().expect("audit log");
    let cluster = TestCluster::start_with_args(&bins, "request-counts", &audit.apiserver_args())
        .await
        .expect("cluster starts");
    let applier = Applier::new(cluster.client(), "request-counts");
    let opts = ApplyOptions {
        namespace: NS.into(),
        inventory: Some(InventoryRef {
            namespace: NS.into(),
            name: "counted".into(),
        }),
        prune: true,
        ..ApplyOptions::default()
    };

    // First apply of 10 objects into a namespace that does not exist yet (nor the inventory):
    // the inventory read, 10 applies, 1 inventory write; no list.
    let first = objects(6, "a");
    let before = audit.requests().len();
    let report = applier.apply(&first, &opts).await.expect("first apply");
    assert!(!report.failed(), "{report:?}");
    assert_eq!(report.summary.created, first.len(), "{:?}", report.summary);
    let (by_verb, sent) = audit.sent_since(before).await;
    eprintln!(
        "first apply of {}: {} requests: {sent:#?}",
        first.len(),
        sent.len()
    );
    assert_eq!(
        by_verb,
        verbs(&[("get", 1), ("patch", first.len() + 1)]),
        "{sent:#?}"
    );
    // Each answer's resourceVersion is told (where a drift watch of the kind may start).
    for result in &report.results {
        let version = result.resource_version.as_deref().unwrap_or_default();
        assert!(version.parse::<u64>().is_ok(), "{result:?}");
    }

    // The unchanged set: the inventory read and one list per resource of it (Namespace,
    // ConfigMap, Secret, ServiceAccount); no apply, no inventory write.
    let before = audit.requests().len();
    let report = applier.apply(&first, &opts).await.expect("idle apply");
    assert_eq!(report.summary.unchanged, first.len(), "{:?}", report.summary);
    // Nothing sent, nothing told.
    assert!(
        report.results.iter().all(|r| r.resource_version.is_none()),
        "{report:?}"
    );
    let (by_verb, sent) = audit.sent_since(before).await;
    eprintln!("unchanged set: {} requests: {sent:#?}", sent.len());
    assert_eq!(by_verb, verbs(&[("get", 1), ("list", 4)]), "{sent:#?}");

    // An upgrade: every ConfigMap changed, one more, a Secret less (pruned). The same lists;
    // 7 applies, the inventory widened (a new object) and narrowed (one pruned); the pruned
    // Secret read (still ours?) and deleted.
    let mut upgrade = objects(7, "b");
    upgrade.retain(|o| o.name != "secret-1");
    let before = audit.requests().len();
    let report = applier.apply(&upgrade, &opts).await.expect("upgrade");
    assert!(!report.failed(), "{report:?}");
    assert_eq!(
        (
            report.summary.configured,
            report.summary.created,
            report.summary.pruned
        ),
        (6, 1, 1),
        "{:?}",
        report.summary
    );
    let (by_verb, sent) = audit.sent_since(before).await;
    eprintln!("upgrade: {} requests: {sent:#?}", sent.len());
    assert_eq!(
        by_verb,
        verbs(&[("delete", 1), ("get", 2), ("list", 4), ("patch", 7 + 2)]),
        "{sent:#?}"
    );

    // The next upgrade, with every kind of the inventory watched since the last apply (as
    // the operator's drift watches do): the inventory read, no list; only the 7 changed
    // ConfigMaps sent, the inventory written once with their new hashes.
    let kinds = ["Namespace", "ConfigMap", "Secret", "ServiceAccount"];
    let watched = ApplyOptions {
        watched_kinds: kinds
            .iter()
            .map(|k| (String::new(), "v1".to_string(), k.to_string()))
            .collect(),
        ..opts.clone()
    };
    let mut next = objects(7, "c");
    next.retain(|o| o.name != "secret-1");
    let before = audit.requests().len();
    let report = applier.apply(&next, &watched).await.expect("watched upgrade");
    assert!(!report.failed(), "{report:?}");
    assert_eq!(
        (report.summary.configured, report.summary.unchanged),
        (7, next.len() - 7),
        "{:?}",
        report.summary
    );
    let (by_verb, sent) = audit.sent_since(before).await;
    eprintln!("watched upgrade: {} requests: {sent:#?}", sent.len());
    assert_eq!(by_verb, verbs(&[("get", 1), ("patch", 7 + 1)]), "{sent:#?}");

    // The same set again, watched: the inventory read and nothing else.
    let before = audit.requests().len();
    let report = applier.apply(&next, &watched).await.expect("watched idle apply");
    assert_eq!(report.summary.unchanged, next.len(), "{:?}", report.summary);
    let (by_verb, sent) = audit.sent_since(before).await;
    assert_eq!(by_verb, verbs(&[("get", 1)]), "{sent:#?}");
}
