//! capstan's own deployment chart (`deploy/capstan`): its CRD copies are exactly what
//! `capstan crds` prints, `capstan render` renders it, the API server accepts every object, and
//! the operator's ServiceAccount may do what the operator does and little else.

use std::path::PathBuf;
use std::process::Command;

use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value as Json, json};

/// The chart's CRD files, one per API group.
const CRD_FILES: [(&str, &str); 2] = [
    (
        "clusterstack.x-k8s.io",
        "deploy/capstan/crds/clusterstack.x-k8s.io.yaml",
    ),
    ("capstan.dev", "deploy/capstan/crds/rollouts.capstan.dev.yaml"),
];
const NAMESPACE: &str = "capstan-system";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:capstan-system:capstan";

fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn chart_crds_are_what_capstan_crds_prints() {
    for (group, file) in CRD_FILES {
        let want = capstan_operator::api::crds_yaml_of(Some(group)).expect("CRD YAML");
        let have = std::fs::read_to_string(repo_path(file)).unwrap_or_default();
        assert!(
            have == want,
            "{file} differs from `capstan crds --group {group}` (the Rust types in crates/capstan-operator/src/api changed); \
             regenerate it with:\n    cargo run -- crds --group {group} > {file}"
        );
    }
}

/// `capstan render capstan deploy/capstan -n capstan-system --include-crds -o json` plus `extra`.
pub fn render(extra: &[&str]) -> Vec<Json> {
    let out = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args([
            "render",
            "capstan",
            "deploy/capstan",
            "-n",
            NAMESPACE,
            "--include-crds",
            "-o",
            "json",
        ])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run capstan render");
    assert!(
        out.status.success(),
        "capstan render failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON list of objects")
}

