//! `capstan operator` with a ClusterStack whose releases come from a real OCI registry
//! (docker-registry with htpasswd Basic auth; the credentials in a Secret the ClusterStack's
//! `spec.source.oci.secretRef` names): the releases are listed, pulled, verified, and their
//! ClusterClasses applied; a release pushed later is picked up within the interval. And the
//! cluster-stack operator's configuration: `--source oci` with `OCI_REGISTRY`,
//! `OCI_REPOSITORY`, `OCI_USERNAME` and `OCI_PASSWORD` for a ClusterStack without a source.

use std::time::Duration;

use crate::operator_common::{eventually, names};
use capstan_operator::api::ClusterStack;
use capstan_source::oci::release::{self, OciRepo, PushOptions};
use capstan_source::oci::{Client, Config, Credentials};
use capstan_testenv::registry::{Auth, PASSWORD, Registry, USER};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_stack_follows_an_oci_registry() {
    let test = "a_cluster_stack_follows_an_oci_registry";
    let Some(bin) = capstan_testenv::registry::binary_or_skip(test) else {
        return;
    };
    let Some(env) = crate::operator_common::start_shared(test, &[]).await else {
        return;
    };
    let reg = Registry::start(&bin, Auth::Htpasswd);
    let repo = OciRepo::parse(&format!("oci://{}/kaas/cluster-stacks", reg.host())).unwrap();
    let pusher = Client::new(
        &reg.host(),
        Config {
            credentials: Credentials::from_parts(Some(USER.into()), Some(PASSWORD.into()), None),
            ..Config::default()
        },
    )
    .unwrap();
    let push = |tag: &'static str| {
        let dir = env.releases.join(tag);
        let (pusher, repo) = (&pusher, &repo);
        async move {
            release::push(pusher, repo, &dir, &PushOptions::default())
                .await
                .unwrap_or_else(|e| panic!("pushing {tag}: {e}"));
        }
    };
    push("docker-ferrol-1-27-v1").await;
    push("docker-ferrol-1-27-v2").await;

    let secret: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "registry-credentials", "namespace": env.ns},
        "stringData": {"username": USER, "password": PASSWORD},
    }))
    .unwrap();
    Api::<Secret>::namespaced(env.client(), &env.ns)
        .create(&PostParams::default(), &secret)
        .await
        .expect("Secret created");
    let stack: ClusterStack = serde_json::from_value(serde_json::json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": "ferrol", "namespace": env.ns},
        "spec": {
            "provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
            "channel": "stable", "autoSubscribe": true, "versions": ["v1"], "interval": "2s",
            "source": {"oci": {
                "repository": format!("{}/kaas/cluster-stacks", reg.host()),
                "secretRef": {"name": "registry-credentials"},
            }},
        }
    }))
    .unwrap();
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .expect("ClusterStack created");
    let metrics_addr = format!("127.0.0.1:{}", capstan_testenv::registry::free_port());
    let operator = env.operator(0, &["--metrics-addr", &metrics_addr]);

    let want = names(&["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"]);
    eventually("v1 and v2 ready", Duration::from_secs(120), &operator, || async {
        (env.ready_releases().await == want).then_some(())
    })
    .await;
    assert_eq!(env.class_names().await, want);

    // Published later: picked up within the interval.
    push("docker-ferrol-1-27-v3").await;
    eventually("v3 ready", Duration::from_secs(90), &operator, || async {
        env.ready_releases()
            .await
            .contains(&"docker-ferrol-1-27-v3".to_string())
            .then_some(())
    })
    .await;
    let stack = env.stacks().get("ferrol").await.expect("stack");
    assert_eq!(
        stack.status.and_then(|s| s.latest_release).as_deref(),
        Some("docker-ferrol-1-27-v3")
    );
    // The registry's responses are counted: the Basic challenge (401) and the rest.
    let text = reqwest::get(format!("http://{metrics_addr}/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let count = |code: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("capstan_oci_requests_total{{code=\"{code}\"}} ")))
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    assert!(count("2xx") >= 10.0 && count("4xx") >= 1.0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_source_is_the_cluster_stack_operators_oci_settings() {
    let test = "the_default_source_is_the_cluster_stack_operators_oci_settings";
    let Some(bin) = capstan_testenv::registry::binary_or_skip(test) else {
        return;
    };
    let Some(env) = crate::operator_common::start_shared(test, &[]).await else {
        return;
    };
    let reg = Registry::start(&bin, Auth::Htpasswd);
    let repo = OciRepo::parse(&format!("oci://{}/kaas/cluster-stacks", reg.host())).unwrap();
    let pusher = Client::new(
        &reg.host(),
        Config {
            credentials: Credentials::from_parts(Some(USER.into()), Some(PASSWORD.into()), None),
            ..Config::default()
        },
    )
    .unwrap();
    release::push(
        &pusher,
        &repo,
        &env.releases.join("docker-ferrol-1-27-v1"),
        &PushOptions::default(),
    )
    .await
    .expect("push");
    let stack: ClusterStack = serde_json::from_value(serde_json::json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": "ferrol", "namespace": env.ns},
        "spec": {
            "provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
            "channel": "stable", "autoSubscribe": true, "interval": "2s",
        }
    }))
    .unwrap();
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .expect("ClusterStack created");
    let host = reg.host();
    let operator = env.operator_with_env(
        0,
        &["--source", "oci"],
        &[
            ("OCI_REGISTRY", &host),
            ("OCI_REPOSITORY", "kaas/cluster-stacks"),
            ("OCI_USERNAME", USER),
            ("OCI_PASSWORD", PASSWORD),
        ],
    );
    let want = names(&["docker-ferrol-1-27-v1"]);
    eventually("v1 ready", Duration::from_secs(120), &operator, || async {
        (env.ready_releases().await == want).then_some(())
    })
    .await;
    assert_eq!(env.class_names().await, want);
}
