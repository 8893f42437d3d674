//! The kube-apiserver dies (SIGKILL) and comes back in the middle of a 500-object apply with
//! an inventory and pruning: the apply ends within its retry bound, reporting what failed;
//! a second apply converges; nothing is pruned. CI runs one restart;
//! `CAPSTAN_APPLY_RESTARTS=N` runs N rounds (each with changed objects, so all are sent).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::apply_common::*;
use capstan_apply::{Applier, ApplyOptions, DesiredObject, ObjectResult, Retry, SyncStatus};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::Api;

const NS: &str = "restart";
const OBJECTS: usize = 500;

/// A Namespace, 300 ConfigMaps, 149 Secrets and 50 Services (several waves), stamped with
/// `round`.
fn desired(round: usize) -> Vec<DesiredObject> {
    let mut text = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n");
    for i in 0..300 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  round: \"{round}\"\n"
        ));
    }
    for i in 0..149 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-{i}\nstringData:\n  round: \"{round}\"\n"
        ));
    }
    for i in 0..50 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\n  annotations:\n    round: \"{round}\"\nspec:\n  ports:\n  - {{port: 80, protocol: TCP}}\n"
        ));
    }
    let objects = objects(&text);
    assert_eq!(objects.len(), OBJECTS);
    objects
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_restart_during_a_500_object_apply() {
    let test = "api_server_restart_during_a_500_object_apply";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let rounds: usize = std::env::var("CAPSTAN_APPLY_RESTARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut cluster = TestCluster::start(&bins, "apply-restart")
        .await
        .expect("cluster starts");
    let done = Arc::new(AtomicUsize::new(0));
    let counter = done.clone();
    let applier = Arc::new(
        Applier::new(cluster.client(), cluster.server_url()).with_progress(Arc::new(
            move |_: &ObjectResult| {
                counter.fetch_add(1, Ordering::Relaxed);
            },
        )),
    );
    let retry = Retry {
        attempts: 3,
        base_delay: Duration::from_millis(100),
        request_timeout: Duration::from_secs(10),
    };
    let opts = ApplyOptions {
        prune: true,
        concurrency: 8,
        retry,
        ..options(NS, Some("restart-test"))
    };

    for round in 0..rounds {
        let objects = desired(round);
        done.store(0, Ordering::Relaxed);
        let started = Instant::now();
        let task = {
            let (applier, objects, opts) = (applier.clone(), objects.clone(), opts.clone());
            tokio::spawn(async move { applier.apply(&objects, &opts).await })
        };
        // Kill the server once a fifth of the objects are through.
        while done.load(Ordering::Relaxed) < OBJECTS / 5 && !task.is_finished() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let at = done.load(Ordering::Relaxed);
        cluster.kill_apiserver();
        tokio::time::sleep(Duration::from_millis(500)).await;
        cluster.start_apiserver().await.expect("API server restarts");
        let first = task.await.expect("apply task").expect("apply returns a report");
        let elapsed = started.elapsed();

        // The kill came in the middle and was noticed (failures or retries).
        assert!(at < OBJECTS, "round {round}: the apply was over before the kill");
        assert!(
            first.summary.failed > 0 || first.summary.apply_requests > OBJECTS,
            "round {round}: {:?}",
            first.summary
        );
        // Bounded: every object has a result, failures say why, nothing was pruned.
        assert_eq!(first.results.len(), OBJECTS, "round {round}: {}", lines(&first));
        assert_eq!(first.summary.pruned, 0, "round {round}: {}", lines(&first));
        for r in first.results.iter().filter(|r| r.status == SyncStatus::Failed) {
            assert!(!r.message.is_empty(), "{}", r.line());
        }
        assert!(
            elapsed < Duration::from_secs(180),
            "round {round} took {elapsed:?}"
        );
        eprintln!(
            "round {round}: killed after {at} results; {} failed, {} requests, {elapsed:?}",
            first.summary.failed, first.summary.apply_requests
        );

        // Converges, still nothing pruned, every object there with this round's data.
        let second = applier.apply(&objects, &opts).await.expect("second apply");
        assert_all_synced(&second, &format!("round {round}, second apply"));
        assert_eq!(second.summary.pruned, 0);
        let round_text = round.to_string();
        let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), NS);
        let cms = cms.list(&Default::default()).await.expect("list").items;
        let ours: Vec<&ConfigMap> = cms
            .iter()
            .filter(|c| c.metadata.name.as_deref() != Some("restart-test"))
            .collect();
        assert_eq!(ours.len(), 300);
        assert!(
            ours.iter()
                .all(|c| c.data.as_ref().and_then(|d| d.get("round")) == Some(&round_text))
        );
        let secrets: Api<Secret> = Api::namespaced(cluster.client(), NS);
        let secrets = secrets.list(&Default::default()).await.expect("list").items;
        assert_eq!(
            secrets
                .iter()
                .filter(|s| s
                    .metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("secret-")))
                .count(),
            149
        );
        let services: Api<Service> = Api::namespaced(cluster.client(), NS);
        assert_eq!(
            services
                .list(&Default::default())
                .await
                .expect("list")
                .items
                .len(),
            50
        );
    }
}
