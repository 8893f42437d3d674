//! The validating webhooks of `capstan operator` through a real kube-apiserver: capstan's CRDs
//! and Cluster API's Cluster CRD installed, the webhook server running in this process on
//! 127.0.0.1 with a generated certificate, registered by a ValidatingWebhookConfiguration
//! (`url` + `caBundle`). Every rule is exercised through the API server, and each denial is
//! checked word for word as a user sees it. One API server for the file: the cases run in
//! order on it.
//!
//! A second server, whose client may not list Clusters, serves the namespace `restricted`
//! (selected by a label): deletions there must be refused, not allowed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use capstan_operator::api;
use capstan_operator::settings::WebhookSettings;
use capstan_operator::testing::webhook::{Certificate, GeneratedCert, generate, serve, serve_with};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value as Json, json};

const NS: &str = "stacks";
const RESTRICTED_NS: &str = "restricted";
/// No webhook is called for this namespace until its label is removed.
const LEGACY_NS: &str = "legacy";
const NOBODY: &str = "capstan-webhook-nobody";
const MANAGER: &str = "capstan-test";

const STACK_HOOK: &str = "clusterstack.validation.clusterstack.x-k8s.io";
const RELEASE_HOOK: &str = "clusterstackrelease.validation.clusterstack.x-k8s.io";
const ADDON_HOOK: &str = "clusteraddon.validation.clusterstack.x-k8s.io";
const CLUSTER_HOOK: &str = "cluster.validation.cluster.x-k8s.io";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_webhook_rule_through_the_api_server() {
    let test = "every_webhook_rule_through_the_api_server";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let Some(capi) = capstan_testenv::shared_path("capi-crds/v1.6.0") else {
        capstan_testenv::skip_or_fail(
            test,
            "CAPI CRDs not found at ../shared/capi-crds/v1.6.0 (set CAPSTAN_SHARED)",
        );
        return;
    };
    let cluster = TestCluster::start(&bins, "webhook")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    install_crds(&client, &capi).await;
    create_namespace(&client, NS, json!({})).await;
    create_namespace(
        &client,
        RESTRICTED_NS,
        json!({"capstan-test/webhook": "restricted"}),
    )
    .await;
    create_namespace(&client, LEGACY_NS, json!({"capstan-test/webhook": "off"})).await;

    let cert = generate(&[]).expect("certificate");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let open = start_server(&cert, client.clone(), stopped.clone()).await;
    let nobody = cluster
        .client_as(NOBODY, &[])
        .await
        .expect("impersonating client");
    let restricted = start_server(&cert, nobody, stopped.clone()).await;
    register(
        &client,
        "capstan-webhooks",
        open,
        &cert,
        "NotIn",
        &["restricted", "off"],
    )
    .await;
    register(
        &client,
        "capstan-webhooks-restricted",
        restricted,
        &cert,
        "In",
        &["restricted"],
    )
    .await;
    wait_until_active(&client, &[NS, RESTRICTED_NS]).await;

    cluster_stacks(&client).await;
    clusters(&client).await;
    deletions_in_use(&client).await;
    cluster_addons(&client).await;
    deletions_not_in_use(&client).await;
    deletions_refused_when_clusters_cannot_be_listed(&client).await;
    objects_admitted_before_the_webhooks(&client).await;
    malformed_requests(open, &cert).await;

    stop.send(true).expect("servers listening");
}

// ---------------------------------------------------------------------------------------------
// Setup

async fn install_crds(client: &Client, capi: &std::path::Path) {
    let dir = tempfile::tempdir().expect("temp dir");
    let yaml = api::crds_yaml().expect("CRD YAML");
    std::fs::write(dir.path().join("capstan-crds.yaml"), yaml).expect("write CRDs");
    // Only Cluster API's Cluster: the webhooks read no other CAPI kind.
    let clusters = "cluster.x-k8s.io_clusters.yaml";
    std::fs::copy(capi.join(clusters), dir.path().join(clusters)).expect("copy the Cluster CRD");
    let names = capstan_testenv::install_crds(client, dir.path())
        .await
        .expect("CRDs install and become Established");
    assert_eq!(names.len(), 5, "{names:?}");
}

