//! Issue 49: the switch-over from the cluster-stack operator that the book's migration guide
//! (`docs/book/src/migrating.md`) describes, on a real API server. The cluster starts as the
//! cluster-stack operator leaves it — its CRDs (`../shared/cso-api/crds`), its sample
//! ClusterStack, the ClusterStackRelease it made with its finalizer and status, the release's
//! ClusterClass and templates as it applied them, a Cluster on that class and the Cluster's
//! ClusterAddon — and the guide's steps run in order: its finalizers go, capstan's CRDs are
//! applied over its own (`capstan crds | capstan apply -f -`), and `capstan operator` starts
//! with the default source the cluster-stack operator was configured with. capstan then
//! reconciles every object it finds, and none is re-created: every uid is the one before.

use std::collections::BTreeMap;
use std::time::Duration;

use capstan_operator::api::{ClusterAddon, ClusterStack, ClusterStackRelease};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::operator_common::{capstan_binary, eventually};

/// The namespace of the cluster-stack operator's sample ClusterStack.
const NS: &str = "cluster";
const RELEASE: &str = "docker-ferrol-1-27-v2";
/// The field manager the cluster-stack operator's objects are written with here.
const CSO: &str = "cluster-stack-operator";
const CSO_RELEASE_FINALIZER: &str = "clusterstackrelease.clusterstack.x-k8s.io";
const CSO_ADDON_FINALIZER: &str = "clusteraddon.clusterstack.x-k8s.io";

fn dynamic(client: &Client, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let lower = kind.to_lowercase();
    let plural = if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    };
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &plural);
    Api::namespaced_with(client.clone(), NS, &resource)
}

fn api_of(client: &Client, object: &serde_json::Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().expect("apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    dynamic(client, group, version, object["kind"].as_str().expect("kind"))
}

/// Replaces capstan's `clusterstack.x-k8s.io` CRDs (the harness installs them) with the
/// cluster-stack operator's: the cluster as that operator's installation leaves it.
async fn install_cso_crds(client: &Client, dir: &std::path::Path) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let names = ["clusterstacks", "clusterstackreleases", "clusteraddons"]
        .map(|p| format!("{p}.clusterstack.x-k8s.io"));
    for name in &names {
        crds.delete(name, &DeleteParams::default())
            .await
            .expect("CRD deleted");
    }
    for name in &names {
        let mut tries = 0;
        while crds.get_opt(name).await.expect("CRD read").is_some() {
            tries += 1;
            assert!(tries < 240, "CRD {name} not gone after 60 s");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    let installed = capstan_testenv::install_crds(client, dir)
        .await
        .expect("the cluster-stack operator's CRDs install");
    assert_eq!(installed.len(), 3, "{installed:?}");
}

/// What the cluster-stack operator made and left: returns the objects' uids by name.
async fn cso_objects(
    client: &Client,
    sample: &str,
    class_objects: &[serde_json::Value],
) -> BTreeMap<String, String> {
    let as_cso = PostParams {
        field_manager: Some(CSO.to_string()),
        ..PostParams::default()
    };
    let mut uids = BTreeMap::new();
    // The sample ClusterStack, as it is.
    let doc = capstan_apply::parse_stream(sample, "sample")
        .expect("sample parses")
        .remove(0);
    let stacks = dynamic(client, "clusterstack.x-k8s.io", "v1alpha1", "ClusterStack");
    let stack: DynamicObject = serde_json::from_value(doc.data).expect("sample");
    let stack = stacks.create(&as_cso, &stack).await.expect("sample created");
    uids.insert("ClusterStack/clusterstack".to_string(), stack.uid().expect("uid"));
    // Its release, owned by the stack, with the cluster-stack operator's finalizer and status.
    let releases = dynamic(client, "clusterstack.x-k8s.io", "v1alpha1", "ClusterStackRelease");
    let release: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStackRelease",
        "metadata": {
            "name": RELEASE, "namespace": NS, "finalizers": [CSO_RELEASE_FINALIZER],
            "ownerReferences": [{
                "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
                "name": "clusterstack", "uid": stack.uid(), "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {},
    }))
    .expect("release");
    let release = releases.create(&as_cso, &release).await.expect("release created");
    let status = json!({"status": {
        "ready": true, "kubernetesVersion": "v1.27.3",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                       {"type": "HelmChartApplied", "status": "False", "severity": "Info",
                        "reason": "Waiting", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    }});
    releases
        .patch_status(RELEASE, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("release status");
    uids.insert(
        format!("ClusterStackRelease/{RELEASE}"),
        release.uid().expect("uid"),
    );
    // The release's ClusterClass and templates, as it applied them.
    for object in class_objects {
        let created = api_of(client, object)
            .create(&as_cso, &serde_json::from_value(object.clone()).expect("object"))
            .await
            .expect("class object created");
        uids.insert(
            format!(
                "{}/{}",
                object["kind"].as_str().unwrap_or_default(),
                created.name_any()
            ),
            created.uid().expect("uid"),
        );
    }
    // A Cluster on the class (its control plane not ready: no Cluster API runs here) and the
    // ClusterAddon the cluster-stack operator made for it.
    let clusters = dynamic(client, "cluster.x-k8s.io", "v1beta1", "Cluster");
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": "c1", "namespace": NS},
        "spec": {"topology": {"class": RELEASE, "version": "v1.27.3"}},
    }))
    .expect("Cluster");
    let cluster = clusters.create(&as_cso, &cluster).await.expect("Cluster created");
    uids.insert("Cluster/c1".to_string(), cluster.uid().expect("uid"));
    let addons = dynamic(client, "clusterstack.x-k8s.io", "v1alpha1", "ClusterAddon");
    let addon: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
        "metadata": {
            "name": "cluster-addon-c1", "namespace": NS, "finalizers": [CSO_ADDON_FINALIZER],
            "labels": {"cluster.x-k8s.io/cluster-name": "c1"},
            "ownerReferences": [{
                "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "name": "c1",
                "uid": cluster.uid(), "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "clusterRef": {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "name": "c1", "namespace": NS},
            "clusterStack": RELEASE, "version": "v2",
        },
    }))
    .expect("ClusterAddon");
    let addon = addons
        .create(&as_cso, &addon)
        .await
        .expect("ClusterAddon created");
    uids.insert(
        "ClusterAddon/cluster-addon-c1".to_string(),
        addon.uid().expect("uid"),
    );
    uids
}

