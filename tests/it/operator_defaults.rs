//! Issue 21 item 7: the cluster-stack operator's sample ClusterStack, applied as it is (no
//! `spec.source`), works with the operator's default source (`--git-org-name`,
//! `--git-repository-name`, as CSO's `GIT_ORG_NAME`/`GIT_REPOSITORY_NAME`), and state
//! changes are Events: one `ReleaseCreated` per release, `NoRelease`, a `Ready` with a note.

use std::time::Duration;

use crate::operator_common::eventually;
use capstan_operator::api::{ClusterStack, ClusterStackRelease};
use kube::api::{Api, PostParams};
use serde_json::json;

/// `(reason, note)` of the Events about ClusterStack `name` in `namespace`.
async fn events_of(client: kube::Client, namespace: &str, name: &str) -> Vec<(String, String)> {
    crate::operator_common::events_about(client, namespace, "ClusterStack", name)
        .await
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect()
}

fn stack(namespace: &str, name: &str, kubernetes: &str, versions: &[&str]) -> ClusterStack {
    serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "provider": "docker", "name": "ferrol", "kubernetesVersion": kubernetes,
            "channel": "stable", "autoSubscribe": false, "noProvider": true, "versions": versions,
        }
    }))
    .expect("ClusterStack")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cso_sample_default_source_and_events() {
    let test = "cso_sample_default_source_and_events";
    let Some(env) =
        crate::operator_common::start(test, &["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"]).await
    else {
        return;
    };
    let Some(sample_path) = capstan_testenv::shared_path("cso-api/sample-clusterstack.yaml") else {
        capstan_testenv::skip_or_fail(test, "../shared/cso-api missing (CAPSTAN_SHARED)");
        return;
    };
    let client = env.client();
    env.cluster
        .create_namespace("cluster")
        .await
        .expect("namespace cluster");
    let operator = env.operator(
        0,
        &[
            "--git-provider",
            "github",
            "--git-org-name",
            "scs",
            "--git-repository-name",
            "cluster-stacks",
        ],
    );

    // CSO's sample as it is: no spec.source.
    let text = std::fs::read_to_string(&sample_path).expect("sample");
    let doc = capstan_apply::parse_stream(&text, "sample")
        .expect("sample parses")
        .remove(0);
    let sample: ClusterStack = serde_json::from_value(doc.data).expect("sample is a ClusterStack");
    assert!(sample.spec.source.is_none());
    let stacks: Api<ClusterStack> = Api::namespaced(client.clone(), "cluster");
    stacks
        .create(&PostParams::default(), &sample)
        .await
        .expect("sample created");
    let releases: Api<ClusterStackRelease> = Api::namespaced(client.clone(), "cluster");
    eventually(
        "the sample's release v2 from the default source",
        Duration::from_secs(90),
        &operator,
        || async { releases.get_opt("docker-ferrol-1-27-v2").await.ok().flatten() },
    )
    .await;
    // Ready, and its Event says why.
    let ready = eventually(
        "a Ready Event of the sample",
        Duration::from_secs(180),
        &operator,
        || async {
            events_of(client.clone(), "cluster", "clusterstack")
                .await
                .into_iter()
                .find(|(reason, _)| reason == "Ready")
        },
    )
    .await;
    assert!(
        !ready.1.trim().is_empty(),
        "Ready Event without a note: {ready:?}"
    );

    // Two versions at once: one ReleaseCreated Event per release.
    let tenant = env.stacks();
    tenant
        .create(
            &PostParams::default(),
            &stack(crate::operator_common::NS, "pair", "1.27", &["v1", "v2"]),
        )
        .await
        .expect("pair created");
    let created = eventually(
        "ReleaseCreated Events for v1 and v2",
        Duration::from_secs(90),
        &operator,
        || async {
            let notes: Vec<String> = events_of(client.clone(), crate::operator_common::NS, "pair")
                .await
                .into_iter()
                .filter(|(reason, _)| reason == "ReleaseCreated")
                .map(|(_, note)| note)
                .collect();
            let both = ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"]
                .iter()
                .all(|tag| notes.iter().any(|n| n.ends_with(tag)));
            both.then_some(notes)
        },
    )
    .await;
    assert_eq!(created.len(), 2, "{created:?}");

    // A stack with no release in the source: a NoRelease Event.
    tenant
        .create(
            &PostParams::default(),
            &stack(crate::operator_common::NS, "none", "1.28", &[]),
        )
        .await
        .expect("none created");
    let none = eventually(
        "a NoRelease Event",
        Duration::from_secs(90),
        &operator,
        || async {
            events_of(client.clone(), crate::operator_common::NS, "none")
                .await
                .into_iter()
                .find(|(reason, _)| reason == "NoRelease")
        },
    )
    .await;
    assert!(none.1.contains("no release of docker-ferrol-1-28"), "{none:?}");
}