async fn create_namespace(client: &Client, name: &str, labels: Json) {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

/// Starts a webhook server on a free loopback port; it stops when `stopped` turns true.
async fn start_server(
    cert: &GeneratedCert,
    client: Client,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local address");
    let shutdown = async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let cert = Certificate::Generated(cert.clone());
    tokio::spawn(async move {
        if let Err(e) = serve_with(listener, cert, client, shutdown).await {
            panic!("webhook server failed: {e}");
        }
    });
    addr
}

/// The install chart's four webhooks, called by URL, for namespaces whose
/// `capstan-test/webhook` label is (`In`) or is not (`NotIn`) one of `values`.
async fn register(
    client: &Client,
    name: &str,
    addr: SocketAddr,
    cert: &GeneratedCert,
    operator: &str,
    values: &[&str],
) {
    use base64::Engine as _;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&cert.ca_pem);
    let hooks = [
        (
            "clusterstack",
            "clusterstack.x-k8s.io",
            "v1alpha1",
            "clusterstacks",
            json!(["CREATE", "UPDATE", "DELETE"]),
        ),
        (
            "clusterstackrelease",
            "clusterstack.x-k8s.io",
            "v1alpha1",
            "clusterstackreleases",
            json!(["DELETE"]),
        ),
        (
            "clusteraddon",
            "clusterstack.x-k8s.io",
            "v1alpha1",
            "clusteraddons",
            json!(["CREATE", "UPDATE"]),
        ),
        (
            "cluster",
            "cluster.x-k8s.io",
            "v1beta1",
            "clusters",
            json!(["CREATE", "UPDATE"]),
        ),
    ];
    let webhooks: Vec<Json> = hooks
        .into_iter()
        .map(|(kind, group, version, resource, operations)| {
            let path = format!("/validate-{}-{version}-{kind}", group.replace('.', "-"));
            json!({
                "name": format!("{kind}.validation.{group}"),
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
                "clientConfig": {"url": format!("https://{addr}{path}"), "caBundle": ca_bundle},
                "namespaceSelector": {"matchExpressions": [
                    {"key": "capstan-test/webhook", "operator": operator, "values": values},
                ]},
                "rules": [{
                    "apiGroups": [group], "apiVersions": [version], "resources": [resource],
                    "operations": operations, "scope": "Namespaced",
                }],
            })
        })
        .collect();
    let config: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": webhooks,
    }))
    .expect("webhook configuration");
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &config)
        .await
        .expect("register the webhooks");
}