fn kinds(objects: &[Json]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn chart_renders_with_its_crds_and_a_matching_webhook_certificate() {
    let objects = render(&[]);
    assert_eq!(
        kinds(&objects),
        [
            "CustomResourceDefinition/clusterstacks.clusterstack.x-k8s.io",
            "CustomResourceDefinition/clusterstackreleases.clusterstack.x-k8s.io",
            "CustomResourceDefinition/clusteraddons.clusterstack.x-k8s.io",
            "CustomResourceDefinition/clusterstackrollouts.capstan.dev",
            "ServiceAccount/capstan",
            "Secret/capstan-webhook-cert",
            "ClusterRole/capstan",
            "ClusterRoleBinding/capstan",
            "Role/capstan-leader-election",
            "RoleBinding/capstan-leader-election",
            "Service/capstan-webhook",
            "Deployment/capstan",
            "ValidatingWebhookConfiguration/capstan",
        ]
    );
    let crds: Vec<Json> = capstan_operator::api::crds()
        .iter()
        .map(|c| serde_json::to_value(c).expect("CRD serializes"))
        .collect();
    assert_eq!(objects[..4], crds[..], "rendered CRDs differ from the Rust types");

    let secret = &objects[5];
    let webhooks = objects[12]["webhooks"].as_array().expect("webhooks");
    assert_eq!(webhooks.len(), 5);
    for hook in webhooks {
        assert_eq!(
            hook["clientConfig"]["caBundle"], secret["data"]["ca.crt"],
            "{}: caBundle is the Secret's CA",
            hook["name"]
        );
        assert_eq!(hook["clientConfig"]["service"]["name"], "capstan-webhook");
    }
    let cluster_hook = webhooks
        .iter()
        .find(|h| h["name"] == "cluster.validation.cluster.x-k8s.io");
    assert_eq!(
        cluster_hook.map(|h| h["failurePolicy"].clone()),
        Some(json!("Ignore"))
    );

    // Numbers stay integers in `-o json` (YAML loads them as float64).
    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    assert_eq!(deployment["spec"]["replicas"], json!(1));

    // A certificate from elsewhere (cert-manager): no Secret, no generated CA.
    let objects = render(&["--set", "webhook.certSecret=my-cert"]);
    assert!(!kinds(&objects).contains(&"Secret/capstan-webhook-cert".to_string()));
    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    assert_eq!(
        deployment.pointer("/spec/template/spec/volumes/1/secret/secretName"),
        Some(&json!("my-cert"))
    );
}

/// `sharding.shards` adds one Deployment per key, whose pods neither the default Deployment nor
/// the webhook Service select, running `--shard KEY` without the webhook and hooks servers.
#[test]
fn chart_deploys_one_operator_per_shard() {
    let objects = render(&["--set", "sharding.shards={eu,us}"]);
    let deployments: Vec<&Json> = objects.iter().filter(|o| o["kind"] == "Deployment").collect();
    let names: Vec<&str> = deployments
        .iter()
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["capstan", "capstan-shard-eu", "capstan-shard-us"]);
    let args = |d: &Json| -> Vec<String> {
        d.pointer("/spec/template/spec/containers/0/args")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let selects = |selector: &Json, pod: &Json| {
        selector
            .as_object()
            .is_some_and(|s| s.iter().all(|(k, v)| pod.get(k) == Some(v)))
    };
    let service = objects
        .iter()
        .find(|o| o["kind"] == "Service")
        .expect("webhook Service");
    let default = deployments[0];
    assert!(args(default).iter().all(|a| !a.starts_with("--shard")));
    assert!(args(default).iter().any(|a| a.starts_with("--webhook-addr")));
    for (shard, key) in deployments[1..].iter().zip(["eu", "us"]) {
        let shard_args = args(shard);
        assert!(shard_args.contains(&format!("--shard={key}")), "{shard_args:?}");
        assert!(shard_args.contains(&"--leader-elect".to_string()));
        assert!(
            shard_args
                .iter()
                .all(|a| !a.starts_with("--webhook") && !a.starts_with("--hooks")),
            "{shard_args:?}"
        );
        let pod = &shard["spec"]["template"]["metadata"]["labels"];
        assert!(selects(&shard["spec"]["selector"]["matchLabels"], pod));
        assert!(!selects(&default["spec"]["selector"]["matchLabels"], pod));
        assert!(!selects(&service["spec"]["selector"], pod));
    }
    // No shards: the release's Deployment alone, as before sharding.
    let plain = render(&[]);
    assert_eq!(plain.iter().filter(|o| o["kind"] == "Deployment").count(), 1);
}

async fn apply_all(client: &Client, objects: &[Json]) {
    let params = PatchParams::apply("capstan-test").force();
    for obj in objects {
        let (group, version) = match obj["apiVersion"].as_str().expect("apiVersion").split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (
                String::new(),
                obj["apiVersion"].as_str().unwrap_or_default().to_string(),
            ),
        };
        let kind = obj["kind"].as_str().expect("kind");
        let gvk = GroupVersionKind::gvk(&group, &version, kind);
        let (resource, caps) = kube::discovery::pinned_kind(client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("discover {kind}: {e}"));
        let api: Api<DynamicObject> = match caps.scope {
            kube::discovery::Scope::Namespaced => Api::namespaced_with(client.clone(), NAMESPACE, &resource),
            kube::discovery::Scope::Cluster => Api::all_with(client.clone(), &resource),
        };
        let name = obj["metadata"]["name"].as_str().expect("name");
        let dynamic: DynamicObject = serde_json::from_value(obj.clone()).expect("object");
        api.patch(name, &params, &Patch::Apply(&dynamic))
            .await
            .unwrap_or_else(|e| panic!("the API server refuses {kind} {name}: {e}"));
    }
}

