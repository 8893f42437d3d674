//! `capstan install` against a real API server: the embedded chart's objects are created in a
//! namespace it creates; a second install changes nothing (the webhook certificate is found
//! with `lookup`, not generated again); a dry run changes nothing either.

use std::process::{Command, Output};

use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;

const NS: &str = "capstan-system";

fn install(cluster: &TestCluster, extra: &[&str]) -> (Output, String) {
    let kubeconfig = cluster.kubeconfig_path().to_str().expect("utf-8 path");
    let out = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args([
            "install",
            "-n",
            NS,
            "--kubeconfig",
            kubeconfig,
            "--timeout",
            "60s",
        ])
        .args(extra)
        .output()
        .expect("run capstan install");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (out, stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_creates_everything_then_changes_nothing() {
    let test = "install_creates_everything_then_changes_nothing";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::start(&bins, "install-cli")
        .await
        .expect("cluster starts");
    let client = cluster.client();

    let (out, stdout) = install(&cluster, &[]);
    assert!(out.status.success(), "first install failed");
    assert!(stdout.contains(&format!("v1/Namespace/{NS} created")), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.ends_with(" created") && l.contains("Deployment")),
        "{stdout}"
    );

    // Everything the operator needs exists.
    for crd in [
        "clusterstacks.clusterstack.x-k8s.io",
        "clusterstackreleases.clusterstack.x-k8s.io",
        "clusteraddons.clusterstack.x-k8s.io",
        "clusterstackrollouts.capstan.dev",
    ] {
        Api::<CustomResourceDefinition>::all(client.clone())
            .get(crd)
            .await
            .unwrap_or_else(|e| panic!("CRD {crd}: {e}"));
    }
    Api::<Namespace>::all(client.clone())
        .get(NS)
        .await
        .expect("namespace");
    Api::<ServiceAccount>::namespaced(client.clone(), NS)
        .get("capstan")
        .await
        .expect("ServiceAccount");
    Api::<ClusterRole>::all(client.clone())
        .get("capstan")
        .await
        .expect("ClusterRole");
    Api::<ClusterRoleBinding>::all(client.clone())
        .get("capstan")
        .await
        .expect("ClusterRoleBinding");
    Api::<Role>::namespaced(client.clone(), NS)
        .get("capstan-leader-election")
        .await
        .expect("leader-election Role");
    Api::<RoleBinding>::namespaced(client.clone(), NS)
        .get("capstan-leader-election")
        .await
        .expect("leader-election RoleBinding");
    let deployment = Api::<Deployment>::namespaced(client.clone(), NS)
        .get("capstan")
        .await
        .expect("Deployment");
    let replicas = deployment.spec.as_ref().and_then(|s| s.replicas);
    assert_eq!(replicas, Some(1));
    Api::<Service>::namespaced(client.clone(), NS)
        .get("capstan-webhook")
        .await
        .expect("webhook Service");
    let webhooks = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .get("capstan")
        .await
        .expect("ValidatingWebhookConfiguration");
    assert_eq!(webhooks.webhooks.as_ref().map(Vec::len), Some(5));
    let secrets = Api::<Secret>::namespaced(client.clone(), NS);
    let cert = secrets
        .get("capstan-webhook-cert")
        .await
        .expect("webhook cert Secret");
    let inventory = Api::<ConfigMap>::namespaced(client.clone(), NS)
        .get("capstan-install")
        .await
        .expect("inventory ConfigMap");
    assert!(inventory.data.is_some_and(|d| !d.is_empty()));

    // Installing again changes nothing: the generated certificate is looked up and kept.
    let (out, stdout) = install(&cluster, &[]);
    assert!(out.status.success(), "second install failed");
    let objects: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains('/') && !l.starts_with("v1/Namespace/"))
        .collect();
    assert!(objects.len() >= 13, "one line per object:\n{stdout}");
    for line in &objects {
        assert!(
            line.ends_with(" unchanged"),
            "second install changed {line:?}\n{stdout}"
        );
    }
    assert!(!stdout.contains("Namespace/capstan-system created"), "{stdout}");
    let again = secrets
        .get("capstan-webhook-cert")
        .await
        .expect("webhook cert Secret");
    assert_eq!(again.data, cert.data, "the webhook certificate was rotated");

    // A dry run of a change reports it and changes nothing.
    let (out, stdout) = install(
        &cluster,
        &[
            "--dry-run",
            "--set",
            "replicas=2",
            "--image",
            "example.org/capstan:dev",
        ],
    );
    assert!(out.status.success(), "dry run failed");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("Deployment.apps/") && l.ends_with(" configured (server dry run)")),
        "{stdout}"
    );
    assert!(stdout.contains("1 configured, 12 unchanged"), "{stdout}");
    let live = Api::<Deployment>::namespaced(client.clone(), NS)
        .get("capstan")
        .await
        .expect("Deployment");
    assert_eq!(live.spec.as_ref().and_then(|s| s.replicas), Some(1));

    // And for real: the image flag reaches the Deployment.
    let (out, _) = install(&cluster, &["--image", "example.org/capstan:dev"]);
    assert!(out.status.success(), "install with --image failed");
    let live = Api::<Deployment>::namespaced(client.clone(), NS)
        .get("capstan")
        .await
        .expect("Deployment");
    let image = live
        .spec
        .and_then(|s| s.template.spec)
        .and_then(|p| p.containers.first().and_then(|c| c.image.clone()));
    assert_eq!(image.as_deref(), Some("example.org/capstan:dev"));
}