/// The uids of the objects named in `before`, read now.
async fn uids_now(
    client: &Client,
    before: &BTreeMap<String, String>,
    class_objects: &[serde_json::Value],
) -> BTreeMap<String, String> {
    let mut now = BTreeMap::new();
    let read = |api: Api<DynamicObject>, name: String| async move {
        api.get_opt(&name)
            .await
            .expect("read")
            .and_then(|o| o.uid())
            .unwrap_or_default()
    };
    for key in before.keys() {
        let (kind, name) = key.split_once('/').expect("kind/name");
        let api = match kind {
            "ClusterStack" | "ClusterStackRelease" | "ClusterAddon" => {
                dynamic(client, "clusterstack.x-k8s.io", "v1alpha1", kind)
            }
            "Cluster" => dynamic(client, "cluster.x-k8s.io", "v1beta1", kind),
            _ => {
                let object = class_objects
                    .iter()
                    .find(|o| o["kind"] == kind)
                    .expect("a class object of the kind");
                api_of(client, object)
            }
        };
        now.insert(key.clone(), read(api, name.to_string()).await);
    }
    now
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_over_from_the_cluster_stack_operator_recreates_nothing() {
    let test = "switch_over_from_the_cluster_stack_operator_recreates_nothing";
    // An API server of its own: the test replaces cluster-wide CRDs.
    let Some(env) = crate::operator_common::start(test, &["docker-ferrol-1-27-v1", RELEASE]).await else {
        return;
    };
    let Some(cso) = capstan_testenv::shared_path("cso-api") else {
        capstan_testenv::skip_or_fail(test, "../shared/cso-api missing (CAPSTAN_SHARED)");
        return;
    };
    let client = env.client();
    env.cluster.create_namespace(NS).await.expect("namespace created");

    // Before: the cluster as the cluster-stack operator leaves it.
    install_cso_crds(&client, &cso.join("crds")).await;
    let sample = std::fs::read_to_string(cso.join("sample-clusterstack.yaml")).expect("sample");
    let rendered = std::process::Command::new(capstan_binary())
        .arg("render")
        .arg(env.releases.join(RELEASE))
        .args(["--cluster", "testdata/cluster.yaml", "-n", NS, "-o", "json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("capstan render runs");
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let parts: Vec<serde_json::Value> = serde_json::from_slice(&rendered.stdout).expect("render JSON");
    let class_objects: Vec<serde_json::Value> = parts
        .iter()
        .find(|p| p["part"] == "cluster-class")
        .and_then(|p| p["objects"].as_array())
        .expect("the cluster-class part")
        .clone();
    assert!(class_objects.iter().any(|o| o["kind"] == "ClusterClass"));
    let before = cso_objects(&client, &sample, &class_objects).await;

    // Step 2 of the guide: the cluster-stack operator's finalizers go (it is stopped: here it
    // never ran), so that a later deletion does not wait for it forever.
    let no_finalizers = json!({"metadata": {"finalizers": null}});
    for (kind, name) in [
        ("ClusterStackRelease", RELEASE),
        ("ClusterAddon", "cluster-addon-c1"),
    ] {
        dynamic(&client, "clusterstack.x-k8s.io", "v1alpha1", kind)
            .patch(name, &PatchParams::default(), &Patch::Merge(&no_finalizers))
            .await
            .expect("finalizers removed");
    }

    // Step 3: capstan's CRDs over the cluster-stack operator's.
    let crds = std::process::Command::new(capstan_binary())
        .arg("crds")
        .output()
        .expect("capstan crds runs");
    assert!(crds.status.success());
    let crd_file = env.cache.path().join("capstan-crds.yaml");
    std::fs::write(&crd_file, &crds.stdout).expect("write CRDs");
    let applied = std::process::Command::new(capstan_binary())
        .args(["apply", "-f"])
        .arg(&crd_file)
        .arg("--kubeconfig")
        .arg(env.cluster.kubeconfig_path())
        .output()
        .expect("capstan apply runs");
    assert!(
        applied.status.success(),
        "capstan apply of the CRDs: {}{}",
        String::from_utf8_lossy(&applied.stdout),
        String::from_utf8_lossy(&applied.stderr)
    );

    // Step 4: capstan's operator, with the default source the cluster-stack operator had
    // (GIT_PROVIDER, GIT_ORG_NAME, GIT_REPOSITORY_NAME).
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

    // capstan reconciles what it found: the stack lists its source, the release is applied
    // (its ClusterClass taken over, not made anew), the ClusterAddon waits for its Cluster.
    let stacks: Api<ClusterStack> = Api::namespaced(client.clone(), NS);
    eventually(
        "the ClusterStack's SourceReady from capstan",
        Duration::from_secs(120),
        &operator,
        || async {
            let stack = stacks.get("clusterstack").await.ok()?;
            let status = stack.status?;
            capstan_operator::api::conditions::is_true(&status.conditions, "SourceReady").then_some(())
        },
    )
    .await;
    let releases: Api<ClusterStackRelease> = Api::namespaced(client.clone(), NS);
    eventually(
        "the release Applied by capstan",
        Duration::from_secs(180),
        &operator,
        || async {
            let release = releases.get(RELEASE).await.ok()?;
            let status = release.status?;
            capstan_operator::api::conditions::is_true(&status.conditions, "Applied").then_some(())
        },
    )
    .await;
    // What capstan records beyond the cluster-stack operator's schema is kept: its CRDs are
    // the ones served now (on the old ones the API server would prune these fields, and every
    // pass would render and apply the release again).
    let status = releases
        .get(RELEASE)
        .await
        .expect("release")
        .status
        .expect("status");
    assert!(
        status.release_digest.is_some() && status.applied_revision.is_some(),
        "capstan's status fields of the release were pruned: {status:?}"
    );
    let addons: Api<ClusterAddon> = Api::namespaced(client.clone(), NS);
    let waiting = eventually(
        "the ClusterAddon's ClusterReady from capstan",
        Duration::from_secs(120),
        &operator,
        || async {
            let addon = addons.get("cluster-addon-c1").await.ok()?;
            let status = addon.status?;
            capstan_operator::api::conditions::find(&status.conditions, "ClusterReady").cloned()
        },
    )
    .await;
    assert_eq!(waiting.reason, "ControlPlaneNotReady", "{waiting:?}");

    // Nothing was re-created: every object has the uid it had under the cluster-stack operator.
    let after = uids_now(&client, &before, &class_objects).await;
    assert_eq!(after, before, "objects re-created by the switch-over");
    // capstan owns the class now (its mark), and made no second ClusterAddon or release.
    let class = dynamic(&client, "cluster.x-k8s.io", "v1beta1", "ClusterClass")
        .get(RELEASE)
        .await
        .expect("ClusterClass");
    assert_eq!(
        class.labels().get("capstan.dev/managed").map(String::as_str),
        Some("true"),
        "the ClusterClass was not taken over: {:?}",
        class.labels()
    );
    let addon_names: Vec<String> = addons
        .list(&Default::default())
        .await
        .expect("list addons")
        .items
        .iter()
        .map(|a| a.name_any())
        .collect();
    assert_eq!(addon_names, ["cluster-addon-c1"]);
    let release_names: Vec<String> = releases
        .list(&Default::default())
        .await
        .expect("list releases")
        .items
        .iter()
        .map(|r| r.name_any())
        .collect();
    assert_eq!(release_names, [RELEASE]);

    // A deletion after the switch-over completes: nothing waits for the cluster-stack
    // operator's finalizer. capstan cleans the deleted ClusterAddon up (in the workload
    // cluster, here the management cluster itself) and makes the Cluster a new one.
    env.write_kubeconfig_in(NS, "c1", &env.cluster).await;
    let old_uid = &before["ClusterAddon/cluster-addon-c1"];
    addons
        .delete("cluster-addon-c1", &DeleteParams::default())
        .await
        .expect("ClusterAddon deleted");
    eventually(
        "the deleted ClusterAddon gone and made anew",
        Duration::from_secs(120),
        &operator,
        || async {
            let addon = addons.get_opt("cluster-addon-c1").await.ok()??;
            (addon.uid().as_ref() != Some(old_uid)).then_some(())
        },
    )
    .await;
}