async fn allowed(client: &Client, verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> bool {
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_string())),
        None => (resource, None),
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(SERVICE_ACCOUNT.into()),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                "system:authenticated".into(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                subresource,
                namespace: namespace.map(String::from),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("SubjectAccessReview");
    answer.status.is_some_and(|s| s.allowed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_accepts_the_chart_and_rbac_is_least_privilege() {
    let test = "api_server_accepts_the_chart_and_rbac_is_least_privilege";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let objects = render(&[]);
    let cluster = TestCluster::start(&bins, "install")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");

    let (crds, rest): (Vec<Json>, Vec<Json>) = objects
        .into_iter()
        .partition(|o| o["kind"] == "CustomResourceDefinition");
    // The rendered CRDs, one JSON document (which is YAML) per file.
    let dir = tempfile::tempdir().expect("temp dir");
    for (i, crd) in crds.iter().enumerate() {
        std::fs::write(dir.path().join(format!("crd-{i}.yaml")), crd.to_string()).expect("write CRD");
    }
    capstan_testenv::install_crds(&client, dir.path())
        .await
        .expect("the chart's CRDs install and become Established");
    apply_all(&client, &rest).await;

    let may = [
        ("list", "clusterstack.x-k8s.io", "clusterstacks", Some("tenant")),
        ("watch", "clusterstack.x-k8s.io", "clusteraddons", None),
        (
            "patch",
            "clusterstack.x-k8s.io",
            "clusterstackreleases/status",
            Some("tenant"),
        ),
        (
            "update",
            "clusterstack.x-k8s.io",
            "clusterstacks/finalizers",
            Some("tenant"),
        ),
        (
            "create",
            "clusterstack.x-k8s.io",
            "clusterstackreleases",
            Some("tenant"),
        ),
        ("watch", "cluster.x-k8s.io", "clusters", None),
        // Rollouts switch a Cluster's class and record their progress.
        ("patch", "cluster.x-k8s.io", "clusters", Some("tenant")),
        ("watch", "capstan.dev", "clusterstackrollouts", None),
        ("create", "cluster.x-k8s.io", "clusterclasses", Some("tenant")),
        (
            "delete",
            "infrastructure.cluster.x-k8s.io",
            "dockermachinetemplates",
            Some("tenant"),
        ),
        (
            "create",
            "controlplane.cluster.x-k8s.io",
            "kubeadmcontrolplanetemplates",
            Some("tenant"),
        ),
        ("get", "", "secrets", Some("tenant")),
        ("patch", "", "configmaps", Some("tenant")),
        (
            "get",
            "controlplane.cluster.x-k8s.io",
            "kubeadmcontrolplanes",
            Some("tenant"),
        ),
        ("create", "", "events", Some("tenant")),
        ("update", "coordination.k8s.io", "leases", Some(NAMESPACE)),
    ];
    let may_not = [
        ("update", "coordination.k8s.io", "leases", Some("tenant")),
        ("delete", "cluster.x-k8s.io", "clusters", Some("tenant")),
        ("update", "cluster.x-k8s.io", "clusters", Some("tenant")),
        ("delete", "capstan.dev", "clusterstackrollouts", Some("tenant")),
        ("create", "cluster.x-k8s.io", "machines", Some("tenant")),
        ("patch", "cluster.x-k8s.io", "clusters/status", Some("tenant")),
        (
            "create",
            "controlplane.cluster.x-k8s.io",
            "kubeadmcontrolplanes",
            Some("tenant"),
        ),
        ("list", "", "pods", Some("tenant")),
        ("delete", "", "namespaces", None),
        ("create", "apps", "deployments", Some(NAMESPACE)),
        ("create", "rbac.authorization.k8s.io", "clusterrolebindings", None),
        (
            "patch",
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            None,
        ),
        (
            "update",
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None,
        ),
    ];
    for (verb, group, resource, ns) in may {
        assert!(
            allowed(&client, verb, group, resource, ns).await,
            "the operator must be allowed to {verb} {group}/{resource} in {ns:?}"
        );
    }
    for (verb, group, resource, ns) in may_not {
        assert!(
            !allowed(&client, verb, group, resource, ns).await,
            "the operator must not be allowed to {verb} {group}/{resource} in {ns:?}"
        );
    }
}