/// The API server loads webhook configurations (and namespace labels) in the background: wait
/// until the webhooks answer in each of `namespaces` (a bad version is denied).
async fn wait_until_active(client: &Client, namespaces: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    for &ns in namespaces {
        loop {
            let probe = stack_json(ns, "probe", &["not-a-version"]);
            match create(client, ns, &probe).await {
                Err(message) if message.starts_with("admission webhook") => break,
                Ok(()) => {
                    delete(client, ns, "ClusterStack", "probe").await.ok();
                }
                Err(_) => {}
            }
            assert!(
                Instant::now() < deadline,
                "the webhooks never became active in {ns}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Objects and requests

fn resource(kind: &str) -> ApiResource {
    let (group, version) = match kind {
        "Cluster" => ("cluster.x-k8s.io", "v1beta1"),
        _ => ("clusterstack.x-k8s.io", "v1alpha1"),
    };
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

fn dynamic(client: &Client, ns: &str, kind: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &resource(kind))
}

/// The API server's message for a failed request.
fn message(e: kube::Error) -> String {
    match e {
        kube::Error::Api(status) => status.message,
        other => panic!("expected an answer from the API server, got {other}"),
    }
}

fn to_dynamic(obj: &Json) -> DynamicObject {
    serde_json::from_value(obj.clone()).expect("dynamic object")
}

async fn create(client: &Client, ns: &str, obj: &Json) -> Result<(), String> {
    let kind = obj["kind"].as_str().expect("kind");
    dynamic(client, ns, kind)
        .create(&PostParams::default(), &to_dynamic(obj))
        .await
        .map(drop)
        .map_err(message)
}

/// Merge-patches the object's spec (an UPDATE for admission).
async fn patch_spec(client: &Client, ns: &str, kind: &str, name: &str, spec: Json) -> Result<(), String> {
    dynamic(client, ns, kind)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": spec})),
        )
        .await
        .map(drop)
        .map_err(message)
}

async fn delete(client: &Client, ns: &str, kind: &str, name: &str) -> Result<(), String> {
    dynamic(client, ns, kind)
        .delete(name, &DeleteParams::default())
        .await
        .map(drop)
        .map_err(message)
}

async fn exists(client: &Client, ns: &str, kind: &str, name: &str) -> bool {
    dynamic(client, ns, kind)
        .get_opt(name)
        .await
        .expect("get")
        .is_some()
}

fn denied(hook: &str, why: &str) -> Result<(), String> {
    Err(format!("admission webhook \"{hook}\" denied the request: {why}"))
}

fn stack_json(ns: &str, name: &str, versions: &[&str]) -> Json {
    json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
            "channel": "stable", "versions": versions, "autoSubscribe": false, "noProvider": true,
        },
    })
}

fn release_json(ns: &str, name: &str) -> Json {
    json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStackRelease",
        "metadata": {"name": name, "namespace": ns},
        "spec": {},
    })
}

fn cluster_json(name: &str, topology: Option<Json>) -> Json {
    let mut obj = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": {},
    });
    if let Some(t) = topology {
        obj["spec"]["topology"] = t;
    }
    obj
}

fn addon_json(name: &str, cluster_ref: Json) -> Json {
    json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterStack": "docker-ferrol-1-27", "clusterRef": cluster_ref},
    })
}

// ---------------------------------------------------------------------------------------------
// Cases

