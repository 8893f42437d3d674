//! Smoke tests of the real-Kubernetes test environment (crates/capstan-testenv): server-side apply, CRDs,
//! two clusters at once, and teardown.

use std::collections::BTreeMap;

use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};

const MANAGER: &str = "capstan";

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let data: BTreeMap<String, String> = data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            // The Api's namespace (an apply's body may leave it out).
            namespace: None,
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

async fn apply_config_map(api: &Api<ConfigMap>, cm: &ConfigMap) -> ConfigMap {
    let name = cm.metadata.name.as_deref().expect("test config map has a name");
    api.patch(name, &PatchParams::apply(MANAGER), &Patch::Apply(cm))
        .await
        .expect("server-side apply of a ConfigMap")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_records_field_manager() {
    let Some(bins) = Binaries::find_or_skip("server_side_apply_records_field_manager") else {
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, "smoke")
        .await
        .expect("cluster starts");
    let api: Api<ConfigMap> = Api::default_namespaced(cluster.client());

    apply_config_map(&api, &config_map("capstan-smoke", &[("greeting", "hello")])).await;
    let read = api.get("capstan-smoke").await.expect("read back");
    assert_eq!(
        read.data
            .as_ref()
            .and_then(|d| d.get("greeting"))
            .map(String::as_str),
        Some("hello")
    );
    let fields = read.metadata.managed_fields.unwrap_or_default();
    let entry = fields
        .iter()
        .find(|f| f.manager.as_deref() == Some(MANAGER))
        .unwrap_or_else(|| panic!("no managedFields entry for {MANAGER}: {fields:?}"));
    assert_eq!(entry.operation.as_deref(), Some("Apply"));
    let owned = serde_json::to_string(&entry.fields_v1).expect("fieldsV1 serializes");
    assert!(
        owned.contains("f:greeting"),
        "capstan should own data.greeting: {owned}"
    );

    // Applying again without a field drops it: SSA ownership works end to end.
    apply_config_map(&api, &config_map("capstan-smoke", &[("other", "x")])).await;
    let read = api.get("capstan-smoke").await.expect("read back");
    let data = read.data.unwrap_or_default();
    assert_eq!(data.get("other").map(String::as_str), Some("x"));
    assert!(
        !data.contains_key("greeting"),
        "applied-away field must be removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_is_enforced_for_impersonated_identities() {
    let Some(bins) = Binaries::find_or_skip("rbac_is_enforced_for_impersonated_identities") else {
        return;
    };
    let cluster = TestCluster::start(&bins, "rbac").await.expect("cluster starts");
    let admin = cluster.client();
    let reader = "system:serviceaccount:default:reader";
    let rbac = [
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "cm-reader", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
        }),
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "cm-reader", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "default"}]
        }),
    ];
    for (obj, plural) in rbac.iter().zip(["roles", "rolebindings"]) {
        let kind = obj["kind"].as_str().unwrap_or_default();
        let gvk = GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", kind);
        let api: Api<DynamicObject> = Api::namespaced_with(
            admin.clone(),
            "default",
            &ApiResource::from_gvk_with_plural(&gvk, plural),
        );
        let obj: DynamicObject = serde_json::from_value(obj.clone()).expect("valid RBAC object");
        let name = obj.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &PatchParams::apply(MANAGER), &Patch::Apply(&obj))
            .await
            .expect("apply RBAC");
    }
    let admin_cms: Api<ConfigMap> = Api::namespaced(admin, "default");
    apply_config_map(&admin_cms, &config_map("readable", &[("k", "v")])).await;

    let as_reader = cluster
        .client_as(reader, &["system:serviceaccounts", "system:authenticated"])
        .await
        .expect("impersonating client");
    let reader_cms: Api<ConfigMap> = Api::namespaced(as_reader, "default");
    reader_cms.get("readable").await.expect("reader may get");
    let denied = reader_cms
        .patch(
            "readable",
            &PatchParams::apply(MANAGER),
            &Patch::Apply(&config_map("readable", &[("k", "changed")])),
        )
        .await;
    match denied {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("reader must not write: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_crds_install_and_cluster_object_is_created() {
    let test = "capi_crds_install_and_cluster_object_is_created";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let Some(crd_dir) = capstan_testenv::shared_path("capi-crds/v1.6.0") else {
        capstan_testenv::skip_or_fail(
            test,
            "CAPI CRDs not found at ../shared/capi-crds/v1.6.0 (set CAPSTAN_SHARED)",
        );
        return;
    };
    let cluster = TestCluster::start(&bins, "capi").await.expect("cluster starts");
    let client = cluster.client();

    let names = capstan_testenv::install_crds(&client, &crd_dir)
        .await
        .expect("CAPI CRDs install and become Established");
    assert!(
        names.iter().any(|n| n == "clusters.cluster.x-k8s.io"),
        "installed: {names:?}"
    );
    assert_eq!(
        names.len(),
        capstan_testenv::crd_files(&crd_dir).expect("list").len()
    );

    let gvk = GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta1", "Cluster");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "clusters");
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let obj: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Cluster",
        "metadata": {"name": "workload-1", "namespace": "default"},
        "spec": {
            "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}},
            "topology": {"class": "example-class", "version": "v1.30.0"}
        }
    }))
    .expect("valid Cluster object");
    api.patch("workload-1", &PatchParams::apply(MANAGER), &Patch::Apply(&obj))
        .await
        .expect("apply a Cluster");
    let read = api.get("workload-1").await.expect("read the Cluster back");
    assert_eq!(
        read.data.pointer("/spec/topology/class").and_then(|v| v.as_str()),
        Some("example-class")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_are_isolated_and_torn_down() {
    let Some(bins) = Binaries::find_or_skip("two_clusters_are_isolated_and_torn_down") else {
        return;
    };
    let (mgmt, workload) = tokio::join!(
        TestCluster::start(&bins, "management"),
        TestCluster::start(&bins, "workload")
    );
    let mgmt = mgmt.expect("management cluster starts");
    let workload = workload.expect("workload cluster starts");
    assert_ne!(mgmt.server_url(), workload.server_url());

    // A client built from the kubeconfig file reaches its own cluster only.
    let from_file = capstan_testenv::client_from(mgmt.kubeconfig_path())
        .await
        .expect("client from kubeconfig file");
    let mgmt_api: Api<ConfigMap> = Api::namespaced(from_file, "default");
    apply_config_map(&mgmt_api, &config_map("only-in-mgmt", &[("k", "v")])).await;
    let workload_api: Api<ConfigMap> = Api::namespaced(workload.client(), "default");
    assert!(
        workload_api
            .get_opt("only-in-mgmt")
            .await
            .expect("query workload")
            .is_none(),
        "clusters must not share state"
    );

    // Teardown kills every process, also when the owner is dropped by a panic.
    let mut pids = Vec::new();
    for c in [mgmt, workload] {
        let (etcd, api) = c.pids();
        pids.extend([etcd, api]);
        let dir = c.dir().to_path_buf();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _owned = c;
            panic!("simulated test failure");
        }));
        assert!(unwound.is_err());
        assert!(!dir.exists(), "temp dir {} must be removed", dir.display());
    }
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} must be gone after drop"
        );
    }
}