/// ClusterStack: versions must parse; provider, name, channel, kubernetesVersion never change.
async fn cluster_stacks(client: &Client) {
    let good = stack_json(NS, "ferrol", &["v1", "v1-alpha.0", "v0-sha.4e0d8f3"]);
    assert_eq!(create(client, NS, &good).await, Ok(()));

    let bad = stack_json(NS, "bad", &["v1", "1", "v2.0"]);
    assert_eq!(
        create(client, NS, &bad).await,
        denied(
            STACK_HOOK,
            "spec.versions[1]: \"1\" is not a stack version: it must start with \"v\" (expected vN, vN-<channel>.<patch> or v0-sha.<hash>); \
             spec.versions[2]: \"v2.0\" is not a stack version: major version \"2.0\" is not a number"
        )
    );
    assert!(!exists(client, NS, "ClusterStack", "bad").await);

    let immutable = [
        (
            json!({"provider": "openstack"}),
            "spec.provider: field is immutable (was \"docker\", now \"openstack\")",
        ),
        (
            json!({"name": "scs"}),
            "spec.name: field is immutable (was \"ferrol\", now \"scs\")",
        ),
        (
            json!({"channel": "custom"}),
            "spec.channel: field is immutable (was \"stable\", now \"custom\")",
        ),
        (
            json!({"kubernetesVersion": "1.28"}),
            "spec.kubernetesVersion: field is immutable (was \"1.27\", now \"1.28\")",
        ),
    ];
    for (change, why) in immutable {
        assert_eq!(
            patch_spec(client, NS, "ClusterStack", "ferrol", change).await,
            denied(STACK_HOOK, why)
        );
    }
    assert_eq!(
        patch_spec(
            client,
            NS,
            "ClusterStack",
            "ferrol",
            json!({"versions": ["v1", "v1-alpha"]})
        )
        .await,
        denied(
            STACK_HOOK,
            "spec.versions[1]: \"v1-alpha\" is not a stack version: pre-release part \"alpha\" has no '.' between channel and patch (expected vN-<channel>.<patch>)"
        )
    );
    // Everything else may change.
    assert_eq!(
        patch_spec(
            client,
            NS,
            "ClusterStack",
            "ferrol",
            json!({"versions": ["v1", "v2"], "autoSubscribe": true, "interval": "10m"})
        )
        .await,
        Ok(())
    );

    // User values for the addons must be a YAML map.
    let not_a_map = "spec.addonValues: not a YAML map of Helm values: cannot unmarshal yaml document: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}";
    let mut listed = stack_json(NS, "listed-values", &["v1"]);
    listed["spec"]["addonValues"] = json!("- replicas: 2\n");
    assert_eq!(create(client, NS, &listed).await, denied(STACK_HOOK, not_a_map));
    assert!(!exists(client, NS, "ClusterStack", "listed-values").await);
    let set_values = |values: &str| json!({"addonValues": values});
    assert_eq!(
        patch_spec(client, NS, "ClusterStack", "ferrol", set_values("- a\n")).await,
        denied(STACK_HOOK, not_a_map)
    );
    let broken = patch_spec(client, NS, "ClusterStack", "ferrol", set_values("a: [\n")).await;
    let broken = broken.expect_err("broken YAML refused");
    assert!(
        broken.starts_with(&format!(
            "admission webhook \"{STACK_HOOK}\" denied the request: spec.addonValues: not a YAML map of Helm values: "
        )),
        "{broken}"
    );
    assert_eq!(
        patch_spec(
            client,
            NS,
            "ClusterStack",
            "ferrol",
            set_values("metrics-server:\n  replicas: 2\n  args: null\n")
        )
        .await,
        Ok(())
    );
}

/// Clusters: only a stack class's release is checked (the Kubernetes version it is for);
/// Clusters without a topology or with a class of their own are always allowed.
async fn clusters(client: &Client) {
    let release = release_json(NS, "docker-ferrol-1-27-v1");
    assert_eq!(create(client, NS, &release).await, Ok(()));
    let status = json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStackRelease",
        "metadata": {"name": "docker-ferrol-1-27-v1", "namespace": NS},
        "status": {"kubernetesVersion": "v1.27.3", "ready": true},
    });
    dynamic(client, NS, "ClusterStackRelease")
        .patch_status(
            "docker-ferrol-1-27-v1",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&status),
        )
        .await
        .expect("release status");

    let topology = |class: &str, version: &str| Some(json!({"class": class, "version": version}));
    assert_eq!(
        create(
            client,
            NS,
            &cluster_json("uses-v1", topology("docker-ferrol-1-27-v1", "v1.27.3"))
        )
        .await,
        Ok(())
    );
    assert_eq!(
        create(
            client,
            NS,
            &cluster_json("wrong-version", topology("docker-ferrol-1-27-v1", "v1.27.2"))
        )
        .await,
        denied(
            CLUSTER_HOOK,
            "spec.topology.version: \"v1.27.2\" does not match class docker-ferrol-1-27-v1, \
             which is for Kubernetes v1.27.3"
        )
    );
    // An update is checked the same way.
    assert_eq!(
        patch_spec(
            client,
            NS,
            "Cluster",
            "uses-v1",
            json!({"topology": {"version": "v1.28.0"}})
        )
        .await,
        denied(
            CLUSTER_HOOK,
            "spec.topology.version: \"v1.28.0\" does not match class docker-ferrol-1-27-v1, \
             which is for Kubernetes v1.27.3"
        )
    );
    assert_eq!(
        create(client, NS, &cluster_json("no-topology", None)).await,
        Ok(())
    );
    assert_eq!(
        create(
            client,
            NS,
            &cluster_json("own-class", topology("my-own-class", "v1.20.0"))
        )
        .await,
        Ok(())
    );
    // A stack class whose release does not exist (yet): not capstan's to judge.
    assert_eq!(
        create(
            client,
            NS,
            &cluster_json("future", topology("docker-ferrol-1-27-v9", "v1.99.0"))
        )
        .await,
        Ok(())
    );
    assert_eq!(
        patch_spec(client, NS, "Cluster", "no-topology", json!({"paused": true})).await,
        Ok(())
    );

    // User values in a Cluster's annotations: a YAML map, and a ConfigMap/Secret reference;
    // checked on creation and when they change (a metadata-only update).
    const VALUES: &str = "clusterstack.x-k8s.io/addon-values";
    const VALUES_FROM: &str = "clusterstack.x-k8s.io/addon-values-from";
    let not_a_map = format!(
        "metadata.annotations[{VALUES}]: not a YAML map of Helm values: cannot unmarshal yaml document: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {{}}"
    );
    let mut annotated = cluster_json("annotated", None);
    annotated["metadata"]["annotations"] = json!({VALUES: "- a\n"});
    assert_eq!(
        create(client, NS, &annotated).await,
        denied(CLUSTER_HOOK, &not_a_map)
    );
    annotated["metadata"]["annotations"] = json!({VALUES: "a: 1\n", VALUES_FROM: "ConfigMap/values"});
    assert_eq!(create(client, NS, &annotated).await, Ok(()));
    let annotate = |annotations: Json| async move {
        dynamic(client, NS, "Cluster")
            .patch(
                "annotated",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": annotations}})),
            )
            .await
            .map(drop)
            .map_err(message)
    };
    assert_eq!(
        annotate(json!({VALUES: "- a\n"})).await,
        denied(CLUSTER_HOOK, &not_a_map)
    );
    assert_eq!(
        annotate(json!({VALUES_FROM: "Pod/p"})).await,
        denied(
            CLUSTER_HOOK,
            &format!(
                "metadata.annotations[{VALUES_FROM}]: \"Pod/p\": expected ConfigMap/<name>[/<key>] or Secret/<name>[/<key>]"
            )
        )
    );
    assert_eq!(
        annotate(json!({VALUES: "b: 2\n", VALUES_FROM: "Secret/values/extra.yaml"})).await,
        Ok(())
    );
    // Other metadata changes leave the (valid) values alone and pass.
    assert_eq!(annotate(json!({"example.org/note": "x"})).await, Ok(()));
}

/// A ClusterStack or ClusterStackRelease whose class a Cluster uses is not deleted.
async fn deletions_in_use(client: &Client) {
    assert_eq!(
        delete(client, NS, "ClusterStack", "ferrol").await,
        denied(
            STACK_HOOK,
            "ClusterStack stacks/ferrol is in use by Clusters stacks/future (class docker-ferrol-1-27-v9), \
             stacks/uses-v1 (class docker-ferrol-1-27-v1); delete those Clusters or move them to another class first"
        )
    );
    assert_eq!(
        delete(client, NS, "ClusterStackRelease", "docker-ferrol-1-27-v1").await,
        denied(
            RELEASE_HOOK,
            "ClusterStackRelease stacks/docker-ferrol-1-27-v1 is in use by Cluster stacks/uses-v1 \
             (class docker-ferrol-1-27-v1); delete those Clusters or move them to another class first"
        )
    );
    assert!(exists(client, NS, "ClusterStack", "ferrol").await);
    assert!(exists(client, NS, "ClusterStackRelease", "docker-ferrol-1-27-v1").await);
}

/// ClusterAddon: `clusterRef` names a Cluster, and keeps naming the same one.
async fn cluster_addons(client: &Client) {
    assert_eq!(
        create(client, NS, &addon_json("no-name", json!({"kind": "Cluster"}))).await,
        denied(
            ADDON_HOOK,
            "spec.clusterRef.name: required (the Cluster whose addons this is)"
        )
    );
    assert_eq!(
        create(
            client,
            NS,
            &addon_json("machine", json!({"kind": "Machine", "name": "m"}))
        )
        .await,
        denied(
            ADDON_HOOK,
            "spec.clusterRef.kind: must be \"Cluster\", not \"Machine\""
        )
    );
    let without = json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
        "metadata": {"name": "no-ref", "namespace": NS},
        "spec": {"clusterStack": "docker-ferrol-1-27"},
    });
    // No clusterRef at all is the schema's to refuse, before any webhook is asked.
    assert_eq!(
        create(client, NS, &without).await,
        Err(
            "ClusterAddon.clusterstack.x-k8s.io \"no-ref\" is invalid: spec.clusterRef: Required value"
                .into()
        )
    );

    let cluster_ref = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "namespace": NS, "name": "uses-v1",
    });
    assert_eq!(
        create(client, NS, &addon_json("uses-v1", cluster_ref)).await,
        Ok(())
    );
    assert_eq!(
        patch_spec(
            client,
            NS,
            "ClusterAddon",
            "uses-v1",
            json!({"clusterRef": {"name": "other"}})
        )
        .await,
        denied(
            ADDON_HOOK,
            "spec.clusterRef.name: field is immutable (was \"uses-v1\", now \"other\")"
        )
    );
    assert_eq!(
        patch_spec(
            client,
            NS,
            "ClusterAddon",
            "uses-v1",
            json!({"clusterRef": {"namespace": "elsewhere"}})
        )
        .await,
        denied(
            ADDON_HOOK,
            "spec.clusterRef.namespace: field is immutable (was \"stacks\", now \"elsewhere\")"
        )
    );
    assert_eq!(
        patch_spec(
            client,
            NS,
            "ClusterAddon",
            "uses-v1",
            json!({"hook": "BeforeClusterUpgrade", "version": "v2"})
        )
        .await,
        Ok(())
    );
}

/// Once no Cluster uses them, the release and the stack go.
async fn deletions_not_in_use(client: &Client) {
    for name in ["uses-v1", "future"] {
        delete(client, NS, "Cluster", name).await.expect("delete Cluster");
    }
    assert_eq!(
        delete(client, NS, "ClusterStackRelease", "docker-ferrol-1-27-v1").await,
        Ok(())
    );
    assert_eq!(delete(client, NS, "ClusterStack", "ferrol").await, Ok(()));
}

/// The restricted namespace's server may not list Clusters: deletions are refused, with why.
async fn deletions_refused_when_clusters_cannot_be_listed(client: &Client) {
    let ns = RESTRICTED_NS;
    assert_eq!(
        create(client, ns, &stack_json(ns, "ferrol", &["v1"])).await,
        Ok(())
    );
    assert_eq!(
        create(client, ns, &release_json(ns, "docker-ferrol-1-27-v1")).await,
        Ok(())
    );
    let forbidden = format!(
        "clusters.cluster.x-k8s.io is forbidden: User \"{NOBODY}\" cannot list resource \"clusters\" \
         in API group \"cluster.x-k8s.io\" in the namespace \"{ns}\""
    );
    assert_eq!(
        delete(client, ns, "ClusterStack", "ferrol").await,
        denied(
            STACK_HOOK,
            &format!(
                "cannot tell whether a Cluster uses ClusterStack {ns}/ferrol: listing Clusters failed: \
                 {forbidden}; deletion refused"
            )
        )
    );
    assert_eq!(
        delete(client, ns, "ClusterStackRelease", "docker-ferrol-1-27-v1").await,
        denied(
            RELEASE_HOOK,
            &format!(
                "cannot tell whether a Cluster uses ClusterStackRelease {ns}/docker-ferrol-1-27-v1: \
                 listing Clusters failed: {forbidden}; deletion refused"
            )
        )
    );
    assert!(exists(client, ns, "ClusterStack", "ferrol").await);
    assert!(exists(client, ns, "ClusterStackRelease", "docker-ferrol-1-27-v1").await);

    // Nor may it read releases: a Cluster is then admitted unchecked (with a warning), never
    // refused, though its version does not match the release's.
    let status = json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStackRelease",
        "metadata": {"name": "docker-ferrol-1-27-v1", "namespace": ns},
        "status": {"kubernetesVersion": "v1.27.3", "ready": true},
    });
    dynamic(client, ns, "ClusterStackRelease")
        .patch_status(
            "docker-ferrol-1-27-v1",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&status),
        )
        .await
        .expect("release status");
    let mut unchecked = cluster_json(
        "unchecked",
        Some(json!({"class": "docker-ferrol-1-27-v1", "version": "v1.26.0"})),
    );
    unchecked["metadata"]["namespace"] = json!(ns);
    assert_eq!(create(client, ns, &unchecked).await, Ok(()));
}

/// A ClusterStack stored before the webhooks watched its namespace (e.g. accepted by CSO) with
/// a version capstan refuses: its metadata still changes (a finalizer is added and removed)
/// and it can be deleted; a spec change must fix the versions first.
async fn objects_admitted_before_the_webhooks(client: &Client) {
    let ns = LEGACY_NS;
    assert_eq!(create(client, ns, &stack_json(ns, "old", &["1"])).await, Ok(()));
    Api::<Namespace>::all(client.clone())
        .patch(
            ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"capstan-test/webhook": null}}})),
        )
        .await
        .expect("unlabel the namespace");
    wait_until_active(client, &[ns]).await;

    let stacks = dynamic(client, ns, "ClusterStack");
    let finalizers = |list: Json| Patch::Merge(json!({"metadata": {"finalizers": list}}));
    stacks
        .patch(
            "old",
            &PatchParams::default(),
            &finalizers(json!(["capstan-test/hold"])),
        )
        .await
        .expect("a finalizer is added");
    assert_eq!(
        patch_spec(client, ns, "ClusterStack", "old", json!({"autoSubscribe": true})).await,
        denied(
            STACK_HOOK,
            "spec.versions[0]: \"1\" is not a stack version: it must start with \"v\" \
             (expected vN, vN-<channel>.<patch> or v0-sha.<hash>)"
        )
    );
    assert_eq!(
        patch_spec(client, ns, "ClusterStack", "old", json!({"versions": ["v1"]})).await,
        Ok(())
    );
    stacks
        .patch("old", &PatchParams::default(), &finalizers(json!(null)))
        .await
        .expect("the finalizer is removed");
    assert_eq!(delete(client, ns, "ClusterStack", "old").await, Ok(()));
    assert!(!exists(client, ns, "ClusterStack", "old").await);
}

/// Requests the API server would not send: answered, with why, and the server keeps serving.
async fn malformed_requests(addr: SocketAddr, cert: &GeneratedCert) {
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert.ca_pem.as_bytes()).expect("CA"))
        .build()
        .expect("HTTP client");
    let url = |path: &str| format!("https://{addr}{path}");
    let stacks = "/validate-clusterstack-x-k8s-io-v1alpha1-clusterstack";

    let post = |path: &'static str, body: String| {
        let request = http
            .post(url(path))
            .header("content-type", "application/json")
            .body(body);
        async move {
            let response = request.send().await.expect("webhook answers");
            let status = response.status().as_u16();
            (status, response.text().await.expect("body"))
        }
    };

    let (status, body) = post(stacks, "not json".into()).await;
    assert_eq!(status, 200, "{body}");
    let review: Json = serde_json::from_str(&body).expect("an AdmissionReview");
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(review["response"]["allowed"], false);
    assert_eq!(
        review["response"]["status"]["message"],
        "cannot read the AdmissionReview: expected ident at line 1 column 2"
    );

    // A readable review without the object to check: denied, under the request's uid.
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "4b1c7a0e-0000-4000-8000-000000000001",
            "kind": {"group": "clusterstack.x-k8s.io", "version": "v1alpha1", "kind": "ClusterStack"},
            "resource": {"group": "clusterstack.x-k8s.io", "version": "v1alpha1", "resource": "clusterstacks"},
            "name": "x", "namespace": NS, "operation": "CREATE", "userInfo": {},
        },
    });
    let (status, body) = post(stacks, review.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let answer: Json = serde_json::from_str(&body).expect("an AdmissionReview");
    assert_eq!(answer["response"]["uid"], "4b1c7a0e-0000-4000-8000-000000000001");
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(
        answer["response"]["status"]["message"],
        "the request holds no object to validate"
    );

    // The wrong kind on a path: a misconfigured webhook is named as such.
    let mut wrong = review.clone();
    wrong["request"]["kind"]["kind"] = json!("ClusterAddon");
    let (_, body) = post(stacks, wrong.to_string()).await;
    let answer: Json = serde_json::from_str(&body).expect("an AdmissionReview");
    assert_eq!(
        answer["response"]["status"]["message"],
        "this webhook validates ClusterStack, not ClusterAddon (check the webhook configuration's path)"
    );

    let (status, _) = post("/validate-nothing", "{}".into()).await;
    assert_eq!(status, 404);
    let get = http.get(url(stacks)).send().await.expect("webhook answers");
    assert_eq!(get.status().as_u16(), 405);
}

/// `serve` with a certificate directory (a mounted Secret): the files' certificate is served,
/// and a rotated one from the next connection on. No API server needed: no review is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reads_the_certificate_directory_and_picks_up_rotations() {
    let dir = tempfile::tempdir().expect("temp dir");
    let install = |cert: &GeneratedCert| {
        std::fs::write(dir.path().join("tls.crt"), &cert.cert_pem).expect("write tls.crt");
        std::fs::write(dir.path().join("tls.key"), &cert.key_pem).expect("write tls.key");
    };
    let first = generate(&[]).expect("certificate");
    install(&first);

    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port");
    let settings = WebhookSettings {
        addr,
        cert_dir: Some(dir.path().to_path_buf()),
        hosts: Vec::new(),
    };
    // The client is never used: only unknown paths are asked for.
    let client =
        Client::try_from(kube::Config::new("https://127.0.0.1:1".parse().expect("URL"))).expect("client");
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(serve(settings, client, async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    }));

    // A fresh client per attempt: a new connection, a new handshake.
    let answers = |ca: &GeneratedCert| {
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(ca.ca_pem.as_bytes()).expect("CA"))
            .build()
            .expect("HTTP client");
        async move {
            match http.post(format!("https://{addr}/healthz")).send().await {
                Ok(r) => Ok(r.status().as_u16()),
                Err(e) => Err(format!("{e:?}")),
            }
        }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while answers(&first).await.is_err() {
        assert!(Instant::now() < deadline, "the server never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(answers(&first).await, Ok(404));

    let second = generate(&[]).expect("certificate");
    install(&second);
    assert_eq!(answers(&second).await, Ok(404));
    let old = answers(&first)
        .await
        .expect_err("the old CA no longer verifies the server");
    assert!(old.contains("InvalidCertificate"), "{old}");

    stop.send(true).expect("server listening");
    let stopped = tokio::time::timeout(Duration::from_secs(15), server)
        .await
        .expect("the server stops on shutdown");
    assert!(matches!(stopped, Ok(Ok(()))), "{stopped:?}");
}
